// Reading a profile back (format "tnbc-profile", version 1, written by `tnbc merge`;
// docs/formats.md) for the optimized pass (TNBC_MODE=optimize), and looking up the read order
// of a collective's sub-messages by call site and size signature.
//
//   read_profile(path)      file -> Profile, or the syntax, format, version or field error
//   check_profile_run(...)  the profile against this run: np, executable
//   ProfileIndex::find      (site, instance key, rank) -> the site's orders, or why not:
//                           unknown site / other sizes than recorded
//
// Pure C++ (no MPI): the library and the unit tests link it. Whatever is wrong, the caller
// prints one message and runs the affected calls with default priorities.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/status.hh"

namespace tnbc::trace {

inline constexpr const char* kProfileFormat = "tnbc-profile";
inline constexpr int kProfileVersion = 1;  // what `tnbc merge` writes and the reader accepts
// How many of a rank's first calls at a site the profile places in the rank's sequence of
// collectives (`first_calls`: `tnbc predict --skip-first` leaves out calls before the timed part).
inline constexpr std::size_t kFirstCalls = 16;

// What the optimized pass needs of one site of the profile.
struct ProfileSite {
  std::uint64_t site = 0;           // call-site hash (frames, kind, communicator size)
  std::string kind;                 // "bcast" | "alltoall" | "alltoallv"
  int comm_size = 0;
  int sub_messages = 0;
  std::string where;                // innermost frame, "symbol (module+0xoffset)", for messages
  std::string module, offset;       // innermost frame: module basename, "0x..." (what a summary's site is)
  std::vector<int> consensus;       // sub-message indices, read first first
  struct Rank {
    int rank = 0;
    bool receives = false;
    std::vector<int> order;              // this rank's read order
    std::vector<std::uint64_t> keys;     // instance keys (site + size signature) seen
    // Estimates of the trace pass (trace/gain.hh); absent or null in the file: unknown.
    std::optional<std::uint64_t> calls, traced, bytes_per_call;
    // Bytes received per call from each sub-message (exchanges: from each peer; median over the
    // calls); empty: not recorded (a profile written before the field existed).
    std::vector<double> sub_bytes;
    // The place of the site's first calls (up to kFirstCalls) in this rank's sequence of collectives,
    // 0-based; empty: not recorded (a profile written before the field existed).
    std::vector<std::uint64_t> first_calls;
    // Median blocking duration of the collective; a broadcast's over the calls in which the rank
    // received (where it did in any: a profile written before session 78 took every call).
    std::optional<double> duration_ns;
    // A broadcast's calls in which the rank was the root, and their median blocking duration;
    // absent: not recorded (another kind, or a profile written before session 78).
    std::optional<std::uint64_t> root_calls;
    std::optional<double> root_duration_ns;
    std::optional<double> curc_ns;       // median time from return to the first touch
    std::optional<double> r_crc;         // median rate of first touches, bytes/s
    std::vector<double> gaps_ns;         // median gap before the k+1-th first touch
  };
  std::vector<Rank> ranks;
};

struct LoadedProfile {
  std::string path;
  std::uint64_t content_hash = 0;  // FNV-1a of the file's text: ranks compare it (mode optimize)
  int np = 0;
  std::string executable;
  std::vector<ProfileSite> sites;
};

// Whether a kind's blocks can differ between pairs of ranks, so that the profile keeps each
// rank's blocks per peer (`sub_bytes`, what `tnbc predict` simulates): the kinds whose size
// threshold is not one block for all (Alltoallv, Allgatherv; runtime/vocabulary.hh's SizeUnit).
// Elsewhere every block is the rank's bytes per call over the peers, and the field would only
// cost space (a number per rank and peer: ~7 MB per site at 1024 ranks).
bool blocks_can_differ(std::string_view kind);

// An error says what is wrong and names the file; `name` is used in messages (the path).
Result<LoadedProfile> parse_profile(const std::string& text, const std::string& name);
Result<LoadedProfile> read_profile(const std::string& path);

// An error, naming the file and the mismatch, when the profile does not fit this run (another
// number of processes, another executable).
Status check_profile_run(const LoadedProfile& p, int np, const std::string& executable);

class ProfileIndex {
 public:
  explicit ProfileIndex(LoadedProfile p);

  enum class Status { Found, UnknownSite, OtherSizes };
  struct Result {
    Status status = Status::UnknownSite;
    const ProfileSite* site = nullptr;       // set unless UnknownSite
    const ProfileSite::Rank* rank = nullptr;  // set when Found
  };
  // `key` is this rank's instance key of the call (site + size signature), `sub_messages` the
  // number of sub-messages the call has: both must match what the profile recorded for `rank`.
  Result find(std::uint64_t site, std::uint64_t key, int rank, int sub_messages) const;
  // The site alone (nullptr if unknown), and whether any rank recorded the instance key there:
  // both depend on the file only, not on the rank that asks.
  const ProfileSite* find_site(std::uint64_t site) const;
  bool key_recorded(const ProfileSite& s, std::uint64_t key) const;
  const LoadedProfile& profile() const { return p_; }

 private:
  LoadedProfile p_;
  std::unordered_map<std::uint64_t, std::size_t> by_site_;
  std::vector<std::vector<std::uint64_t>> site_keys_;  // per site: every rank's keys, sorted
};

}  // namespace tnbc::trace
