// The progress thread: executes schedules with MPI_Isend / MPI_Irecv / MPI_Testsome. Receives
// are posted at once, sends in priority order through a window of TNBC_SEND_WINDOW. It sleeps
// when nothing is in flight; while traffic is pending it polls with an adaptive sleep
// (TNBC_POLL_MIN_US doubling to TNBC_POLL_MAX_US while nothing completes) and is woken at once
// (futex) when a thread starts waiting for data.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/config.hh"
#include "runtime/inflight.hh"

namespace tnbc {

class Progress {
 public:
  explicit Progress(const Settings& s);
  ~Progress();
  void submit(std::shared_ptr<InFlight> f);
  // Takes over a request the calling thread posted for piece `i` of `f` (already submitted
  // or about to be): the progress thread completes it like its own.
  void adopt(InFlight* f, int i, MPI_Request req);
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
  void post(InFlight& f);

  const int window_;
  const long long poll_min_ns_, poll_max_ns_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<InFlight>> incoming_;
  std::vector<std::tuple<InFlight*, int, MPI_Request>> adopted_;
  std::vector<std::shared_ptr<InFlight>> in_flight_list_;  // submitted, not yet retired (mutex_)
  std::atomic<std::uint32_t> wake_{0};  // bumped on submit / stop
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> in_flight_{0};
  std::atomic<std::uint32_t> finished_word_{0};

  std::vector<std::shared_ptr<InFlight>> active_;
  std::uint64_t polls_ = 0;  // loop iterations (for the debug log)
  std::vector<MPI_Request> requests_;
  std::vector<std::pair<InFlight*, int>> owners_;
  std::thread thread_;
};

}  // namespace tnbc
