#include "runtime/executor.hh"

#include <sched.h>

#include <algorithm>
#include <cstring>

#include "runtime/futex.hh"
#include "runtime/send_copy.hh"

namespace tnbc {

SendGate::Verdict WindowGate::admit(const InFlight& f, const Step& s, int in_flight) {
  if (holds_bodies_ && !s.edge && !f.bodies_released.load(std::memory_order_acquire)) return Verdict::Later;
  const int window = windows_[static_cast<std::size_t>(f.send_role)];
  if (window > 0 && in_flight >= window) return Verdict::Stop;
  return Verdict::Start;
}

void step_done(InFlight& f, int i, long long now_ns) {
  const auto k = static_cast<std::size_t>(i);
  f.done_ns[k] = now_ns;
  long long last = f.times.last_step.load(std::memory_order_relaxed);
  while (last < now_ns && !f.times.last_step.compare_exchange_weak(last, now_ns, std::memory_order_relaxed)) {
  }
  f.state[k].store(kDone, std::memory_order_release);
  f.steps_left.fetch_sub(1, std::memory_order_acq_rel);
}

Executor::Executor(SendGate& gate, std::vector<std::unique_ptr<Transport>> transports)
    : gate_(gate), transports_(std::move(transports)) {}

Executor::~Executor() = default;

bool Executor::mine(const InFlight& f, std::size_t i, Scope scope) const {
  switch (scope) {
    case Scope::All: return true;
    case Scope::Caller: return i < f.by_caller.size() && f.by_caller[i];
    case Scope::Progress: return i >= f.by_caller.size() || !f.by_caller[i];
  }
  return false;
}

void Executor::add(std::shared_ptr<InFlight> f, Scope scope) {
  Entry e{std::move(f), scope, {}, 0};
  const InFlight& fl = *e.f;
  for (std::size_t i = 0; i < fl.schedule.size(); ++i)
    if (mine(fl, i, scope) && fl.state[i].load(std::memory_order_acquire) == kIdle)
      e.to_start.push_back(static_cast<int>(i));
  // Receives first (all started at once), then sends by priority, then local copies (they take
  // this thread's time: done once the messages are on their way).
  const auto rank_of = [](StepKind k) { return k == StepKind::Recv ? 0 : k == StepKind::Copy ? 2 : 1; };
  std::stable_sort(e.to_start.begin(), e.to_start.end(), [&](int a, int b) {
    const Step &x = fl.schedule[static_cast<std::size_t>(a)], &y = fl.schedule[static_cast<std::size_t>(b)];
    const int rx = rank_of(x.kind), ry = rank_of(y.kind);
    return rx != ry ? rx < ry : x.priority < y.priority;
  });
  entries_.push_back(std::move(e));
}

Transport* Executor::transport_for(StepKind k) {
  for (auto& t : transports_)
    if (t->carries(k)) return t.get();
  return nullptr;
}

Status Executor::start_ready(Entry& e, bool& moved) {
  InFlight& f = *e.f;
  bool sends_stopped = false;
  // Local copies (the own block after an early return: Copy steps) take this thread's CPU from
  // the transfer: the progress thread starts none while the caller is still in its call (they
  // are work after the return, and the caller's CPU may be this thread's), and one per round,
  // after the sends, so that the transports are polled between them. A copy run in one piece
  // before or right after the first sends delayed one rank's posting and polling by ~1-2 ms
  // per 8 MiB, enough to put the two directions of a 2-rank exchange out of step for the whole
  // exchange (each window's rendezvous waiting behind the other direction's data): NPB IS.A
  // at 0.67 of blocking (docs/benchmarks.md, core efficiency, "Session 12").
  bool copy_now = e.scope != Scope::Progress || f.bodies_released.load(std::memory_order_acquire);
  std::size_t w = 0;
  for (std::size_t r = 0; r < e.to_start.size(); ++r) {
    const int i = e.to_start[r];
    const auto k = static_cast<std::size_t>(i);
    const Step& s = f.schedule[k];
    auto keep = [&] { e.to_start[w++] = i; };
    if (f.state[k].load(std::memory_order_acquire) != kIdle) continue;  // started elsewhere: not ours to track
    bool ready = true;
    for (int d : f.schedule.after(k)) ready = ready && f.done(static_cast<std::size_t>(d));
    if (!ready || (sends_stopped && s.kind == StepKind::Send) || (s.kind == StepKind::Copy && !copy_now)) {
      keep();
      continue;
    }
    if (s.kind == StepKind::Send) {
      const SendGate::Verdict v = gate_.admit(f, s, e.sends_in_flight);
      if (v == SendGate::Verdict::Stop) sends_stopped = true;
      if (v != SendGate::Verdict::Start || !send_piece_staged(f, i)) {
        keep();
        continue;
      }
    }
    std::uint8_t idle = kIdle;
    if (!f.state[k].compare_exchange_strong(idle, kStarted, std::memory_order_acq_rel)) continue;
    moved = true;
    f.started_ns[k] = futex::now_ns();
    if (s.kind == StepKind::Copy) {  // local: no transport
      copy_now = false;     // the next one in a later round
      run_copy_step(f, i);  // from the send area, or the program's read-only send buffer
      completed(f, i, false, futex::now_ns());
      continue;
    }
    Transport* t = transport_for(s.kind);
    if (!t)
      return Status::error(std::string("internal error: no transport carries ") + step_kind_name(s.kind) + " steps (" +
                           kind_name(f.kind) + " #" + std::to_string(f.sequence) + ")");
    if (Status st = t->start(f, i); !st.ok()) return st;
    if (s.kind == StepKind::Send) ++e.sends_in_flight;
  }
  e.to_start.resize(w);
  return {};
}

Status Executor::poll(bool& moved) {
  moved_ = false;
  for (Entry& e : entries_)
    if (Status s = start_ready(e, moved_); !s.ok()) return s;
  for (auto& t : transports_)
    if (Status s = t->poll(*this); !s.ok()) return s;
  if (!error_.ok()) return error_;
  moved = moved || moved_;
  return {};
}

void Executor::completed(InFlight& f, int i, bool counts, long long now_ns) {
  moved_ = true;
  const Step& s = f.schedule[static_cast<std::size_t>(i)];
  if (lands(s.kind)) {
    if (Status st = publish_step(f, i, now_ns); !st.ok() && error_.ok())
      error_ = std::move(st).with_context(std::string("publishing received data of ") + kind_name(f.kind) + " #" +
                                          std::to_string(f.sequence));
  } else {
    step_done(f, i, now_ns);
  }
  if (s.kind == StepKind::Send) gate_.sent(f, i, now_ns);
  if (f.steps_left.load(std::memory_order_acquire) == 0) gate_.finished(f);
  if (!counts || s.kind != StepKind::Send) return;
  for (Entry& e : entries_)
    if (e.f.get() == &f) {
      --e.sends_in_flight;
      break;
    }
}

std::vector<Started> Executor::release() {
  std::vector<Started> all;
  for (auto& t : transports_) {
    auto some = t->release();
    all.insert(all.end(), some.begin(), some.end());
  }
  for (Entry& e : entries_) e.sends_in_flight = 0;
  return all;
}

void Executor::adopt(const Started& s) {
  if (Transport* t = transport_for(s.f->schedule[static_cast<std::size_t>(s.step)].kind)) t->adopt(s);
}

std::size_t Executor::busy() const {
  std::size_t n = 0;
  for (const auto& t : transports_) n += t->busy();
  return n;
}

Status drive(Executor& ex, FunctionRef<bool()> done, const Waiting& w, bool& timed_out) {
  // The clock is read once every kRoundsPerLook idle rounds: a poll costs less than reading it.
  constexpr int kRoundsPerLook = 64;
  timed_out = false;
  long long last_progress = futex::now_ns();
  bool spun_out = false;
  for (int idle = 0;; ++idle) {
    bool moved = false;
    if (Status s = ex.poll(moved); !s.ok()) return s;
    if (done()) return {};
    if (moved) {
      idle = 0;
      spun_out = false;
      last_progress = -1;  // read again at the next look
      continue;
    }
    if (spun_out && w.yield) sched_yield();
    if (idle % kRoundsPerLook != 0) continue;
    const long long now = futex::now_ns();
    if (last_progress < 0) last_progress = now;
    spun_out = now - last_progress > w.spin_ns;
    if (now - last_progress > w.timeout_ns) {
      timed_out = true;
      return {};
    }
  }
}

}  // namespace tnbc
