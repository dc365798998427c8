// Receive-buffer guards. The pages wholly inside a receive buffer are cut into regions: maximal
// page runs that depend on the same set of pieces. A region stays PROT_NONE until every piece
// overlapping it has been copied into place ("published"); then it is made accessible again.
// An ordered map (a red-black tree) maps addresses to regions. The SIGSEGV handler looks the
// faulting address up: a guarded region -> wait (futex) until it is published, then return so
// the access is retried; any other fault -> the handler that was installed before tnbc's.
//
//   receive buffer:  |head page|  p0 body ...  |p0/p1|  p1 body ...  |tail page|
//                    unguarded     region A     reg B    region C     unguarded
//                    (its pieces complete in the call)       B waits for p0 and p1
#pragma once

#include <signal.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "runtime/schedule.hh"
#include "runtime/vocabulary.hh"

namespace tnbc {

struct Region;

// How a guarded region was reached.
enum class Access : std::uint8_t { Read, Write, Syscall, MpiCall };

// A region with a hook is not waited for: the fault handler and fences call the hook, which
// must be async-signal-safe and must leave the region accessible (the trace pass records the
// first touch this way). Regions without a hook wait for publication.
using RegionHook = void (*)(Region* r, std::uintptr_t addr, Access how, const void* code_address);

// What the program waited for one call after it had returned, per source (docs/reports.md):
// wait_published adds each wait here. `observe_*`: waits only observation caused (the data had
// arrived; the region was held back until its first touch, below).
struct WaitLog {
  std::atomic<long long> ns[kWaitSourceCount] = {};
  std::atomic<std::uint32_t> count[kWaitSourceCount] = {};
  std::atomic<long long> observe_ns{0};
  std::atomic<std::uint32_t> observe_count{0};
};

struct Region {
  std::uintptr_t lo = 0, hi = 0;          // page aligned
  std::atomic<int> pending{0};            // pieces not yet published
  std::atomic<std::uint32_t> published{0};
  std::atomic<int> waiters{0};            // threads that looked it up and may still read it
  const void* owner = nullptr;            // the schedule (for diagnostics; the opener's call)
  WaitLog* waits = nullptr;               // where waits for it are added (the call's record)
  RegionHook hook = nullptr;
  void* hook_data = nullptr;              // for the hook's own use
  // Observation (a sampled call, docs/reports.md "First access"): when its last piece is in, the
  // region is not opened but marked `arrived_ns`; the first thread that touches it (fault,
  // userfaultfd, bounded fence) records `first_touch_ns` and opens it through the opener
  // (set_region_opener), so the first access is seen even when the data came first.
  bool observe = false;
  std::atomic<long long> arrived_ns{0};      // observe: when its last piece was in (0: not yet)
  std::atomic<long long> first_touch_ns{0};  // when a thread first waited for it (0: never)
  std::atomic<int> opening{0};               // observe: 1 once some thread opens it
  std::atomic<int> given_back{0};            // 1 once opened (publish.cc, open_region)
};

// Which pages of a receive layout can be guarded, and on which pieces each depends.
struct RegionPlan {
  struct Span {
    std::uintptr_t lo, hi;
    std::vector<int> pieces;  // indices of the steps with bytes in it
  };
  std::vector<Span> regions;
  std::vector<bool> in_call;  // per piece: must complete before the call returns
};

// A landing step (Recv, Copy) `steps[i]` covers [base + offset, base + offset + length) (others
// are ignored); the user's buffer spans [lo, hi). Steps touching the partial first/last page, or
// with `force_in_call[i]`, are in_call. Regions with no steps, or only in_call ones, are left out.
RegionPlan plan_regions(std::uintptr_t base, std::span<const Step> steps, std::uintptr_t lo, std::uintptr_t hi,
                        std::size_t page, const std::vector<bool>& force_in_call);

class GuardTable {
 public:
  // Lists `r`. Listed regions never overlap: regions `r` overlaps that are done (published or
  // opened; their collective has not retired yet) are stale and unlisted, so that a look-up
  // finds `r`. Returns false, listing nothing, if `r` overlaps a region still in use.
  bool insert(Region* r);
  // Removes `r` (if still listed); returns once no thread that found it can still be reading it.
  void erase(Region* r);
  // The region containing `addr`, with its waiters count raised (call release()), or nullptr.
  Region* acquire(std::uintptr_t addr);
  void release(Region* r) { r->waiters.fetch_sub(1, std::memory_order_release); }
  // Calls fn(Region*) (waiters raised during the call) for each region overlapping [lo, hi).
  template <class Fn>
  void for_each_overlapping(std::uintptr_t lo, std::uintptr_t hi, Fn fn);
  bool empty() const { return count_.load(std::memory_order_acquire) == 0; }
  // True while the calling thread is inside the table (e.g. the map frees a node and the free
  // interposer asks for a fence): such nested calls see nothing, they must not wait.
  static bool held_by_this_thread();
  // True if `addr` was in a region erased recently (its fault raced with publication).
  bool recently_erased(std::uintptr_t addr) const;
  // How many regions have been unlisted so far (erased or replaced): a fault retried after a
  // race counts as genuine if it comes back with no region unlisted in between. Counted under
  // the lock, so a look-up that missed sees the erasure that made it miss.
  std::uint64_t erasures() const { return erasures_.load(std::memory_order_relaxed); }
  // Diagnostics for the handler (async-signal-safe): is `addr` within 16 MiB of a region,
  // and a description of the regions around it.
  bool near(std::uintptr_t addr) const;
  void describe(std::uintptr_t addr) const;

