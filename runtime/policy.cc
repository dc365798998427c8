#include "runtime/policy.hh"

#include <algorithm>
#include <bit>
#include <map>
#include <mutex>
#include <tuple>

#include "runtime/fnv1a.hh"

namespace tnbc {

std::optional<model::Program> model_program(const SiteProgram& p, const model::Machine& m, const model::Topology& comm,
                                            const model::Coll& c) {
  const double model_ns = model::mpi_blocking_ns(m, comm, c);
  if (!(p.blocking_ns > 0) || !(model_ns > 0)) return std::nullopt;
  const double f = model_ns / p.blocking_ns;
  model::Program scaled = p.program;
  scaled.curc_ns *= f;
  scaled.crc_ns *= f;
  return scaled;
}

int bcast_send_window(const Settings& s, ThreadProgress p, bool one_node) {
  if (s.bcast_send_window) return static_cast<int>(*s.bcast_send_window);
  return p == ThreadProgress::Through && !one_node ? 1 : 0;
}

model::Execution execution(const Settings& s, int guard_index, int guard_by_size, ThreadProgress threads, bool one_node) {
  model::Execution x;
  x.window = static_cast<int>(s.send_window);
  x.bcast_window = bcast_send_window(s, threads, one_node);
  x.guard = guard_index;
  x.guard_by_size = guard_by_size;
  x.eager_copy = s.send_copy != SendCopy::Lazy && s.send_copy != SendCopy::LazySends;
  x.poll_min_ns = static_cast<double>(s.poll_min_us) * 1e3;
  x.bcast_max_segments = static_cast<int>(std::max<std::int64_t>(1, s.bcast_max_segments));
  x.margin_one_per_node = static_cast<double>(s.early_return_margin_tcomm_pct) / 100.0;
  x.margin_shared_node = static_cast<double>(s.early_return_margin_shared_node_pct) / 100.0;
  x.margin_busy_poll = static_cast<double>(s.early_return_margin_busy_poll_pct) / 100.0;
  return x;
}

namespace {

// A topology as a key of the caches below (its node vector and CPUs).
std::uint64_t key_of(const model::Topology& t) {
  std::uint64_t h = kFnv1aBasis;
  auto mix = [&](std::uint64_t v) { h = fnv1a_word(h, v); };
  for (int x : t.node) mix(static_cast<std::uint64_t>(x));
  mix(static_cast<std::uint64_t>(t.cpus_per_node) << 32 | static_cast<std::uint32_t>(t.cpus_per_rank));
  return h;
}

// Node-level verdicts kept per (topology, kind, bytes, senders, broadcast root and segments):
// enough for a program's sizes, bounded for one whose Alltoallv sizes never repeat.
constexpr std::size_t kNodeCacheEntries = 1024;

class ModelPolicy final : public Policy {
 public:
  ModelPolicy(const Settings& s, std::size_t page, std::unique_ptr<ReadOrderSource> orders)
      : s_(s), page_(page), orders_(std::move(orders)) {
    if (s.guard == GuardChoice::Protect) guards_ = {GuardKind::ProtNone};
    else guards_ = {GuardKind::Userfaultfd, GuardKind::ProtNone};
  }

  Reason route(Kind kind, bool intercommunicator, const model::Topology& comm, std::size_t unit) override {
    if (intercommunicator) return Reason::Intercommunicator;
    if (comm.n() <= 1) return Reason::SingleRank;
    // Outside the sizes that return early or whose schedule completed in the call beats the
    // library's; sizes that differ between ranks (Alltoallv: unit SIZE_MAX, kNoUnit) where no size
    // does either on `comm` (the model's sizes, equal on every rank): tnbc's schedule would only
    // complete in the call, slower than the library's (read at once, np 4 on one node: 1.5-1.8x
    // PMPI_Alltoallv).
    if (runs_as_mpi(kind, comm, unit)) return Reason::BelowThreshold;
    return Reason::None;
  }

