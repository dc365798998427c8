#include "runtime/engine.hh"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "runtime/comm_cache.hh"
#include "runtime/cost_probe.hh"
#include "runtime/cpu_share.hh"
#include "runtime/executor.hh"
#include "runtime/fatal.hh"
#include "runtime/futex.hh"
#include "runtime/guard.hh"
#include "runtime/guard_backend.hh"
#include "runtime/inflight.hh"
#include "runtime/log.hh"
#include "runtime/node_gate.hh"
#include "runtime/node_segment.hh"
#include "runtime/pool.hh"
#include "runtime/progress.hh"
#include "runtime/publish.hh"
#include "runtime/send_copy.hh"
#include "runtime/transport.hh"
#include "runtime/uffd.hh"

namespace tnbc {

namespace {

std::atomic<Engine*> g_current{nullptr};

// Tags: each collective on a communicator gets a block of kTagsPerCollective tags (the
// builders keep every step's tag_offset below it).
int base_tag(std::uint64_t sequence, int tag_ub) {
  const std::uint64_t cycle = static_cast<std::uint64_t>(std::max(1, tag_ub / kTagsPerCollective));
  return static_cast<int>(sequence % cycle) * kTagsPerCollective;
}

class EngineImpl final : public Engine {
 public:
  EngineImpl(const Settings& s, Stats& stats, std::unique_ptr<ReadOrderSource> orders)
      : s_(s), stats_(stats), page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))),
        timeout_ns_(s.timeout_s * kNsPerSecond), policy_(make_rules_policy(s, page_, std::move(orders))),
        uffd_(make_uffd_backend(policy_->swap_pages())), protect_(make_protect_backend()) {
    set_abort_flush_us(s.abort_flush_us);
    set_timeout_reporter([](const void* owner) {
      if (owner) report_missing(*static_cast<const InFlight*>(owner));
      end_job();
    });
    if (policy_->node_links())
      comms_.set_node_links([hold = policy_->node_hold_ns(), link = policy_->node_local_on_link()](MPI_Comm comm) {
        return open_node_link(comm, hold, link);
      });
    // Every rank is in MPI_Init now: duplicate MPI_COMM_WORLD here rather than in its first
    // collective (a rank that never reaches that collective would hang the duplication inside
    // MPI, where no timeout can report it).
    PrivateComm& world = comms_.get(MPI_COMM_WORLD, timeout_ns_, "MPI_Init");
    // The backends the policy names, in its order, that work on this machine.
    for (GuardKind k : policy_->guards()) {
      if (k == GuardKind::Userfaultfd && uffd::active()) backends_.push_back(uffd_.get());
      if (k == GuardKind::ProtNone && publication_available()) backends_.push_back(protect_.get());
    }
    if (s.min_bytes) {
      policy_->set_min_bytes(*s.min_bytes);
      stats_.set_threshold({*s.min_bytes, "set", {}, true});
    } else {
      policy_->set_min_bytes(agree_threshold(world.comm, backends_.empty() ? nullptr : backends_.front(), page_, stats_));
    }
    progress_window_ = std::make_unique<WindowGate>(policy_->send_window(Driver::ProgressThread));
    progress_gate_ = std::make_unique<NodeGate>(*progress_window_, &stats_);
    progress_ = std::make_unique<Progress>(s, *progress_gate_);
    caller_window_ = std::make_unique<WindowGate>(policy_->send_window(Driver::CallingThread));
    caller_gate_ = std::make_unique<NodeGate>(*caller_window_, &stats_);
    const CpuShare cpus = measure_cpu_share(world.comm);
    policy_->set_cpu_share(cpus);
    const std::string problem = cpu_share_problem(cpus);
    stats_.set_node(cpus, problem);
    if (!problem.empty() && cpus.node_rank == 0) log(LogLevel::Info, "%s (docs/limitations.md)", problem.c_str());
  }

  int run(const CollCall& c, BlockingCall blocking) override {
    const Collective& coll = collective(c.kind);
    int inter = 0;
    PMPI_Comm_test_inter(c.comm, &inter);
    CallTypes types;
    CallContext ctx{0, 1, page_, &types, policy_.get()};
    PMPI_Comm_rank(c.comm, &ctx.rank);
    PMPI_Comm_size(c.comm, &ctx.size);
    const Collective::Size size = coll.size(c, ctx);
    if (Reason why = policy_->route(c.kind, inter != 0, ctx.size, size.unit); why != Reason::None) {
      const int rc = blocking();
      stats_.record(c.kind, c.site, size.received, Outcome::Passthrough, why);
      return rc;
    }
    const long long t_enter = futex::now_ns();
    const Layout layout = coll.layout(c, ctx);
    const bool in_call = policy_->complete_in_call(layout.shape);
    // The private duplicate is made collectively: never under call_mutex_, which another
    // thread's collective on another communicator may hold while its peers wait for this one.
    PrivateComm& pc = comms_.get(c.comm, timeout_ns_, info(c.kind).mpi_name);
    auto f = std::make_shared<InFlight>();
    f->kind = c.kind;
    f->site = c.site;
    f->pool = &pool_;
    f->recv_pool = &recv_pool_;
    f->comm = pc.comm;
    f->comm_size = pc.size;
    f->times.called = t_enter;
    CallServices services(*this, *f, pc.comm, types);
    Prepared prep;
    if (Status st = coll.prepare(c, layout, in_call, ctx, services, prep); !st.ok()) return detected_error(c, st);

    std::unique_lock lock(call_mutex_);
    const long long t_setup = futex::now_ns();
    f->sequence = pc.next_sequence++;
    f->base_tag = base_tag(f->sequence, pc.tag_ub);
    f->schedule = std::move(prep.schedule);
    f->send_data = prep.send_data;
    f->recv_data = prep.recv_data;
    f->user_recv = prep.user_recv;
    f->unpack = std::move(prep.unpack);
    f->ready_to_run();
    if (pc.node && policy_->node_priorities(c.kind)) node_register(*f, pc.node);
    if (!prep.send_src.empty()) stage_sends(*f, prep.send_src, policy_->lazy_send_copy() && !in_call, page_);
    const long long t_staged = futex::now_ns();
    Reason why = prep.local;
    if (why == Reason::None && f->schedule.count(StepKind::Recv) + f->schedule.count(StepKind::Copy) > 0)
      why = policy_->early_return_pays(c.kind, layout.received) ? hold_back(*f, prep.guard, backends_, page_)
                                                                 : Reason::BelowThreshold;
    if (log_enabled(LogLevel::Debug))
      log(LogLevel::Debug, "%s #%llu: set-up %.3f ms, staging %.3f ms, guard %.3f ms (%zu regions, %s)", kind_name(c.kind),
          static_cast<unsigned long long>(f->sequence), (t_setup - t_enter) / 1e6, (t_staged - t_setup) / 1e6,
          (futex::now_ns() - t_staged) / 1e6, f->region_count, f->guard ? f->guard->probe_name() : "not guarded");
    lock.unlock();
    return why == Reason::None ? return_early(f, c, layout.received) : complete_in_call(f, why, c, layout.received, pc.comm);
  }

  void fence(ByteRange r, const char* what) override { fence_range(r.lo, r.hi, Access::MpiCall, what); }

  void complete_all() override { fence_all("a fence"); }

  void drain() override { drain_or_end("before a communicator is freed (MPI_Comm_free)"); }

  void shutdown() override {
    complete_all();
    drain_or_end("in MPI_Finalize");
    stats_.set_thread_cpu(progress_->cpu_seconds(), uffd::listener_cpu_seconds());
    progress_->stop();
    g_current.store(nullptr);
  }

 private:
  static constexpr long long kNsPerSecond = 1000 * 1000 * 1000;

  // What the engine lends a collective while it prepares a call.
  class CallServices final : public Services {
   public:
    CallServices(EngineImpl& e, InFlight& f, MPI_Comm comm, Types& types) : e_(e), f_(f), comm_(comm), types_(types) {}
    TypeInfo type(MPI_Datatype t) override { return types_.type(t); }
    ByteRange span(const void* buf, long long count, MPI_Datatype t) override { return types_.span(buf, count, t); }
    void fence(const void* buf, long long count, MPI_Datatype t) override {
      if (guards().empty()) return;  // nothing in flight is guarded: no span to compute
      e_.fence(span_of(buf, count, t), "a collective on a guarded buffer");
    }
    char* send_area(std::size_t bytes) override {
      f_.send_block = e_.pool_.acquire(bytes);
      return f_.send_block.data;
    }
    // At the offset of `user` in its pages, so that whole pages can move between the two.
    char* recv_area(std::size_t bytes, const void* user) override {
      const std::size_t shift = reinterpret_cast<std::uintptr_t>(user) % e_.page_;
      f_.recv_block = e_.recv_pool_.acquire(bytes + shift);
      return f_.recv_block.data ? f_.recv_block.data + shift : nullptr;
    }
    Status pack(const void* src, long long count, MPI_Datatype t, char* dst, std::size_t bytes) override {
      if (bytes == 0) return {};
      if (types_.type(t).dense) {
        std::memcpy(dst, src, bytes);
        return {};
      }
      int pos = 0;
      const int rc = PMPI_Pack(src, static_cast<int>(count), t, dst, static_cast<int>(bytes), &pos, comm_);
      if (rc != MPI_SUCCESS) return Status::error("MPI_Pack into tnbc's staging failed: " + mpi_error_text(rc), rc);
      return {};
    }
    Policy& policy() override { return *e_.policy_; }

   private:
    EngineImpl& e_;
    InFlight& f_;
    MPI_Comm comm_;
    Types& types_;
  };

  // The part of an early return done in the call: the calling thread starts the receives of the
  // steps that touch partial pages and every edge send (small, and what other ranks wait for in
  // their calls), so this path does not depend on when the progress threads get a CPU; it
  // returns once its receives are in and its sends started. The progress thread runs the rest
  // and takes over the sends still in flight.
  int return_early(const std::shared_ptr<InFlight>& fp, const CollCall& c, std::uint64_t bytes) {
    InFlight& f = *fp;
    const std::size_t n = f.schedule.size();
    f.by_caller.assign(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      const Step& s = f.schedule[i];
      if (lands(s.kind)) {
        f.by_caller[i] = i < f.in_call.size() && f.in_call[i];
      } else if (s.kind == StepKind::Send && s.edge) {
        bool after_in_call = true;
        for (int d : f.schedule.after(i)) after_in_call = after_in_call && f.by_caller[static_cast<std::size_t>(d)];
        f.by_caller[i] = after_in_call;
      }
    }
    auto caller_part_done = [&] {
      for (std::size_t i = 0; i < n; ++i) {
        if (!f.by_caller[i]) continue;
        const std::uint8_t st = f.state[i].load(std::memory_order_acquire);
        if (lands(f.schedule[i].kind) ? st != kDone : st == kIdle) return false;
      }
      return true;
    };
    Executor& mine = caller_executor();
    mine.add(fp, Scope::Caller);
    f.bodies_released.store(false);
    bool moved = false;
    if (Status st = mine.poll(moved); !st.ok()) fail_in_call(f, st);
    progress_->submit(fp);
    const long long t_submit = futex::now_ns();
    bool timed_out = false;
    if (Status st = drive(mine, caller_part_done, policy_->waiting(), timed_out); !st.ok()) fail_in_call(f, st);
    if (timed_out) timeout_in_call(f);
    progress_->adopt(mine.release());
    mine.clear();
    f.bodies_released.store(true);
    urgency().poke();
    const long long now = futex::now_ns();
    f.times.returned = now;
    if (log_enabled(LogLevel::Debug))
      log(LogLevel::Debug, "%s #%llu: in-call wait %.3f ms, %.3f ms in the call", kind_name(c.kind),
          static_cast<unsigned long long>(f.sequence), (now - t_submit) / 1e6, (now - f.times.called) / 1e6);
    if (f.guard) ensure_signal_stack();
    stats_.record(c.kind, c.site, bytes, Outcome::EarlyReturn, Reason::None);
    stats_.record_in_call(now - f.times.called);
    if (f.guard) stats_.record_guard(f.guard->stats_kind());
    if (f.swapped) stats_.record_guard(Stats::GuardUsed::UserfaultfdMoved);
    return MPI_SUCCESS;
  }

  // The calling thread runs every step itself (sends included) and returns when all are done.
  int complete_in_call(const std::shared_ptr<InFlight>& fp, Reason why, const CollCall& c, std::uint64_t bytes,
                       MPI_Comm comm) {
    InFlight& f = *fp;
    Executor& mine = caller_executor();
    mine.add(fp, Scope::All);
    bool timed_out = false;
    const Status st =
        drive(mine, [&] { return f.steps_left.load(std::memory_order_acquire) == 0; }, policy_->waiting(), timed_out);
    if (!st.ok()) fail_in_call(f, st);
    if (timed_out) timeout_in_call(f);
    mine.clear();
    retire_send_regions(f);  // a lazy send copy's read-only pages (every piece is copied by now)
    for (const Unpack& u : f.unpack) {
      int pos = 0;
      const int rc = PMPI_Unpack(f.recv_data + u.offset, static_cast<int>(u.bytes), &pos, u.user, static_cast<int>(u.count),
                                 u.type, comm);
      if (rc != MPI_SUCCESS) fail_in_call(f, Status::error("MPI_Unpack from tnbc's staging failed: " + mpi_error_text(rc), rc));
    }
    f.times.returned = futex::now_ns();
    stats_.record(c.kind, c.site, bytes, Outcome::CompletedInCall, why);
    return MPI_SUCCESS;
  }

  // The calling thread's executor, kept for all its calls (its request arrays stay allocated).
  Executor& caller_executor() {
    thread_local std::unique_ptr<Executor> mine;
    if (!mine) mine = std::make_unique<Executor>(*caller_gate_, default_transports());
    return *mine;
  }

  // An error tnbc found in the call before starting anything (type signatures that differ, no
  // memory for staging): through the communicator's error handler, as MPI's own errors go.
  // MPI_ERRORS_ARE_FATAL ends the job after tnbc's message; MPI_ERRORS_RETURN returns the code.
  int detected_error(const CollCall& c, const Status& st) {
    MPI_Errhandler h = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(c.comm, &h);
    const bool returns = h == MPI_ERRORS_RETURN;
    if (h != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&h);
    log(returns ? LogLevel::Warn : LogLevel::Error, "%s%s", st.message().c_str(),
        returns ? " (the error code goes back to the program: MPI_ERRORS_RETURN)" : "");
    const bool types = st.code() == MPI_ERR_TRUNCATE || st.code() == MPI_ERR_TYPE;
    stats_.record(c.kind, c.site, 0, Outcome::CompletedInCall, types ? Reason::ReceiveTypeMismatch : Reason::Disabled);
    PMPI_Comm_call_errhandler(c.comm, st.code());
    return st.code();
  }

  // An error while running the schedule (MPI failed one of tnbc's messages): the other ranks'
  // calls wait for messages that will not come, so the job ends, with what was missing.
  [[noreturn]] void fail_in_call(const InFlight& f, const Status& st) {
    log(LogLevel::Error, "inside %s: %s", kind_name(f.kind), st.message().c_str());
    report_missing(f);
    end_job();
  }

  // The calling thread waited TNBC_TIMEOUT inside a collective: says what is missing, ends the job.
  [[noreturn]] void timeout_in_call(const InFlight& f) {
    log(LogLevel::Error, "timeout (TNBC_TIMEOUT=%llds) inside %s: data from other ranks did not arrive",
        static_cast<long long>(s_.timeout_s), kind_name(f.kind));
    report_missing(f);
    end_job();
  }

  // Waits until every collective in flight has finished, sends included; after TNBC_TIMEOUT
  // says what is missing and ends the job.
  void drain_or_end(const char* when) {
    if (on_progress_thread() || progress_->drain(timeout_ns_)) return;
    log(LogLevel::Error, "timeout (TNBC_TIMEOUT=%llds) %s: collectives still in flight, their peers never "
                         "took or sent their part:", static_cast<long long>(s_.timeout_s), when);
    progress_->for_each_in_flight([](const InFlight& f) { report_missing(f); });
    end_job();
  }

  Settings s_;
  Stats& stats_;
  std::size_t page_;
  long long timeout_ns_;
  std::unique_ptr<Policy> policy_;
  std::unique_ptr<GuardBackend> uffd_, protect_;
  std::vector<GuardBackend*> backends_;  // usable here, in the policy's order
  Pool pool_;       // send staging (kept populated)
  Pool recv_pool_;  // receive staging (emptied by page swapping; InFlight::recv_pool)
  CommCache comms_;
  // Each driver's send gate: its window, inside node-level priorities (which admit at once
  // what they do not arbitrate). The gates outlive the progress thread (declared before it).
  std::unique_ptr<WindowGate> progress_window_, caller_window_;
  std::unique_ptr<NodeGate> progress_gate_, caller_gate_;
  std::unique_ptr<Progress> progress_;
  std::mutex call_mutex_;
};

}  // namespace

