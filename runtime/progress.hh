// The progress thread: drives the collectives that returned early with its executor
// (runtime/executor.hh). It sleeps when nothing is in flight; while traffic is pending it polls
// with an adaptive sleep (TNBC_POLL_MIN_US doubling to TNBC_POLL_MAX_US while nothing completes),
// is woken at once (futex) when a thread starts waiting for data and polls back to back while one
// waits. An error in a step (MPI
// failed one of tnbc's messages, publication failed) ends the job with a report: the program
// returned from that call long ago.
#pragma once

#include <sched.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/config.hh"
#include "runtime/executor.hh"
#include "runtime/inflight.hh"

namespace tnbc {

class Progress {
 public:
  // `gate`: what admits each ready send (the engine's: the window, node-level priorities).
  // `finished`: called on the progress thread for each collective once it has finished (every
  // step done, every region open, every wait for it added up): its record for the summary.
  Progress(const Settings& s, SendGate& gate, std::function<void(InFlight&)> finished);
  ~Progress();
  // `wake`: wake the thread now; false when the caller wakes it later (an early return pokes
  // once it leaves the call: until then the thread would only take the calling thread's CPU).
  void submit(std::shared_ptr<InFlight> f, bool wake = true);
  // Takes over steps a calling thread started (their collective is submitted already).
  void adopt(std::vector<Started> steps);
  // Waits until every submitted collective has finished (sends included); false if some are
  // still in flight after `timeout_ns` (a peer never took or sent its part). The time is added
  // to the collectives' waits (WaitSource::Drain), each counted from the drain's start or the
  // previous one's end, so that no time counts twice. Regions still held back for observation
  // must be opened first (fence_all).
  bool drain(long long timeout_ns);
  // Lets the thread finish its round (sleeping until it has, or until `deadline_ns`) where a
  // collective is still in flight: one whose steps are done is retired in that round and its
  // staging goes back to the pools. True if some collective was retired meanwhile (the caller
  // may look in the pools again). For a caller about to map fresh staging: where this thread
  // shares the caller's CPU, the reader that its last publication woke takes that CPU and this
  // thread may not run again before the program's next call (docs/architecture.md, "The parts": Staging).
  bool settle(long long deadline_ns);
  // Collectives submitted and not yet retired.
  bool in_flight() const { return in_flight_.load(std::memory_order_acquire) != 0; }
  // Sampled calls whose steps are all done but whose regions wait for their first touch
  // (runtime/observe.hh): the engine samples no more while too many wait.
  std::size_t parked() const { return parked_count_.load(std::memory_order_relaxed); }
  // Lets the thread run on `cpus` (the policy's choice, TNBC_PROGRESS_CPUS); the kernel keeps it
  // inside the process's cpuset. Returns the CPUs it may use now (its old set if refused). The
  // program's threads keep their own binding.
  cpu_set_t place(const cpu_set_t& cpus);
  // While a thread waits for data the progress thread polls back to back, as a blocking MPI call
  // would (the waiter's CPU is idle); `yield`: give the CPU up between polls (a node with more
  // ranks than CPUs, Policy::waiting()).
  void set_yield(bool yield) { yield_.store(yield, std::memory_order_relaxed); }
  // `shared`: the thread has no CPU but the callers' (progress_takes_callers_cpu: the rank's own
  // single CPU, or a node with as many ranks as the CPUs it may run on). Woken
  // by an early return, it then lets the calling thread leave the call first (it sleeps in
  // steps of ~60 us, at most 1 ms, before its round while a caller whose part is done has not
  // returned): woken with a short slice it would otherwise preempt the caller inside the call
  // and run its copies and posts there, in the program's Tinit.
  void set_shares_caller_cpu(bool shared) { shares_caller_cpu_.store(shared, std::memory_order_relaxed); }
  // Ends the thread once nothing is in flight (drain first).
  void stop();
  // CPU seconds the thread has used so far (-1 once stopped or when unknown).
  double cpu_seconds();
  // For timeout messages: fn(const InFlight&) for each collective still in flight.
  template <class Fn>
  void for_each_in_flight(Fn fn) {
    std::lock_guard lock(mutex_);
    for (const auto& f : in_flight_list_) fn(*f);
  }

 private:
  void run();
  void retire(InFlight& f);
  // Sleeps while a caller whose CPU this thread takes is leaving its call (set_shares_caller_cpu:
  // progress_takes_callers_cpu).
  void wait_for_returns();
  // A round is over (what finished is retired): wakes the threads in settle().
  void round_done();

  const long long poll_min_ns_, poll_max_ns_;
  std::function<void(InFlight&)> finished_;
  std::vector<InFlight*> parked_;          // progress thread only; kept alive by in_flight_list_
  std::atomic<std::size_t> parked_count_{0};
  std::atomic<long long> drain_since_{0};  // a drain() is waiting since (0: none)
  long long last_drain_retire_ = 0;        // progress thread only
  SendGate& gate_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<InFlight>> incoming_;
  std::vector<Started> adopted_;
  std::vector<std::shared_ptr<InFlight>> in_flight_list_;  // submitted, not yet retired (mutex_)
  std::atomic<bool> stop_{false};
  std::atomic<bool> yield_{false};
  std::atomic<bool> shares_caller_cpu_{false};
  std::vector<std::shared_ptr<InFlight>> returning_;  // taken while their callers were in the call
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<std::uint32_t> finished_word_{0};
  std::atomic<std::uint32_t> rounds_{0};   // the thread's rounds, counted for settle()
  std::atomic<int> settlers_{0};           // threads sleeping in settle()
  std::uint64_t polls_ = 0;  // loop iterations (for the debug log)
  std::thread thread_;
};

}  // namespace tnbc
