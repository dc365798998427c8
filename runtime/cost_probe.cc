#include "runtime/cost_probe.hh"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/futex.hh"
#include "runtime/guard_backend.hh"
#include "runtime/log.hh"
#include "runtime/stats.hh"

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

}  // namespace

Result<MeasuredCosts> measure_costs(MPI_Comm comm, int tag, GuardBackend* backend, std::size_t page) {
  MeasuredCosts out;
  std::string why;
  out.backend = backend ? backend->probe_name() : "none";
  const double s1 = static_cast<double>(page), s2 = static_cast<double>(kProbePages * page);
  Scratch m(kProbePages * page);
  bool ok = m.user != nullptr;
  if (!ok) why = std::string("no scratch memory: ") + std::strerror(errno);
  // Local costs first; every rank still takes part in the exchange below, whatever failed here.
  if (ok && backend) {
    const double g1 = median_ns([&] { return backend->cycle(m.user, m.staging, page); });
    const double g2 = median_ns([&] { return backend->cycle(m.user, m.staging, kProbePages * page); });
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
  if (!ok) return Status::error(why);
  return out;
}

std::size_t agree_threshold(MPI_Comm world, GuardBackend* backend, std::size_t page, Stats& stats) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(world, &rank);
  PMPI_Comm_size(world, &size);
  const std::size_t floor = kMinGuardablePages * page;
  std::uint64_t mine = floor;
  MeasuredCosts c;
  const char* basis = "measured";
  // Every rank measures the link, whatever it can guard (the exchange is collective). Tag 0 of
  // the duplicate: every probe message is matched before the reduction below completes, so
  // none can meet a collective's messages.
  const long long t0 = futex::now_ns();
  Result<MeasuredCosts> measured = measure_costs(world, 0, backend, page);
  const double probe_ms = static_cast<double>(futex::now_ns() - t0) / 1e6;
  if (measured.ok()) c = measured.value();
  if (!backend) {
    basis = "nothing_to_guard";  // every collective completes in the call anyway
  } else if (!measured.ok()) {
    basis = "not_measured";
    log(LogLevel::Warn, "cannot measure the costs of returning early (%s); TNBC_MIN_BYTES=auto uses %s",
        measured.status().message().c_str(), bytes_text(floor).c_str());
  } else if (size == 1) {
    basis = "single_rank";
  } else {
    mine = threshold_from_costs(c, page);
  }
  std::uint64_t all = mine;
  PMPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_MAX, world);
  const auto chosen = static_cast<std::size_t>(all);
  stats.set_threshold({chosen, basis, c, mine == chosen});
  // Rank 0 says it (a warning when no size pays), the others at debug level.
  const LogLevel level = rank != 0 ? LogLevel::Debug : chosen == kNeverPays ? LogLevel::Warn : LogLevel::Info;
  if (log_enabled(level)) {
    const double us_per_mib = static_cast<double>(1 << 20) / 1e3;
    log(level,
        "TNBC_MIN_BYTES=auto: %s%s (largest over the ranks; here %s from link %.0f us + %.0f us/MiB, guard (%s) "
        "%.0f us + %.0f us/MiB, copy %.0f us/MiB; measured in %.1f ms)",
        bytes_text(chosen).c_str(),
        chosen == kNeverPays ? ": returning early does not pay at any size by the measured costs, collectives run "
                               "blocking (set TNBC_MIN_BYTES to override)"
                             : "",
        bytes_text(mine).c_str(), c.link.fixed_ns / 1e3, c.link.per_byte_ns * us_per_mib, c.backend,
        c.guard.fixed_ns / 1e3, c.guard.per_byte_ns * us_per_mib, c.copy_per_byte_ns * us_per_mib, probe_ms);
  }
  return chosen;
}

}  // namespace tnbc
