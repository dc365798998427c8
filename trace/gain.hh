// Mode optimize: does returning early pay at a call site? (docs/trace.md, "Sites whose calls
// complete in the call")
//
// The T-NBC paper's Eq. 3 bounds the overlap an early return can achieve by
// min(Tcomm - Tinit, T_CURC + T_CRC): the communication left after the call, and the
// computation the program does before it needs the data (CURC: from the return to the first
// touch of received data) plus while it consumes the data (CRC). The cost model
// (runtime/model/estimate.hh, overlap) predicts what the early return then costs on this
// machine and placement: the set-up in the call (Tinit), tnbc's schedule against the MPI
// library's own, the progress thread's CPU where the rank has none to spare, publication and
// the readers' wake-ups, and a reader that outpaces the data. With E the predicted time of
// call + CURC + CRC after an early return:
//
//     saved = Tcomm + T_CURC + T_CRC - E     returns early when saved > margin, else not
//     margin = margin_of_cost x cost + margin_of_tcomm x Tcomm   (margin_of_tcomm_shared where
//                                                                ranks share a node)
//
// where cost = hidden - saved (what tnbc costs on top of the hidden time). The margin keeps a
// site whose predicted gain is within the model's error (docs/benchmarks.md, "The cost model
// against measurements") from returning early: a user who runs trace then optimize must not
// lose. TNBC_EARLY_RETURN_COST_US set to a number replaces the model by the earlier fixed rule:
// saved = min(Tcomm, T_CURC + T_CRC) - (that + TNBC_EARLY_RETURN_COST_US_PER_MIB x MiB received).
//
// A call that does not pay runs as the MPI library's own call when every rank is known to decide
// alike (ReadOrderSource::plain: every site the profile has for the call's kind, communicator
// size and — where they agree — sizes is judged no gain), else tnbc's own schedule to completion
// in the call (the same messages as an early return): ranks that reach one collective from
// different sites still match. Each site is decided from the profile's values for that site,
// over all the ranks that called it there:
//   Tcomm   median over those ranks of their median blocking duration (trace pass, `dur_ns`); a
//           broadcast's over its receiving calls, its root's apart (SiteEstimate::root_comm_ns):
//           the root ends its call before its receivers by its lead on them, and what its early
//           return saves or costs (model::bcast_root_overlap) within that lead changes no one's
//           time; a loss beyond it counts. bcast-proxy W at np 2 on 2 nodes, the root rotating:
//           the root's calls 0.7-4 ms, the receivers' 28-34 ms; one Tcomm for both (a median of the
//           ranks' medians over both roles: 6.4 ms) had set the margin by the root's short calls
//           (docs/benchmarks.md, "Session 78")
//   X       median over the receiving ranks with a CURC estimate of T_CURC + T_CRC, where
//           T_CURC = the rank's median time from return to the first touch and
//           T_CRC  = bytes per call / R_CRC (the rate at which it consumed the data between its
//                    first touches); without an R_CRC (one sub-message seen) the sum of its gaps
//   bytes   the most any rank received per call (median over its calls)
//   blocks  where an Alltoallv's (Allgatherv's) blocks differ between pairs and the site is on the
//           whole world: what each rank received from each peer (median over its calls), for the
//           bytes tnbc's schedule moves through each node (model::Coll::blocks); the rest of the
//           estimate takes `bytes` (the library's call follows its heaviest receiver)
// No estimate (no rank touched the data in the trace, or an old profile), a site not in the
// profile or sizes it did not record: return early (as nbc), since nothing shows that it
// cannot pay.
//
// Pure C++ (no MPI): the library, `tnbc merge` and the unit tests link it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/config.hh"
#include "runtime/model/bands.hh"
#include "runtime/model/estimate.hh"
#include "runtime/model/inputs.hh"
#include "trace/profile.hh"

