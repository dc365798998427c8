#include "trace/profile_orders.hh"

#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "runtime/fnv1a.hh"
#include "runtime/log.hh"
#include "trace/callsite.hh"
#include "trace/gain.hh"
#include "trace/profile.hh"

namespace tnbc::trace {

namespace {

// The consensus order completed to a permutation: sub-messages nobody touched go last.
std::vector<int> complete_order(const std::vector<int>& partial, int n) {
  std::vector<int> out;
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (int s : partial)
    if (s >= 0 && s < n && !seen[static_cast<std::size_t>(s)]) {
      seen[static_cast<std::size_t>(s)] = true;
      out.push_back(s);
    }
  for (int s = 0; s < n; ++s)
    if (!seen[static_cast<std::size_t>(s)]) out.push_back(s);
  return out;
}

bool same_call(const CallShape& a, const CallShape& b) {
  return a.kind == b.kind && a.site.return_address == b.site.return_address && a.comm_size == b.comm_size &&
         a.root == b.root && a.recv_bytes == b.recv_bytes && a.send_bytes == b.send_bytes;
}

// Whether a decision rests on the profile's evidence at the site (else the call returns early on
// none, or on trial where the evidence cannot tell: ReadOrderSource::judged_last).
bool judged(Basis b) {
  return b != Basis::NotInProfile && b != Basis::OtherSizes && b != Basis::NoEstimate && b != Basis::WithinMargin;
}

// The last run_blocking answer's judged(), per thread (judged_last; one profile per process).
thread_local bool t_judged = true;
// And whether it was a trial leaning to completion in the call (leans_in_call_last).
thread_local bool t_leans = false;

// A site on trial whose early return the model priced at a loss: where the trial cannot tell,
// the model's sign stands (TrialRule::lean_in_call).
bool leans_in_call(const Decision& d) {
  return d.basis == Basis::WithinMargin && d.saved_ns && *d.saved_ns <= 0;
}

// What this thread's last run_blocking answer was, for judged_last and leans_in_call_last.
void remember_last(const Decision& d) {
  t_judged = judged(d.basis);
  t_leans = leans_in_call(d);
}

class ProfileOrders final : public ReadOrderSource {
 public:
  ProfileOrders(LoadedProfile p, Stats& stats, int world_rank, const Settings& s)
      : index_(std::move(p)), stats_(stats), rank_(world_rank), settings_(s),
        judge_(make_judge(s, nullptr, model::Execution{})) {
    stats_.set_profile_blocking(judge_.enabled ? "auto" : "off");
  }

  // The profile's content and the settings that judge it: what every rank must have alike for
  // plain() to be a global answer.
  std::uint64_t fingerprint() const override {
    std::uint64_t h = index_.profile().content_hash;
    auto mix = [&](std::uint64_t v) { h = fnv1a_word(h, v); };
    mix(judge_.enabled);
    mix(settings_.early_return_cost_us ? *settings_.early_return_cost_us + 1 : 0);
    mix(static_cast<std::uint64_t>(settings_.early_return_cost_us_per_mib));
    mix(static_cast<std::uint64_t>(settings_.early_return_margin_cost_pct));
    mix(static_cast<std::uint64_t>(settings_.early_return_margin_tcomm_pct));
    mix(static_cast<std::uint64_t>(settings_.early_return_margin_shared_node_pct));
    mix(static_cast<std::uint64_t>(settings_.early_return_margin_busy_poll_pct));
    mix(static_cast<std::uint64_t>(settings_.early_return_margin_own_pct));
    mix(judge_.try_within_margin);
    mix(static_cast<std::uint64_t>(judge_.trial_calls));  // which sites go to the trial (leave_to_trial)
    mix(judge_.skip_costly_trial);
    return h;
  }

