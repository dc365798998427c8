// Mode optimize: does returning early pay at a call site? (docs/trace.md, "Sites that run
// blocking")
//
// The T-NBC paper's Eq. 3 bounds the overlap an early return can achieve by
// min(Tcomm - Tinit, T_CURC + T_CRC): the communication left after the call, and the
// computation the program does before it needs the data (CURC: from the return to the first
// touch of received data) plus while it consumes the data (CRC). Returning early costs: the
// set-up in the call (Tinit: staging copy, guard), and after it the publication of the pages,
// the faults of the first accesses and the progress thread's CPU. With C the modelled cost of
// both (config: TNBC_EARLY_RETURN_COST_US + TNBC_EARLY_RETURN_COST_US_PER_MIB per MiB
// received), counted as Tinit in the first term and as overhead in the second:
//
//     saved = min(Tcomm, T_CURC + T_CRC) - C        complete in the call when saved <= 0
//
// A call that does not pay still runs tnbc's own schedule (the same messages, tags and private
// communicator as an early return), to completion inside the call and with no guard, never
// plain MPI: ranks that decide differently for one collective still exchange the same messages.
// So the decision is rank-local: no rank needs to know what another decided, and a rank may
// reach a collective from a site the profile decided while another reaches it from one it
// never saw. Each site is decided from the profile's values for that site, over all the ranks
// that called it there (its estimates never mix in other sites):
//   Tcomm   median over those ranks of their median blocking duration (trace pass, `dur_ns`)
//   X       median over the receiving ranks with a CURC estimate of T_CURC + T_CRC, where
//           T_CURC = the rank's median time from return to the first touch and
//           T_CRC  = bytes per call / R_CRC (the rate at which it consumed the data between its
//                    first touches); without an R_CRC (one sub-message seen) the sum of its gaps
//   bytes   the most any rank received per call (median over its calls): the heaviest rank
//           pays the most and the collective ends with it
// No estimate (no rank touched the data in the trace, or an old profile), a site not in the
// profile or sizes it did not record: return early (as nbc), since nothing shows that it
// cannot pay.
//
// Pure C++ (no MPI): the library, `tnbc merge`/`tnbc report` and the unit tests link it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/config.hh"
#include "trace/profile.hh"

namespace tnbc::trace {

// Site-level aggregates of one profile site, over the ranks that called it.
struct SiteEstimate {
  int estimating_ranks = 0;            // receiving, traced ranks with a CURC estimate
  std::optional<double> comm_ns;       // Tcomm
  std::optional<double> curc_ns;       // median T_CURC (over the estimating ranks)
  std::optional<double> crc_ns;        // median T_CRC
  std::optional<double> overlap_ns;    // median T_CURC + T_CRC (per rank, then the median)
  double bytes = 0;                    // most bytes received per call by one rank
};
SiteEstimate estimate_site(const ProfileSite& s);

// T_CRC of one rank for `bytes` received per call: bytes / its R_CRC, or without an R_CRC (one
// sub-message seen) or bytes the sum of its gaps between first touches. Nothing when the rank
// received nothing, was not traced or has no CURC estimate (then its T_CURC is unknown too).
std::optional<double> rank_crc_ns(const ProfileSite::Rank& r, std::optional<double> bytes);

// The cost of returning early: fixed + per MiB received (config, see above).
struct CostModel {
  double fixed_ns = 0, ns_per_mib = 0;
  double cost_ns(double bytes) const { return fixed_ns + ns_per_mib * bytes / (1024.0 * 1024.0); }
};
CostModel cost_model(const Settings& s);

// Why a call returns early or completes in the call ("blocking"). Names are part of the
// summary format.
enum class Basis {
  NoOverlapToGain,  // blocking (tnbc's schedule, completed in the call): saved <= 0
  OverlapPays,      // early: saved > 0
  NotInProfile,     // early: the site is not in the profile
  OtherSizes,       // early: the profile did not record these sizes (Alltoall, Bcast) at the site
  NoEstimate,       // early: no CURC estimate (nothing touched, not traced, an older profile)
  Off,              // early: TNBC_PROFILE_BLOCKING=off
};
const char* basis_name(Basis b);

struct Decision {
  Basis basis = Basis::NotInProfile;
  bool blocking() const { return basis == Basis::NoOverlapToGain; }
  std::optional<double> comm_ns, overlap_ns, saved_ns;  // set when the estimate was complete
  double cost_ns = 0;
};

// `site` nullptr: not in the profile. `sizes_recorded`: the call's sizes were recorded at the
// site (pass true where sizes are not known alike on all ranks: Alltoallv).
Decision decide(const ProfileSite* site, bool sizes_recorded, const CostModel& cost, bool enabled);
// The same from an estimate (what `decide` computes from the site).
Decision decide(const SiteEstimate& e, const CostModel& cost);

// One line for people: "completes in the call: no overlap to gain (min(Tcomm 27.1 ms, T_CURC +
// T_CRC 1.20 ms) - cost 2.50 ms = -1.30 ms)".
std::string describe(const Decision& d);

}  // namespace tnbc::trace
