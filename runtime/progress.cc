#include "runtime/progress.hh"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "runtime/fatal.hh"
#include "runtime/futex.hh"
#include "runtime/log.hh"
#include "runtime/return_wait.hh"
#include "runtime/sched_slice.hh"
#include "runtime/send_copy.hh"
#include "runtime/stats.hh"

namespace tnbc {

Progress::Progress(const Settings& s, SendGate& gate, std::function<void(InFlight&)> finished)
    : poll_min_ns_(s.poll_min_us * 1000), poll_max_ns_(s.poll_max_us * 1000), finished_(std::move(finished)),
      gate_(gate) {
  thread_ = std::thread([this] { run(); });
}

Progress::~Progress() { stop(); }

void Progress::submit(std::shared_ptr<InFlight> f, bool wake) {
  in_flight_.fetch_add(1);
  {
    std::lock_guard lock(mutex_);
    in_flight_list_.push_back(f);
    incoming_.push_back(std::move(f));
  }
  if (wake) urgency().poke();
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
  drain_since_.store(start, std::memory_order_release);
  struct Done {
    std::atomic<long long>& since;
    ~Done() { since.store(0, std::memory_order_release); }
  } done{drain_since_};
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

bool Progress::settle(long long deadline_ns) {
  if (in_flight_.load(std::memory_order_acquire) == 0) return false;
  const std::uint32_t retired = finished_word_.load(std::memory_order_acquire);
  const std::uint32_t round = rounds_.load(std::memory_order_acquire);
  settlers_.fetch_add(1, std::memory_order_seq_cst);
  urgency().poke();
  for (long long now = futex::now_ns(); rounds_.load(std::memory_order_acquire) == round && now < deadline_ns;
       now = futex::now_ns())
    futex::wait(rounds_, round, deadline_ns - now);
  settlers_.fetch_sub(1, std::memory_order_relaxed);
  return finished_word_.load(std::memory_order_acquire) != retired;
}

void Progress::round_done() {
  rounds_.fetch_add(1, std::memory_order_seq_cst);
  if (settlers_.load(std::memory_order_seq_cst) > 0) futex::wake_all(rounds_);
}

void Progress::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  urgency().poke();
  thread_.join();
}

cpu_set_t Progress::place(const cpu_set_t& cpus) {
  cpu_set_t now;
  CPU_ZERO(&now);
  if (!thread_.joinable()) return now;
  pthread_setaffinity_np(thread_.native_handle(), sizeof cpus, &cpus);  // refused: the set stays
  pthread_getaffinity_np(thread_.native_handle(), sizeof now, &now);
  return now;
}

double Progress::cpu_seconds() {
  if (!thread_.joinable()) return -1;
  return thread_cpu_seconds(thread_.native_handle());
}

namespace {
// Debug log: each step's start and completion (ms after the call), in schedule order: where a
// transfer stretches (a send started late, or started on time and slow on the wire).
void log_step_times(const InFlight& f) {
  std::string line;
  char item[96];
  constexpr std::size_t kMostChars = 1900;  // the log line's limit; a longer schedule is cut
  for (std::size_t i = 0; i < f.schedule.size() && line.size() < kMostChars; ++i) {
    const Step& s = f.schedule[i];
    std::snprintf(item, sizeof item, " %s%d/%zuK:%.1f-%.1f", step_kind_name(s.kind), s.peer, s.length >> 10,
                  (f.started_ns[i] ? f.started_ns[i] - f.times.called : 0) / 1e6, (f.done_ns[i] - f.times.called) / 1e6);
    line += item;
  }
  log(LogLevel::Debug, "%s #%llu steps (kind peer/KiB:started-done ms after the call):%s", kind_name(f.kind),
      static_cast<unsigned long long>(f.sequence), line.c_str());
}
}  // namespace

void Progress::retire(InFlight& f) {
  for (std::size_t k = 0; k < f.region_count; ++k) guards().erase(&f.regions[k]);  // no waiter left after this
  retire_send_regions(f);
  const long long now = futex::now_ns();
  if (const long long since = drain_since_.load(std::memory_order_acquire); since != 0) {
    const long long from = std::max(since, last_drain_retire_);
    WaitLog& w = f.times.waits;
    w.ns[static_cast<std::size_t>(WaitSource::Drain)].fetch_add(std::max(0LL, now - from), std::memory_order_relaxed);
    w.count[static_cast<std::size_t>(WaitSource::Drain)].fetch_add(1, std::memory_order_relaxed);
    last_drain_retire_ = now;
  }
  if (log_enabled(LogLevel::Debug)) {
    long long blocked = 0;
    for (const auto& ns : f.times.waits.ns) blocked += ns.load();
    log(LogLevel::Debug, "%s #%llu finished: %.3f ms after the call, %.3f ms after submission, %llu polls; "
        "threads blocked on it %.3f ms", kind_name(f.kind), static_cast<unsigned long long>(f.sequence),
        (f.times.last_step.load() - f.times.called) / 1e6, (now - f.submitted_ns) / 1e6,
        static_cast<unsigned long long>(polls_ - f.polls_at_submit), blocked / 1e6);
    log_step_times(f);
  }
  if (finished_) finished_(f);
  {
    std::lock_guard lock(mutex_);
    std::erase_if(in_flight_list_, [&](const std::shared_ptr<InFlight>& p) { return p.get() == &f; });
  }
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  finished_word_.fetch_add(1, std::memory_order_release);
  futex::wake_all(finished_word_);
}

// A sched_yield before the round gave the CPU back too rarely (with the short slice above the
// scheduler may pick this thread again at once): the caller stayed off its CPU ~0.4 ms per call,
// 0.04 ms with this sleep (docs/benchmarks.md, session 8). A sleep gives the CPU back for certain; the caller's way out after the hand-over is a few us, so the
// thread looks again after kReturnLookNs (plus the default timer slack, 50 us: the first look
// finds it returned), and after kReturnWaitNs it runs anyway (a caller descheduled for another
// reason must not stall the messages).
void Progress::wait_for_returns() {
  const long long start = futex::now_ns();
  while (true) {
    std::erase_if(returning_, [](const std::shared_ptr<InFlight>& f) {
      return f->times.returned.load(std::memory_order_acquire) != 0;
    });
    const bool leaving = std::any_of(returning_.begin(), returning_.end(), [](const std::shared_ptr<InFlight>& f) {
      return f->bodies_released.load(std::memory_order_acquire);
    });
    if (!leaving || futex::now_ns() - start > kReturnWaitNs) return;
    struct timespec ts{0, kReturnLookNs};
    nanosleep(&ts, nullptr);
  }
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
        if (shares_caller_cpu_.load(std::memory_order_relaxed) && f->times.returned.load(std::memory_order_acquire) == 0)
          returning_.push_back(f);
        f->submitted_ns = futex::now_ns();
        f->polls_at_submit = polls_;
        ex.add(std::move(f), Scope::Progress);
      }
      incoming_.clear();
      for (const Started& s : adopted_) ex.adopt(s);
      adopted_.clear();
    }
    // A calling thread on this thread's only CPU has done its part and is leaving its call (the
    // hand-over's wake-up preempted it): this thread sleeps until it has returned, so that the
    // round runs after the call, not in it. (Listed only on such a CPU.)
    wait_for_returns();
    // Sampled calls whose regions were all opened by their first touches (open_observed pokes).
    std::erase_if(parked_, [this](InFlight* f) {
      if (!f->finished()) return false;
      retire(*f);
      return true;
    });
    parked_count_.store(parked_.size(), std::memory_order_relaxed);
    if (ex.empty()) {
      round_done();
      if (stop_.load() && parked_.empty()) break;
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
    // A sampled call whose steps are done but whose regions wait for their first touch leaves
    // the executor (nothing left to poll) and is parked until they are open.
    // (Not before the call has returned: its record is complete only then.)
    ex.retire([](const InFlight& f) {
                return f.steps_left.load(std::memory_order_acquire) == 0 &&
                       f.times.returned.load(std::memory_order_acquire) != 0;
              },
              [this](InFlight& f) {
                if (f.finished()) {
                  retire(f);
                } else {
                  parked_.push_back(&f);
                  parked_count_.store(parked_.size(), std::memory_order_relaxed);
                }
              });
    round_done();
    if (moved) {
      sleep_ns = poll_min_ns_;
      continue;
    }
    if (u.waiting.load(std::memory_order_acquire) > 0) {
      // A thread sleeps until data lands (a reader, a fence, a drain): its CPU is idle, and a
      // sleep here would add a wake-up (~60 us on the VMs here) to each step it waits for.
      sleep_ns = poll_min_ns_;
      if (yield_.load(std::memory_order_relaxed)) sched_yield();
      continue;
    }
    sleep_ns = std::min(poll_max_ns_, std::max(sleep_ns * 2, 1000LL));
    if (sleep_ns > 0 && !ex.empty()) futex::wait(u.wake, wake_seen, sleep_ns);
  }
}

}  // namespace tnbc
