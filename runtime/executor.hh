// The one interpreter of schedules (runtime/schedule.hh). An executor runs the collectives it was
// given: it starts every step whose dependencies are done (receives at once, then sends in
// priority order through the send gate), lets the transports progress, and completes what
// finished: landing steps are published into the program's buffer (waking threads that wait for
// them), every step is stamped with its completion time. It is the only code that starts or
// tests a schedule's messages.
//
// Each driving thread has its own executor: the progress thread one for every collective that
// returned early; a calling thread one, on its stack, for the steps it drives itself (the
// in-call part of an early return, or a whole call that completes in it). Which steps an
// executor may start is its Scope; a step is started by exactly one executor (its state goes
// Idle -> Started by compare-and-swap) and completed by the one that started it, or by the one
// it was handed over to (release / adopt).
//
//   calling thread                              progress thread
//   Executor mine(Scope::Caller)                Executor (Scope::Progress), every round:
//     start in-call receives, edge sends          take new collectives and adopted steps
//     drive() until they are done / started       poll(): start what is ready, test, complete
//     release() the sends still in flight  ----->  adopt()
//   return to the program                         retire what finished
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "runtime/function_ref.hh"
#include "runtime/inflight.hh"
#include "runtime/policy.hh"
#include "runtime/status.hh"
#include "runtime/transport.hh"

namespace tnbc {

// Which steps of a collective an executor starts.
enum class Scope : std::uint8_t {
  All,       // every step (a call that completes in the calling thread)
  Caller,    // the steps marked by_caller (the in-call part of an early return)
  Progress,  // the others (the rest of an early return, in the progress thread)
};

// The one point that decides whether a ready send may start now, asked in priority order. The
// default (WindowGate) keeps at most TNBC_SEND_WINDOW sends of a collective in flight and holds
// bodies back while the calling thread is still in the call; node-level arbitration between the
// ranks of a node (NodeGate, runtime/node_gate.hh) wraps it and is told when sends complete and
// when a collective's last step is done.
class SendGate {
 public:
  enum class Verdict { Start, Later, Stop };  // Later: not this one now; Stop: no more sends of this collective now
  virtual ~SendGate() = default;
  virtual Verdict admit(const InFlight& f, const Step& s, int in_flight) = 0;
  // Send step `step` of `f` completed (by whichever executor drove it).
  virtual void sent(InFlight& f, int step, long long now_ns) {
    (void)f, (void)step, (void)now_ns;
  }
  // Every step of `f` is done (told once or, when two executors finish together, twice).
  virtual void finished(InFlight& f) { (void)f; }
};

class WindowGate final : public SendGate {
 public:
  // `window`: every collective alike (< 1: no limit). `holds_bodies`: bodies wait while the
  // calling thread is in the call (bodies_released) — the progress thread's gate; a calling
  // thread's own gate starts what its scope gives it (Policy::caller_starts_sends).
  explicit WindowGate(int window, bool holds_bodies = true) : holds_bodies_(holds_bodies) { windows_.fill(window); }
  Verdict admit(const InFlight& f, const Step& s, int in_flight) override;
  // The window of collectives in which this rank's sends have `role` (Policy::send_window): once
  // the progress thread is placed (the answer depends on where), before the first collective.
  void set_window(SendRole role, int window) { windows_[static_cast<std::size_t>(role)] = window; }

 private:
  bool holds_bodies_;
  std::array<int, kSendRoleCount> windows_{};
};

class Executor final : private Completions {
 public:
  // `transports`: what carries each step kind (default_transports(); tests give their own).
  Executor(SendGate& gate, std::vector<std::unique_ptr<Transport>> transports);
  ~Executor() override;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void add(std::shared_ptr<InFlight> f, Scope scope);
  // One round: starts what is ready, polls every transport, completes what finished. `moved`
  // becomes true when something started or completed. An error names the step; the schedule
  // cannot finish then.
  Status poll(bool& moved);
  // Hands every started step over (to another executor's adopt()), e.g. before the call returns.
  std::vector<Started> release();
  void adopt(const Started& s);
  // Removes the collectives `finished(f)` accepts, calling `retired(f)` for each.
  template <class Finished, class Retired>
  void retire(Finished finished, Retired retired);
  bool empty() const { return entries_.empty(); }
  // Forgets every collective (nothing may be started and not complete: release() first), so that
  // a calling thread reuses one executor for all its calls.
  void clear() { entries_.clear(); }
  std::size_t busy() const;

 private:
  struct Entry {
    std::shared_ptr<InFlight> f;
    Scope scope;
    std::vector<int> to_start;  // steps this executor may start, by priority, not yet started
    int sends_in_flight = 0;    // started by this executor, counted against the send window
  };
  bool mine(const InFlight& f, std::size_t i, Scope scope) const;
  Status start_ready(Entry& e, bool& moved);
  void completed(InFlight& f, int step, bool counts, long long now_ns) override;
  Transport* transport_for(StepKind k);

  SendGate& gate_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<Entry> entries_;
  Status error_;  // the first completion that failed (publication)
  bool moved_ = false;
};

// Runs `ex` on the calling thread until `done()`, waiting between rounds as `w` says (policy.hh);
// sets `timed_out` and returns after `w.timeout_ns` without progress. An error of a step ends it.
Status drive(Executor& ex, FunctionRef<bool()> done, const Waiting& w, bool& timed_out);

// ---- template implementation ----
template <class Finished, class Retired>
void Executor::retire(Finished finished, Retired retired) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (!finished(*it->f)) {
      ++it;
      continue;
    }
    retired(*it->f);
    it = entries_.erase(it);
  }
}

}  // namespace tnbc