  Reason route_call(const CallShape& call) override {
    return orders_ && orders_->plain(call) ? Reason::NoOverlapToGain : Reason::None;
  }

  // Mode optimize: as the trace pass cut a broadcast of this size (the profile's chunk orders
  // then apply). Otherwise without a model one segment per kMinGuardablePages pages, at most
  // TNBC_BCAST_MAX_SEGMENTS; with one, the count whose reader finishes first
  // (model::bcast_segments), from the machine, the placement and the size.
  int bcast_segments(std::size_t bytes, const model::Topology& comm) override {
    const int most = static_cast<int>(std::max<std::int64_t>(1, s_.bcast_max_segments));
    if (orders_ && agreed_)
      if (const int traced = orders_->bcast_segments(comm.n(), bytes); traced > 0) return std::min(traced, most);
    if (!model_) {
      const std::size_t floor = kMinGuardablePages * std::max<std::size_t>(page_, 1);
      return static_cast<int>(std::clamp<std::size_t>(bytes / floor, 1, static_cast<std::size_t>(most)));
    }
    std::lock_guard lock(mutex_);
    auto [it, fresh] = segments_.try_emplace({key_of(comm), bytes}, 1);
    if (fresh) it->second = model::bcast_segments(model_->machine, comm, static_cast<double>(bytes), exec(), most, page_);
    return it->second;
  }

  PieceRule pieces(Kind kind, const model::Topology& comm) override {
    if (s_.piece_bytes || !model_ || kind == Kind::Bcast) return PieceRule(s_.piece_bytes);  // no lock
    std::lock_guard lock(mutex_);
    return pieces_locked(kind, comm);
  }
  PieceRule pieces_locked(Kind kind, const model::Topology& comm) {  // under mutex_
    if (s_.piece_bytes || !model_ || kind == Kind::Bcast) return PieceRule(s_.piece_bytes);
    auto [it, fresh] = scales_.try_emplace(key_of(comm), 0.0);
    if (fresh) it->second = model::piece_scale(model_->machine, comm, exec(), page_);
    return PieceRule(std::nullopt, it->second);
  }

  bool early_return_pays(Kind kind, std::uint64_t received, const model::Topology& comm) override {
    // Sizes that differ between ranks (Alltoallv): what this rank receives per peer against
    // the per-peer threshold of the exchange.
    const std::size_t min = threshold(model::band_kind(kind), comm);
    if (min == SIZE_MAX) return false;
    // Nothing received here (only sends continue after the return): nothing is held back, it
    // pays wherever some size pays.
    if (received == 0) return true;
    // The model's thresholds are per peer for the exchange family, the whole message for Bcast.
    const double per_peer = kind == Kind::Bcast ? static_cast<double>(received)
                                                : static_cast<double>(received) / std::max(1, comm.n() - 1);
    return model_ && !s_.min_bytes ? pays_at(kind, comm, static_cast<std::size_t>(per_peer)) : received >= min;
  }