namespace tnbc::trace {

// Site-level aggregates of one profile site, over the ranks that called it.
struct SiteEstimate {
  int estimating_ranks = 0;            // receiving, traced ranks with a CURC estimate
  std::optional<double> comm_ns;       // Tcomm (a broadcast's: of its calls at the receivers)
  // A broadcast whose profile records its roots (ProfileSite::Rank::root_calls): the root's Tcomm
  // (median over the ranks that were its root of their median) and the share of the site's calls
  // on all ranks that were a root's (1/n where each call has one root and n - 1 receivers).
  std::optional<double> root_comm_ns;
  double root_share = 0;
  std::optional<double> curc_ns;       // median T_CURC (over the estimating ranks)
  std::optional<double> crc_ns;        // median T_CRC
  std::optional<double> overlap_ns;    // median T_CURC + T_CRC (per rank, then the median)
  double bytes = 0;                    // most bytes received per call by one rank
  // The blocks per pair of ranks (model::Blocks, by rank of the communicator), where they can differ
  // (Alltoallv, Allgatherv) and every rank of the site recorded its blocks from each peer, the
  // ranks being the communicator's (0..comm_size-1, each once): nullptr elsewhere.
  std::shared_ptr<const model::Blocks> blocks;
  bool own_last = false;               // a rank reads its own block after every peer's (model::Program::own_last)
};
SiteEstimate estimate_site(const ProfileSite& s);
// SiteEstimate::bytes alone (the most bytes received per call by one rank), without the rest.
double site_bytes(const ProfileSite& s);
// Whether some rank of the site reads its own block after every peer's (exchange family): a rank
// whose recorded order ends with its own block, where the site's ranks are those of one
// communicator (as many as its size, numbered below it: the profile's rank numbers are the job's,
// its sub-message indices places in the communicator); elsewhere every receiving rank recording
// one and the same full order (at least as many ranks as the communicator has), which puts the
// own block of the rank that order names last, last.
bool reads_own_last(const ProfileSite& s);
// T_CURC and T_CRC of a site's estimate (T_CRC: the overlap less T_CURC); nothing without an
// overlap estimate.
std::optional<model::Program> site_program(const SiteEstimate& e);

// T_CRC of one rank for `bytes` received per call: bytes / its R_CRC, or without an R_CRC (one
// sub-message seen) or bytes the sum of its gaps between first touches. Nothing when the rank
// received nothing, was not traced or has no CURC estimate (then its T_CURC is unknown too).
std::optional<double> rank_crc_ns(const ProfileSite::Rank& r, std::optional<double> bytes);

// The fixed rule: the cost of returning early is fixed + per MiB received.
struct CostModel {
  double fixed_ns = 0, ns_per_mib = 0;
  double cost_ns(double bytes) const { return fixed_ns + ns_per_mib * bytes / (1024.0 * 1024.0); }
};

// How the sites are judged.
struct Judge {
  bool enabled = true;                         // TNBC_PROFILE_BLOCKING=auto
  std::optional<CostModel> fixed;              // TNBC_EARLY_RETURN_COST_US set: the fixed rule
  std::shared_ptr<const model::Inputs> model;  // the cost model (nullptr: none yet)
  model::Execution exec;
  PieceSetting piece_bytes;  // TNBC_PIECE_BYTES: how the run cuts an exchange (model::run_pieces)
  // The margin a predicted saving must exceed: these shares of the predicted cost and of Tcomm
  // (TNBC_EARLY_RETURN_MARGIN_COST_PCT, TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT).
  // margin_of_tcomm_shared where the site's topology puts several ranks on a node
  // (TNBC_EARLY_RETURN_MARGIN_SHARED_NODE_PCT): the model's error measured there is larger;
  // margin_of_tcomm_busy_poll there where the machine shows the MPI library's ranks spinning on
  // fewer CPUs (runtime/model/busy_poll.hh: TNBC_EARLY_RETURN_MARGIN_BUSY_POLL_PCT).
  double margin_of_cost = 0.15, margin_of_tcomm = 0.30, margin_of_tcomm_shared = 1.0, margin_of_tcomm_busy_poll = 0.45;
  // Where tnbc's schedule completed in the call beats the library's call (model::own_call_pays),
  // an early return must beat that schedule by this share of its time, plus the cost share
  // (TNBC_EARLY_RETURN_MARGIN_OWN_PCT): both sides are the model's prices of tnbc's own schedules.
  double margin_of_own = 0.05;
  // Node-level priorities' margin on a first read judged alone (TNBC_NODE_PRIORITIES_MARGIN_PCT;
  // `tnbc merge` prints their verdict with the site's).
  double margin_of_first_read = 0.45;
  // Sites whose predicted saving lies inside the margins are left to the site trial
  // (TNBC_TRY_WITHIN_MARGIN on and TNBC_SITE_TRIAL_CALLS > 0; Basis::WithinMargin) where a rank
  // calls one of them (of their partner group) more often than the trial takes (its warm-up and
  // `trial_calls`): at fewer, every call is the trial's and its verdict comes too late for any.
  bool try_within_margin = false;
  // TNBC_SKIP_COSTLY_TRIAL: a site priced at a gain whose trial would cost more than it can
  // protect returns early untried (Basis::TrialCostlier, trial_costlier).
  bool skip_costly_trial = false;
  int trial_calls = 0;  // TNBC_SITE_TRIAL_CALLS
  // The topology decisions assume for a site over `comm_size` ranks: the world's when that is
  // the whole world, else that many ranks block-wise, as many per node as the world has (equal
  // on every rank: all sites are judged before any call, not from one rank's communicator).
  model::Topology topology(int comm_size) const;
};
Judge make_judge(const Settings& s, std::shared_ptr<const model::Inputs> model, const model::Execution& x);

// The sizes at which a site's calls return early, as Policy::route decides them in the run: from
// TNBC_MIN_BYTES up as set, else the cost model's (judge.model) on the site's communicator, else
// every size; `own`: the model's sizes whose schedule completed in the call beats the library's
// (model::own_call_bands; none with TNBC_MIN_BYTES set or without a model); `outside`: its calls
// are plain MPI anyway (model::runs_as_mpi over both: the site's size, of a kind with a per-peer
// or whole size, is not among them; a kind whose sizes differ between ranks is outside where no
// size is).
struct SiteSizes {
  model::SizeBands sizes, own;
  bool outside = false;
};
SiteSizes site_sizes(const Settings& s, const Judge& judge, const ProfileSite& site, Kind kind);

// Why a call returns early or completes in the call ("blocking"). Names are part of the
// summary format.
enum class Basis {
  NoOverlapToGain,  // not early: the model (or the fixed rule) shows no gain
  OwnCallFaster,    // not early: tnbc's schedule completed in the call beats the library's call
                    // (model::own_call_pays) and the early return's predicted total
  OverlapPays,      // early: the gain exceeds the margin
  PartnerInCall,    // not early: the gain exceeds the margin, but the same calls complete in the
                    // call on other ranks, reached there from another site (align_partners)
  PartnerEarly,     // early: the gain is inside the margin here (or none), but the same calls
                    // return early on other ranks, reached there from another site, and the
                    // partners' predicted savings beyond their margins outweigh it (align_partners)
  NotInProfile,     // early: the site is not in the profile
  OtherSizes,       // early: the profile did not record these sizes (Alltoall, Bcast) at the site
  NoEstimate,       // early: no CURC estimate (nothing touched, not traced, an older profile)
  Off,              // early: TNBC_PROFILE_BLOCKING=off
  WithinMargin,     // early, tried: the model's predicted saving lies inside its margins (below the
                    // margin, above minus the cost's share): the site trial decides
                    // (TNBC_TRY_WITHIN_MARGIN; decide_sites)
  TrialCostlier,    // early, not tried: inside the margins and priced at a gain, but the trial's
                    // completions in the call would cost more than it could save (trial_costlier)
};
const char* basis_name(Basis b);

struct Decision {
  Basis basis = Basis::NotInProfile;
  bool blocking() const {
    return basis == Basis::NoOverlapToGain || basis == Basis::OwnCallFaster || basis == Basis::PartnerInCall;
  }
  // The call may be the MPI library's own (every site of its kind and sizes so: ReadOrderSource::plain).
  bool library_call() const { return basis == Basis::NoOverlapToGain; }
  bool by_model = false;                                // the cost model judged (else the fixed rule)
  std::optional<double> comm_ns, overlap_ns, saved_ns;  // set when the estimate was complete
  double cost_ns = 0, margin_ns = 0;
  // The model's figures: its own blocking time, Eq. 3's hidden time, Tinit, tnbc's schedule
  // completed in the call (scaled as the early return's transfer: measured / modelled blocking).
  std::optional<double> model_blocking_ns, hidden_ns, in_call_ns, own_call_ns;
  // Where tnbc's schedule in the call beats the library's call: what an early return saves
  // against it instead (own_call_ns + T_CURC + T_CRC - the early return's total); margin_ns is
  // then a share of own_call_ns.
  std::optional<double> beyond_own_ns;
  bool by_blocks = false;  // tnbc's schedules priced from the site's blocks per pair (SiteEstimate::blocks)
  // A broadcast priced by role (SiteEstimate::root_share > 0): comm_ns and the figures above are
  // the receivers'; the root's Tcomm, what its early return saves (model::bcast_root_overlap), its
  // lead on the receivers (within which that changes no one's time) and its share of the calls.
  std::optional<double> root_comm_ns, root_saved_ns, root_lead_ns;
  double root_share = 0;
  double late_ns = 0;  // of comm_ns and in_call_ns, the receivers' wait for a late root (model::Overlap::late_ns)
  // A site the model judged not to return early: the largest whole percentage below the margin
  // that held it at which it would (its predicted saving clears the margin there), and the
  // setting that holds that margin (TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT with one rank per node;
  // TNBC_EARLY_RETURN_MARGIN_OWN_PCT where it was weighed against tnbc's schedule in the call).
  // What a user may try, measuring it (docs/settings.md); unset where no margin would do.
  std::optional<int> early_at_pct;
  std::string margin_setting;
  std::string partner;  // PartnerInCall, PartnerEarly: where the other ranks' site that sets it is
  // A broadcast's site no rank received at (every call there its root's): the receiving ranks'
  // site of the same calls whose decision, figures included, it took (decide_sites); else empty.
  std::string receivers;
  // NoOverlapToGain inside the margins, not tried: the most calls a rank makes at one of its
  // partner group's sites, fewer than twice what the site trial takes (2 x (Judge::trial_calls + 1)).
  std::optional<std::uint64_t> untried_calls;
};

// `site` nullptr: not in the profile. `sizes_recorded`: the call's sizes were recorded at the
// site (pass true where sizes are not known alike on all ranks: Alltoallv).
Decision decide(const ProfileSite* site, bool sizes_recorded, const Judge& j);

// A decision's figures as the summary's model block records a site (decision left empty).
model::Summary::Site summary_site(const Decision& d, std::uint64_t site, const std::string& kind, const std::string& where);
// The same from an estimate of a site of `kind` over `comm_size` ranks.
Decision decide(const SiteEstimate& e, Kind kind, int comm_size, const Judge& j);
// The fixed rule alone.
Decision decide(const ProfileSite* site, bool sizes_recorded, const CostModel& cost, bool enabled);
Decision decide(const SiteEstimate& e, const CostModel& cost);

// The cost model's decisions (`decisions[i]` of `sites[i]`) made alike for sites whose calls are
// the same collectives on different ranks: of one kind and communicator size, with a first call
// (ProfileSite::Rank::first_calls) at the same place of its rank's sequence of collectives as one
// of the other's. Where one of them completes in the call and another returns early, the group
// takes one way for all: weighed by their calls, the predicted savings beyond each site's margin
// (an early return's saving, or where it is weighed against tnbc's schedule in the call its lead
// on that schedule, less the margin: negative where the site is held) — the early return where
// their sum is positive (the sites held become PartnerEarly), else completion in the call (the
// early returns become PartnerInCall). NPB IS.A at np 4 on 2 one-CPU nodes, rank 0 reaching the
// Alltoallv from another site than ranks 1-3: rank 0 completing it in the call while the others
// returned early ran 1.17x the time of every rank completing it there; with the rule (then: the
// call for all), the same profile 0.82x (docs/benchmarks.md, "Session 62"). bcast-proxy A at np 2
// on one node: rank 1's first broadcast alone at a site of its own, held 0.05 ms inside its margin,
// kept the other site's 21 calls, each predicted 7 ms beyond theirs, in the call (session 64).
// Decisions of the fixed rule (TNBC_EARLY_RETURN_COST_US) stay each site's own.
void align_partners(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions);
// Where the model's predicted saving at a site it would run as the library's call lies inside its
// margins — at most the margin, above minus the cost's share of it (TNBC_EARLY_RETURN_MARGIN_COST_PCT):
// the model cannot tell the two ways apart there — the site is left to the site trial
// (Basis::WithinMargin, with Judge::try_within_margin): it returns early but for the trial's calls
// and its verdict, and where every rank completes the calls in the call the ranks agree to run
// them as the library's own (runtime/site_trial.hh, runtime/call_vote.hh). A site whose
// saving is below that (a program that reads at once: nothing hidden, the cost lost) keeps the
// library's call. On the guest of session 73 (np 2 on 2 nodes, 1 Gbit/s), mode nbc measured
// bcast-proxy A 1.106x and is-proxy A 1.027x the plain program where optimize, on a model whose
// savings lay inside these bounds (10.1 ms a call under an 18.0 ms margin; -0.19 ms against a cost
// share of 1.79 ms), ran the plain program (docs/benchmarks.md, "Session 73").
// Partners (align_partners) go together, weighed by their calls: the calls are the same, and one
// rank trying while another keeps them the library's leaves neither the library's call (every rank
// must agree) — NPB IS.A at np 2 on one node, rank 0's site 0.8 ms short of saving anything and
// inside its bound, rank 1's 1.6 ms short and outside it: rank 0 tried, rank 1 ran tnbc's schedule
// in the call, where both would otherwise run the plain program (docs/benchmarks.md, "Session 74").
// With Judge::skip_costly_trial, a group priced at a gain whose trial would cost more than it can
// protect returns early on the model's word instead (Basis::TrialCostlier, trial_costlier).
void leave_to_trial(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions, const Judge& j);
// Whether a site trial costs more than it can protect at a site inside the model's margins, priced
// at a gain: `saved_ns` a call (> 0) within `margin_ns`, `calls` the most a rank makes there, the
// trial `trial_calls` long after a warm-up call (trial_completions of them in the call). The true
// saving of a call is taken anywhere in saved +- margin alike (the margin is the model's error
// bound): the completions then cost, expected, C (saved + margin)^2 / (4 margin) (where the saving
// is there), and the trial protects the calls after it from (margin - saved)^2 / (4 margin) each
// (where it is not). bcast-proxy A at 4 Gbit/s (docs/benchmarks.md, "Session 79"): 6.87 ms priced
// within a 7.19 ms margin, 11 calls a rank: the trial's two completions cost 13.7 ms expected and
// protect 0.02; measured, the trial took the program from 1.297x the plain program to 1.16-1.21x.
bool trial_costlier(double saved_ns, double margin_ns, std::uint64_t calls, int trial_calls);
// A broadcast's site at which no rank received (every call there its root's: the compiler gave
// the root's path a call of its own, as an inlined fill before the call does) has nothing of its
// own to judge (Basis::NoEstimate: early returns and the trial, on no evidence). It takes the
// decision of a partner site (align_partners' groups) the model priced at which ranks received
// (one that does not run the library's call first), figures included (Decision::receivers
// names it). Found with report_prog's broadcast split so at np 2 on 2 emulated nodes: the
// receivers' site judged no gain, the library's call on every rank by `tnbc merge`, ran tnbc's
// schedule in the call at all 12 receiving calls while the roots returned early and tried (the
// plain program asks every site of the kind and size: ReadOrderSource::plain); with the rule,
// all 24 calls the library's (docs/benchmarks.md, "Session 80").
void follow_receivers(const std::vector<ProfileSite>& sites, std::vector<Decision>& decisions);
// Every site of a profile decided (decide with its sizes recorded), then aligned, then those inside
// the margins left to the trial, then the roots' own broadcast sites as their receivers': what the
// run (ProfileOrders) and `tnbc merge` both judge the profile's sites by.
std::vector<Decision> decide_sites(const std::vector<ProfileSite>& sites, const Judge& j);

// One line for people: "completes in the call: no overlap to gain (predicted: blocking 27.1 ms
// (model 25.0 ms), hidden 1.20 ms, cost 2.50 ms: saved -1.30 ms)".
std::string describe(const Decision& d);
// describe's figures alone, "(predicted: blocking 27.1 ms ...)" with the margin that would take a
// held site; "" where the estimate is incomplete. `tnbc merge` prints them for a site outside the
// sizes that return early too, whose calls are the library's whatever the site's own figures say.
std::string describe_figures(const Decision& d);

}  // namespace tnbc::trace