  // Every site is judged now, once, from inputs equal on every rank (the profile, the model,
  // the settings): what plain() answers for a call then depends on nothing rank-local.
  void start(std::shared_ptr<const model::Inputs> m, const model::Execution& x, bool agreed) override {
    std::lock_guard lock(mutex_);
    judge_ = make_judge(settings_, m, x);
    agreed_ = agreed;
    summary_ = m ? m->summary : nullptr;
    judged_.clear();
    const std::vector<ProfileSite>& sites = index_.profile().sites;
    const std::vector<Decision> d = decide_sites(sites, judge_);
    for (std::size_t i = 0; i < sites.size(); ++i) judged_[sites[i].site] = d[i];
    decided_.clear();
    plain_.clear();
  }

  // Every site the profile has for this kind and communicator size, and — where every rank
  // knows the sizes — that recorded these sizes (any rank), is judged no gain, and none faster
  // with tnbc's schedule in the call: then the call is plain MPI on every rank, whichever site
  // each reaches it from.
  bool plain(const CallShape& call) override {
    std::lock_guard lock(mutex_);
    if (!agreed_ || !judge_.enabled) return false;
    const bool sizes_agree = info(call.kind).sizes_agree;
    const std::uint64_t sig = sizes_agree ? size_signature(call.recv_bytes, call.send_bytes, call.root) : 0;
    const PlainKey key{static_cast<int>(call.kind), call.comm_size, sig};
    auto [it, fresh] = plain_.try_emplace(key);
    if (fresh) {
      PlainEntry& e = it->second;
      int candidates = 0, no_gain = 0;
      for (const ProfileSite& site : index_.profile().sites) {
        if (kind_named(site.kind) != call.kind || site.comm_size != call.comm_size) continue;
        if (sizes_agree && !index_.key_recorded(site, instance_key(site.site, sig))) continue;
        ++candidates;
        const Decision& d = judged_[site.site];
        if (!d.library_call()) continue;
        ++no_gain;
        if (e.where.size() < 200) e.where += (e.where.empty() ? "" : ", ") + site.where;
        if (!e.first) e.first = d;
      }
      e.plain = candidates > 0 && no_gain == candidates;
      e.id = sig ^ (static_cast<std::uint64_t>(call.kind) << 56) ^ static_cast<std::uint64_t>(call.comm_size);
    }
    const PlainEntry& e = it->second;
    if (fresh && e.plain && summary_) {
      model::Summary::Site s = summary_site(*e.first, e.id, kind_name(call.kind), "every site with these sizes: " + e.where);
      s.decision = "plain";
      summary_->record_site(s);
    }
    return e.plain;
  }

  // The traced cut of a broadcast of this size over this many ranks: its chunks less the first
  // and last page (a site of the profile whose receiving ranks got these bytes per call).
  int bcast_segments(int comm_size, std::size_t bytes) override {
    std::lock_guard lock(mutex_);
    for (const ProfileSite& site : index_.profile().sites) {
      if (site.kind != "bcast" || site.comm_size != comm_size || site.sub_messages <= 2) continue;
      for (const ProfileSite::Rank& r : site.ranks)
        if (r.receives && r.bytes_per_call && *r.bytes_per_call == bytes) return site.sub_messages - 2;
    }
    return 0;
  }

