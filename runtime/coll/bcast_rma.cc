// MPI_Bcast over MPI one-sided communication (seed 000, Paznikov): the schedule of one rank.
// The windows, the puts and the flags are runtime/rma_transport.hh's; this file only says which
// steps a rank runs and what each waits for. Chunks and their order are the point-to-point
// broadcast's (bcast_chunks, bcast_chunk_order: runtime/coll/bcast.cc), so the trace pass, a
// profile's read order and the guard see the same sub-messages whatever the backend.
//
// Binomial (relative rank srank = (rank - root + P) mod P, ceil(log2 P) rounds, children of
// srank = srank + 2^k for the bits below its lowest set bit, largest subtree first):
//
//   root  Await(slot free) ─▶ per chunk c, per child j:  Put(j, c) ─▶ Flag(j, c)
//                                                                       └──▶ Await(all done)
//   other Await(c) ─▶ per child j: Put(j, c) ─▶ Flag(j, c)
//         (every Await and Flag) ─▶ Flag(root, done counter)
//
// Await(c) is the seed's Broadcaster noticing its request flag: it runs in the progress thread
// (the calling thread for the chunks received in the call), takes the chunk out of the data
// window into the receive area (it is then published like any received sub-message) and lets
// the forwarding puts to the rank's subtree start. A Put at an inner rank reads its own data
// window, where its parent put the chunk; the slot is not reused before every rank counted the
// broadcast done (the root's first step, Await(slot free)).
//
// Linear (the seed's comparison): the root puts every chunk to each of the P-1 others in turn
// (relative rank order); nobody forwards.
//
//   root  Await(slot free) ─▶ per chunk c, per rank r != root: Put(r, c) ─▶ Flag(r, c) ─▶ Await(all done)
//   other Await(c) for every chunk ─▶ Flag(root, done counter)
#include <algorithm>

#include "runtime/coll/builders.hh"

namespace tnbc {

Schedule build_bcast_rma(int rank, int size, int root, const std::vector<Chunk>& chunks,
                         const std::vector<int>& chunk_order, RmaAlgorithm algorithm) {
  Schedule sched;
  const std::size_t nchunks = chunks.size();
  const auto is_edge = [&](std::size_t c) { return c == 0 || c + 1 == nchunks; };
  std::vector<int> children;
  int parent = -1;
  if (algorithm == RmaAlgorithm::Binomial) {
    children = bcast_children(rank, size, root);
    parent = bcast_parent(rank, size, root);
  } else if (rank == root) {
    for (int rel = 1; rel < size; ++rel) children.push_back((root + rel) % size);
  } else {
    parent = root;
  }
  const std::int64_t nk = static_cast<std::int64_t>(children.size()) + 1;
  std::vector<int> counted;  // what the done counter (or the root's last wait) comes after
  int slot_free = -1;
  if (rank == root) {
    Step st;
    st.kind = StepKind::Await;
    st.peer = root;
    st.tag_offset = kSlotFree;
    st.priority = -1;
    slot_free = sched.add(st);
  }
  std::int64_t rank_in_order = 0;
  for (int c : chunk_order) {
    const auto cu = static_cast<std::size_t>(c);
    Step st;
    st.offset = chunks[cu].offset;
    st.length = chunks[cu].length;
    st.tag_offset = c;  // the chunk's request flag
    st.sub = c;
    st.edge = is_edge(cu);
    int have = slot_free;  // the chunk is in this rank's hands
    if (parent >= 0) {
      st.kind = StepKind::Await;
      st.peer = parent;
      st.priority = rank_in_order;
      have = sched.add(st);
      counted.push_back(have);
    }
    for (std::size_t j = 0; j < children.size(); ++j) {
      st.peer = children[j];
      st.priority = rank_in_order * nk + static_cast<std::int64_t>(j);
      st.kind = StepKind::Put;
      const int put = sched.add(st, {have});
      st.kind = StepKind::Flag;
      counted.push_back(sched.add(st, {put}));
    }
    ++rank_in_order;
  }
  Step last;
  last.peer = root;
  last.priority = rank_in_order * nk;
  if (rank == root) {
    last.kind = StepKind::Await;
    last.tag_offset = kAllDone;
  } else {
    last.kind = StepKind::Flag;
    last.tag_offset = kDoneCounter;
  }
  sched.add(last, counted);
  return sched;
}

}  // namespace tnbc
