// The exchange family: collectives in which every rank sends one block to each rank and
// receives one block from each (Alltoall, Alltoallv, Allgather, Allgatherv). Their files
// (alltoall.cc, allgather.cc) say which blocks those are; the staging and the schedule are the
// family's, here (exchange.cc).
#pragma once

#include <vector>

#include "runtime/coll/collective.hh"

namespace tnbc {

// One side of an exchange: per peer p, `count[p]` elements of `type` at `base + disp[p]`.
struct ExchangeSide {
  const char* base = nullptr;
  MPI_Datatype type{};
  TypeInfo info;
  std::vector<long long> count;
  std::vector<std::ptrdiff_t> disp;  // bytes from base (may be negative)
  std::vector<std::size_t> bytes;    // count * type size

  const char* block(std::size_t p) const { return base + disp[p]; }
};

struct Exchange {
  int n = 1, me = 0;
  ExchangeSide send, recv;
  bool in_place = false;     // the program passed MPI_IN_PLACE: `send` describes its blocks there
  bool shared_send = false;  // every peer is sent the same block (Allgather): staged once
};

// The side of `n` blocks given as counts and displacements in elements (displs == nullptr: the
// blocks follow each other, `count` elements each; counts == nullptr: `count` for every peer).
ExchangeSide exchange_side(const void* base, MPI_Datatype type, int n, int count, const int* counts,
                           const int* displs, Types& types);

Layout exchange_layout(Kind kind, const Exchange& x, const CollCall& c, const CallContext& ctx, std::size_t unit);
Status exchange_prepare(Kind kind, const Exchange& x, const Layout& l, bool in_call, const CallContext& ctx,
                        Services& s, Prepared& out);

// A collective of the family: its file gives `Blocks` (which blocks a call exchanges) and size();
// the layout and the staging are the family's.
template <Exchange (*Blocks)(const CollCall&, const CallContext&)>
class ExchangeCollective : public Collective {
 public:
  Layout layout(const CollCall& c, const CallContext& ctx) const override {
    return exchange_layout(c.kind, Blocks(c, ctx), c, ctx, size(c, ctx).unit);
  }
  Status prepare(const CollCall& c, const Layout& l, bool in_call, const CallContext& ctx, Services& s,
                 Prepared& out) const override {
    return exchange_prepare(c.kind, Blocks(c, ctx), l, in_call, ctx, s, out);
  }
};

}  // namespace tnbc
