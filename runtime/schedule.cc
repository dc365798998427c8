#include "runtime/schedule.hh"

#include <algorithm>
#include <numeric>

namespace tnbc {

namespace {
std::size_t ceil_div(std::size_t a, std::size_t b) { return a / b + (a % b != 0); }
}  // namespace

std::size_t piece_limit(std::size_t length, std::size_t page, PieceSetting setting) {
  if (setting && *setting == 0) return SIZE_MAX;
  if (setting) return std::max(page, static_cast<std::size_t>(std::min<std::uint64_t>(*setting, SIZE_MAX)) / page * page);
  return std::max(ceil_div(kAutoPieceMinBytes, page) * page, length / kAutoPiecesPerSub / page * page);
}

std::vector<std::size_t> body_cuts(std::size_t begin, std::size_t end, std::size_t page, std::size_t limit,
                                   std::size_t max_pieces) {
  std::vector<std::size_t> cuts;
  if (end <= begin || limit == SIZE_MAX) return cuts;
  const std::size_t pages = ceil_div(end - begin, page);       // the last one may be partial
  const std::size_t limit_pages = std::max<std::size_t>(1, limit / page);
  const std::size_t count = std::clamp<std::size_t>(ceil_div(pages, limit_pages), 1, std::max<std::size_t>(1, max_pieces));
  const std::size_t step = ceil_div(pages, count) * page;      // <= limit unless max_pieces forbids it
  for (std::size_t at = begin + step; at < end; at += step) cuts.push_back(at);
  return cuts;
}

std::vector<std::size_t> split_points(std::size_t length, std::size_t page, std::size_t limit) {
  if (length <= 2 * page) return {0, length};
  std::vector<std::size_t> cuts{0, page};
  for (std::size_t c : body_cuts(page, length - page, page, limit)) cuts.push_back(c);
  cuts.push_back(length - page);
  cuts.push_back(length);
  return cuts;
}

std::vector<Piece> build_alltoallv(int rank, int size, const std::vector<std::size_t>& send_bytes,
                                   const std::vector<std::size_t>& send_offset,
                                   const std::vector<std::size_t>& recv_bytes,
                                   const std::vector<std::size_t>& recv_offset, std::size_t page,
                                   const std::vector<int>& order, PieceSetting piece_setting) {
  std::vector<Piece> pieces;
  // position[p] = place of p in the order (earlier = needed sooner).
  std::vector<std::int64_t> position(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < order.size(); ++i) position[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
  const std::int64_t n = size;
  constexpr std::int64_t kPieceSlots = kTagsPerCollective;  // > any body index
  auto add = [&](Dir dir, int peer, std::size_t base, std::size_t bytes) {
    // The same inputs on both ends of the sub-message: its length, the page size, the setting.
    auto cuts = split_points(bytes, page, piece_limit(bytes, page, piece_setting));
    const std::size_t last = cuts.size() - 2;  // index of the last piece
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      Piece p;
      p.dir = dir;
      p.peer = peer;
      p.offset = base + cuts[i];
      p.length = cuts[i + 1] - cuts[i];
      p.tag_offset = static_cast<int>(i);
      p.sub = peer;
      const bool edge = last == 0 || i == 0 || i == last;  // heads and tails (and unsplit small ones) first
      const std::int64_t body = edge ? 0 : static_cast<std::int64_t>(i) - 1;
      // Send priority follows this rank's place in the receivers' order; receive priority
      // follows the sender's place (it only orders posting, which costs nothing). Within it,
      // body k to every peer before body k + 1 to any.
      const std::int64_t who = position[static_cast<std::size_t>(dir == Dir::Send ? rank : peer)];
      p.priority = (((edge ? 0 : 1) * n + who) * kPieceSlots + body) * n + ((peer - rank + n) % n);
      p.edge = edge;
      pieces.push_back(p);
    }
  };
  for (int step = 1; step < size; ++step) {
    const int peer = (rank + step) % size;
    const auto p = static_cast<std::size_t>(peer);
    if (recv_bytes[p] > 0) add(Dir::Recv, peer, recv_offset[p], recv_bytes[p]);
    if (send_bytes[p] > 0) add(Dir::Send, peer, send_offset[p], send_bytes[p]);
  }
  std::stable_sort(pieces.begin(), pieces.end(),
                   [](const Piece& a, const Piece& b) { return a.priority < b.priority; });
  return pieces;
}

int bcast_segments(std::size_t bytes, std::size_t page, int max_segments) {
  const std::size_t floor = 3 * std::max<std::size_t>(page, 1);
  return static_cast<int>(std::clamp<std::size_t>(bytes / floor, 1, static_cast<std::size_t>(std::max(1, max_segments))));
}

std::vector<Chunk> bcast_chunks(std::size_t bytes, std::size_t page, int segments) {
  std::vector<Chunk> chunks;
  if (bytes == 0) return chunks;
  if (bytes <= 2 * page) return {{0, bytes}};
  chunks.push_back({0, page});
  const std::size_t middle = bytes - 2 * page;
  const std::size_t pages = (middle + page - 1) / page;
  const std::size_t segs = std::max<std::size_t>(1, std::min<std::size_t>(static_cast<std::size_t>(segments), pages));
  const std::size_t seg = (pages + segs - 1) / segs * page;
  for (std::size_t off = page; off < page + middle; off += seg)
    chunks.push_back({off, std::min(seg, page + middle - off)});
  chunks.push_back({bytes - page, page});
  return chunks;
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

std::vector<Piece> build_bcast(int rank, int size, int root, const std::vector<Chunk>& chunks,
                               const std::vector<int>& chunk_order, std::size_t page, PieceSetting piece_setting) {
  // The pieces of every chunk, numbered along the chunk list: first[c] is chunk c's first.
  const std::size_t nchunks = chunks.size();
  const auto is_edge = [&](std::size_t c) { return c == 0 || c + 1 == nchunks; };
  const std::size_t middle = nchunks > 2 ? nchunks - 2 : 0;
  const std::size_t per_chunk = middle ? std::max<std::size_t>(1, kMaxBodyPieces / middle) : 1;
  // auto: segments are not cut (they are the broadcast's pieces already; see schedule.hh).
  const PieceSetting setting = piece_setting ? piece_setting : PieceSetting{0};
  std::vector<Chunk> cut;             // the pieces, by number
  std::vector<std::size_t> first(nchunks + 1);
  for (std::size_t c = 0; c < nchunks; ++c) {
    first[c] = cut.size();
    const Chunk& ch = chunks[c];
    std::size_t at = ch.offset;
    if (!is_edge(c))
      for (std::size_t x : body_cuts(ch.offset, ch.offset + ch.length, page, piece_limit(ch.length, page, setting),
                                     per_chunk)) {
        cut.push_back({at, x - at});
        at = x;
      }
    cut.push_back({at, ch.offset + ch.length - at});
  }
  first[nchunks] = cut.size();

  std::vector<Piece> pieces;
  const int parent = bcast_parent(rank, size, root);
  const auto children = bcast_children(rank, size, root);
  const std::int64_t nk = static_cast<std::int64_t>(children.size()) + 1;
  std::int64_t rank_in_order = 0;  // the piece's place in this rank's sending order
  for (int c : chunk_order) {
    const auto cu = static_cast<std::size_t>(c);
    for (std::size_t k = first[cu]; k < first[cu + 1]; ++k, ++rank_in_order) {
      const Chunk& piece = cut[k];
      int recv_index = -1;
      if (parent >= 0) {
        Piece r;
        r.dir = Dir::Recv;
        r.peer = parent;
        r.offset = piece.offset;
        r.length = piece.length;
        r.tag_offset = static_cast<int>(k);
        r.priority = rank_in_order;
        r.sub = c;
        r.edge = is_edge(cu);
        recv_index = static_cast<int>(pieces.size());
        pieces.push_back(r);
      }
      for (std::size_t j = 0; j < children.size(); ++j) {
        Piece s;
        s.dir = Dir::Send;
        s.peer = children[j];
        s.offset = piece.offset;
        s.length = piece.length;
        s.tag_offset = static_cast<int>(k);
        s.priority = rank_in_order * nk + static_cast<std::int64_t>(j);
        s.after = recv_index;
        s.sub = c;
        s.edge = is_edge(cu);
        pieces.push_back(s);
      }
    }
  }
  return pieces;
}

}  // namespace tnbc