  // Decided from the site's aggregates over the ranks that called it and, for Alltoall and
  // Bcast, whether any rank recorded the call's key there. The site is this rank's own call
  // stack: another rank may reach the same collective from another site and decide otherwise,
  // which the engine allows (the call completes in it with the same messages).
  bool run_blocking(const CallShape& call) override {
    std::lock_guard lock(mutex_);
    const Id id = identify(call, false);
    const ProfileSite* site = index_.find_site(id.site);
    const bool global_sizes = info(call.kind).sizes_agree;
    const bool sizes_recorded = site && (!global_sizes || index_.key_recorded(*site, id.key));
    auto [it, fresh] = decided_.try_emplace(DecisionKey{id.site, sizes_recorded});
    Decided& dd = it->second;
    if (!fresh) {  // the common case: one counter more
      stats_.count_profile_decision(dd.recorded);
      remember_last(dd.d);
      return dd.d.blocking();
    }
    dd.d = site && sizes_recorded && judged_.count(site->site) ? judged_[site->site] : decide(site, sizes_recorded, judge_);
    remember_last(dd.d);
    // Rank 0 says its decisions (TNBC_LOG=info), the others at debug (the SPMD ranks of most
    // programs share their sites; the summaries have every rank's).
    const LogLevel level = rank_ == 0 ? LogLevel::Info : LogLevel::Debug;
    if (site && log_enabled(level))
      log(level, "%s at %s: %s", kind_name(call.kind), site->where.c_str(), describe(dd.d).c_str());
    const Decision& d = dd.d;
    ProfileDecision pd;
    pd.site = id.site;
    pd.kind = kind_name(call.kind);
    pd.where = site ? site->where : where_of(id.stack);
    pd.basis = basis_name(d.basis);
    pd.blocking = d.blocking();
    pd.cost_ns = d.cost_ns;
    if (d.saved_ns) pd.comm_ns = *d.comm_ns, pd.overlap_ns = *d.overlap_ns, pd.saved_ns = *d.saved_ns;
    if (d.in_call_ns) pd.in_call_ns = *d.in_call_ns;
    if (d.own_call_ns) pd.own_call_ns = *d.own_call_ns;
    pd.receivers = d.receivers;
    dd.recorded = stats_.record_profile_decision(pd);
    if (summary_) {
      model::Summary::Site ms = summary_site(d, id.site, pd.kind, pd.where);
      ms.decision = d.blocking() ? "in_call" : "early_return";
      summary_->record_site(ms);
    }
    return d.blocking();
  }

  bool judged_last() const override { return t_judged; }
  bool leans_in_call_last() const override { return t_leans; }

  // From the site's estimate, once per site; the site from the walk order() just made for this
  // call on this thread where there is one.
  std::optional<SiteProgram> program(const CallShape& call) override {
    std::lock_guard lock(mutex_);
    const Memo& m = memo_[std::this_thread::get_id()];
    const std::uint64_t site = same_call(m.shape, call) ? m.id.site : identify(call, false).site;
    auto [it, fresh] = programs_.try_emplace(site);
    if (fresh)
      if (const ProfileSite* s = index_.find_site(site)) {
        const SiteEstimate e = estimate_site(*s);
        if (const auto p = site_program(e); p && e.comm_ns) it->second = SiteProgram{*p, *e.comm_ns};
      }
    return it->second;
  }

  std::vector<int> order(const CallShape& call) override {
    std::lock_guard lock(mutex_);
    const std::string kind = kind_name(call.kind);
    const Id id = identify(call, true);
    const Stack& stack = id.stack;
    const std::uint64_t site = id.site, key = id.key;
    const int n = static_cast<int>(call.recv_bytes.size());
    const ProfileIndex::Result r = index_.find(site, key, rank_, n);
    switch (r.status) {
      case ProfileIndex::Status::Found:
        stats_.record_profile(Stats::ProfileUse::Ordered);
        return complete_order(r.site->consensus, n);
      case ProfileIndex::Status::UnknownSite:
        stats_.record_profile(Stats::ProfileUse::UnknownSite);
        if (reported_.insert(site).second) {
          const Frame& f = sites_.describe(stack.n ? stack.pcs[0] : 0);
          log(level_for(unknown_said_), "%s called at %s (%s+0x%llx) is not in profile %s (a path the trace run did not take, "
               "or the program was rebuilt since): it runs with default priorities",
               kind.c_str(), f.symbol.empty() ? "?" : f.symbol.c_str(), f.module.c_str(),
               static_cast<unsigned long long>(f.offset), index_.profile().path.c_str());
        }
        break;
      case ProfileIndex::Status::OtherSizes:
        stats_.record_profile(Stats::ProfileUse::OtherSizes);
        if (reported_.insert(site).second)
          log(level_for(sizes_said_), "%s at %s: profile %s recorded other message sizes at this call site (other input, or "
               "other TNBC_BCAST_MAX_SEGMENTS / TNBC_MIN_BYTES): calls with these sizes run with default priorities",
               kind.c_str(), r.site->where.c_str(), index_.profile().path.c_str());
        break;
    }
    return {};
  }