Engine* Engine::current() { return g_current.load(); }

std::unique_ptr<Engine> Engine::create(const Settings& s, Stats& stats, std::unique_ptr<ReadOrderSource> orders) {
  if (s.guard != GuardChoice::Protect)
    if (Status st = uffd::start(); !st.ok())
      log(s.guard == GuardChoice::Uffd ? LogLevel::Warn : LogLevel::Info,
          "%s: guarding receive buffers with PROT_NONE instead of userfaultfd", st.message().c_str());
  if (!uffd::active() && !publication_available())
    log(LogLevel::Warn, "/proc/self/mem is not writable here: receive buffers cannot be guarded, "
                        "collectives complete before returning");
  if (uffd::active() && !uffd::kernel_faults_wait())
    log(LogLevel::Info, "userfaultfd in user-mode-only mode: system calls on a guarded buffer are fenced");
  auto e = std::make_unique<EngineImpl>(s, stats, std::move(orders));
  install_fault_handler(s.timeout_s * 1000000000LL);
  // A child process has no progress thread: complete every guarded buffer before fork().
  static bool atfork_registered = false;
  if (!atfork_registered) {
    atfork_registered = true;
    pthread_atfork([] { fence_all("fork()"); }, nullptr, nullptr);
  }
  g_current.store(e.get());
  return e;
}

}  // namespace tnbc
