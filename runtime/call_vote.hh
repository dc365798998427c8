// Mode nbc's trial, agreed over a communicator's ranks: where every rank's trial found completing in
// the call faster than returning early, the calls run as the MPI library's own (docs/architecture.md,
// "Mode nbc's trial per site", the agreement).
//
// A site's trial (runtime/site_trial.hh) is rank-local: a rank may complete its calls in the call while
// another returns early, so a completion in the call runs tnbc's schedule, whose messages match
// either way. The library's own call is faster (is-proxy W at np 2 on 2 nodes: every call through
// tnbc's schedule in the call 0.971x the plain program; docs/benchmarks.md, "Session 70"), but every
// rank must choose it for the same calls. This class keeps that choice equal on every rank of a
// communicator from inputs equal there:
//   - calls are keyed by what MPI makes equal on every rank (the kind, the root, the size in the
//     kind's unit, SizeUnit; Alltoallv's sizes differ: its key is its kind), and the keys numbered in
//     the order they first occur: MPI's ordering rule gives every rank the same collectives on the
//     communicator in the same order;
//   - at agreed calls (the communicator's 7th, 9th, ..., 15th call that reaches the trial, then every
//     8th to the 128th, then every 32nd) the ranks vote: a rank is for a key where its last calls
//     of the key, one per site that called it (at most 4 sites), completed in the call on a trial's
//     verdict (or were the library's call already), and the model does not find tnbc's schedule in
//     the call faster than the library's there; the ballots are OR-reduced (ballot()), with a hash of
//     the key table, whose disagreement turns the agreement off on every rank alike;
//   - a key every rank voted for runs as the library's own until the first vote at 8 times the call
//     count at which it was agreed: then its calls go through the engine again and their sites try
//     again when their trials are due, so that a program that changes can go back.
// The engine holds one per private communicator (runtime/comm_cache.hh) and makes the reduction;
// this part is pure (unit-tested).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/fnv1a.hh"
#include "runtime/vocabulary.hh"

namespace tnbc {

// A call's arguments equal on every rank of its communicator.
struct VoteKey {
  Kind kind = Kind::Bcast;
  std::size_t unit = 0;  // the size in the kind's unit; kNoUnit (SIZE_MAX) where ranks differ
  int root = -1;         // a broadcast's root; -1 for the other kinds
  bool operator==(const VoteKey&) const = default;
};

class CallVote {
 public:
  static constexpr int kMaxKeys = 64;  // one bit each in a ballot
  using Ballot = std::array<std::uint64_t, 3>;  // [~for, hash, ~hash], reduced with MPI_BOR

  // A call that reached the trial: its key's index (-1: the table is full, never agreed) and
  // whether the ranks vote in it (then ballot(), the reduction, apply(), before plain()).
  struct Entry {
    int key = -1;
    bool vote = false;
  };
  Entry enter(const VoteKey& k);

  // Whether the calls of `key` run as the library's own.
  bool plain(int key) const { return key >= 0 && !off_ && keys_[static_cast<std::size_t>(key)].plain; }

  // How this rank's call of `key` from `site` ran: `settled` where it completed in the call on its
  // site's trial's verdict or was the library's call by this agreement, and the model does not
  // find tnbc's schedule in the call faster than the library's at its size.
  void record(int key, const void* site, bool settled);

  Ballot ballot() const;
  // What the reduced ballots changed.
  struct Applied {
    std::uint64_t agreed = 0;   // keys that run as the library's own from this call
    std::uint64_t retried = 0;  // keys that go back through the engine
    bool disagreed = false;     // the key tables differ: the agreement is off from now on
  };
  Applied apply(const Ballot& reduced);

  // The key behind an index (messages).
  const VoteKey& key(int index) const { return keys_[static_cast<std::size_t>(index)].key; }
  std::uint64_t calls() const { return calls_; }
  bool off() const { return off_; }

  // Whether the ranks vote at the communicator's `n`-th call (1 = first) that reaches the trial.
  static bool vote_at(std::uint64_t n);

 private:
  static constexpr std::size_t kSitesPerKey = 4;  // sites counted per key (more: the key never votes for)
  static constexpr std::uint64_t kRetryFactor = 8;  // a key agreed at call n goes back at the first vote from 8n
  struct KeyState {
    VoteKey key;
    bool plain = false;
    std::uint64_t agreed_at = 0;   // the call count of the vote that agreed it
    std::uint32_t settled_run = 0; // this rank's last calls of the key that settled, in a row
    std::array<const void*, kSitesPerKey> sites{};
    std::size_t site_count = 0;    // kSitesPerKey + 1: too many
    bool votes_for() const;
  };
  std::vector<KeyState> keys_;
  std::uint64_t calls_ = 0;
  std::uint64_t hash_ = kFnv1aBasis;  // FNV-1a over the key table, in order
  bool off_ = false;
};

}  // namespace tnbc
