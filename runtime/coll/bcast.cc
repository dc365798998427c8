// MPI_Bcast: a segmented, pipelined binomial tree over relative ranks (rel = (rank - root + n) % n).
//
//          0            piece k: 0 -> 4, 0 -> 2, 0 -> 1   (largest subtree first)
//        / | \                   2 -> 3 after 2 received k
//       4  2  1                  4 -> 6, 4 -> 5 after 4 received k; 6 -> 7 likewise
//      / \   |
//     6   5  3              An inner rank forwards piece k as soon as k has arrived (a Send step
//     |                     after the Recv step of the same piece), while later pieces are
//     7                     still in flight.
//
// The buffer is cut into chunks: the first page, up to TNBC_BCAST_MAX_SEGMENTS page-multiple
// segments, the last page. The chunks are the sub-messages (what the trace pass records and a
// profile orders); the first and the last may land in partial pages and are received in the
// call. With an explicit TNBC_PIECE_BYTES every middle chunk is cut further into pieces
// (body_cuts, at most kMaxBodyPieces in all the middle chunks together); with auto it is not:
// the segments are a pipeline of pieces already (docs/settings.md). Pieces are numbered along
// the chunk list (not the sending order, which may differ between ranks), and tag_offset is
// that number:
//
//   chunks   | first page |      segment 1       |      segment 2       | last page |
//   pieces   |     0      |  1  |  2  |  3  |  4  |  5  |  6  |  7  |  8 |     9     |
//
// Staging: the root sends from a copy of its buffer (packed if the type is not dense); the
// others receive into a receive area laid out like the buffer, and forward from it (so the
// userfaultfd guard copies rather than moves pages at inner ranks). TNBC_BCAST_BACKEND=rma-*:
// the same chunks over MPI one-sided puts (bcast_rma.cc). Completing in the call
// (no overlap to gain) with a dense type, the buffer itself is sent from and received into.
#include <algorithm>
#include <numeric>

#include "runtime/coll/builders.hh"
#include "runtime/coll/collective.hh"

namespace tnbc {

std::vector<Chunk> bcast_chunks(std::size_t bytes, std::size_t page, int segments) {
  std::vector<Chunk> chunks;
  if (bytes == 0) return chunks;
  if (bytes <= 2 * page) return {{0, bytes}};
  chunks.push_back({0, page});
  const std::size_t middle = bytes - 2 * page;
  const std::size_t pages = (middle + page - 1) / page;
  const std::size_t segs = std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(segments), pages));
  const std::size_t seg = (pages + segs - 1) / segs * page;
  for (std::size_t off = page; off < page + middle; off += seg) chunks.push_back({off, std::min(seg, page + middle - off)});
  chunks.push_back({bytes - page, page});
  return chunks;
}

std::vector<int> bcast_chunk_order(std::size_t nchunks, const std::vector<int>& read_in) {
  const int last = static_cast<int>(nchunks) - 1;
  std::vector<int> read = read_in;
  if (read.size() != nchunks) {
    read.resize(nchunks);
    std::iota(read.begin(), read.end(), 0);
  }
  std::vector<int> order;
  if (last >= 0) order.push_back(0);
  if (last >= 1) order.push_back(last);
  for (int c : read)
    if (c != 0 && c != last) order.push_back(c);
  return order;
}

int bcast_parent(int rank, int size, int root) {
  const int rel = (rank - root + size) % size;
  if (rel == 0) return -1;
  const int low = rel & -rel;  // lowest set bit
  return (rel - low + root) % size;
}

std::vector<int> bcast_children(int rank, int size, int root) {
  const int rel = (rank - root + size) % size;
  int limit = 1;
  while (limit < size) limit <<= 1;
  const int low = rel == 0 ? limit : (rel & -rel);
  std::vector<int> children;
  for (int mask = low >> 1; mask >= 1; mask >>= 1)
    if (rel + mask < size) children.push_back((rel + mask + root) % size);
  return children;  // largest subtree first
}

Schedule build_bcast(int rank, int size, int root, const std::vector<Chunk>& chunks,
                     const std::vector<int>& chunk_order, std::size_t page, PieceSetting piece_setting) {
  // The pieces of every chunk, numbered along the chunk list: first[c] is chunk c's first.
  const std::size_t nchunks = chunks.size();
  const auto is_edge = [&](std::size_t c) { return c == 0 || c + 1 == nchunks; };
  const std::size_t middle = nchunks > 2 ? nchunks - 2 : 0;
  const std::size_t per_chunk = middle ? std::max<std::size_t>(1, kMaxBodyPieces / middle) : 1;
  // auto: segments are not cut (they are the broadcast's pieces already).
  const PieceSetting setting = piece_setting ? piece_setting : PieceSetting{0};
  std::vector<Chunk> cut;  // the pieces, by number
  std::vector<std::size_t> first(nchunks + 1);
  for (std::size_t c = 0; c < nchunks; ++c) {
    first[c] = cut.size();
    const Chunk& ch = chunks[c];
    std::size_t at = ch.offset;
    if (!is_edge(c))
      for (std::size_t x : body_cuts(ch.offset, ch.offset + ch.length, page, piece_limit(ch.length, page, setting), per_chunk)) {
        cut.push_back({at, x - at});
        at = x;
      }
    cut.push_back({at, ch.offset + ch.length - at});
  }
  first[nchunks] = cut.size();

  Schedule sched;
  const int parent = bcast_parent(rank, size, root);
  const auto children = bcast_children(rank, size, root);
  // A send's priority: the piece's place in the sending order, then the child. Scaled by the
  // communicator's size (more than any rank's children), not by this rank's own children: the
  // ranks of a node compare these numbers (node-level priorities, runtime/node_arbiter.hh), so a
  // piece earlier in the order is more urgent on every rank.
  const std::int64_t nk = size;
  std::int64_t rank_in_order = 0;  // the piece's place in this rank's sending order
  for (int c : chunk_order) {
    const auto cu = static_cast<std::size_t>(c);
    for (std::size_t k = first[cu]; k < first[cu + 1]; ++k, ++rank_in_order) {
      Step st;
      st.offset = cut[k].offset;  // Send and Recv both index the one buffer (root's copy, or the
      st.length = cut[k].length;  // receive area inner ranks forward from)
      st.tag_offset = static_cast<int>(k);
      st.sub = c;
      st.edge = is_edge(cu);
      int received = -1;
      if (parent >= 0) {
        st.kind = StepKind::Recv;
        st.peer = parent;
        st.priority = rank_in_order;
        received = sched.add(st);
      }
      for (std::size_t j = 0; j < children.size(); ++j) {
        st.kind = StepKind::Send;
        st.peer = children[j];
        st.priority = rank_in_order * nk + static_cast<std::int64_t>(j);
        sched.add(st, {received});
      }
    }
  }
  return sched;
}