  BcastBackend bcast_backend(std::size_t bytes, const model::Topology& comm) override {
    switch (s_.bcast_backend) {
      case BcastBackend::P2p: return BcastBackend::P2p;
      case BcastBackend::RmaBinomial:
      case BcastBackend::RmaLinear: return rma_.usable ? s_.bcast_backend : BcastBackend::P2p;
      case BcastBackend::Auto: return auto_backend(bytes, comm);
    }
    return BcastBackend::P2p;
  }
  std::vector<BcastRange> bcast_plan(const model::Topology& comm, std::size_t max_bytes) override {
    return bcast_ranges([&](std::size_t m) { return auto_backend(m, comm); }, max_bytes);
  }
  // auto: with the model, its pipelined estimates over the chunks the builders cut
  // (bcast_costs_pipelined); without, the seed's formulas with the probes' figures.
  BcastBackend auto_backend(std::size_t bytes, const model::Topology& comm) {
    if (!rma_.usable || bytes == 0) return BcastBackend::P2p;
    const BcastParams c = bcast_inputs(comm);
    if (!model_) return cheapest_bcast(c.rma, c.p2p, bytes, comm.n(), true);
    const int segments = bcast_segments(bytes, comm);
    std::lock_guard lock(mutex_);
    if (bcast_choice_.size() >= kNodeCacheEntries) bcast_choice_.clear();
    auto [it, fresh] = bcast_choice_.try_emplace({key_of(comm), bytes}, BcastBackend::P2p);
    if (fresh) it->second = cheapest_of(bcast_costs_pipelined(c.rma, model_->machine, comm, bytes, segments, exec()), true,
                                             kRmaMargin);
    return it->second;
  }
  // The probe's one-sided figures with the machine's messages and O_r at the level `comm` crosses.
  BcastParams bcast_inputs(const model::Topology& comm) const {
    const auto level = comm.nodes() > 1 ? model::LevelKind::InterNode : model::LevelKind::IntraNode;
    return bcast_params(rma_.costs, rma_.p2p, model_ ? &model_->machine : nullptr, level);
  }

  bool own_call_faster(Kind kind, const model::Topology& comm, std::size_t per_peer) override {
    if (s_.min_bytes || !model_) return false;
    std::lock_guard lock(mutex_);
    return bands_locked(kind, comm).own.contains(per_peer);
  }

  bool complete_in_call(const CallShape& call) override { return orders_ && orders_->run_blocking(call); }
  bool judged_last() const override { return orders_ && orders_->judged_last(); }
  bool leans_in_call_last() const override { return orders_ && orders_->leans_in_call_last(); }

  std::vector<int> read_order(const CallShape& call) override {
    return orders_ ? orders_->order(call) : std::vector<int>{};
  }

