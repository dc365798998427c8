#pragma once
// The roll call: which ranks of a communicator reached a collective of tnbc's own that every rank
// must enter (the ranks' vote, runtime/call_vote.hh), asked when the wait for it times out. One
// MPI_Iallreduce cannot say who is missing; the ranks that came can: the rank whose wait timed
// out asks every other rank on tnbc's private duplicate, those waiting in the same collective
// answer from their wait, and the ranks that neither answer nor ask within the grace period are
// named (docs/limitations.md). Point-to-point on the duplicate with its own tag, the largest
// (runtime/engine.cc's tag blocks stay below it), never a tag the schedules use.

#include <mpi.h>

#include <vector>

namespace tnbc {

class RollCall {
 public:
  // `comm`: tnbc's private duplicate, of `size` ranks, this one `rank`; `tag` above every
  // schedule's tags.
  RollCall(MPI_Comm comm, int rank, int size, int tag) : comm_(comm), rank_(rank), size_(size), tag_(tag) {}

  // Answers any roll call another rank started; called from the wait's loop (cheap: one Iprobe).
  void answer();
  // Asks every other rank, then for `grace_ns` takes their answers (and answers other askers):
  // the ranks, in order, that did neither.
  std::vector<int> absent(long long grace_ns);

 private:
  // Takes one message of the roll call if there is one: its sender and word.
  bool take(int& source, int& word);
  // Sends `word` to `to`, not waited for (its request freed; the word is a constant).
  void send(const int& word, int to);

  MPI_Comm comm_;
  int rank_;
  int size_;
  int tag_;
};

}  // namespace tnbc
