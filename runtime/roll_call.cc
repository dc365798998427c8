#include "runtime/roll_call.hh"

#include <sched.h>

#include "runtime/futex.hh"

namespace tnbc {

bool RollCall::take(int& source, int& word) {
  int flag = 0;
  MPI_Status st;
  if (PMPI_Iprobe(MPI_ANY_SOURCE, tag_, comm_, &flag, &st) != MPI_SUCCESS || !flag) return false;
  source = st.MPI_SOURCE;
  PMPI_Recv(&word, 1, MPI_INT, source, tag_, comm_, MPI_STATUS_IGNORE);
  return true;
}

namespace {
// The word a message carries: a rank whose wait timed out asks, the others answer that they are
// here (constants: a send not waited for may point to them).
constexpr int kAsk = 0, kHere = 1;
}  // namespace

void RollCall::send(const int& word, int to) {
  MPI_Request req;
  if (PMPI_Isend(&word, 1, MPI_INT, to, tag_, comm_, &req) == MPI_SUCCESS) PMPI_Request_free(&req);
}

void RollCall::answer() {
  int source = 0, word = 0;
  while (take(source, word))
    if (word == kAsk) send(kHere, source);
}

std::vector<int> RollCall::absent(long long grace_ns) {
  for (int r = 0; r < size_; ++r)
    if (r != rank_) send(kAsk, r);
  std::vector<bool> here(static_cast<std::size_t>(size_), false);
  here[static_cast<std::size_t>(rank_)] = true;
  const long long start = futex::now_ns();
  while (futex::now_ns() - start < grace_ns) {
    int source = 0, word = 0;
    if (!take(source, word)) {
      sched_yield();
      continue;
    }
    here[static_cast<std::size_t>(source)] = true;  // an asker is in the collective too
    if (word == kAsk) send(kHere, source);
  }
  std::vector<int> out;
  for (int r = 0; r < size_; ++r)
    if (!here[static_cast<std::size_t>(r)]) out.push_back(r);
  return out;
}

}  // namespace tnbc