  // auto: lazy only where it costs the call less even when the program overwrites its send
  // buffer at once (as NPB FT and IS do): nothing in the call knows whether it will.
  bool lazy_send_copy(std::uint64_t bytes) const override {
    if (s_.send_copy != SendCopy::Auto) return s_.send_copy == SendCopy::Lazy || s_.send_copy == SendCopy::LazySends;
    return model_ && model::lazy_copy_pays(model_->machine, static_cast<double>(bytes), true, page_);
  }
  bool lazy_own_block(std::uint64_t bytes) const override {
    return s_.send_copy != SendCopy::LazySends && lazy_send_copy(bytes);
  }
  std::span<const GuardKind> guards() const override { return guards_; }
  bool swap_pages() const override { return s_.uffd_publish == UffdPublish::Auto; }
  // The window keeps a receiver's pieces in order on the link: MPI shares the link among
  // concurrent sends to one peer (ob1 interleaves their fragments: they finish together), so
  // without it an exchange's first piece, staged with all the others, arrives with its last
  // (docs/benchmarks.md, "Session 9: the window where its driver starves"). Its price: a send
  // held back waits for its driver's next round. A progress thread on its rank's only CPU gets
  // that round soon while the program waits for the collective's data (asleep in tnbc's fault:
  // the CPU is free) or computes (the scheduler shares the CPU), but rarely while the program is
  // inside another MPI call (under UCX tens of ms apart: the worker's spinlock, held by the
  // program's polling; "Session 8: the link broadcast"). That is where a broadcast's sends wait:
  // the root receives nothing, so its program goes on at once; an inner rank's last forwards
  // become ready when its program has all its data and goes on. And forwards need no window for
  // their order: they become ready one by one, as their pieces arrive. So there, only staged
  // sends of a rank that receives keep it. Rank-local: it changes when messages start, not which.
  int send_window(Driver d, SendRole role) const override {
    if (d != Driver::ProgressThread) return 0;
    // TNBC_BCAST_SEND_WINDOW: a broadcast's pieces through the thread's window on any CPU (on the
    // rank's only CPU too: one at a time, they arrive one after another instead of all together;
    // docs/benchmarks.md, "Session 59"), by default where the MPI library lets the thread's calls
    // through while the program waits in its next MPI call (not under UCX: "Session 60").
    if (const int w = bcast_send_window(s_, threads_, one_node_); role != SendRole::Staged && w > 0) return w;
    if (progress_on_own_cpu_ && role != SendRole::Staged) return 0;
    return static_cast<int>(s_.send_window);
  }
  // A root's sends are all ready at the call. Where its progress thread keeps no window for them
  // (above: its rank's only CPU), that thread's first round comes only when the program gives the
  // CPU up — and a root's program goes on at once, often into its next MPI call, where under UCX
  // it polls holding the worker's spinlock: a 16 KiB broadcast's body waited milliseconds for it
  // (docs/benchmarks.md, "Session 10"). The calling thread then posts them itself: a few
  // microseconds per send in the call, and any thread's MPI progress moves them from there.
  // Elsewhere the window orders them on the link, and a thread on another CPU starts them soon.
  bool caller_starts_sends(SendRole role) const override {
    return role == SendRole::Only && send_window(Driver::ProgressThread, role) <= 0;
  }
  // Back-to-back polls; yielding once TNBC_POLL_MIN_US passed idle where the node's ranks
  // outnumber its CPUs (then another rank needs this CPU) or the rank's progress thread shares its
  // CPU: that thread may have an earlier collective's sends to start. Without it a broadcast's
  // root that went on into its next call (a rotating root, now receiving) spun there waiting for
  // data its own thread held back: the thread, woken on the busy CPU, waited up to a scheduler
  // tick (4 ms) per round (2 MiB on 2 one-CPU nodes: 10 % slower; docs/benchmarks.md, "Session 61").
  Waiting waiting() const override {
    return {std::max<long long>(s_.poll_min_us * 1000, 1000), oversubscribed_ || progress_on_own_cpu_,
            s_.timeout_s * 1000000000LL};
  }
  void set_cpu_share(const CpuShare& c) override {
    oversubscribed_ = c.node_ranks > c.node_cpus && c.node_cpus > 0;
    one_node_ = c.one_node();
    // Where the node's ranks outnumber its CPUs, only if node-level priorities may arbitrate: they
    // pace the sends through the window (tests/mpi/node_priorities.py, np 3 on 2 nodes, held
    // nothing without it). Without them a broadcast's window there starves as on one rank's CPU,
    // worse (np 4 on 2 one-CPU nodes, 256 KiB: 15x PMPI_Bcast with it, 2x without;
    // docs/benchmarks.md, "Session 10").
    progress_on_own_cpu_ = c.progress_on_own_cpu && !(oversubscribed_ && node_links());
  }
  void set_thread_progress(ThreadProgress p) override { threads_ = p; }
  ProgressCpus progress_cpus(const CpuShare& c) const override {
    if (s_.progress_cpus != ProgressCpus::Auto) return s_.progress_cpus;
    return c.node_cpus > c.own_cpus ? ProgressCpus::Node : ProgressCpus::Allowed;
  }
  void set_rma(const RmaFacts& r) override {
    std::lock_guard lock(mutex_);
    rma_ = r;
    bcast_choice_.clear();
  }

  std::uint64_t fingerprint() const override { return orders_ ? orders_->fingerprint() : 0; }

  void start(std::shared_ptr<const model::Inputs> model, int guard_index, bool agreed, int guard_by_size) override {
    {
      std::lock_guard lock(mutex_);
      model_ = std::move(model);
      guard_ = guard_index;
      guard_by_size_ = guard_by_size;
      agreed_ = agreed;
      bands_.clear();
      segments_.clear();
      bcast_choice_.clear();
      scales_.clear();
      node_.clear();
    }
    if (orders_) orders_->start(model_, exec(), agreed);
  }

  std::shared_ptr<const model::Inputs> inputs() const override { return model_; }

