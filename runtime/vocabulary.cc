#include "runtime/vocabulary.hh"

namespace tnbc {

namespace {

// The collectives tnbc makes return early, in Kind order (docs/extending.md adds one).
constexpr CollectiveInfo kCollectives[] = {
    {Kind::Bcast, "bcast", "MPI_Bcast", SizeUnit::Whole, true},
    {Kind::Alltoall, "alltoall", "MPI_Alltoall", SizeUnit::PerPeer, true},
    {Kind::Alltoallv, "alltoallv", "MPI_Alltoallv", SizeUnit::None, false},
    {Kind::Allgather, "allgather", "MPI_Allgather", SizeUnit::PerPeer, true},
    {Kind::Allgatherv, "allgatherv", "MPI_Allgatherv", SizeUnit::Largest, true},
};
static_assert(std::size(kCollectives) == kKindCount, "one row per Kind");

constexpr bool rows_in_kind_order() {
  for (std::size_t i = 0; i < std::size(kCollectives); ++i)
    if (static_cast<std::size_t>(kCollectives[i].kind) != i) return false;
  return true;
}
static_assert(rows_in_kind_order(), "the table is indexed by Kind");

}  // namespace

std::span<const CollectiveInfo> collectives() { return kCollectives; }

const CollectiveInfo& info(Kind k) { return kCollectives[static_cast<std::size_t>(k)]; }

std::optional<Kind> kind_named(std::string_view name) {
  for (const CollectiveInfo& c : kCollectives)
    if (std::string_view(c.name) == name) return c.kind;
  return std::nullopt;
}

const char* reason_name(Reason r) {
  switch (r) {
    case Reason::None: return "none";
    case Reason::Mode: return "mode";
    case Reason::BelowThreshold: return "below_threshold";
    case Reason::Intercommunicator: return "intercommunicator";
    case Reason::SingleRank: return "single_rank";
    case Reason::NoncontiguousDatatype: return "noncontiguous_datatype";
    case Reason::NotGuardable: return "not_guardable";
    case Reason::ThreadLevel: return "thread_level";
    case Reason::Disabled: return "disabled";
    case Reason::ReceiveTypeMismatch: return "type_size_mismatch";
    case Reason::SignalHandler: return "signal_handler";
    case Reason::NoOverlapToGain: return "no_overlap_to_gain";
    case Reason::SiteTrial: return "site_trial";
    case Reason::EarlyReturnSlower: return "early_return_slower";
    case Reason::PricedLoss: return "priced_loss";
    case Reason::AgreedPlain: return "agreed_plain";
    case Reason::Count_: break;
  }
  return "unknown";
}

const char* wait_source_name(WaitSource s) {
  switch (s) {
    case WaitSource::Fault: return "fault";
    case WaitSource::Userfault: return "userfault";
    case WaitSource::Fence: return "fence";
    case WaitSource::Drain: return "drain";
  }
  return "unknown";
}

}  // namespace tnbc
