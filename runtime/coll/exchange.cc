// The exchange family's schedule and staging (runtime/coll/exchange.hh).
//
// Schedule: one sub-message per peer and direction, each cut by split_points (its head, body
// pieces, its tail) by the call's PieceRule (under auto: a ramp of small first and last body
// pieces around pieces at the limit), from its length alone, so that sender and receiver cut it
// alike; the block to self is no step (staging copies it). Receives are all started at once,
// sends in priority order, lowest first:
//
//   1. heads and tails, all peers (the calling thread starts them before it returns),
//   2. body pieces: by this rank's place in the receivers' read order, then by piece index,
//      then ring distance (peer - rank mod n): body 0 to every peer, then body 1 to every peer:
//
//   rank r = 1, n = 4, 3 body pieces each        send area                receive area
//     edges:  h2 t2 h3 t3 h0 t0                   [to p0|to p2|to p3]      [p0][p1=self][p2][p3]
//     bodies: b0>2 b0>3 b0>0  b1>2 b1>3 b1>0       Send(peer, tag) in       Recv(peer, tag) for
//             b2>2 b2>3 b2>0                       this order, window W     every piece, at once
//
// so that every receiver gets the start of its sub-message first, and a reader right after the
// call waits for one piece, not for a whole body. Receives are ordered the same way by the
// sender's place.
//
// Staging, per side:
//   send     packed per peer into the send area (the program may overwrite its buffer as soon
//            as the call returns); a shared block (Allgather) once. Dense blocks may instead be
//            copied piece by piece by the engine (TNBC_SEND_COPY, send_src); in place, or with a
//            type that is not dense, they are packed here.
//   receive  the receive area mirrors the program's layout (dense type, displacements >= 0):
//            published piece by piece; otherwise packed per peer and unpacked at the end (the
//            call then completes in it: noncontiguous_datatype).
//   own      the block to self goes straight into place (nothing is guarded yet), or into the
//            receive area when that is unpacked at the end; with the lazy send copy
//            (TNBC_SEND_COPY=lazy, not lazy-sends) it is a Copy step run after the return (its
//            source read-only until then, its pages held).
//   in the call (no overlap to gain): with dense types and displacements >= 0, MPI sends from
//            and receives into the program's buffers: the same messages, only rank-local
//            offsets follow the program's layout.
#include "runtime/coll/exchange.hh"

#include <algorithm>
#include <numeric>

#include "runtime/coll/builders.hh"

namespace tnbc {

Schedule build_exchange(int rank, int size, const std::vector<std::size_t>& send_bytes,
                        const std::vector<std::size_t>& send_offset, const std::vector<std::size_t>& recv_bytes,
                        const std::vector<std::size_t>& recv_offset, std::size_t page, const std::vector<int>& order_in,
                        const PieceRule& piece_setting) {
  std::vector<int> order = order_in;
  if (order.size() != static_cast<std::size_t>(size)) {
    order.resize(static_cast<std::size_t>(size));
    std::iota(order.begin(), order.end(), 0);
  }
  // position[p] = place of p in the order (earlier = needed sooner).
  std::vector<std::int64_t> position(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < order.size(); ++i) position[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
  const std::int64_t n = size;
  constexpr std::int64_t kPieceSlots = kTagsPerCollective;  // > any body index
  std::vector<Step> steps;
  auto add = [&](StepKind kind, int peer, std::size_t base, std::size_t bytes) {
    // The same inputs on both ends of the sub-message: its length, the page size, the setting.
    const auto cuts = split_points(bytes, page, piece_setting);
    const std::size_t last = cuts.size() - 2;  // index of the last piece
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      Step s;
      s.kind = kind;
      s.peer = peer;
      s.offset = base + cuts[i];
      s.length = cuts[i + 1] - cuts[i];
      s.tag_offset = static_cast<int>(i);
      s.sub = peer;
      const bool edge = last == 0 || i == 0 || i == last;  // heads and tails (and unsplit small ones) first
      const std::int64_t body = edge ? 0 : static_cast<std::int64_t>(i) - 1;
      // Send priority follows this rank's place in the receivers' order; receive priority the
      // sender's place. Within it, body k to every peer before body k + 1 to any.
      const std::int64_t who = position[static_cast<std::size_t>(kind == StepKind::Send ? rank : peer)];
      s.priority = (((edge ? 0 : 1) * n + who) * kPieceSlots + body) * n + ((peer - rank + n) % n);
      s.edge = edge;
      steps.push_back(s);
    }
  };
  for (int d = 1; d < size; ++d) {
    const int peer = (rank + d) % size;
    const auto p = static_cast<std::size_t>(peer);
    if (recv_bytes[p] > 0) add(StepKind::Recv, peer, recv_offset[p], recv_bytes[p]);
    if (send_bytes[p] > 0) add(StepKind::Send, peer, send_offset[p], send_bytes[p]);
  }
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.priority < b.priority; });
  Schedule sched;
  for (const Step& s : steps) sched.add(s);
  return sched;
}