  // TNBC_MIN_BYTES as set (every size from it); without a model from its floor (three pages);
  // else the model's sizes (model::early_return_bands: a broadcast's balance per size).
  std::size_t threshold(Kind kind, const model::Topology& comm) override {
    if (s_.min_bytes) return static_cast<std::size_t>(std::min<std::uint64_t>(*s_.min_bytes, SIZE_MAX));
    if (!model_) return kMinGuardablePages * page_;
    std::lock_guard lock(mutex_);
    return bands_locked(kind, comm).early.first();
  }
  model::SizeBands early_return_sizes(Kind kind, const model::Topology& comm) override {
    if (s_.min_bytes || !model_) return model::SizeBands::from(threshold(kind, comm));
    std::lock_guard lock(mutex_);
    return bands_locked(kind, comm).early;
  }
  // Whether a call of `kind` whose size is `unit` (SIZE_MAX: none alike on every rank) runs as
  // the MPI library's (model::runs_as_mpi over model::engine_bands: the sizes that return early
  // and those whose schedule completed in the call beats the library's; without a model or with
  // TNBC_MIN_BYTES set, below it).
  bool runs_as_mpi(Kind kind, const model::Topology& comm, std::size_t unit) {
    const std::optional<std::size_t> at = unit == SIZE_MAX ? std::nullopt : std::optional<std::size_t>(unit);
    if (s_.min_bytes || !model_) return at && *at < threshold(kind, comm);
    std::lock_guard lock(mutex_);
    return model::runs_as_mpi(bands_locked(kind, comm).engine, at);
  }
  // Whether `bytes` (the table's unit) is a size at which early return pays.
  bool pays_at(Kind kind, const model::Topology& comm, std::size_t bytes) {
    if (s_.min_bytes || !model_) return bytes >= threshold(kind, comm);
    std::lock_guard lock(mutex_);
    return bands_locked(kind, comm).early.contains(bytes);
  }
  // The model's sizes of one (communicator, kind of bands): the three sets the questions above ask.
  struct CommBands {
    model::SizeBands early;   // early return pays (model::call_bands)
    model::SizeBands own;     // tnbc's schedule in the call beats the library's (model::own_call_bands)
    model::SizeBands engine;  // either: the calls tnbc's engine takes (model::engine_bands)
  };
  const CommBands& bands_locked(Kind kind, const model::Topology& comm) {  // under mutex_, with a model
    const Kind k = model::band_kind(kind);
    auto [it, fresh] = bands_.try_emplace({key_of(comm), static_cast<int>(k)});
    if (fresh) {
      CommBands& b = it->second;
      b.early = model::call_bands(model_->machine, comm, k, exec(), page_);
      b.own = model::own_call_bands(model_->machine, comm, k, exec(), page_);
      b.engine = model::unite(b.early, b.own);
    }
    return it->second;
  }

