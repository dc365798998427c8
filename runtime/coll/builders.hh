// The schedule builders of the collectives in runtime/coll/, for the unit tests and the `tnbc`
// tool (which runs tnbc's schedules outside MPI). Pure: sizes and ranks in, steps out
// (runtime/schedule.hh). Each is defined, with its diagram, in its collective's file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/schedule.hh"

namespace tnbc {

// ---- exchanges (Alltoall, Alltoallv, Allgather, Allgatherv: runtime/coll/exchange.cc) ----
// Per peer p: `send_bytes[p]` at `send_offset[p]` in the send area, `recv_bytes[p]` at
// `recv_offset[p]` in the receive area (the block to self is no step); `order`: the peers in
// the order receivers read (default 0..n-1).
Schedule build_exchange(int rank, int size, const std::vector<std::size_t>& send_bytes,
                        const std::vector<std::size_t>& send_offset, const std::vector<std::size_t>& recv_bytes,
                        const std::vector<std::size_t>& recv_offset, std::size_t page, const std::vector<int>& order,
                        const PieceRule& pieces);
// The own block's Copy steps under the lazy send copy: a block of `len` bytes at address `at` of
// the program's send buffer, cut at its first and last page boundary (the partial pages at
// either end are copied in the call) and its whole pages into pieces of at most `limit` bytes
// (body_cuts), so that the progress thread copies it one piece per round, polling the transfer
// between them. Returns the cut points including 0 and len; {0, len} without a whole page.
std::vector<std::size_t> lazy_own_cuts(std::uintptr_t at, std::size_t len, std::size_t page, std::size_t limit);

// ---- broadcast (runtime/coll/bcast.cc) ----
struct Chunk {
  std::size_t offset, length;
};
// The first page, `segments` page-multiple segments, the last page (chunks of zero length are
// dropped): what the trace pass records reads of and a profile orders.
std::vector<Chunk> bcast_chunks(std::size_t bytes, std::size_t page, int segments);
// The chunks in sending order: the first and the last (received in the call) first, then the
// middle ones in `read` order (a permutation of the chunks; empty: the list's order).
std::vector<int> bcast_chunk_order(std::size_t chunks, const std::vector<int>& read);
Schedule build_bcast(int rank, int size, int root, const std::vector<Chunk>& chunks,
                     const std::vector<int>& chunk_order, std::size_t page, PieceSetting pieces);
int bcast_parent(int rank, int size, int root);
std::vector<int> bcast_children(int rank, int size, int root);

// ---- broadcast over MPI one-sided communication (runtime/coll/bcast_rma.cc) ----
enum class RmaAlgorithm { Binomial, Linear };
// The same chunks in the same order as build_bcast, carried by Put / Flag / Await steps.
Schedule build_bcast_rma(int rank, int size, int root, const std::vector<Chunk>& chunks,
                         const std::vector<int>& chunk_order, RmaAlgorithm algorithm);

}  // namespace tnbc