ExchangeSide exchange_side(const void* base, MPI_Datatype type, int n, int count, const int* counts,
                           const int* displs, Types& types) {
  ExchangeSide s;
  s.base = static_cast<const char*>(base);
  s.type = type;
  s.info = types.type(type);
  const auto N = static_cast<std::size_t>(n);
  s.count.resize(N);
  s.disp.resize(N);
  s.bytes.resize(N);
  for (std::size_t p = 0; p < N; ++p) {
    s.count[p] = counts ? counts[p] : count;
    const long long at = displs ? displs[p] : static_cast<long long>(p) * count;
    s.disp[p] = static_cast<std::ptrdiff_t>(at) * s.info.extent;
    s.bytes[p] = s.count[p] > 0 ? s.info.size * static_cast<std::size_t>(s.count[p]) : 0;
  }
  return s;
}

std::vector<std::size_t> lazy_own_cuts(std::uintptr_t at, std::size_t len, std::size_t page, std::size_t limit) {
  const std::uintptr_t first = (at + page - 1) / page * page, last = (at + len) / page * page;
  if (first >= last) return {0, len};
  std::vector<std::size_t> cuts{0};
  auto add = [&](std::size_t c) {
    if (c != cuts.back()) cuts.push_back(c);
  };
  add(first - at);
  for (const std::size_t c : body_cuts(first, last, page, limit)) add(c - at);
  add(last - at);
  add(len);
  return cuts;
}

namespace {
// The memory a block touches: its dense bytes, or what the type's extents say.
ByteRange block_span(const ExchangeSide& side, std::size_t p, Types& types) {
  const auto lo = reinterpret_cast<std::uintptr_t>(side.block(p));
  if (side.info.dense) return {lo, lo + side.bytes[p]};
  return types.span(side.block(p), side.count[p], side.type);
}
}  // namespace

Layout exchange_layout(Kind kind, const Exchange& x, const CollCall& c, const CallContext& ctx, std::size_t unit) {
  Layout l;
  const auto N = static_cast<std::size_t>(x.n);
  l.shape = {kind, c.site, x.n, -1, {}, {}};
  l.unit = unit;
  l.recv_dense = x.recv.info.dense;
  l.send_dense = x.send.info.dense;
  l.recv_spans.resize(N);
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (std::size_t p = 0; p < N; ++p) {
    l.shape.recv_bytes.push_back(x.recv.bytes[p]);
    l.shape.send_bytes.push_back(x.in_place ? 0 : x.send.bytes[p]);
    l.received += x.recv.bytes[p];
    l.sent += x.in_place ? 0 : x.send.bytes[p];
    if (x.recv.bytes[p]) {
      l.recv_spans[p] = block_span(x.recv, p, *ctx.types);
      lo = std::min(lo, l.recv_spans[p].lo);
      hi = std::max(hi, l.recv_spans[p].hi);
    }
    const bool repeated = x.shared_send && p > 0;
    if (!x.in_place && x.send.bytes[p] && !repeated)
      l.send_spans.push_back(block_span(x.send, p, *ctx.types));
  }
  if (lo < hi) l.recv_extent = {lo, hi};
  return l;
}

