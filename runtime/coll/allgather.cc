// MPI_Allgather and MPI_Allgatherv: every rank sends its one block to every rank and receives
// block p of its receive buffer from rank p. An exchange (schedule and staging in exchange.cc)
// whose send side is the same block for every peer: it is packed once into the send area, and
// every Send step reads it from there (all sub-messages to all peers start at send offset 0).
//
//   send buffer of rank 1:        [ block ]  --------------> to 0, to 2, to 3 (the same bytes)
//                                      \ own block
//   receive buffer of every rank: [from 0|from 1|from 2|from 3]   Allgather: blocks of recvcount,
//                                                                 one after the other
//                                 [from 0]  [from 1][from 2] ...  Allgatherv: recvcounts[p] at
//                                                                 displs[p], gaps left untouched
//
// MPI_IN_PLACE: rank r's block is already in the receive buffer, at block r; it is what r sends
// (copied to the send area in the call, since the program may write its own block as soon as the
// call returns) and nothing is copied into place.
//
// Global decision: every rank has every count, so the size compared with TNBC_MIN_BYTES is equal
// everywhere: the block size (Allgather) or the largest block (Allgatherv).
#include <algorithm>

#include "runtime/coll/exchange.hh"

namespace tnbc {

namespace {

Exchange allgather_exchange(const CollCall& c, const CallContext& ctx) {
  const bool v = c.kind == Kind::Allgatherv;
  Exchange x;
  x.n = ctx.size;
  x.me = ctx.rank;
  x.in_place = c.in_place;
  x.shared_send = true;
  x.recv = exchange_side(c.recv.buf, c.recv.type, x.n, c.recv.count, v ? c.recv.counts : nullptr,
                         v ? c.recv.displs : nullptr, *ctx.types);
  // One block for every peer: the program's send buffer, or in place its own receive block.
  const std::vector<int> at_start(static_cast<std::size_t>(x.n), 0);
  const auto me = static_cast<std::size_t>(x.me);
  x.send = c.in_place
               ? exchange_side(x.recv.block(me), c.recv.type, x.n, static_cast<int>(x.recv.count[me]), nullptr,
                               at_start.data(), *ctx.types)
               : exchange_side(c.send.buf, c.send.type, x.n, c.send.count, nullptr, at_start.data(), *ctx.types);
  return x;
}

class Allgather final : public ExchangeCollective<allgather_exchange> {
 public:
  Size size(const CollCall& c, const CallContext& ctx) const override {
    const std::size_t unit = ctx.types->size(c.recv.type);
    const auto n = static_cast<std::size_t>(ctx.size);
    if (c.kind == Kind::Allgather) {
      const std::size_t block = unit * static_cast<std::size_t>(std::max(0, c.recv.count));
      return {block * n, block, block * n};  // its block to every rank
    }
    std::uint64_t received = 0;
    std::size_t largest = 0;
    for (int p = 0; p < ctx.size; ++p) {
      const std::size_t b = unit * static_cast<std::size_t>(std::max(0, c.recv.counts[p]));
      received += b;
      largest = std::max(largest, b);
    }
    return {received, largest, unit * static_cast<std::size_t>(std::max(0, c.recv.counts[ctx.rank])) * n};
  }
};

}  // namespace

const Collective& allgather_collective() {
  static const Allgather a;
  return a;
}

}  // namespace tnbc
