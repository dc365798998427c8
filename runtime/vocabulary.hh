// The words every part of tnbc shares: which collective (Kind, and the one table that names
// them), where it was called from (CallSite), how a call ended (Outcome) and why it did not
// return early (Reason). Pure C++: the library, the `tnbc` tool and the unit tests include it.
//
// A collective tnbc handles has one row in the table below (kCollectives, vocabulary.cc): its
// name in summaries, traces and profiles, its MPI name for messages, and the facts about its
// sizes that decisions depend on. Everything that lists collectives (the summary, `tnbc
// report`, the profile reader, `tnbc merge`) iterates this table; nothing else names them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tnbc {

// Values are indices into the table (and into per-kind arrays): append, never reorder.
enum class Kind : std::uint8_t { Bcast, Alltoall, Alltoallv, Allgather, Allgatherv };
inline constexpr std::size_t kKindCount = 5;

// What TNBC_MIN_BYTES is compared with, from inputs every rank of the call has alike.
enum class SizeUnit : std::uint8_t {
  Whole,    // the whole message (Bcast)
  PerPeer,  // the sub-message each rank sends every other (Alltoall, Allgather)
  Largest,  // the largest sub-message (Allgatherv: every rank has every count)
  None,     // the sizes differ between ranks (Alltoallv): every call takes tnbc's schedule, and
            // each rank compares what it receives in all (a rank-local decision)
};

struct CollectiveInfo {
  Kind kind;
  const char* name;          // "alltoall": summaries, traces, profiles, `tnbc report`
  const char* mpi_name;      // "MPI_Alltoall": messages
  SizeUnit unit;
  // Every rank knows the size of every sub-message of the call (so a profile's instance key,
  // which includes them, identifies the call alike on all ranks).
  bool sizes_agree;
};

std::span<const CollectiveInfo> collectives();
const CollectiveInfo& info(Kind k);
inline const char* kind_name(Kind k) { return info(k).name; }
// The kind named `name` in the table (summaries, profiles), or nothing.
std::optional<Kind> kind_named(std::string_view name);

// The smallest sub-message that can return early, in pages: one whole page to hold back between
// the partial first and last pages it may share with other data. The floor of TNBC_MIN_BYTES
// (runtime/threshold.hh) and the smallest broadcast segment (runtime/schedule.hh).
inline constexpr std::size_t kMinGuardablePages = 3;

enum class Lang : std::uint8_t { C, Fortran };

// Where a collective was called from: the return address of the MPI entry point.
struct CallSite {
  const void* return_address = nullptr;
  Lang lang = Lang::C;
};

// How a call ended (what the summary counts).
enum class Outcome { EarlyReturn, CompletedInCall, Passthrough };

// Why a call did not return early. Names (reason_name) are part of the summary format.
enum class Reason {
  None,
  Mode,                  // TNBC_MODE is off/passthrough/trace
  BelowThreshold,        // smaller than TNBC_MIN_BYTES
  Intercommunicator,
  SingleRank,            // a communicator of one rank: nothing to exchange
  NoncontiguousDatatype,
  NotGuardable,          // no whole page to guard, or the memory cannot be protected
  ThreadLevel,           // MPI_THREAD_MULTIPLE not available
  Disabled,              // tnbc turned itself off after an error (see the log)
  ReceiveTypeMismatch,   // type sizes disagree with the send side
  SignalHandler,         // tnbc's SIGSEGV handler was replaced and cannot be put back
  NoOverlapToGain,       // mode optimize: the profile shows no overlap to gain at the site
  SiteTrial,             // mode nbc: a trial's completion in the call (runtime/site_trial.hh)
  EarlyReturnSlower,     // mode nbc: the site's last trial found early returns slower
  PricedLoss,            // mode optimize: a site on trial the model priced at a loss, whose trial has
                         // not found early returns faster (runtime/site_trial.hh, TrialRun::Lean)
  AgreedPlain,           // mode nbc: every rank's trial completes the call's key in the call, so the
                         // ranks agreed to run it as the library's own (runtime/call_vote.hh)
  Count_,                // number of reasons (not a reason)
};
const char* reason_name(Reason r);

// Where the program waited for a collective after its call had returned (the summary's
// `blocked_ns` and `waits`; docs/reports.md defines them). Values index per-source arrays.
enum class WaitSource : std::uint8_t {
  Fault,      // a read or write of a guarded page, in tnbc's SIGSEGV handler (PROT_NONE)
  Userfault,  // the same under userfaultfd: the thread slept in the kernel, seen by the listener
  Fence,      // a call that needed the buffer first: a system call or MPI call on it, free or
              // munmap, a later collective on it, an MPI call of unknown extent, MPI_Finalize
  Drain,      // MPI_Finalize or MPI_Comm_free waiting for the collective's last sends
};
inline constexpr std::size_t kWaitSourceCount = 4;
const char* wait_source_name(WaitSource s);

}  // namespace tnbc
