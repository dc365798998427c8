#include "runtime/progress.hh"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "runtime/futex.hh"
#include "runtime/log.hh"
#include "runtime/send_copy.hh"
#include "runtime/stats.hh"

namespace tnbc {

Progress::Progress(const Settings& s)
    : window_(static_cast<int>(s.send_window)),
      poll_min_ns_(s.poll_min_us * 1000),
      poll_max_ns_(s.poll_max_us * 1000) {
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

void Progress::adopt(InFlight* f, int i, MPI_Request req) {
  {
    std::lock_guard lock(mutex_);
    adopted_.emplace_back(f, i, req);
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
    futex::wait(finished_word_, seen, 50 * 1000 * 1000LL);
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

void Progress::post(InFlight& f) {
  if (!f.recvs_posted) {
    f.recvs_posted = true;
    for (std::size_t i = 0; i < f.pieces.size(); ++i) {
      const Piece& p = f.pieces[i];
      if (p.dir != Dir::Recv || f.done[i].load(std::memory_order_acquire) || (!f.by_caller.empty() && f.by_caller[i]))
        continue;
      MPI_Request req;
      PMPI_Irecv(f.recv_data + p.offset, static_cast<int>(p.length), MPI_BYTE, p.peer,
                 f.base_tag + p.tag_offset, f.comm, &req);
      requests_.push_back(req);
      owners_.emplace_back(&f, static_cast<int>(i));
    }
  }
  for (auto it = f.unposted_sends.begin(); it != f.unposted_sends.end() && f.sends_in_flight < window_;) {
    const Piece& p = f.pieces[static_cast<std::size_t>(*it)];
    if ((p.after >= 0 && !f.done[static_cast<std::size_t>(p.after)].load(std::memory_order_acquire)) ||
        (!p.edge && !f.bodies_released.load(std::memory_order_acquire)) || !send_piece_staged(f, *it)) {
      ++it;
      continue;
    }
    MPI_Request req;
    PMPI_Isend(f.send_data + p.offset, static_cast<int>(p.length), MPI_BYTE, p.peer,
               f.base_tag + p.tag_offset, f.comm, &req);
    requests_.push_back(req);
    owners_.emplace_back(&f, *it);
    ++f.sends_in_flight;
    it = f.unposted_sends.erase(it);
  }
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

void Progress::run() {
  mark_progress_thread();
  pthread_setname_np(pthread_self(), "tnbc-progress");  // in top -H, perf, gdb
  request_short_slice(kShortSliceNs);
  std::vector<int> indices;
  long long sleep_ns = poll_min_ns_;
  auto& u = urgency();
  while (true) {
    const std::uint32_t wake_seen = u.wake.load(std::memory_order_acquire);
    {
      std::lock_guard lock(mutex_);
      for (auto& f : incoming_) {
        f->submitted_ns = futex::now_ns();
        f->polls_at_submit = polls_;
        active_.push_back(std::move(f));
      }
      incoming_.clear();
      for (auto& [f, i, req] : adopted_) {
        requests_.push_back(req);
        owners_.emplace_back(f, i);
      }
      adopted_.clear();
    }
    if (active_.empty()) {
      if (stop_.load()) break;
      futex::wait(u.wake, wake_seen, -1);
      continue;
    }
    for (auto& f : active_) post(*f);

    int completed = 0;
    ++polls_;
    if (!requests_.empty()) {
      indices.resize(requests_.size());
      int outcount = 0;
      PMPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &outcount, indices.data(),
                    MPI_STATUSES_IGNORE);
      if (outcount == MPI_UNDEFINED) outcount = 0;
      for (int k = 0; k < outcount; ++k) {
        auto [f, i] = owners_[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)])];
        const Piece& p = f->pieces[static_cast<std::size_t>(i)];
        if (p.dir == Dir::Send) {
          if (f->by_caller.empty() || !f->by_caller[static_cast<std::size_t>(i)]) --f->sends_in_flight;
          --f->sends_remaining;
          f->done[static_cast<std::size_t>(i)].store(1, std::memory_order_release);
        } else {
          publish_piece(*f, i);
        }
      }
      completed = outcount;
      if (outcount > 0) {
        std::size_t w = 0;
        for (std::size_t r = 0; r < requests_.size(); ++r) {
          if (requests_[r] == MPI_REQUEST_NULL) continue;
          requests_[w] = requests_[r];
          owners_[w] = owners_[r];
          ++w;
        }
        requests_.resize(w);
        owners_.resize(w);
      }
    }
    // Retire what has finished: erase its regions (they are all published), drop our reference.
    for (auto it = active_.begin(); it != active_.end();) {
      InFlight& f = **it;
      if (!f.finished() || !f.unposted_sends.empty()) {
        ++it;
        continue;
      }
      for (std::size_t k = 0; k < f.region_count; ++k) guards().erase(&f.regions[k]);
      retire_send_regions(f);
      if (log_enabled(LogLevel::Debug))
        log(LogLevel::Debug, "%s #%llu finished: %.3f ms after submission, %llu polls",
            kind_name(f.kind), static_cast<unsigned long long>(f.sequence),
            (futex::now_ns() - f.submitted_ns) / 1e6, static_cast<unsigned long long>(polls_ - f.polls_at_submit));
      {
        std::lock_guard lock(mutex_);
        std::erase_if(in_flight_list_, [&](const std::shared_ptr<InFlight>& p) { return p.get() == &f; });
      }
      it = active_.erase(it);
      in_flight_.fetch_sub(1, std::memory_order_acq_rel);
      finished_word_.fetch_add(1, std::memory_order_release);
      futex::wake_all(finished_word_);
    }
    if (completed > 0) {
      sleep_ns = poll_min_ns_;
      continue;
    }
    if (u.waiting.load(std::memory_order_acquire) > 0) sleep_ns = poll_min_ns_;
    else sleep_ns = std::min(poll_max_ns_, std::max(sleep_ns * 2, 1000LL));
    if (sleep_ns > 0 && !active_.empty()) futex::wait(u.wake, wake_seen, sleep_ns);
  }
}

}  // namespace tnbc
