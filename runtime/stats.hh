// Per-collective-kind and per-call-site counters, written as a per-rank JSON summary
// (format "tnbc-summary", version 1; documented in docs/formats.md) at MPI_Finalize.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace tnbc {

enum class Kind { Bcast, Alltoall, Alltoallv };
inline constexpr std::array<const char*, 3> kKindNames = {"bcast", "alltoall", "alltoallv"};

enum class Lang { C, Fortran };

// Where a collective was called from: the return address of the MPI entry point.
struct CallSite {
  const void* return_address = nullptr;
  Lang lang = Lang::C;
};

// How a call ended (what the summary counts).
enum class Outcome { EarlyReturn, CompletedInCall, Passthrough };

// Why a call did not return early. Names are part of the summary format.
enum class Reason {
  None,
  Mode,                  // TNBC_MODE is off/passthrough/trace
  BelowThreshold,        // smaller than TNBC_MIN_BYTES
  Intercommunicator,
  NoncontiguousDatatype,
  NotGuardable,          // no whole page to guard, or the memory cannot be protected
  ThreadLevel,           // MPI_THREAD_MULTIPLE not available
  Disabled,              // tnbc turned itself off after an error (see the log)
  ReceiveTypeMismatch,   // type sizes disagree with the send side
};
const char* reason_name(Reason r);

struct KindCounters {
  std::uint64_t calls = 0, fortran_calls = 0, bytes = 0;
  std::uint64_t early_return = 0, completed_in_call = 0, passthrough = 0;
  std::map<std::string, std::uint64_t> reasons;
};

struct SiteCounters {
  std::uint64_t calls = 0, bytes = 0;
};

class Stats {
 public:
  void record(Kind kind, CallSite site, std::uint64_t bytes, Outcome outcome, Reason reason);
  KindCounters kind(Kind k) const;
  // JSON text of the whole summary (rank, size and mode are the caller's).
  std::string summary_json(int rank, int size, const std::string& mode) const;

 private:
  mutable std::mutex mutex_;
  std::array<KindCounters, 3> kinds_{};
  std::map<std::tuple<int, int, const void*>, SiteCounters> sites_;  // (kind, lang, address)
};

// Escapes a string for JSON output.
std::string json_escape(const std::string& s);

}  // namespace tnbc
