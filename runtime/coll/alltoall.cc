// MPI_Alltoall and MPI_Alltoallv: rank r sends block p of its send buffer to rank p and receives
// block p of its receive buffer from rank p (an exchange: schedule and staging in exchange.cc).
//
//   send buffer of rank 1:   [ to 0 | to 1 | to 2 | to 3 ]      Alltoall: blocks of sendcount,
//                                      \ own block                one after the other
//   receive buffer of rank 1:[from 0|from 1|from 2|from 3]      Alltoallv: counts[p] at displs[p],
//                                                                 gaps between them untouched
//
// MPI_IN_PLACE: the receive buffer is also the send buffer, block for block (packed into the
// send area in the call, since the receives overwrite it).
//
// Global decision: Alltoall compares the per-peer sub-message (recvcount, equal on every rank)
// with TNBC_MIN_BYTES; Alltoallv sizes differ between ranks, so every call takes the schedule
// and each rank decides alone whether what it receives is worth returning early for.
#include "runtime/coll/exchange.hh"

namespace tnbc {

namespace {

Exchange alltoall_exchange(const CollCall& c, const CallContext& ctx) {
  const bool v = c.kind == Kind::Alltoallv;
  Exchange x;
  x.n = ctx.size;
  x.me = ctx.rank;
  x.in_place = c.in_place;
  x.recv = exchange_side(c.recv.buf, c.recv.type, x.n, c.recv.count, v ? c.recv.counts : nullptr,
                         v ? c.recv.displs : nullptr, *ctx.types);
  x.send = c.in_place ? x.recv
                      : exchange_side(c.send.buf, c.send.type, x.n, c.send.count, v ? c.send.counts : nullptr,
                                      v ? c.send.displs : nullptr, *ctx.types);
  return x;
}

class Alltoall final : public ExchangeCollective<alltoall_exchange> {
 public:
  Size size(const CollCall& c, const CallContext& ctx) const override {
    const auto n = static_cast<std::size_t>(ctx.size);
    if (c.kind == Kind::Alltoall) {
      const std::size_t per_peer = ctx.types->size(c.recv.type) * static_cast<std::size_t>(std::max(0, c.recv.count));
      const std::size_t sent =
          c.in_place ? per_peer : ctx.types->size(c.send.type) * static_cast<std::size_t>(std::max(0, c.send.count));
      return {per_peer * n, per_peer, sent * n};
    }
    const std::size_t unit = ctx.types->size(c.recv.type);
    const std::size_t send_unit = c.in_place ? 0 : ctx.types->size(c.send.type);
    std::uint64_t received = 0, sent = 0;
    for (std::size_t p = 0; p < n; ++p) {
      received += unit * static_cast<std::size_t>(std::max(0, c.recv.counts[p]));
      sent += send_unit * static_cast<std::size_t>(std::max(0, c.send.counts ? c.send.counts[p] : 0));
    }
    return {received, kNoUnit, c.in_place ? received : sent};
  }
};

}  // namespace

const Collective& alltoall_collective() {
  static const Alltoall a;
  return a;
}

}  // namespace tnbc