  // auto: mode optimize (the profile is what gives the sends an order worth keeping node-wide:
  // with the default order, every rank's bodies are equally urgent).
  bool node_links() const override {
    return s_.node_priorities == NodePriorities::On ||
           (s_.node_priorities == NodePriorities::Auto && s_.mode == Mode::Optimize);
  }
  // auto: mode optimize with a profile, several of the node's ranks on its link, and the model's
  // first read earlier, net of a later end, by more than the margin; where the profile has the
  // program's T_CURC and T_CRC at the site, its end of reading earlier by more than the margin
  // (runtime/node_choice.hh; without a model: on).
  NodeChoice node_priorities(const CallShape& call, const model::Topology& comm, int senders) override {
    NodeChoice c;
    if (s_.node_priorities != NodePriorities::Auto) {
      c.on = s_.node_priorities == NodePriorities::On;
      return c;
    }
    if (!orders_) {
      c.basis = NodeBasis::NoProfile;
      return c;
    }
    if (senders < 2 || !model_) {
      c.on = senders >= 2;
      c.basis = senders < 2 ? NodeBasis::OneSender : NodeBasis::NoModel;
      return c;
    }
    // Per topology, kind and bytes per sub-message (the mean: Alltoallv's differ between peers).
    double bytes = 0;
    for (std::uint64_t b : call.recv_bytes) bytes += static_cast<double>(b);
    if (call.kind != Kind::Bcast) bytes /= static_cast<double>(std::max<std::size_t>(1, call.recv_bytes.size()));
    const auto per = static_cast<std::uint64_t>(bytes);
    // A broadcast's tree (who forwards over which link) follows its root; its chunks are the
    // edges and the middle segments.
    const int root = call.kind == Kind::Bcast ? call.root : -1;
    const int segments = call.kind == Kind::Bcast ? std::max(1, static_cast<int>(call.recv_bytes.size()) - 2) : 0;
    // What the program does after the call at this site (the profile's measured times).
    const std::optional<SiteProgram> program = orders_->program(call);
    const std::uint64_t program_key =
        program ? std::bit_cast<std::uint64_t>(program->program.curc_ns) * 31 ^ std::bit_cast<std::uint64_t>(program->program.crc_ns) ^
                      std::bit_cast<std::uint64_t>(program->blocking_ns) * 17 ^
                      static_cast<std::uint64_t>(program->program.own_last)
                : 0;
    std::lock_guard lock(mutex_);
    if (node_.size() >= kNodeCacheEntries) node_.clear();  // Alltoallv: sizes may differ every call
    auto [it, fresh] = node_.try_emplace({key_of(comm), static_cast<int>(call.kind), per, senders, root, segments, program_key});
    if (fresh) {
      model::Coll coll;
      coll.kind = call.kind;
      coll.bytes = bytes;
      coll.page = page_;
      coll.root = std::max(0, root);
      coll.segments = std::max(1, segments);
      if (call.kind != Kind::Bcast) coll.pieces = pieces_locked(call.kind, comm);
      const std::optional<model::Program> p = program ? model_program(*program, model_->machine, comm, coll) : std::nullopt;
      const double share = node_margin_share(static_cast<double>(s_.node_priorities_margin_pct) / 100.0,
                                             static_cast<double>(s_.early_return_margin_cost_pct) / 100.0, p.has_value());
      it->second = node_choice(model_->machine, comm, coll, exec(), senders, share, p ? &*p : nullptr);
    }
    return it->second;
  }
  long long node_hold_ns() const override { return s_.node_hold_us * 1000; }
  bool node_local_on_link() const override { return s_.node_local_sends == NodeLocalSends::Link; }

 private:
  model::Execution exec() const { return execution(s_, guard_, guard_by_size_, threads_, one_node_); }

  Settings s_;
  std::size_t page_;
  std::shared_ptr<const model::Inputs> model_;
  std::unique_ptr<ReadOrderSource> orders_;
  std::vector<GuardKind> guards_;
  int guard_ = 0;
  int guard_by_size_ = -1;
  bool agreed_ = false;
  std::mutex mutex_;  // the caches: calls on several threads ask at once
  std::map<std::pair<std::uint64_t, int>, CommBands> bands_;  // per (communicator, model::band_kind)
  std::map<std::pair<std::uint64_t, std::size_t>, int> segments_;
  std::map<std::pair<std::uint64_t, std::size_t>, BcastBackend> bcast_choice_;
  std::map<std::uint64_t, double> scales_;
  std::map<std::tuple<std::uint64_t, int, std::uint64_t, int, int, int, std::uint64_t>, NodeChoice> node_;
  bool oversubscribed_ = false;
  bool progress_on_own_cpu_ = false;  // set_cpu_share after the progress thread is placed
  bool one_node_ = false;             // set_cpu_share: every rank of the world on this node
  ThreadProgress threads_ = ThreadProgress::Unknown;  // set_thread_progress
  RmaFacts rma_;
};

}  // namespace

std::unique_ptr<Policy> make_policy(const Settings& s, std::size_t page, std::unique_ptr<ReadOrderSource> orders) {
  return std::make_unique<ModelPolicy>(s, page, std::move(orders));
}

}  // namespace tnbc
