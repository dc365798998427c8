#include "runtime/progress.hh"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "runtime/fatal.hh"
#include "runtime/futex.hh"
#include "runtime/log.hh"
#include "runtime/send_copy.hh"
#include "runtime/stats.hh"

namespace tnbc {

Progress::Progress(const Settings& s, SendGate& gate)
    : poll_min_ns_(s.poll_min_us * 1000), poll_max_ns_(s.poll_max_us * 1000), gate_(gate) {
  thread_ = std::thread([this] { run(); });
}

Progress::~Progress() { stop(); }

void Progress::submit(std::shared_ptr<InFlight> f) {
  in_flight_.fetch_add(1);
  {
    std::lock_guard lock(mutex_);
    in_flight_list_.push_back(f);
    incoming_.push_back(std::move(f));
  }
  urgency().poke();
}

void Progress::adopt(std::vector<Started> steps) {
  if (steps.empty()) return;
  {
    std::lock_guard lock(mutex_);
    adopted_.insert(adopted_.end(), steps.begin(), steps.end());
  }
  urgency().poke();
}

bool Progress::drain(long long timeout_ns) {
  const long long start = futex::now_ns();
  while (in_flight_.load(std::memory_order_acquire) != 0) {
    const std::uint32_t seen = finished_word_.load(std::memory_order_acquire);
    if (in_flight_.load(std::memory_order_acquire) == 0) break;
    if (futex::now_ns() - start > timeout_ns) return false;
    urgency().waiting.fetch_add(1);
    urgency().poke();
    futex::wait(finished_word_, seen, futex::kWaitSliceNs);
    urgency().waiting.fetch_sub(1);
  }
  return true;
}

void Progress::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  urgency().poke();
  thread_.join();
}

double Progress::cpu_seconds() {
  if (!thread_.joinable()) return -1;
  return thread_cpu_seconds(thread_.native_handle());
}

namespace {
// The shortest time slice EEVDF accepts (it clamps requests to 0.1-100 ms).
constexpr long long kShortSliceNs = 100 * 1000;

// Asks the scheduler for a short time slice (EEVDF, Linux >= 6.12, unprivileged): the thread
// runs in short bursts, so when it wakes it preempts a computing thread sooner instead of
// waiting out that thread's slice. Ignored where the kernel does not support it. Only the slice
// changes: a thread of a program started with `nice` (or SCHED_BATCH/IDLE) keeps its nice value
// and policy (sched_setattr would otherwise reset nice to 0).
void request_short_slice(long long slice_ns) {
  struct {
    std::uint32_t size, policy;
    std::uint64_t flags;
    std::int32_t nice;
    std::uint32_t priority;
    std::uint64_t runtime, deadline, period;
  } attr{};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0 || attr.policy != 0 /* SCHED_OTHER */) return;
  attr.size = sizeof attr;
  attr.flags = 0;
  attr.runtime = static_cast<std::uint64_t>(slice_ns);
  syscall(SYS_sched_setattr, 0, &attr, 0);
}
}  // namespace

void Progress::retire(InFlight& f) {
  for (std::size_t k = 0; k < f.region_count; ++k) guards().erase(&f.regions[k]);
  retire_send_regions(f);
  if (log_enabled(LogLevel::Debug))
    log(LogLevel::Debug, "%s #%llu finished: %.3f ms after the call, %.3f ms after submission, %llu polls; "
        "threads blocked on it %.3f ms", kind_name(f.kind), static_cast<unsigned long long>(f.sequence),
        (f.times.last_step.load() - f.times.called) / 1e6, (futex::now_ns() - f.submitted_ns) / 1e6,
        static_cast<unsigned long long>(polls_ - f.polls_at_submit), f.times.blocked.load() / 1e6);
  {
    std::lock_guard lock(mutex_);
    std::erase_if(in_flight_list_, [&](const std::shared_ptr<InFlight>& p) { return p.get() == &f; });
  }
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  finished_word_.fetch_add(1, std::memory_order_release);
  futex::wake_all(finished_word_);
}

void Progress::run() {
  mark_progress_thread();
  pthread_setname_np(pthread_self(), "tnbc-progress");  // in top -H, perf, gdb
  request_short_slice(kShortSliceNs);
  Executor ex(gate_, default_transports());
  long long sleep_ns = poll_min_ns_;
  auto& u = urgency();
  while (true) {
    const std::uint32_t wake_seen = u.wake.load(std::memory_order_acquire);
    {
      std::lock_guard lock(mutex_);
      for (auto& f : incoming_) {
        f->submitted_ns = futex::now_ns();
        f->polls_at_submit = polls_;
        ex.add(std::move(f), Scope::Progress);
      }
      incoming_.clear();
      for (const Started& s : adopted_) ex.adopt(s);
      adopted_.clear();
    }
    if (ex.empty()) {
      if (stop_.load()) break;
      futex::wait(u.wake, wake_seen, -1);
      continue;
    }
    ++polls_;
    bool moved = false;
    if (Status st = ex.poll(moved); !st.ok()) {
      log(LogLevel::Error, "progress thread: %s; the collectives in flight:", st.message().c_str());
      for_each_in_flight([](const InFlight& f) { report_missing(f); });
      end_job();
    }
    // Retire what has finished: erase its regions (they are all published), drop our reference.
    ex.retire([](const InFlight& f) { return f.finished(); }, [this](InFlight& f) { retire(f); });
    if (moved) {
      sleep_ns = poll_min_ns_;
      continue;
    }
    if (u.waiting.load(std::memory_order_acquire) > 0) sleep_ns = poll_min_ns_;
    else sleep_ns = std::min(poll_max_ns_, std::max(sleep_ns * 2, 1000LL));
    if (sleep_ns > 0 && !ex.empty()) futex::wait(u.wake, wake_seen, sleep_ns);
  }
}

}  // namespace tnbc
