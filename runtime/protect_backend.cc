// The PROT_NONE guard backend (runtime/guard_backend.hh).
//
//   hold      tnbc's SIGSEGV handler must be in place (another may have replaced it:
//             ensure_fault_handler); one mprotect(PROT_NONE) per run of regions
//   write     through /proc/self/mem while the pages are still PROT_NONE (the kernel writes the
//             frames, like a debugger's poke): only the step's own bytes, so gaps and other data
//             sharing a page are never written
//   open      one mprotect(PROT_READ|PROT_WRITE) once every step of the region is in
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "runtime/futex.hh"
#include "runtime/guard_backend.hh"
#include "runtime/inflight.hh"
#include "runtime/log.hh"
#include "runtime/publish.hh"

namespace tnbc {

namespace {

class ProtectBackend final : public GuardBackend {
 public:
  GuardKind kind() const override { return GuardKind::ProtNone; }

  Hold hold(InFlight& f, const RegionPlan&, const GuardSpan&) override {
    if (ensure_fault_handler() == HandlerState::Lost) return Hold::HandlerLost;
    if (!publication_available() || !protect(f)) return Hold::Unusable;
    ensure_signal_stack();
    return Hold::Held;
  }

  Status write(InFlight&, int, char* dst, const char* src, std::size_t n) override {
    if (write_through_proc_mem(dst, src, n)) return {};
    return Status::error("writing " + std::to_string(n) + " received bytes through /proc/self/mem failed: " +
                         std::strerror(errno));
  }

  Status open(InFlight&, Region& r) override {
    if (::mprotect(reinterpret_cast<void*>(r.lo), r.hi - r.lo, PROT_READ | PROT_WRITE) == 0) return {};
    return Status::error("mprotect(" + std::to_string(r.hi - r.lo) + " bytes, PROT_READ|PROT_WRITE) failed: " +
                         std::strerror(errno));
  }

  Stats::GuardUsed stats_kind() const override { return Stats::GuardUsed::ProtNone; }

  bool cycle(char* user, char* staging, std::size_t bytes, CycleTimes& t, FunctionRef<void()> receive) override {
    const long long t0 = futex::now_ns();
    if (::mprotect(user, bytes, PROT_NONE) != 0) return false;
    t.hold_ns = static_cast<double>(futex::now_ns() - t0);
    receive();
    const long long t1 = futex::now_ns();
    const bool ok = write_through_proc_mem(user, staging, bytes) && ::mprotect(user, bytes, PROT_READ | PROT_WRITE) == 0;
    t.publish_ns = static_cast<double>(futex::now_ns() - t1);
    return ok;
  }
  const char* probe_name() const override { return "prot_none"; }

 private:
  // One mprotect per run of adjacent regions; all or none.
  static bool protect(InFlight& f) {
    std::uintptr_t done_to = f.regions[0].lo;
    for (std::size_t k = 0; k < f.region_count;) {
      std::size_t e = k + 1;
      while (e < f.region_count && f.regions[e].lo == f.regions[e - 1].hi) ++e;
      const std::uintptr_t a = f.regions[k].lo, b = f.regions[e - 1].hi;
      if (::mprotect(reinterpret_cast<void*>(a), b - a, PROT_NONE) != 0) {
        log(LogLevel::Info, "cannot protect %p+%zu (%s): completing in the call", reinterpret_cast<void*>(a),
            static_cast<std::size_t>(b - a), std::strerror(errno));
        ::mprotect(reinterpret_cast<void*>(f.regions[0].lo), done_to - f.regions[0].lo, PROT_READ | PROT_WRITE);
        return false;
      }
      done_to = b;
      k = e;
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<GuardBackend> make_protect_backend() { return std::make_unique<ProtectBackend>(); }

}  // namespace tnbc