 private:
  void lock() const;
  void unlock() const;
  void remember_erased(const Region* r);  // for recently_erased (under the lock)
  mutable std::atomic<int> lock_{0};  // owner tid, 0 = free (never held while touching user memory)
  std::map<std::uintptr_t, Region*> map_;  // by lo
  std::atomic<int> count_{0};
  static constexpr int kRecent = 64;
  std::atomic<std::uintptr_t> recent_lo_[kRecent] = {}, recent_hi_[kRecent] = {};
  std::atomic<std::uint64_t> erasures_{0};  // regions unlisted; the next slot of recent_*_ (mod kRecent)
};

// The fault handler's memory of its last retry after a race (one per thread): a fault on a page
// of a region unlisted between the fault and the look-up is retried (the page was opened before
// the region was unlisted); the same address faulting again with no region unlisted since is
// genuine and goes to the previous handler. The table's erasure count, read after the look-up
// missed (so it counts the erasure that made it miss), tells the two apart. An address alone does
// not: a later collective on the same buffer faults at the same address (the buffer's first
// guarded page) and may race again, with no fault handled in between (seen under MPICH: the
// second race was passed on and killed the program).
struct RaceRetry {
  std::uintptr_t addr = 0;
  std::uint64_t erasures = 0;
  // Whether a raced fault at `at` is retried (`erasures_now`: the table's count after the
  // look-up missed); remembers it if so.
  bool retry(std::uintptr_t at, std::uint64_t erasures_now) {
    if (addr == at && erasures == erasures_now) return false;
    addr = at;
    erasures = erasures_now;
    return true;
  }
  void handled() { addr = 0; }  // a fault tnbc handled: the next race is a new one
};

GuardTable& guards();

// Futex word bumped whenever a region is published (waiters sleep on it).
std::atomic<std::uint32_t>& publish_word();

// Called by waiters so that the progress thread polls at its fastest while they wait.
struct Urgency {
  std::atomic<int> waiting{0};
  std::atomic<std::uint32_t> wake{0};
  void poke();
};
Urgency& urgency();

// Waits (async-signal-safe) until `r` is published; after TNBC_TIMEOUT seconds reports and
// aborts. `what` names the caller for the message; the wait is added to r->waits under `source`.
// `touch`: the program needs these bytes now (an access, a call on the buffer), recorded as the
// region's first touch; an unbounded fence (an MPI call of unknown extent, MPI_Finalize) is not.
// `since_ns`: when the thread started to wait, if earlier than now (the userfaultfd listener
// reads the fault after the thread fell asleep); 0: now.
void wait_published(Region* r, const char* what, WaitSource source, bool touch, long long since_ns = 0);

// Opens a region observation held back (Region::observe) once its data is in: the engine's
// (publish.cc: open_observed). Async-signal-safe for PROT_NONE regions (the SIGSEGV handler
// calls it); called at most once per region.
using RegionOpener = void (*)(Region* r);
void set_region_opener(RegionOpener fn);
// Opens `r` if it is held back for observation and its data is in (nobody else opening it);
// returns whether it is published now.
bool open_if_arrived(Region* r);

// Fences: every region overlapping [lo, hi) (or every region) is waited for, or its hook is
// called with `how`. Nothing happens on the progress thread or inside the table.
void fence_range(std::uintptr_t lo, std::uintptr_t hi, Access how, const char* what);
void fence_all(const char* what);

// Gives the calling thread an alternate signal stack if it has none (once per thread). A
// guarded page may be stack memory of a frame that has returned; when the next calls write
// there, the kernel could not push the SIGSEGV frame onto that same stack and would kill the
// process instead of running tnbc's handler.
void ensure_signal_stack();

// Installs tnbc's SIGSEGV handler (after PMPI_Init, so it is first). The handler previously
// installed becomes the chained one.
void install_fault_handler(long long timeout_ns);
bool fault_handler_installed();
// Whether tnbc's handler is still the one the kernel calls. Something that replaced it without
// going through the sigaction/signal interposers (a raw rt_sigaction system call, a library's
// private sigaction) is detected here (one system call, ~0.6 us: called before guarding with
// PROT_NONE, not on hot paths); tnbc's handler is installed again and chains to the new one
// (Reinstalled, said once). Lost: it cannot be installed again (said once); nothing may then be
// guarded with PROT_NONE.
enum class HandlerState { Ours, Reinstalled, Lost };
HandlerState ensure_fault_handler();
// For the sigaction/signal interposers: while tnbc's handler is installed, the program's
// handler for SIGSEGV is recorded as the chained one instead of replacing tnbc's.
// Returns false if the call should go to the real sigaction.
bool intercept_sigaction(int sig, const struct sigaction* act, struct sigaction* old);

// Marks the calling thread as the progress thread (it must never wait for a publication).
void mark_progress_thread();
bool on_progress_thread();
// Its kernel thread id (0 before it started), for fault reports that carry a thread id.
int progress_thread_tid();

// The engine's reporter prints what is missing and ends the job (MPI_Abort); abort() follows
// if it returns.
using TimeoutReporter = void (*)(const void* schedule_owner);
void set_timeout_reporter(TimeoutReporter fn);

// ---- template implementation ----
template <class Fn>
void GuardTable::for_each_overlapping(std::uintptr_t lo, std::uintptr_t hi, Fn fn) {
  if (empty() || lo >= hi || held_by_this_thread()) return;
  // One region at a time, in address order: a caller waiting in fn() for one region must hold
  // no other, or the progress thread, which erases a finished collective's regions only when
  // nobody holds them (erase), would wait for us while we wait for it.
  bool first = true;
  std::uintptr_t last_key = 0;
  while (true) {
    Region* r = nullptr;
    lock();
    auto it = map_.upper_bound(first ? lo : last_key);
    if (first && it != map_.begin()) --it;
    for (; it != map_.end() && it->first < hi; ++it) {
      if (it->second->hi <= lo) continue;
      r = it->second;
      r->waiters.fetch_add(1, std::memory_order_acq_rel);
      break;
    }
    unlock();
    if (r == nullptr) return;
    first = false;
    last_key = r->lo;
    fn(r);
    release(r);
  }
}

}  // namespace tnbc