namespace {

class Bcast final : public Collective {
 public:
  Size size(const CollCall& c, const CallContext& ctx) const override {
    const std::uint64_t bytes = ctx.types->size(c.recv.type) * static_cast<std::uint64_t>(std::max(0, c.recv.count));
    return {bytes, static_cast<std::size_t>(bytes), ctx.rank == c.root ? bytes : 0};
  }

  Layout layout(const CollCall& c, const CallContext& ctx) const override {
    Layout l;
    const TypeInfo t = ctx.types->type(c.recv.type);
    const std::size_t bytes = t.size * static_cast<std::size_t>(std::max(0, c.recv.count));
    const auto chunks = bcast_chunks(bytes, ctx.page, ctx.policy->bcast_segments(bytes, *ctx.topology));
    l.shape = {Kind::Bcast, c.site, ctx.size, c.root, {}, {}};
    for (const Chunk& ch : chunks) l.shape.recv_bytes.push_back(ch.length);
    l.received = bytes;
    l.unit = bytes;
    l.receives = ctx.rank != c.root;
    l.recv_dense = l.send_dense = t.dense;
    const ByteRange span = ctx.types->span(c.recv.buf, c.recv.count, c.recv.type);
    const auto base = reinterpret_cast<std::uintptr_t>(c.recv.buf);
    if (!l.receives) {
      l.sent = bytes;
      l.send_spans.push_back(span);
    } else {
      l.recv_extent = span;
      if (t.dense)
        for (const Chunk& ch : chunks) l.recv_spans.push_back({base + ch.offset, base + ch.offset + ch.length});
    }
    return l;
  }

  Status prepare(const CollCall& c, const Layout& l, bool in_call, const CallContext& ctx, Services& s,
                 Prepared& out) const override {
    void* buffer = const_cast<void*>(c.recv.buf);
    const TypeInfo t = s.type(c.recv.type);
    const std::size_t bytes = l.received;
    s.fence(buffer, c.recv.count, c.recv.type);
    const auto chunks = bcast_chunks(bytes, ctx.page, s.policy().bcast_segments(bytes, *ctx.topology));
    std::vector<int> read;
    if (chunks.size() > 2) read = s.policy().read_order(l.shape);
    const std::vector<int> order = bcast_chunk_order(chunks.size(), read);
    const BcastBackend backend = s.bcast_backend(bytes, *ctx.topology);
    const bool rma = backend == BcastBackend::RmaBinomial || backend == BcastBackend::RmaLinear;
    if (rma)
      out.schedule = build_bcast_rma(ctx.rank, ctx.size, c.root, chunks, order,
                                     backend == BcastBackend::RmaLinear ? RmaAlgorithm::Linear : RmaAlgorithm::Binomial);
    else
      out.schedule = build_bcast(ctx.rank, ctx.size, c.root, chunks, order, ctx.page, s.policy().pieces(Kind::Bcast, *ctx.topology).setting);
    const bool direct = in_call && t.dense;  // nothing is guarded and the call waits for every step
    if (ctx.rank == c.root) {
      if (direct) {
        out.send_data = static_cast<char*>(buffer);
      } else {
        out.send_data = s.send_area(bytes);
        if (!out.send_data && bytes) return Status::error("out of memory for " + std::to_string(bytes) + " bytes of staging", MPI_ERR_NO_MEM);
        if (Status st = s.pack(buffer, c.recv.count, c.recv.type, out.send_data, bytes); !st.ok()) return st;
      }
      return {};
    }
    out.recv_data = direct ? static_cast<char*>(buffer) : s.recv_area(bytes, buffer);
    // p2p forwards from the receive area; RMA from the rank's data window (rma_transport.hh).
    out.send_data = rma ? nullptr : out.recv_data;
    if (!out.recv_data && bytes) return Status::error("out of memory for " + std::to_string(bytes) + " bytes of staging", MPI_ERR_NO_MEM);
    out.user_recv = t.dense ? static_cast<char*>(buffer) : nullptr;
    const auto base = reinterpret_cast<std::uintptr_t>(buffer);
    out.guard = {base, base, base + bytes, {}};
    out.local = t.dense ? Reason::None : Reason::NoncontiguousDatatype;
    if (!t.dense) out.unpack.push_back({0, bytes, buffer, c.recv.count, c.recv.type});
    return {};
  }
};

}  // namespace

const Collective& bcast_collective() {
  static const Bcast b;
  return b;
}

}  // namespace tnbc
