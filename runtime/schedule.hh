// A collective as a schedule of pieces (after LibNBC's rounds and MPICH gentran's DAGs).
//
// A piece is one point-to-point message: a whole sub-message, or the head / body / tail part of
// one (see `split_points`). Each piece says what to send or receive, to or from which peer, at
// which offset of the schedule's staging buffers, with which tag and priority; a send may wait
// for one receive to complete first (`after`, a broadcast's forwarding edge). The progress thread
// posts receives at once and sends in priority order (lower value first) through a bounded window.
//
// Builders use only inputs that are identical on every rank (sizes, ranks, root, page size),
// so all ranks agree on the pieces and their tags; offsets are rank-local.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tnbc {

enum class Dir : std::uint8_t { Send, Recv };

struct Piece {
  Dir dir = Dir::Recv;
  int peer = -1;
  std::size_t offset = 0;  // Send: into the send staging; Recv: into the receive layout
  std::size_t length = 0;
  int tag_offset = 0;      // added to the schedule's base tag
  std::int64_t priority = 0;
  int after = -1;          // index of a Recv piece this Send waits for (-1: none)
  int sub = -1;            // which sub-message (peer for all-to-all, chunk for broadcast)
  bool edge = false;       // a head or tail (may land in a receiver's partial page): the
                           // calling thread sends it before returning
};

// Where each sub-message's pieces begin and end: a sub-message of `length` bytes longer than
// two pages is cut into [0, page), [page, length - page), [length - page, length), so that the
// bytes any receiver holds in a partial (unguardable) first or last page of its buffer arrive
// as small messages of their own. Returns the cut points including 0 and length.
std::vector<std::size_t> split_points(std::size_t length, std::size_t page);

// Alltoall(v): `send_bytes[p]` / `send_offset[p]` (into the send staging) and `recv_bytes[p]` /
// `recv_offset[p]` (into the receive layout) for every peer p; the block to self is not a
// piece (the engine copies it). `order` lists the peers in the order this rank's data is needed
// by receivers (default: 0..n-1); heads and tails of sub-messages go first.
//
//   rank r, peers 0..n-1 (n = 4, r = 1):      send staging        receive layout
//     head/tail pieces, all peers first   ->  [p0|p2|p3] ...     [p0][p1=self][p2][p3]
//     then bodies in `order`, window W        Isend(peer, tag)   Irecv(peer, tag) all posted
std::vector<Piece> build_alltoallv(int rank, int size, const std::vector<std::size_t>& send_bytes,
                                   const std::vector<std::size_t>& send_offset,
                                   const std::vector<std::size_t>& recv_bytes,
                                   const std::vector<std::size_t>& recv_offset, std::size_t page,
                                   const std::vector<int>& order);

// Broadcast chunks: the first page, `segments` page-multiple segments, the last page (chunks of
// zero length are dropped). The root sends chunks in `chunk_order` (default: the order of the
// chunk list); every rank uses the same list.
struct Chunk {
  std::size_t offset, length;
};
std::vector<Chunk> bcast_chunks(std::size_t bytes, std::size_t page, int segments);

// Binomial tree over relative ranks (rel = (rank - root + n) % n), segmented and pipelined:
//
//          0            chunk k: 0 -> 4, 0 -> 2, 0 -> 1   (largest subtree first)
//        / | \                   2 -> 3 after 2 received k
//       4  2  1                  4 -> 6, 4 -> 5 after 4 received k; 6 -> 7 likewise
//      / \   |
//     6   5  3              Every chunk has tag_offset = its index. An inner node forwards chunk
//     |                     k as soon as k has arrived, while later chunks are still in flight.
//     7
//
// Offsets of Send and Recv pieces both index the same buffer (the root's copy, or the receive
// staging that non-roots forward from).
std::vector<Piece> build_bcast(int rank, int size, int root, const std::vector<Chunk>& chunks,
                               const std::vector<int>& chunk_order);

// Binomial tree helpers (exposed for tests).
int bcast_parent(int rank, int size, int root);
std::vector<int> bcast_children(int rank, int size, int root);

}  // namespace tnbc
