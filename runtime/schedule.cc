#include "runtime/schedule.hh"

#include <algorithm>
#include <numeric>

namespace tnbc {

std::vector<std::size_t> split_points(std::size_t length, std::size_t page) {
  if (length > 2 * page) return {0, page, length - page, length};
  return {0, length};
}

std::vector<Piece> build_alltoallv(int rank, int size, const std::vector<std::size_t>& send_bytes,
                                   const std::vector<std::size_t>& send_offset,
                                   const std::vector<std::size_t>& recv_bytes,
                                   const std::vector<std::size_t>& recv_offset, std::size_t page,
                                   const std::vector<int>& order) {
  std::vector<Piece> pieces;
  // rank_of_peer[p] = position of p in the order (earlier = needed sooner).
  std::vector<std::int64_t> position(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < order.size(); ++i) position[static_cast<std::size_t>(order[i])] = static_cast<std::int64_t>(i);
  const std::int64_t n = size;
  auto add = [&](Dir dir, int peer, std::size_t base, std::size_t bytes) {
    auto cuts = split_points(bytes, page);
    const bool split = cuts.size() > 2;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
      Piece p;
      p.dir = dir;
      p.peer = peer;
      p.offset = base + cuts[i];
      p.length = cuts[i + 1] - cuts[i];
      p.tag_offset = static_cast<int>(i);
      p.sub = peer;
      const bool edge = !split || i != 1;  // heads and tails (and unsplit small ones) first
      // Send priority follows this rank's place in the receivers' order; receive priority
      // follows the sender's place (it only orders posting, which costs nothing).
      const std::int64_t who = position[static_cast<std::size_t>(dir == Dir::Send ? rank : peer)];
      p.priority = (edge ? 0 : 1) * n * n + who * n + ((peer - rank + n) % n);
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
                               const std::vector<int>& chunk_order) {
  std::vector<Piece> pieces;
  const int parent = bcast_parent(rank, size, root);
  const auto children = bcast_children(rank, size, root);
  const std::int64_t nc = static_cast<std::int64_t>(chunks.size());
  const auto is_edge = [&](int c) { return c == 0 || c + 1 == static_cast<int>(chunks.size()); };
  for (std::size_t i = 0; i < chunk_order.size(); ++i) {
    const int c = chunk_order[i];
    const Chunk& ch = chunks[static_cast<std::size_t>(c)];
    int recv_index = -1;
    if (parent >= 0) {
      Piece r;
      r.dir = Dir::Recv;
      r.peer = parent;
      r.offset = ch.offset;
      r.length = ch.length;
      r.tag_offset = c;
      r.priority = static_cast<std::int64_t>(i);
      r.sub = c;
      r.edge = is_edge(c);
      recv_index = static_cast<int>(pieces.size());
      pieces.push_back(r);
    }
    for (std::size_t k = 0; k < children.size(); ++k) {
      Piece s;
      s.dir = Dir::Send;
      s.peer = children[k];
      s.offset = ch.offset;
      s.length = ch.length;
      s.tag_offset = c;
      s.priority = static_cast<std::int64_t>(i) * nc + static_cast<std::int64_t>(k);
      s.after = recv_index;
      s.sub = c;
      s.edge = is_edge(c);
      pieces.push_back(s);
    }
  }
  return pieces;
}

}  // namespace tnbc
