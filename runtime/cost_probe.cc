#include "runtime/cost_probe.hh"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/futex.hh"
#include "runtime/publish.hh"
#include "runtime/uffd.hh"

namespace tnbc {

namespace {

// The sizes measured: one page, and a sub-message large enough for the per-byte terms to show
// (64 pages = 256 KiB with 4 KiB pages) yet cheap to exchange at start-up.
constexpr std::size_t kProbePages = 64;
constexpr int kRepetitions = 5;  // medians of these, after one warm-up

// Median time of once() (false: it failed, -1), after one warm-up (first touches, first use of
// a connection); before() runs untimed ahead of each.
template <class Fn, class Before>
double median_ns(Fn&& once, Before&& before) {
  before();
  once();
  std::vector<double> t;
  for (int i = 0; i < kRepetitions; ++i) {
    before();
    const long long start = futex::now_ns();
    if (!once()) return -1;
    t.push_back(static_cast<double>(futex::now_ns() - start));
  }
  std::nth_element(t.begin(), t.begin() + kRepetitions / 2, t.end());
  return t[kRepetitions / 2];
}

template <class Fn>
double median_ns(Fn&& once) {
  return median_ns(once, [] {});
}

struct Scratch {
  char* user = nullptr;  // stands for a receive buffer
  char* staging = nullptr;
  std::size_t len = 0;
  explicit Scratch(std::size_t bytes) : len(bytes) {
    void* p = ::mmap(nullptr, 2 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    user = static_cast<char*>(p);
    staging = user + len;
    std::memset(user, 1, 2 * len);  // populated, like a buffer the program has used
  }
  ~Scratch() {
    if (user) ::munmap(user, 2 * len);
  }
};

// Holds back and publishes the first `bytes` of the scratch with the backend, once.
bool guard_cycle(ProbeBackend b, Scratch& m, std::size_t bytes) {
  const auto lo = reinterpret_cast<std::uintptr_t>(m.user), hi = lo + bytes;
  switch (b) {
    case ProbeBackend::UffdMove:
      return uffd::arm_swap(lo, hi, m.staging) && uffd::fill_swapped(lo, hi, m.staging);
    case ProbeBackend::UffdCopy:
      return uffd::arm(lo, hi) && uffd::fill(lo, hi, m.staging);
    case ProbeBackend::ProtNone:
      return ::mprotect(m.user, bytes, PROT_NONE) == 0 && write_through_proc_mem(m.user, m.staging, bytes) &&
             ::mprotect(m.user, bytes, PROT_READ | PROT_WRITE) == 0;
    case ProbeBackend::None:
      return true;
  }
  return false;
}

}  // namespace

const char* probe_backend_name(ProbeBackend b) {
  switch (b) {
    case ProbeBackend::UffdMove: return "userfaultfd_move";
    case ProbeBackend::UffdCopy: return "userfaultfd_copy";
    case ProbeBackend::ProtNone: return "prot_none";
    case ProbeBackend::None: return "none";
  }
  return "unknown";
}

bool measure_costs(MPI_Comm comm, int tag, ProbeBackend backend, std::size_t page, MeasuredCosts& out,
                   std::string& why) {
  out = {};
  out.backend = probe_backend_name(backend);
  const double s1 = static_cast<double>(page), s2 = static_cast<double>(kProbePages * page);
  Scratch m(kProbePages * page);
  bool ok = m.user != nullptr;
  if (!ok) why = std::string("no scratch memory: ") + std::strerror(errno);
  // Local costs first; every rank still takes part in the exchange below, whatever failed here.
  if (ok && backend != ProbeBackend::None) {
    const double g1 = median_ns([&] { return guard_cycle(backend, m, page); });
    const double g2 = median_ns([&] { return guard_cycle(backend, m, kProbePages * page); });
    ok = g1 >= 0 && g2 >= 0;
    if (!ok) why = std::string("the guard backend (") + out.backend + ") failed on scratch memory";
    else out.guard = fit_line(s1, g1, s2, g2);
    const double c = median_ns([&] {
      std::memcpy(m.staging, m.user, m.len);
      return true;
    });
    out.copy_per_byte_ns = c / s2;
  }
  int n = 1, me = 0;
  PMPI_Comm_size(comm, &n);
  PMPI_Comm_rank(comm, &me);
  if (n > 1) {
    std::vector<char> send(kProbePages * page, 2), recv(kProbePages * page);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    // Every rank sends to its right neighbour and receives from its left one at the same time
    // (after a barrier), as the ranks of a collective do.
    auto barrier = [&] { PMPI_Barrier(comm); };
    auto exchange = [&](std::size_t bytes) {
      return PMPI_Sendrecv(send.data(), static_cast<int>(bytes), MPI_BYTE, right, tag, recv.data(),
                           static_cast<int>(bytes), MPI_BYTE, left, tag, comm, MPI_STATUS_IGNORE) == MPI_SUCCESS;
    };
    const double l1 = median_ns([&] { return exchange(page); }, barrier);
    const double l2 = median_ns([&] { return exchange(kProbePages * page); }, barrier);
    out.link = fit_line(s1, l1, s2, l2);
  }
  return ok;
}

}  // namespace tnbc