Status exchange_prepare(Kind kind, const Exchange& x, const Layout& l, bool in_call, const CallContext& ctx,
                        Services& s, Prepared& out) {
  const auto N = static_cast<std::size_t>(x.n);
  const auto self = static_cast<std::size_t>(x.me);
  const bool sdense = x.send.info.dense, rdense = x.recv.info.dense;
  std::vector<std::size_t> soff(N), roff(N);
  std::size_t stotal = 0, packed = 0, rspan = 0;
  bool negative = false;
  for (std::size_t p = 0; p < N; ++p) {
    soff[p] = x.shared_send ? 0 : stotal;
    stotal = x.shared_send ? std::max(stotal, x.send.bytes[p]) : stotal + x.send.bytes[p];
    negative = negative || (x.recv.bytes[p] && x.recv.disp[p] < 0);
  }
  const bool mirror = rdense && !negative;  // the receive area mirrors the program's layout
  const bool direct_recv = in_call && mirror;
  bool direct_send = in_call && sdense && !x.in_place;
  for (std::size_t p = 0; p < N && direct_send; ++p) direct_send = !x.send.bytes[p] || x.send.disp[p] >= 0;
  if (direct_send)
    for (std::size_t p = 0; p < N; ++p) soff[p] = static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, x.send.disp[p]));
  for (std::size_t p = 0; p < N; ++p) {
    if (mirror) {
      roff[p] = static_cast<std::size_t>(std::max<std::ptrdiff_t>(0, x.recv.disp[p]));
      if (x.recv.bytes[p]) rspan = std::max(rspan, roff[p] + x.recv.bytes[p]);
    } else {
      roff[p] = packed;
      packed += x.recv.bytes[p];
    }
  }
  if (!mirror) rspan = packed;

  // Whatever is still in flight on these buffers completes first (a new collective may reuse them).
  for (std::size_t p = 0; p < N; ++p) {
    if (x.send.bytes[p] && !x.in_place && !(x.shared_send && p > 0)) s.fence(x.send.block(p), x.send.count[p], x.send.type);
    if (x.recv.bytes[p]) s.fence(x.recv.block(p), x.recv.count[p], x.recv.type);
  }
  if (x.send.bytes[self] != x.recv.bytes[self])
    return Status::error(std::string(info(kind).mpi_name) + ": rank " + std::to_string(x.me) + " sends " +
                             std::to_string(x.send.bytes[self]) + " bytes to itself but expects " +
                             std::to_string(x.recv.bytes[self]) + " (the send and receive type signatures differ)",
                         x.send.bytes[self] > x.recv.bytes[self] ? MPI_ERR_TRUNCATE : MPI_ERR_TYPE);

  auto oom = [&] {
    return Status::error("out of memory for staging (" + std::to_string(stotal) + " + " + std::to_string(rspan) +
                             " bytes)", MPI_ERR_NO_MEM);
  };
  out.send_data = direct_send ? const_cast<char*>(x.send.base) : s.send_area(stotal);
  if (stotal && !out.send_data) return oom();
  out.recv_data = direct_recv ? const_cast<char*>(x.recv.base) : s.recv_area(rspan, x.recv.base);
  if (rspan && !out.recv_data) return oom();

  // Send data packed now when it must be: a type that is not dense, in place (the receives will
  // overwrite it), or one block for every peer (copied once). Otherwise the engine stages each
  // Send step from `send_src`.
  const bool pack_sends = !direct_send && (!sdense || x.in_place || x.shared_send);
  for (std::size_t p = 0; p < N && pack_sends; ++p) {
    if (!x.send.bytes[p] || (x.shared_send ? p > 0 || x.n == 1 : p == self)) continue;
    if (Status st = s.pack(x.send.block(p), x.send.count[p], x.send.type, out.send_data + soff[p], x.send.bytes[p]); !st.ok())
      return st;
  }
  // Own block: straight into place (nothing is guarded yet; in place it is there already), or
  // into the receive area when that is unpacked at the end. A call that completes in it with the
  // program's own buffers on both sides copies it as a Copy step instead, once the messages are
  // on their way (the copy of a large block then overlaps the exchange). So does an early return
  // with the lazy send copy (runtime/send_copy.hh): the step lands in the receive area like a
  // Recv (its pages held back until it is done), run after the return by the progress thread
  // from the program's send buffer, which stays read-only until then; a write to it copies the
  // block into place first, a reader waits only for this local copy.
  const bool lazy_own = !in_call && mirror && sdense && !pack_sends && !direct_send && x.recv.bytes[self] &&
                        s.policy().lazy_own_block(l.sent);
  const bool copy_step = (direct_send && direct_recv && x.recv.bytes[self]) || lazy_own;
  if (x.recv.bytes[self] && !(x.in_place && mirror) && !copy_step) {
    char* dst = mirror ? const_cast<char*>(x.recv.base) + roff[self] : out.recv_data + roff[self];
    if (Status st = s.pack(x.send.block(self), x.send.count[self], x.send.type, dst, x.send.bytes[self]); !st.ok())
      return st;
  }
  std::vector<std::size_t> sbytes = x.send.bytes;
  if (x.n == 1) sbytes.assign(N, 0);
  const PieceRule pieces = s.policy().pieces(kind, *ctx.topology);
  out.schedule = build_exchange(x.me, x.n, sbytes, soff, x.recv.bytes, roff, ctx.page, s.policy().read_order(l.shape),
                                pieces);
  if (copy_step) {
    const std::size_t len = x.recv.bytes[self];
    const auto at = reinterpret_cast<std::uintptr_t>(x.send.block(self));
    const std::vector<std::size_t> cuts =
        lazy_own ? lazy_own_cuts(at, len, ctx.page, piece_limit(len, ctx.page, pieces)) : std::vector<std::size_t>{0, len};
    for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
      if (cuts[k] == cuts[k + 1]) continue;
      Step own;
      own.kind = StepKind::Copy;
      own.peer = x.me;
      own.source = soff[self] + cuts[k];
      own.offset = roff[self] + cuts[k];
      own.length = cuts[k + 1] - cuts[k];
      own.sub = x.me;
      // Lazily, the parts before the first and after the last page boundary are edges (staged
      // in the call); the whole-page pieces between them are copied after the return.
      own.edge = lazy_own && ((at + cuts[k]) % ctx.page != 0 || (at + cuts[k + 1]) % ctx.page != 0);
      out.schedule.add(own);
    }
  }
  if (!pack_sends && !direct_send) {
    out.send_src.assign(out.schedule.size(), nullptr);
    for (std::size_t i = 0; i < out.schedule.size(); ++i) {
      const Step& st = out.schedule[i];
      const auto p = static_cast<std::size_t>(st.peer);
      if (st.kind == StepKind::Send) out.send_src[i] = x.send.block(p) + (st.offset - soff[p]);
      if (st.kind == StepKind::Copy) out.send_src[i] = x.send.block(p) + (st.source - soff[p]);
    }
  }
  out.user_recv = mirror ? const_cast<char*>(x.recv.base) : nullptr;
  if (!mirror)
    for (std::size_t p = 0; p < N; ++p)
      if (x.recv.bytes[p])
        out.unpack.push_back({roff[p], x.recv.bytes[p], const_cast<char*>(x.recv.block(p)), x.recv.count[p], x.recv.type});
  out.local = !mirror ? Reason::NoncontiguousDatatype : Reason::None;
  const auto base = reinterpret_cast<std::uintptr_t>(x.recv.base);
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (std::size_t p = 0; p < N; ++p)
    if (x.recv.bytes[p]) {
      lo = std::min(lo, base + roff[p]);
      hi = std::max(hi, base + roff[p] + x.recv.bytes[p]);
    }
  out.guard = {base, lo, hi, {}};
  if (x.recv.bytes[self] && !lazy_own) out.guard.own = {base + roff[self], base + roff[self] + x.recv.bytes[self]};
  return {};
}

}  // namespace tnbc