 private:
  // The first problem of a kind is a warning on rank 0 (every rank usually sees the same),
  // the rest are details for TNBC_LOG=info.
  LogLevel level_for(bool& said) {
    const LogLevel level = !said && rank_ == 0 ? LogLevel::Warn : LogLevel::Info;
    said = true;
    return level;
  }

  struct Id {
    Stack stack;
    std::uint64_t site = 0, key = 0;
  };
  // The call's site and instance key, as the trace pass computed them. The engine asks
  // run_blocking() (`reuse` false: always walks the stack) and then order() for the same call
  // (`reuse` true): that one takes the walk just made on this thread if the shape and return
  // address are the same, and consumes it.
  Id identify(const CallShape& call, bool reuse) {
    Memo& m = memo_[std::this_thread::get_id()];
    if (reuse && m.valid && same_call(m.shape, call)) {
      m.valid = false;
      return m.id;
    }
    Id id;
    id.stack = sites_.capture(call.site.return_address);
    id.site = sites_.site_hash(id.stack, kind_name(call.kind), call.comm_size);
    id.key = instance_key(id.site, size_signature(call.recv_bytes, call.send_bytes, call.root));
    m.shape = call;
    m.id = id;
    m.valid = !reuse;
    return id;
  }

  std::string where_of(const Stack& stack) {
    const Frame& f = sites_.describe(stack.n ? stack.pcs[0] : 0);
    char off[32];
    std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(f.offset));
    return (f.symbol.empty() ? std::string("?") : f.symbol) + " (" + f.module + off + ")";
  }

  // The model's figures of a decision, for the summary's `model` block.
  struct PlainKey {
    int kind, comm_size;
    std::uint64_t sig;
    bool operator<(const PlainKey& o) const { return std::tie(kind, comm_size, sig) < std::tie(o.kind, o.comm_size, o.sig); }
  };
  struct PlainEntry {
    bool plain = false;
    std::uint64_t id = 0;
    std::string where;
    std::optional<Decision> first;
  };

  struct Memo {
    bool valid = false;
    CallShape shape;
    Id id;
  };
  struct DecisionKey {
    std::uint64_t site;
    bool sizes_recorded;
    bool operator==(const DecisionKey&) const = default;
  };
  struct DecisionHash {
    std::size_t operator()(const DecisionKey& k) const { return std::hash<std::uint64_t>()(k.site) ^ k.sizes_recorded; }
  };

  ProfileIndex index_;
  Stats& stats_;
  int rank_;
  Settings settings_;
  Judge judge_;
  bool agreed_ = false;
  std::shared_ptr<model::Summary> summary_;
  std::unordered_map<std::uint64_t, Decision> judged_;  // per profile site, at start()
  std::map<PlainKey, PlainEntry> plain_;
  std::mutex mutex_;
  CallSites sites_;
  std::unordered_map<std::thread::id, Memo> memo_;
  struct Decided {
    Decision d;
    std::size_t recorded = 0;  // its entry in the summary's decisions (Stats)
  };
  std::unordered_map<DecisionKey, Decided, DecisionHash> decided_;
  std::unordered_set<std::uint64_t> reported_;  // sites already reported
  std::unordered_map<std::uint64_t, std::optional<SiteProgram>> programs_;  // per site
  bool unknown_said_ = false, sizes_said_ = false;
};

}  // namespace

Result<std::unique_ptr<ReadOrderSource>> load_profile_orders(const Settings& s, Stats& stats, int world_rank,
                                                             int world_size) {
  if (s.profile.empty()) {
    stats.set_profile("", "none");
    return Status::error("TNBC_MODE=optimize needs a profile (TNBC_PROFILE=FILE, written by `tnbc merge`); none given");
  }
  Result<LoadedProfile> p = read_profile(s.profile);
  Status fits = p.ok() ? check_profile_run(p.value(), world_size, executable_path()) : p.status();
  if (!fits.ok()) {
    stats.set_profile(s.profile, "rejected");
    return fits;
  }
  stats.set_profile(s.profile, "loaded");
  return std::unique_ptr<ReadOrderSource>(std::make_unique<ProfileOrders>(std::move(p).value(), stats, world_rank, s));
}

}  // namespace tnbc::trace
