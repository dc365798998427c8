#include "runtime/engine.hh"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <vector>

#include "runtime/bulk_copy.hh"
#include "runtime/comm_cache.hh"
#include "runtime/cpu_share.hh"
#include "runtime/executor.hh"
#include "runtime/fatal.hh"
#include "runtime/futex.hh"
#include "runtime/guard.hh"
#include "runtime/guard_backend.hh"
#include "runtime/inflight.hh"
#include "runtime/log.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/startup.hh"
#include "runtime/mpi_threads.hh"
#include "runtime/observe.hh"
#include "runtime/site_trial.hh"
#include "runtime/node_gate.hh"
#include "runtime/node_segment.hh"
#include "runtime/placement.hh"
#include "runtime/pool.hh"
#include "runtime/progress.hh"
#include "runtime/publish.hh"
#include "runtime/rma_transport.hh"
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

// Opens a region of an observed call held back until its first touch (Region::observe,
// runtime/observe.hh): the guard table's opener. Ends the job if the kernel refuses (the data
// could never be seen).
void open_observed(Region* r) {
  auto& f = *static_cast<InFlight*>(const_cast<void*>(r->owner));
  // PROT_NONE: one mprotect (async-signal-safe: the SIGSEGV handler may be here); userfaultfd:
  // the listener or a fencing thread moves or copies the pages in.
  if (!open_region(f, *r).ok()) {
    log_raw("giving received data back to the program failed (mprotect or userfaultfd refused); the data "
            "cannot be seen, ending the job");
    end_job();
  }
  // Sequentially consistent as in publish_step (the waiters' pairing); observed calls are rare,
  // so every waiter is woken without looking at the count.
  r->published.store(1, std::memory_order_seq_cst);
  f.regions_remaining.fetch_sub(1, std::memory_order_acq_rel);
  publish_word().fetch_add(1, std::memory_order_seq_cst);
  futex::wake_all(publish_word());
  urgency().poke();  // the progress thread retires the call once its last region is open
}

