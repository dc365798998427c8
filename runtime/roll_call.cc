#include "runtime/roll_call.hh"

#include <sched.h>

#include "runtime/futex.hh"

namespace tnbc {

bool RollCall::take(int& source, Word& word) {
  int flag = 0;
  MPI_Message msg;
  MPI_Status st;
  // Matched: another thread's probe (the world's roll call serves several waits) cannot take it.
  if (PMPI_Improbe(MPI_ANY_SOURCE, tag_, comm_, &flag, &msg, &st) != MPI_SUCCESS || !flag) return false;
  source = st.MPI_SOURCE;
  std::uint64_t w[2] = {0, 0};
  PMPI_Mrecv(w, 2, MPI_UINT64_T, &msg, MPI_STATUS_IGNORE);
  word = {w[0], w[1]};
  return true;
}

void RollCall::send(Word word, int to) {
  static_assert(sizeof(Word) == 2 * sizeof(std::uint64_t));
  Word* kept = nullptr;
  {
    std::lock_guard lock(sent_mutex_);
    kept = &sent_.emplace_back(word);
  }
  MPI_Request req;
  if (PMPI_Isend(kept, 2, MPI_UINT64_T, to, tag_, comm_, &req) == MPI_SUCCESS) PMPI_Request_free(&req);
}

void RollCall::answer(std::uint64_t call) {
  int source = 0;
  Word word;
  while (take(source, word))
    if (word.asks && word.call == call) send({call, 0}, source);
}

std::vector<int> RollCall::absent(std::uint64_t call, long long grace_ns, const std::vector<int>& members) {
  std::vector<int> asked = members;
  if (asked.empty())
    for (int r = 0; r < size_; ++r) asked.push_back(r);
  for (int r : asked)
    if (r != rank_) send({call, 1}, r);
  std::vector<bool> here(static_cast<std::size_t>(size_), false);
  here[static_cast<std::size_t>(rank_)] = true;
  const long long start = futex::now_ns();
  while (futex::now_ns() - start < grace_ns) {
    int source = 0;
    Word word;
    if (!take(source, word)) {
      sched_yield();
      continue;
    }
    // An asker of this collective is in it too, and gets its answer; an answer counts for the
    // collective it answers.
    if (word.call != call) continue;
    here[static_cast<std::size_t>(source)] = true;
    if (word.asks) send({call, 0}, source);
  }
  std::vector<int> out;
  for (std::size_t k = 0; k < asked.size(); ++k)
    if (!here[static_cast<std::size_t>(asked[k])]) out.push_back(static_cast<int>(k));
  return out;
}

}  // namespace tnbc
