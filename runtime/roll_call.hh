#pragma once
// The roll call: which ranks of a communicator reached a collective of tnbc's own that every rank
// must enter, asked when the wait for it times out. One MPI_Iallreduce (the ranks' vote,
// runtime/call_vote.hh) or MPI_Comm_idup (the private duplicate a communicator's first collective
// makes) cannot say who is missing; the ranks that came can: the rank whose wait timed out asks
// the others, those waiting in the same collective answer from their wait, and the ranks that
// neither answer nor ask within the grace period are named (docs/limitations.md). Point-to-point
// on a private duplicate with its own tag, the largest (runtime/engine.cc's tag blocks stay below
// it), never a tag the schedules use: the vote's on its communicator's duplicate, the first
// collective's on MPI_COMM_WORLD's (the communicator's own does not exist yet), asking its
// members only. Each message carries the number of the collective it is about (equal on every
// rank asked: MPI's ordering rule; a first collective's from its members' world ranks), so that a
// question or an answer arriving after its collective ended — the job goes on where every rank
// answered (one came late: runtime/comm_cache.hh) — is never counted in a later roll call.
// One per private duplicate (PrivateComm::roll), which keeps the words of its sends; safe for
// several threads at once (matched probes; the world's serves every communicator's first call).

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

namespace tnbc {

class RollCall {
 public:
  // `comm`: a private duplicate, of `size` ranks, this one `rank`; `tag` above every schedule's tags.
  RollCall(MPI_Comm comm, int rank, int size, int tag) : comm_(comm), rank_(rank), size_(size), tag_(tag) {}

  // Answers the roll calls other ranks started about collective number `call`, the one this
  // rank waits in (others' questions are dropped: the world's duplicate serves several kinds of
  // wait, and a rank must not say it is in a collective it is not); called from the wait's loop
  // (cheap: one Improbe).
  void answer(std::uint64_t call);
  // Asks `members` (ranks of the duplicate; empty: all of them) whether they are in collective
  // number `call`, then for `grace_ns` takes their answers (and answers other askers): those of
  // them that did neither, by their place in `members` (their rank in the communicator waited on;
  // with `members` empty, their rank of the duplicate), in order.
  std::vector<int> absent(std::uint64_t call, long long grace_ns, const std::vector<int>& members = {});

 private:
  // A message: the collective's number, and whether it asks (1) or answers (0).
  struct Word {
    std::uint64_t call = 0;
    std::uint64_t asks = 0;
  };
  // Takes one message of a roll call if there is one: its sender and word.
  bool take(int& source, Word& word);
  // Sends `word` to `to`, not waited for (its request freed: a rank that never comes never
  // receives it). The word stays in `sent_` while the duplicate lives, as a send's buffer must.
  void send(Word word, int to);

  MPI_Comm comm_;
  int rank_;
  int size_;
  int tag_;
  std::mutex sent_mutex_;
  std::deque<Word> sent_;  // a deque: its elements never move (a few words each roll call)
};

}  // namespace tnbc
