// The userfaultfd guard backend (runtime/guard_backend.hh; the primitives: runtime/uffd.hh).
//
//   hold      page swapping where it can: each run of regions moves its pages, own bytes
//             included, into the receive staging (at the same offset in its pages), all runs or
//             none; else the own block's bytes in the regions are saved to staging and each run
//             is registered and emptied
//   write     the bytes of a step outside its regions (partial pages nobody holds back) are
//             copied; the regions' pages come back whole when they open
//   open      one UFFDIO_MOVE puts the swapped pages back, or one UFFDIO_COPY installs copies
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/fatal.hh"
#include "runtime/futex.hh"
#include "runtime/guard_backend.hh"
#include "runtime/inflight.hh"
#include "runtime/log.hh"
#include "runtime/uffd.hh"

namespace tnbc {

namespace {

// Runs of adjacent regions, each handled with one system call: fn(lo, hi) for each; false
// when fn refused one.
template <class Fn>
bool for_each_run(InFlight& f, Fn fn) {
  for (std::size_t k = 0; k < f.region_count;) {
    std::size_t e = k + 1;
    while (e < f.region_count && f.regions[e].lo == f.regions[e - 1].hi) ++e;
    if (!fn(f.regions[k].lo, f.regions[e - 1].hi)) return false;
    k = e;
  }
  return true;
}

// Whether every byte of the regions' pages is received by this collective or is the own block:
// then emptying the pages loses nothing another thread could be writing meanwhile.
bool regions_hold_only_ours(const InFlight& f, const RegionPlan& plan, std::uintptr_t base, ByteRange own) {
  for (const auto& span : plan.regions) {
    std::vector<ByteRange> cover;
    for (int i : span.pieces) {
      const Step& s = f.schedule[static_cast<std::size_t>(i)];
      cover.push_back({base + s.offset, base + s.offset + s.length});
    }
    if (!own.empty()) cover.push_back(own);
    std::sort(cover.begin(), cover.end(), [](ByteRange a, ByteRange b) { return a.lo < b.lo; });
    std::uintptr_t at = span.lo;
    for (const ByteRange& c : cover) {
      if (c.lo > at) break;
      at = std::max(at, c.hi);
    }
    if (at < span.hi) return false;
  }
  return true;
}

// Undoing a hold in the call: the program's own bytes must come back, or the job ends.
void must_put_back(const Status& st) {
  if (st.ok()) return;
  log(LogLevel::Error, "giving pages back to the program: %s", st.message().c_str());
  end_job();
}

class UffdBackend final : public GuardBackend {
 public:
  explicit UffdBackend(bool swap) : swap_(swap && uffd::can_swap()) {}

  GuardKind kind() const override { return GuardKind::Userfaultfd; }

  Hold hold(InFlight& f, const RegionPlan& plan, const GuardSpan& g) override {
    if (!uffd::active() || !f.user_recv || !regions_hold_only_ours(f, plan, g.base, g.own)) return Hold::Unusable;
    f.swapped = can_swap(f, g.base);
    return empty_regions(f, g.base, g.own) ? Hold::Held : Hold::Unusable;
  }

  Status write(InFlight& f, int i, char* dst, const char* src, std::size_t n) override {
    auto [first, last] = f.step_regions.empty() ? std::pair{0, 0} : f.step_regions[static_cast<std::size_t>(i)];
    auto at = reinterpret_cast<std::uintptr_t>(dst);
    const std::uintptr_t end = at + n;
    const auto from = [&](std::uintptr_t a) { return src + (a - reinterpret_cast<std::uintptr_t>(dst)); };
    for (int k = first; k < last && at < end; ++k) {
      const Region& r = f.regions[static_cast<std::size_t>(k)];
      if (r.lo > at) std::memcpy(reinterpret_cast<void*>(at), from(at), std::min(r.lo, end) - at);
      at = std::max(at, r.hi);
    }
    if (at < end) std::memcpy(reinterpret_cast<void*>(at), from(at), end - at);
    return {};
  }

  Status open(InFlight& f, Region& r) override {
    char* src = f.recv_data + (r.lo - reinterpret_cast<std::uintptr_t>(f.user_recv));
    return f.swapped ? uffd::fill_swapped(r.lo, r.hi, src) : uffd::fill(r.lo, r.hi, src);
  }

  Stats::GuardUsed stats_kind() const override { return Stats::GuardUsed::Userfaultfd; }

  bool cycle(char* user, char* staging, std::size_t bytes, CycleTimes& t, FunctionRef<void()> receive) override {
    const auto lo = reinterpret_cast<std::uintptr_t>(user), hi = lo + bytes;
    const long long t0 = futex::now_ns();
    if (!(swap_ ? uffd::arm_swap(lo, hi, staging) : uffd::arm(lo, hi))) return false;
    t.hold_ns = static_cast<double>(futex::now_ns() - t0);
    receive();
    const long long t1 = futex::now_ns();
    const bool ok = (swap_ ? uffd::fill_swapped(lo, hi, staging) : uffd::fill(lo, hi, staging)).ok();
    t.publish_ns = static_cast<double>(futex::now_ns() - t1);
    return ok;
  }
  const char* probe_name() const override { return swap_ ? "userfaultfd_move" : "userfaultfd_copy"; }

 private:
  // Page swapping needs the staging at the same offset in its pages as the program's buffer and
  // no send reading the staging after publication (a broadcast's forwards).
  bool can_swap(const InFlight& f, std::uintptr_t base) const {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    if (!swap_ || (reinterpret_cast<std::uintptr_t>(f.recv_data) - base) % page != 0) return false;
    return f.send_data != f.recv_data || f.schedule.count(StepKind::Send) == 0;
  }

  // All runs or none are swapped (publication treats the whole collective alike); else the own
  // block's bytes in the regions are saved to staging (publication copies whole pages from
  // there), then each run is registered and emptied.
  bool empty_regions(InFlight& f, std::uintptr_t base, ByteRange own) {
    if (f.swapped) {
      std::vector<ByteRange> moved;
      const bool all = for_each_run(f, [&](std::uintptr_t a, std::uintptr_t b) {
        if (!uffd::arm_swap(a, b, f.recv_data + (a - base))) return false;
        moved.push_back({a, b});
        return true;
      });
      if (all) return true;
      for (const ByteRange& r : moved) must_put_back(uffd::fill_swapped(r.lo, r.hi, f.recv_data + (r.lo - base)));
      f.swapped = false;
      log(LogLevel::Debug, "userfaultfd: pages would not move; copying instead");
    }
    for (std::size_t k = 0; k < f.region_count && !own.empty(); ++k) {
      const std::uintptr_t a = std::max(own.lo, f.regions[k].lo), b = std::min(own.hi, f.regions[k].hi);
      if (a < b) std::memcpy(f.recv_data + (a - base), reinterpret_cast<const void*>(a), b - a);
    }
    std::vector<ByteRange> armed;
    const bool ok = for_each_run(f, [&](std::uintptr_t a, std::uintptr_t b) {
      if (!uffd::arm(a, b)) return false;
      armed.push_back({a, b});
      return true;
    });
    if (ok) return true;
    // Put back what was emptied (own bytes from staging; received bytes come later anyway).
    for (const ByteRange& r : armed) must_put_back(uffd::fill(r.lo, r.hi, f.recv_data + (r.lo - base)));
    return false;
  }

  bool swap_;
};

}  // namespace

std::unique_ptr<GuardBackend> make_uffd_backend(bool swap) { return std::make_unique<UffdBackend>(swap); }

}  // namespace tnbc
