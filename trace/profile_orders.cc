#include "trace/profile_orders.hh"

#include <mutex>
#include <unordered_set>

#include "runtime/log.hh"
#include "trace/callsite.hh"
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

class ProfileOrders final : public ReadOrderSource {
 public:
  ProfileOrders(LoadedProfile p, Stats& stats, int world_rank)
      : index_(std::move(p)), stats_(stats), rank_(world_rank) {}

  std::vector<int> order(const CallShape& call) override {
    std::lock_guard lock(mutex_);
    const std::string kind = kKindNames[static_cast<std::size_t>(call.kind)];
    const Stack stack = sites_.capture(call.site.return_address);
    const std::uint64_t site = sites_.site_hash(stack, kind, call.comm_size);
    const std::uint64_t key = instance_key(site, size_signature(call.recv_bytes, call.send_bytes, call.root));
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

  ProfileIndex index_;
  Stats& stats_;
  int rank_;
  std::mutex mutex_;
  CallSites sites_;
  std::unordered_set<std::uint64_t> reported_;  // sites already reported
  bool unknown_said_ = false, sizes_said_ = false;
};

}  // namespace

std::unique_ptr<ReadOrderSource> load_profile_orders(const Settings& s, Stats& stats, int world_rank, int world_size,
                                                     std::string& problem) {
  if (s.profile.empty()) {
    problem = "TNBC_MODE=optimize needs a profile (TNBC_PROFILE=FILE, written by `tnbc merge`); none given";
    stats.set_profile("", "none");
    return nullptr;
  }
  try {
    LoadedProfile p = read_profile(s.profile);
    problem = check_profile_run(p, world_size, executable_path());
    if (problem.empty()) {
      stats.set_profile(s.profile, "loaded");
      return std::make_unique<ProfileOrders>(std::move(p), stats, world_rank);
    }
  } catch (const ProfileError& e) {
    problem = e.what();
  }
  stats.set_profile(s.profile, "rejected");
  return nullptr;
}

}  // namespace tnbc::trace
