#include "runtime/policy.hh"

#include <algorithm>

namespace tnbc {

namespace {

class RulesPolicy final : public Policy {
 public:
  RulesPolicy(const Settings& s, std::size_t page, std::unique_ptr<ReadOrderSource> orders)
      : s_(s), page_(page), orders_(std::move(orders)) {
    if (s.guard == GuardChoice::Protect) guards_ = {GuardKind::ProtNone};
    else guards_ = {GuardKind::Userfaultfd, GuardKind::ProtNone};
  }

  void set_min_bytes(std::size_t min_bytes) override { min_bytes_ = min_bytes; }

  Reason route(Kind kind, bool intercommunicator, int comm_size, std::size_t unit) const override {
    (void)kind;
    if (intercommunicator) return Reason::Intercommunicator;
    if (comm_size <= 1) return Reason::SingleRank;
    if (unit != SIZE_MAX && unit < min_bytes_) return Reason::BelowThreshold;
    return Reason::None;
  }

  // One segment per kMinGuardablePages pages (the smallest guardable segment), at least 1, at
  // most TNBC_BCAST_MAX_SEGMENTS; never from measured costs, so the trace pass and later runs cut
  // alike.
  int bcast_segments(std::size_t bytes) const override {
    const std::size_t floor = kMinGuardablePages * std::max<std::size_t>(page_, 1);
    const auto most = static_cast<std::size_t>(std::max<std::int64_t>(1, s_.bcast_max_segments));
    return static_cast<int>(std::clamp<std::size_t>(bytes / floor, 1, most));
  }

  PieceSetting pieces(Kind) const override { return s_.piece_bytes; }

  bool early_return_pays(Kind, std::uint64_t received) const override { return received >= min_bytes_; }

  bool complete_in_call(const CallShape& call) override { return orders_ && orders_->run_blocking(call); }

  std::vector<int> read_order(const CallShape& call) override {
    return orders_ ? orders_->order(call) : std::vector<int>{};
  }

  bool lazy_send_copy() const override { return s_.send_copy == SendCopy::Lazy; }
  std::span<const GuardKind> guards() const override { return guards_; }
  bool swap_pages() const override { return s_.uffd_publish == UffdPublish::Auto; }
  int send_window(Driver d) const override {
    return d == Driver::ProgressThread ? static_cast<int>(s_.send_window) : 0;
  }
  // Back-to-back polls; yielding once TNBC_POLL_MIN_US passed idle only where the node's ranks
  // outnumber its CPUs (then another rank needs this CPU).
  Waiting waiting() const override {
    return {std::max<long long>(s_.poll_min_us * 1000, 1000), oversubscribed_, s_.timeout_s * 1000000000LL};
  }
  void set_cpu_share(const CpuShare& c) override { oversubscribed_ = c.node_ranks > c.node_cpus && c.node_cpus > 0; }
  // auto: mode optimize (the profile is what gives the sends an order worth keeping node-wide:
  // with the default order, every rank's bodies are equally urgent).
  bool node_links() const override {
    return s_.node_priorities == NodePriorities::On ||
           (s_.node_priorities == NodePriorities::Auto && s_.mode == Mode::Optimize);
  }
  bool node_priorities(Kind) const override {
    return s_.node_priorities == NodePriorities::On || (s_.node_priorities == NodePriorities::Auto && orders_);
  }
  long long node_hold_ns() const override { return s_.node_hold_us * 1000; }
  bool node_local_on_link() const override { return s_.node_local_sends == NodeLocalSends::Link; }

 private:
  Settings s_;
  std::size_t page_;
  std::size_t min_bytes_ = 0;
  std::unique_ptr<ReadOrderSource> orders_;
  std::vector<GuardKind> guards_;
  bool oversubscribed_ = false;
};

}  // namespace

std::unique_ptr<Policy> make_rules_policy(const Settings& s, std::size_t page, std::unique_ptr<ReadOrderSource> orders) {
  return std::make_unique<RulesPolicy>(s, page, std::move(orders));
}

}  // namespace tnbc