class EngineImpl final : public Engine {
 public:
  EngineImpl(const Settings& s, Stats& stats, std::unique_ptr<ReadOrderSource> orders)
      : s_(s), stats_(stats), page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))),
        timeout_ns_(s.timeout_s * kNsPerSecond), trial_rule_(trial_rule(s)),
        agree_(trial_rule_.calls > 0 && s.site_trial_agree == Switch::On),
        policy_(make_policy(s, page_, std::move(orders))),
        uffd_(make_uffd_backend(policy_->swap_pages())), protect_(make_protect_backend()),
        pool_(s.staging_huge_pages == Switch::On), recv_pool_(s.staging_huge_pages == Switch::On) {
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
    const MpiThreads threads = mpi_threads();
    policy_->set_thread_progress(threads.progress);
    // The node's CPUs and ranks before the model starts: a broadcast's send window (and the
    // model's price of it) depends on whether the run spans nodes.
    CpuShare cpus = measure_cpu_share(world.comm);
    policy_->set_cpu_share(cpus);
    if (int rank = 0; PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS && rank == 0) {
      const int w = bcast_send_window(s_, threads.progress, cpus.one_node());
      const std::string mpi = threads.transport.empty() ? "MPI library not recognised"
                              : threads.progress != ThreadProgress::Unknown
                                  ? threads.transport
                                  : threads.transport + " (whether it lets a second thread's calls through while the "
                                                        "program waits is not measured)";
      if (w > 0) log(LogLevel::Info, "%s: a broadcast's root and forwarding ranks send through their progress thread, "
                     "%d piece(s) at a time (TNBC_BCAST_SEND_WINDOW)", mpi.c_str(), w);
      else log(LogLevel::Info, "%s: a broadcast's root whose progress thread shares its CPU starts its sends in the call "
               "(TNBC_BCAST_SEND_WINDOW%s)", mpi.c_str(), cpus.one_node() ? "; every rank on one node" : "");
    }
    start_model(world.comm);
    const NodeTurn turn = node_turn_rule();
    progress_window_ = std::make_unique<WindowGate>(0);
    set_windows(*progress_window_, Driver::ProgressThread);
    progress_gate_ = std::make_unique<NodeGate>(*progress_window_, &stats_, turn);
    // Each finished early return goes into the summary from the progress thread.
    progress_ = std::make_unique<Progress>(s, *progress_gate_,
                                           [this](InFlight& f) { stats_.complete(f.kind, f.site, completion_of(f)); });
    caller_window_ = std::make_unique<WindowGate>(0, /*holds_bodies=*/false);
    set_windows(*caller_window_, Driver::CallingThread);
    caller_gate_ = std::make_unique<NodeGate>(*caller_window_, &stats_, turn);
    place_progress_thread(cpus);
    policy_->set_cpu_share(cpus);  // again: the send window depends on where the thread runs
    set_windows(*progress_window_, Driver::ProgressThread);
    progress_->set_yield(policy_->waiting().yield);
    const std::string problem = cpu_share_problem(cpus);
    stats_.set_node(cpus, problem);
    if (!problem.empty() && cpus.node_rank == 0) log(LogLevel::Info, "%s (docs/limitations.md)", problem.c_str());
    if (s.bcast_backend != BcastBackend::P2p) check_rma(world);
  }

  // Moves the progress thread where the policy says (TNBC_PROGRESS_CPUS): a rank bound to one CPU
  // would share it between its computation and its messages, while its node has CPUs to spare.
  // Only tnbc's thread moves; the program's threads (and those it creates) keep their binding.
  void place_progress_thread(CpuShare& cpus) {
    cpu_set_t want = cpus.own_set;
    switch (policy_->progress_cpus(cpus)) {
      case ProgressCpus::Rank: break;
      case ProgressCpus::Node: want = cpus.node_set; break;
      case ProgressCpus::Allowed:
      case ProgressCpus::Auto:
        for (int k = 0; k < CPU_SETSIZE; ++k) CPU_SET(k, &want);  // the kernel keeps the cpuset's
        break;
    }
    const cpu_set_t got = progress_->place(want);
    cpus.progress_cpus = CPU_COUNT(&got);
    cpus.progress_on_own_cpu = CPU_COUNT(&got) == 1 && CPU_EQUAL(&got, &cpus.own_set);
    progress_->set_shares_caller_cpu(progress_takes_callers_cpu(cpus));
    if (cpus.node_rank == 0)
      log(LogLevel::Info, "the progress thread runs on CPUs %s (the rank's binding: %s; TNBC_PROGRESS_CPUS)",
          cpu_list(got).c_str(), cpu_list(cpus.own_set).c_str());
  }

  int run(const CollCall& c, BlockingCall blocking) override {
    const long long t_enter = futex::now_ns();
    SiteCounters& site = stats_.site(c.kind, c.site);
    const Collective& coll = collective(c.kind);
    int inter = 0;
    PMPI_Comm_test_inter(c.comm, &inter);
    static const model::Topology kNone;  // an intercommunicator's: it runs as MPI anyway
    const model::Topology& topo = inter ? kNone : comms_.topology(c.comm, model_->world);
    CallTypes types;
    CallContext ctx{0, 1, page_, &types, policy_.get(), &topo};
    PMPI_Comm_rank(c.comm, &ctx.rank);
    PMPI_Comm_size(c.comm, &ctx.size);
    const Collective::Size size = coll.size(c, ctx);
    if (Reason why = policy_->route(c.kind, inter != 0, topo, size.unit); why != Reason::None) {
      const int rc = blocking();
      stats_.record(site, {size.received, size.sent, Outcome::Passthrough, why, t_enter, futex::now_ns()});
      return rc;
    }
    const Layout layout = coll.layout(c, ctx);
    // Mode optimize: every rank runs this call as the MPI library's own (no overlap to gain
    // wherever the profile saw it with these sizes: a global answer).
    if (Reason why = policy_->route_call(layout.shape); why != Reason::None) {
      const int rc = blocking();
      stats_.record(site, {size.received, size.sent, Outcome::Passthrough, why, t_enter, futex::now_ns()});
      return rc;
    }
    // The private duplicate is made collectively: never under call_mutex_, which another
    // thread's collective on another communicator may hold while its peers wait for this one.
    PrivateComm& pc = comms_.get(c.comm, timeout_ns_, info(c.kind).mpi_name);
    // The calls every rank's site trial completes in the call: the library's own, agreed by the
    // communicator's ranks (runtime/call_vote.hh).
    long long voted_ns = 0;  // the vote's wait for the communicator's other ranks, where one is taken
    const int key = agree_ ? agreement_key(pc, c, size.unit, voted_ns) : -1;
    if (pc.agreement.plain(key)) {
      pc.agreement.record(key, c.site.return_address, true);
      static constexpr const char* kAgreed = "a collective the ranks agreed to run as the MPI library's own";
      fence(layout.recv_extent, kAgreed);  // an earlier early return's data must be in first
      for (const ByteRange& r : layout.send_spans) fence(r, kAgreed);
      const int rc = blocking();
      stats_.record(site,
                    {size.received, size.sent, Outcome::Passthrough, Reason::AgreedPlain, t_enter, futex::now_ns()});
      return rc;
    }
    // It completes in the call where the profile found no overlap to gain at its site (mode
    // optimize) or where it receives too little here to return early (below_threshold: in mode
    // nbc a size at which tnbc's schedule completed in the call beats the library's call,
    // model::own_call_bands, or an Alltoallv's small share): prepared so, it sends from the
    // program's buffer and receives into it where the layout allows, with no staging.
    const bool chosen_in_call = policy_->complete_in_call(layout.shape);
    // Asked of every other call, also one that receives nothing here (only sends after the
    // return): where no size pays for the kind, none returns early.
    const bool pays = !chosen_in_call && policy_->early_return_pays(c.kind, layout.received, topo);
    // A call the site's trial completes in the call (runtime/site_trial.hh): mode nbc, and mode
    // optimize at sites its profile cannot judge (they return early on no evidence).
    const bool may_try = pays && !policy_->judged_last();
    TrialRule rule = trial_rule_;
    rule.lean_in_call = may_try && policy_->leans_in_call_last();
    const TrialRun trial = site.trial.enter(site.calls, t_enter, may_try, rule, trial_turn_);
    const bool in_call = !pays || trial != TrialRun::Early;
    if (key >= 0)
      pc.agreement.record(key, c.site.return_address,
                          (trial == TrialRun::Verdict || trial == TrialRun::Lean) &&
                              !own_call_faster(c, ctx, topo, layout));
    auto f = std::make_shared<InFlight>();
    f->kind = c.kind;
    f->site = c.site;
    f->call_index = site.calls;
    // The 1st, 2nd, 4th, ... early return at the site that receives here (a call that does not
    // return early leaves the count, so the next one is asked again; a broadcast's root has
    // nothing to observe: SiteCounters::sampled_from).
    // A trial's calls are not observed: an observed call costs more, and the trial times them.
    const bool sampled = !in_call && layout.receives && take_sample(site.sampled_from, s_.timeline_calls);
    f->observe = sampled && !site.trial.timing() && progress_->parked() < kMaxParkedCalls;
    f->pool = &pool_;
    f->recv_pool = &recv_pool_;
    f->comm = pc.comm;
    f->comm_size = pc.size;
    f->times.called = t_enter;
    // The call's copies (the send pieces and the own block, eager) stream past the cache when
    // together they exceed it: decided once for both (at 1 MiB per peer, np 2, each alone fits L2
    // and was copied by memcpy into cold staging; docs/benchmarks.md, core efficiency, session 14).
    const bool stream = streams(layout.sent);
    CallServices services(*this, *f, pc, types, stream);
    Prepared prep;
    if (Status st = coll.prepare(c, layout, in_call, ctx, services, prep); !st.ok()) return detected_error(c, site, st, t_enter);
    if (c.kind == Kind::Bcast) stats_.record_bcast_backend(services.backend());

    std::unique_lock lock(call_mutex_);
    const long long t_setup = futex::now_ns();
    f->sequence = pc.next_sequence++;
    f->base_tag = base_tag(f->sequence, pc.tag_ub);
    f->schedule = std::move(prep.schedule);
    if (f->schedule.count(StepKind::Await) > 0) f->rma = rma_begin(pc, c.root, static_cast<std::size_t>(layout.received));
    f->send_data = prep.send_data;
    f->recv_data = prep.recv_data;
    f->user_recv = prep.user_recv;
    f->unpack = std::move(prep.unpack);
    f->ready_to_run();
    if (pc.node) {
      const NodeChoice node = policy_->node_priorities(layout.shape, topo, node_link_senders(*pc.node));
      if (node.on) node_register(*f, pc.node, node);
      else stats_.record_node(c.kind, c.site, {false, node});
    }
    if (!prep.send_src.empty()) {
      const StagedCopies staged = stage_sends(*f, prep.send_src, !in_call && policy_->lazy_send_copy(layout.sent), page_, stream);
      if (staged.pieces > 0) {
        const double each = static_cast<double>(staged.bytes) / static_cast<double>(staged.pieces);
        stats_.record_call_copy(staged.pieces, staged.bytes, staged.ns,
                                static_cast<double>(staged.pieces) * copy_price(each, c.kind == Kind::Bcast));
      }
    }
    const long long t_staged = futex::now_ns();
    Reason why = chosen_in_call                ? Reason::NoOverlapToGain
                 : prep.local != Reason::None  ? prep.local
                 : !pays                       ? Reason::BelowThreshold
                 : trial == TrialRun::TrialCall ? Reason::SiteTrial
                 : trial == TrialRun::Verdict   ? Reason::EarlyReturnSlower
                 : trial == TrialRun::Lean      ? Reason::PricedLoss
                                                : Reason::None;
    if (why == Reason::None &&
        (f->schedule.count(StepKind::Recv) + f->schedule.count(StepKind::Copy) > 0 || f->schedule.landing_with_bytes() > 0))
      why = hold_back(*f, prep.guard, backends_for(static_cast<double>(layout.received)), page_);
    if (log_enabled(LogLevel::Debug))
      log(LogLevel::Debug, "%s #%llu: set-up %.3f ms (copies into place %.3f ms), staging %.3f ms, guard %.3f ms (%zu regions, %s)",
          kind_name(c.kind), static_cast<unsigned long long>(f->sequence), (t_setup - t_enter) / 1e6,
          services.packed_ns() / 1e6, (t_staged - t_setup) / 1e6, (futex::now_ns() - t_staged) / 1e6, f->region_count,
          f->guard ? f->guard->probe_name() : "not guarded");
    lock.unlock();
    const CallEntry record{size.received, size.sent, Outcome::EarlyReturn, Reason::None, t_enter, 0, voted_ns};
    return why == Reason::None ? return_early(f, c, site, record) : complete_in_call(f, why, site, record, pc.comm);
  }

  void fence(ByteRange r, const char* what) override { fence_range(r.lo, r.hi, Access::MpiCall, what); }

  void complete_all() override { fence_all("a fence"); }

  void drain() override { drain_for("before a communicator is freed (MPI_Comm_free)"); }
  void drain_for(const char* when) {
    complete_all();  // regions held back for observation open here; the drain then waits for sends
    drain_or_end(when);
  }

  void shutdown() override {
    complete_all();
    drain_or_end("in MPI_Finalize");
    rma_release_all();
    stats_.set_thread_cpu(progress_->cpu_seconds(), uffd::listener_cpu_seconds());
    say_copy_price();
    progress_->stop();
    g_current.store(nullptr);
  }

 private:
  static constexpr long long kNsPerSecond = 1000 * 1000 * 1000;
  // staging(): how long a call waits for the progress thread's round before it maps fresh
  // staging, where no machine file prices fresh pages (memcpy_cold): the round itself takes tens
  // of us; a progress thread that does not get the CPU within this costs the call no more than
  // ~100 fresh pages would on the VMs here.
  static constexpr long long kSettleUnpricedNs = 1000 * 1000;
  // say_copy_price(): the run's copies this far off the machine file's price (either way) are
  // worth a word: beyond the spread of one machine's launches (this VM's two copy rates are
  // 1.6-1.8x apart, docs/benchmarks.md "Session 22"; a word each time would only say that), where
  // a file from another machine can be anything. Over at least this many copies.
  static constexpr double kCopyPriceNote = 2;
  static constexpr std::uint64_t kCopyPriceMinCopies = 8;

  // What the engine lends a collective while it prepares a call.
  class CallServices final : public Services {
   public:
    CallServices(EngineImpl& e, InFlight& f, PrivateComm& pc, Types& types, bool stream)
        : e_(e), f_(f), pc_(pc), comm_(pc.comm), types_(types), stream_(stream) {}
    TypeInfo type(MPI_Datatype t) override { return types_.type(t); }
    std::size_t size(MPI_Datatype t) override { return types_.size(t); }
    ByteRange span(const void* buf, long long count, MPI_Datatype t) override { return types_.span(buf, count, t); }
    void fence(const void* buf, long long count, MPI_Datatype t) override {
      if (guards().empty()) return;  // nothing in flight is guarded: no span to compute
      e_.fence(span_of(buf, count, t), "a collective on a guarded buffer");
    }
    char* send_area(std::size_t bytes) override {
      f_.send_block = e_.staging(e_.pool_, bytes);
      return f_.send_block.data;
    }
    // At the offset of `user` in its pages, so that whole pages can move between the two.
    char* recv_area(std::size_t bytes, const void* user) override {
      const std::size_t shift = reinterpret_cast<std::uintptr_t>(user) % e_.page_;
      f_.recv_block = e_.staging(e_.recv_pool_, bytes + shift);
      return f_.recv_block.data ? f_.recv_block.data + shift : nullptr;
    }
    Status pack(const void* src, long long count, MPI_Datatype t, char* dst, std::size_t bytes) override {
      if (bytes == 0) return {};
      if (types_.type(t).dense) {
        // Into place (the own block, sends packed at once, a broadcast root's staging): cold, not
        // read in the call.
        const long long t0 = futex::now_ns();
        bulk_copy(dst, src, bytes, stream_ || streams(bytes));
        const long long took = futex::now_ns() - t0;
        packed_ns_ += took;
        // A broadcast's only copy, its root's staging, priced as the model prices it: the root
        // copies alone (Machine::in_call_copy_alone; stage_sends prices a broadcast's pieces so).
        e_.stats_.record_call_copy(1, bytes, took, e_.copy_price(static_cast<double>(bytes), f_.kind == Kind::Bcast));
        // (streamed even though the program reads it next: a memcpy that kept it cached cost the call
        // 0.15-0.2 ms more and gained nothing, Table 1 (c) in order self; docs/benchmarks.md, session 10)
        return {};
      }
      int pos = 0;
      const int rc = PMPI_Pack(src, static_cast<int>(count), t, dst, static_cast<int>(bytes), &pos, comm_);
      if (rc != MPI_SUCCESS) return Status::error("MPI_Pack into tnbc's staging failed: " + mpi_error_text(rc), rc);
      return {};
    }
    Policy& policy() override { return *e_.policy_; }
    // The policy's choice; an RMA one needs the communicator's windows (made or grown here,
    // collectively: every rank asks with the same size). Where they cannot be had, p2p, said once.
    BcastBackend bcast_backend(std::size_t bytes, const model::Topology& comm) override {
      backend_ = e_.policy_->bcast_backend(bytes, comm);
      if (backend_ == BcastBackend::P2p) return backend_;
      if (Status st = rma_ensure(pc_, bytes, [this] { e_.drain_for("before an RMA broadcast window grows"); }); !st.ok()) {
        if (!e_.rma_fallback_said_.exchange(true))
          log(LogLevel::Warn, "%s: broadcasts on this communicator use point-to-point messages instead of RMA "
                              "(TNBC_BCAST_BACKEND)", st.message().c_str());
        backend_ = BcastBackend::P2p;
      }
      return backend_;
    }
    // What bcast_backend() answered (a broadcast asks once per call).
    BcastBackend backend() const { return backend_; }
    // The time pack() spent copying dense data into place (the own block; the debug log's breakdown).
    long long packed_ns() const { return packed_ns_; }

   private:
    EngineImpl& e_;
    InFlight& f_;
    PrivateComm& pc_;
    MPI_Comm comm_;
    Types& types_;
    bool stream_;  // the call's copies bypass the cache (streams() of all they move)
    BcastBackend backend_ = BcastBackend::P2p;
    long long packed_ns_ = 0;
  };

  // The part of an early return done in the call: the calling thread starts the receives of the
  // steps that touch partial pages and every edge send (small, and what other ranks wait for in
  // their calls), so this path does not depend on when the progress threads get a CPU; it
  // returns once its receives are in and its sends started. Where the policy says so
  // (caller_starts_sends: a broadcast's root whose progress thread shares its only CPU) it
  // starts every ready send, bodies too, unless node-level priorities pace them. The progress
  // thread runs the rest and takes over the sends still in flight.
  int return_early(const std::shared_ptr<InFlight>& fp, const CollCall& c, SiteCounters& site, CallEntry record) {
    InFlight& f = *fp;
    const std::size_t n = f.schedule.size();
    const bool all_sends = !f.node.link && policy_->caller_starts_sends(f.send_role);
    f.by_caller.assign(n, false);
    for (std::size_t i = 0; i < n; ++i) {
      const Step& s = f.schedule[i];
      if (lands(s.kind)) {
        f.by_caller[i] = i < f.in_call.size() && f.in_call[i];
      } else if (s.kind == StepKind::Send && (s.edge || all_sends)) {
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
    // Point-to-point: not woken yet. Nothing the call waits for is the progress thread's (the
    // in-call receives are this thread's, peers' edge sends their calling threads'), and woken now
    // it would take this thread's CPU while it is in the call (a rank bound to one CPU). The poke
    // below, once the call is done, wakes it (a thread already polling takes the call at its next
    // round). An RMA broadcast's in-call landing may wait for this rank's own Flag steps: woken.
    progress_->submit(fp, /*wake=*/f.rma != nullptr);  // f.rma: set for every one-sided schedule
    const long long t_submit = futex::now_ns();
    bool timed_out = false;
    bool waited = false;
    // Usually the first poll above did the caller's part (edge sends started, no partial pages to
    // receive): then no further poll here. Each one runs MPI's progress engine, which takes in
    // whatever of the peers' data has arrived meanwhile — the progress thread's work, not the call's.
    if (!caller_part_done()) {
      waited = true;
      if (Status st = drive(mine, caller_part_done, policy_->waiting(), timed_out); !st.ok()) fail_in_call(f, st);
    }
    if (timed_out) timeout_in_call(f);
    // Bodies released before the hand-over wakes the progress thread: from then on a progress
    // thread on this thread's only CPU yields to it until it has returned (runtime/progress.hh).
    f.bodies_released.store(true);
    progress_->adopt(mine.release());
    mine.clear();
    urgency().poke();
    const long long now = futex::now_ns();
    f.times.returned.store(now, std::memory_order_release);  // the progress thread may retire it now
    if (log_enabled(LogLevel::Debug))
      log(LogLevel::Debug, "%s #%llu: in-call wait %.3f ms, %.3f ms in the call", kind_name(c.kind),
          static_cast<unsigned long long>(f.sequence), (now - t_submit) / 1e6, (now - f.times.called) / 1e6);
    if (f.guard) ensure_signal_stack();
    record.returned_ns = now;
    if (waited) record.waited_in_call_ns += now - t_submit;
    stats_.record(site, record);
    if (f.guard) stats_.record_guard(f.guard->stats_kind());
    if (f.swapped) stats_.record_guard(Stats::GuardUsed::UserfaultfdMoved);
    return MPI_SUCCESS;
  }

  // The calling thread runs every step itself (sends included) and returns when all are done.
  int complete_in_call(const std::shared_ptr<InFlight>& fp, Reason why, SiteCounters& site, CallEntry record,
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
    record.returned_ns = futex::now_ns();
    f.times.returned.store(record.returned_ns, std::memory_order_release);
    record.outcome = Outcome::CompletedInCall;
    record.reason = why;
    stats_.record(site, record);
    return MPI_SUCCESS;
  }

  // The policy's send windows for one driver's gate, per role of the rank's sends.
  void set_windows(WindowGate& g, Driver d) const {
    for (std::size_t r = 0; r < kSendRoleCount; ++r)
      g.set_window(static_cast<SendRole>(r), policy_->send_window(d, static_cast<SendRole>(r)));
  }

  // The calling thread's executor, kept for all its calls (its request arrays stay allocated).
  Executor& caller_executor() {
    thread_local std::unique_ptr<Executor> mine;
    if (!mine) mine = std::make_unique<Executor>(*caller_gate_, default_transports());
    return *mine;
  }

  // When a rank's turn on its node's link passes (runtime/node_turn.hh): the link's G from the
  // model (the inter-node level; on one node, whose ranks reach each other over a link only with
  // TNBC_NODE_LOCAL_SENDS=link, the intra-node one), the buffered-send size from that level of the
  // machine file, else from the kernel.
  NodeTurn node_turn_rule() {
    if (!policy_->node_links() || !model_) return {};
    const bool nodes = model_->world.nodes() > 1;
    const NodeTurn t = node_turn(model_->machine.at(nodes ? model::LevelKind::InterNode : model::LevelKind::IntraNode),
                                 kernel_send_buffer_bytes());
    stats_.add_block("node_turn", [t] { return t.json(); });
    return t;
  }

  // The guard backends a call receiving `bytes` tries, in order: PROT_NONE first where the engine
  // takes it per call and the machine file prices it cheaper at that size (model::by_size_pays).
  const std::vector<GuardBackend*>& backends_for(double bytes) const {
    return guard_by_size_ >= 0 && model::by_size_pays(model_->machine, guard_runs_, guard_by_size_, bytes) ? protect_first_
                                                                                                          : backends_;
  }

  // A call's staging: a block the pool holds; else, while collectives are still in flight, the
  // progress thread gets the CPU to finish its round first (one whose steps are done gives its
  // blocks back: on a CPU it shares with this caller, it may not have run since the reader it
  // woke took that CPU), for at most what fresh pages would cost; else fresh pages, whose first
  // touches fault (~10 us a page on the VMs here: 3.6 ms in the call at 2 MiB,
  // docs/benchmarks.md "Session 56").
  Block staging(Pool& pool, std::size_t bytes) {
    if (Block b = pool.reuse(bytes); b.data) return b;
    const long long start = futex::now_ns(), deadline = start + fresh_pages_ns(bytes);
    Block b;
    if (progress_->in_flight()) {
      while (!b.data && progress_->settle(deadline)) b = pool.reuse(bytes);
      stats_.record_settle(futex::now_ns() - start);
    }
    if (b.data) return b;
    b = pool.acquire(bytes);
    if (b.data) stats_.record_staging_map(b.capacity);
    return b;
  }
  // What writing `bytes` into a fresh staging block costs beyond a warm copy: the machine file's
  // line for fresh staging of the block's size (Machine::fresh_staging: pages never touched, or
  // whole huge pages) over its memcpy line; the start-up probe measures neither the one nor the
  // other's cold side, so there kSettleUnpricedNs.
  long long fresh_pages_ns(std::size_t bytes) const {
    if (!model_ || !model_->machine.memcpy_cold_measured()) return kSettleUnpricedNs;
    const double b = static_cast<double>(bytes);
    const model::Line& fresh = s_.staging_huge_pages == Switch::On
                                   ? model_->machine.fresh_staging(static_cast<double>(Pool::capacity_for(bytes)))
                                   : model_->machine.memcpy_cold;
    return static_cast<long long>(std::max(0.0, fresh.at(b) - model_->machine.memcpy_cost.at(b)));
  }

  // What the machine's line for tnbc's copies in a call prices a copy of `bytes` at (0 before
  // the model starts): the summary compares the run's copies with it (Stats::record_call_copy).
  // `alone`: the one rank that copies in its call, a broadcast's root (Machine::in_call_copy_alone).
  double copy_price(double bytes, bool alone) const {
    if (!model_) return 0;
    return (alone ? model_->machine.in_call_copy_alone() : model_->machine.in_call_copy()).at(bytes);
  }

  // At the end, rank 0 of the world: where its calls' copies took far more or less than the
  // machine file's in-call copy line priced, the model's Tinit is off by as much (a file from
  // another machine, or from a launch of this VM whose copies ran in the other of its two rates:
  // docs/benchmarks.md, "Session 22"). The start-up probe does not measure that copy: nothing said.
  void say_copy_price() const {
    if (world_rank_ != 0 || !model_ || model_->source != "file" || !model_->machine.memcpy_in_call_measured()) return;
    const Stats::CallCopies cc = stats_.call_copies();
    if (cc.copies < kCopyPriceMinCopies || cc.priced_ns == 0) return;
    const double ratio = static_cast<double>(cc.ns) / static_cast<double>(cc.priced_ns);
    if (ratio <= kCopyPriceNote && ratio >= 1 / kCopyPriceNote) return;
    log(LogLevel::Warn, "tnbc's copies in its calls took %.2fx what the machine file (%s) prices them at (%llu copies, "
                        "%.1f MiB): the model's time in the call is %s by as much; calibrate on this machine again "
                        "(tnbc calibrate), or combine several launches' calibrations (tnbc calibrate --combine)",
        ratio, model_->file.c_str(), static_cast<unsigned long long>(cc.copies), static_cast<double>(cc.bytes) / (1 << 20),
        ratio > 1 ? "low" : "high");
  }

  // The cost model (runtime/model/startup.hh): the machine and the placement, then the policy
  // starts deciding from them. Whether the ranks' profile and judging settings agree is
  // compared here (one reduction): only then may the profile route calls to plain MPI.
  void start_model(MPI_Comm world) {
    GuardBackend* first = backends_.empty() ? nullptr : backends_.front();
    // The guard backend's costs feed global answers (threshold, pieces): every rank must model
    // the same one. Ranks whose first backends differ (userfaultfd on some nodes only) model none.
    const int mine = first ? model::guard_index(first->probe_name()) : -1;
    // And whether PROT_NONE may go first on every rank (TNBC_GUARD=auto, /proc/self/mem
    // writable): only then may the machine file's prices put it there for a call.
    const bool protect_here = s_.guard == GuardChoice::Auto &&
                              std::find(backends_.begin(), backends_.end(), protect_.get()) != backends_.end();
    int range[3] = {mine, -mine, protect_here ? 0 : 1}, agreed_range[3] = {mine, -mine, 0};
    PMPI_Allreduce(range, agreed_range, 3, MPI_INT, MPI_MAX, world);
    if (agreed_range[0] != -agreed_range[1]) first = nullptr;
    model_ = model::start_model(s_, world, first, page_, stats_);
    // TNBC_UFFD_PUBLISH=auto moves pages where the kernel can, unless the machine file (the same on
    // every rank) measured copying as the cheaper publication (model::guard_that_runs).
    if (first == uffd_.get() && model::guard_that_runs(model_->machine, mine) != mine) {
      uffd_ = make_uffd_backend(false);
      std::replace(backends_.begin(), backends_.end(), first, uffd_.get());
      first = uffd_.get();
    }
    // TNBC_GUARD=auto takes userfaultfd where the kernel allows it, and PROT_NONE for the calls
    // whose size the file prices it cheaper at (model::guard_by_size, by_size_pays).
    if (first == uffd_.get()) {
      guard_runs_ = model::guard_index(first->probe_name());
      guard_by_size_ = model::guard_by_size(model_->machine, guard_runs_, agreed_range[2] == 0);
      if (guard_by_size_ >= 0) {
        protect_first_ = backends_;
        std::erase(protect_first_, protect_.get());
        protect_first_.insert(protect_first_.begin(), protect_.get());
      }
    }
    const std::uint64_t fp = policy_->fingerprint();
    std::uint64_t in[2] = {fp, ~fp}, agreed[2] = {0, 0};
    PMPI_Allreduce(in, agreed, 2, MPI_UINT64_T, MPI_MIN, world);
    const bool same = agreed[0] == ~agreed[1];
    int rank = 0;
    PMPI_Comm_rank(world, &rank);
    world_rank_ = rank;
    if (!same && rank == 0)
      log(LogLevel::Warn, "the ranks read different profiles or judge them with different settings "
                          "(TNBC_PROFILE, TNBC_PROFILE_BLOCKING, TNBC_EARLY_RETURN_*): no call runs as plain MPI "
                          "for lack of gain (calls without gain complete tnbc's schedule in the call)");
    policy_->start(model_, first ? model::guard_index(first->probe_name()) : -1, same, guard_by_size_);
    // The threshold of the exchange family on MPI_COMM_WORLD, for the summary and rank 0's word.
    const std::size_t t = policy_->threshold(Kind::Alltoall, model_->world);
    const model::Machine& m = model_->machine;
    const model::Level& l = m.at(model_->world.nodes() > 1 ? model::LevelKind::InterNode : model::LevelKind::IntraNode);
    MeasuredCosts c;
    c.link = {l.T(1), l.G_ns_per_byte};
    const int g = first ? model::guard_index(first->probe_name()) : -1;
    if (g >= 0) c.guard = {m.guard[g].hold.ns + m.guard[g].publish.ns, m.guard[g].hold.ns_per_byte + m.guard[g].publish.ns_per_byte};
    c.copy_per_byte_ns = m.in_call_copy().ns_per_byte;
    c.backend = first ? first->probe_name() : "none";
    const char* basis = s_.min_bytes ? "set" : model_->world.n() <= 1 ? "single_rank" : !first ? "nothing_to_guard"
                      : model_->source == "file" ? "machine_file" : "measured";
    stats_.set_threshold({t, basis, c, true});
    std::string per_kind = "{", sizes = "{";
    for (const CollectiveInfo& k : collectives()) {
      if (k.unit == SizeUnit::None) continue;
      const std::size_t v = policy_->threshold(k.kind, model_->world);
      per_kind += std::string(per_kind.size() > 1 ? ", " : "") + "\"" + k.name + "\": " +
                  (v == kNeverPays ? std::string("null") : std::to_string(v));
      sizes += std::string(sizes.size() > 1 ? ", " : "") + "\"" + k.name + "\": " +
               policy_->early_return_sizes(k.kind, model_->world).json();
    }
    model_->summary->note("thresholds", per_kind + "}");
    // The ranges of sizes that return early ([from, to or null]): a broadcast's may be bands.
    model_->summary->note("early_return_sizes", sizes + "}");
    model_->summary->note("piece_rule", policy_->pieces(Kind::Alltoall, model_->world).setting
                                            ? "\"set\""
                                            : "{\"scale_bytes\": " +
                                                  std::to_string(static_cast<long long>(
                                                      policy_->pieces(Kind::Alltoall, model_->world).scale_bytes)) +
                                                  "}");
    if (rank == 0) {
      const LogLevel level = t == kNeverPays ? LogLevel::Warn : LogLevel::Info;
      if (log_enabled(level))
        log(level, "TNBC_MIN_BYTES=%s: MPI_Alltoall on MPI_COMM_WORLD returns early, bytes per peer: %s%s",
            s_.min_bytes ? "set" : "auto", policy_->early_return_sizes(Kind::Alltoall, model_->world).text().c_str(),
            t == kNeverPays ? " (the cost model: returning early does not pay at any size here, collectives run blocking; "
                              "set TNBC_MIN_BYTES to override)"
                            : " (from the cost model; per kind in the summary's model block)");
      if (log_enabled(LogLevel::Info))
        log(LogLevel::Info, "MPI_Bcast on MPI_COMM_WORLD returns early: %s (TNBC_MIN_BYTES %s)",
            policy_->early_return_sizes(Kind::Bcast, model_->world).text().c_str(), s_.min_bytes ? "set" : "auto");
    }
  }

  // TNBC_BCAST_BACKEND=rma-*|auto: whether MPI's one-sided communication works here, and its
  // costs for auto (runtime/rma_transport.hh, rma_probe). Said by rank 0 when it does not.
  void check_rma(PrivateComm& world) {
    const std::string setting = value_string(*std::find_if(options().begin(), options().end(), [](const Option& o) {
      return o.name == "bcast_backend";
    }), s_);
    std::string problem;
    const RmaFacts facts = rma_probe(world.comm, page_, static_cast<double>(s_.poll_min_us) * 1e-6, timeout_ns_, problem);
    policy_->set_rma(facts);
    // Where it failed, that rank says why (rank 0 may only know that it failed elsewhere).
    if (!facts.usable && world.rank != 0 && problem.find("another rank") == std::string::npos)
      log(LogLevel::Info, "RMA probe: %s", problem.c_str());
    if (world.rank != 0) return;
    if (!facts.usable) {
      log(s_.bcast_backend == BcastBackend::Auto ? LogLevel::Info : LogLevel::Warn,
          "TNBC_BCAST_BACKEND=%s: MPI one-sided communication is not usable here (%s): broadcasts use point-to-point "
          "messages", setting.c_str(), problem.c_str());
      return;
    }
    const LogGP& c = facts.costs;
    log(LogLevel::Info, "RMA probe (seed 000's LogGP): L %.2f us, o = g %.2f us, G %.3f ns/B, O_r %.2f us, copy out "
        "%.3f ns/B; messages: L+2o %.2f us, G %.3f ns/B", c.L * 1e6, c.o * 1e6, c.G * 1e9, c.O_r * 1e6, c.C * 1e9,
        facts.p2p.L * 1e6, facts.p2p.G * 1e9);
    if (s_.bcast_backend == BcastBackend::Auto && model_)
      log(LogLevel::Info, "TNBC_BCAST_BACKEND=auto on MPI_COMM_WORLD (%d ranks; messages and O_r: machine from the "
          "%s): %s", model_->world.n(), model_->source.c_str(),
          ranges_text(policy_->bcast_plan(model_->world, kBcastPlanMaxBytes)).c_str());
  }

  // An error tnbc found in the call before starting anything (type signatures that differ, no
  // memory for staging): through the communicator's error handler, as MPI's own errors go.
  // MPI_ERRORS_ARE_FATAL ends the job after tnbc's message; MPI_ERRORS_RETURN returns the code.
  int detected_error(const CollCall& c, SiteCounters& site, const Status& st, long long t_enter) {
    MPI_Errhandler h = MPI_ERRHANDLER_NULL;
    PMPI_Comm_get_errhandler(c.comm, &h);
    const bool returns = h == MPI_ERRORS_RETURN;
    if (h != MPI_ERRHANDLER_NULL) PMPI_Errhandler_free(&h);
    log(returns ? LogLevel::Warn : LogLevel::Error, "%s%s", st.message().c_str(),
        returns ? " (the error code goes back to the program: MPI_ERRORS_RETURN)" : "");
    const bool types = st.code() == MPI_ERR_TRUNCATE || st.code() == MPI_ERR_TYPE;
    stats_.record(site, {0, 0, Outcome::CompletedInCall, types ? Reason::ReceiveTypeMismatch : Reason::Disabled, t_enter,
                         futex::now_ns()});
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

  // Whether tnbc's schedule in the call beats the library's at this call's size (asked only of a
  // call its site's trial completed in the call: the policy's cache takes its lock).
  bool own_call_faster(const CollCall& c, const CallContext& ctx, const model::Topology& topo, const Layout& layout) {
    const auto peers = static_cast<std::uint64_t>(std::max(1, ctx.size - 1));
    return policy_->own_call_faster(c.kind, topo, c.kind == Kind::Bcast ? layout.received : layout.received / peers);
  }

  // The call's key on its communicator (runtime/call_vote.hh), with the vote where one is
  // due: every rank of the communicator is in this same call (MPI's ordering rule).
  // `voted_ns`: how long the vote waited for the other ranks (0 without one).
  int agreement_key(PrivateComm& pc, const CollCall& c, std::size_t unit, long long& voted_ns) {
    const CallVote::Entry e = pc.agreement.enter({c.kind, unit, c.kind == Kind::Bcast ? c.root : -1});
    if (e.vote) {
      const long long start = futex::now_ns();
      vote(pc, c);
      voted_ns = futex::now_ns() - start;
    }
    return e.key;
  }
  void vote(PrivateComm& pc, const CollCall& c) {
    const CallVote::Ballot mine = pc.agreement.ballot();
    CallVote::Ballot all{};
    MPI_Request req;
    PMPI_Iallreduce(mine.data(), all.data(), static_cast<int>(all.size()), MPI_UINT64_T, MPI_BOR, pc.comm, &req);
    const char* what = info(c.kind).mpi_name;
    RollCallAt roll{&*pc.roll, pc.agreement.calls(), {}};
    wait_collective(req, c.comm, timeout_ns_, what, "where its ranks vote on the calls to run as the MPI library's own",
                    "the vote (MPI_Iallreduce on tnbc's duplicate)", &roll);
    const CallVote::Applied applied = pc.agreement.apply(all);
    stats_.record_vote(static_cast<std::uint64_t>(std::popcount(applied.agreed)),
                       static_cast<std::uint64_t>(std::popcount(applied.retried)));
    if (pc.rank != 0) return;
    if (applied.disagreed)
      log(LogLevel::Warn, "the ranks of a communicator of %d ranks called different collectives on it (their keys "
                          "differ at call %llu, in %s): no call there runs as the MPI library's own by agreement; "
                          "each rank completes in the call through tnbc's schedule where its trial says so",
          pc.size, static_cast<unsigned long long>(pc.agreement.calls()), what);
    for (int k = 0; k < CallVote::kMaxKeys; ++k) {
      const std::uint64_t bit = std::uint64_t{1} << k;
      if (!((applied.agreed | applied.retried) & bit)) continue;
      const VoteKey& key = pc.agreement.key(k);
      const std::string size = key.unit == kNoUnit ? std::string(" (sizes that differ by rank)")
                               : key.kind == Kind::Bcast ? " of " + bytes_text(key.unit) + " from root " +
                                                               std::to_string(key.root)
                                                         : " of " + bytes_text(key.unit) + " per sub-message";
      log(LogLevel::Info, "%s%s on a communicator of %d ranks: %s at its call %llu", info(key.kind).mpi_name,
          size.c_str(), pc.size,
          (applied.agreed & bit) ? "every rank's trial completes it in the call faster, so it runs as the MPI "
                                   "library's own (agreed)"
                                 : "back through tnbc, to be tried again",
          static_cast<unsigned long long>(pc.agreement.calls()));
    }
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
  TrialRule trial_rule_;
  TrialTurn trial_turn_;  // one site of the rank tries at a time
  bool agree_;            // the communicators' ranks vote (runtime/call_vote.hh)
  std::unique_ptr<Policy> policy_;
  std::shared_ptr<const model::Inputs> model_;
  int world_rank_ = -1;  // set when the model starts
  std::unique_ptr<GuardBackend> uffd_, protect_;
  std::vector<GuardBackend*> backends_;  // usable here, in the policy's order
  // Where PROT_NONE is taken per call by size (start_model): the userfaultfd backend that runs and
  // PROT_NONE's index (-1: never per call), and backends_ with PROT_NONE first.
  int guard_runs_ = -1, guard_by_size_ = -1;
  std::vector<GuardBackend*> protect_first_;
  Pool pool_;       // send staging (kept populated)
  Pool recv_pool_;  // receive staging (emptied by page swapping; InFlight::recv_pool)
  CommCache comms_;
  // Each driver's send gate: its window, inside node-level priorities (which admit at once
  // what they do not arbitrate). The gates outlive the progress thread (declared before it).
  std::unique_ptr<WindowGate> progress_window_, caller_window_;
  std::unique_ptr<NodeGate> progress_gate_, caller_gate_;
  std::unique_ptr<Progress> progress_;
  std::mutex call_mutex_;
  std::atomic<bool> rma_fallback_said_{false};
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
  set_region_opener(open_observed);
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
