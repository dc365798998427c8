// The progress thread: drives the collectives that returned early with its executor
// (runtime/executor.hh). It sleeps when nothing is in flight; while traffic is pending it polls
// with an adaptive sleep (TNBC_POLL_MIN_US doubling to TNBC_POLL_MAX_US while nothing completes)
// and is woken at once (futex) when a thread starts waiting for data. An error in a step (MPI
// failed one of tnbc's messages, publication failed) ends the job with a report: the program
// returned from that call long ago.
#pragma once

#include <atomic>
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
  Progress(const Settings& s, SendGate& gate);
  ~Progress();
  void submit(std::shared_ptr<InFlight> f);
  // Takes over steps a calling thread started (their collective is submitted already).
  void adopt(std::vector<Started> steps);
  // Waits until every submitted collective has finished (sends included); false if some are
  // still in flight after `timeout_ns` (a peer never took or sent its part).
  bool drain(long long timeout_ns);
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

  const long long poll_min_ns_, poll_max_ns_;
  SendGate& gate_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<InFlight>> incoming_;
  std::vector<Started> adopted_;
  std::vector<std::shared_ptr<InFlight>> in_flight_list_;  // submitted, not yet retired (mutex_)
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<std::uint32_t> finished_word_{0};
  std::uint64_t polls_ = 0;  // loop iterations (for the debug log)
  std::thread thread_;
};

}  // namespace tnbc
