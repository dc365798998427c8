#include "runtime/in_call.hh"

#include <time.h>

#include <vector>

#include "runtime/futex.hh"
#include "runtime/inflight.hh"

namespace tnbc {

bool run_in_caller(InFlight& f, long long timeout_ns, long long poll_ns) {
  const std::size_t n = f.pieces.size();
  std::vector<std::vector<int>> forwards(n);  // per Recv piece: the Sends waiting for it
  for (std::size_t i = 0; i < n; ++i) {
    const Piece& p = f.pieces[i];
    if (p.dir == Dir::Send && p.after >= 0) forwards[static_cast<std::size_t>(p.after)].push_back(static_cast<int>(i));
  }
  std::vector<MPI_Request> reqs;
  std::vector<int> owner, done;
  int left = 0;
  auto post = [&](int i) {
    const Piece& p = f.pieces[static_cast<std::size_t>(i)];
    MPI_Request r;
    if (p.dir == Dir::Recv)
      PMPI_Irecv(f.recv_data + p.offset, static_cast<int>(p.length), MPI_BYTE, p.peer, f.base_tag + p.tag_offset, f.comm, &r);
    else
      PMPI_Isend(f.send_data + p.offset, static_cast<int>(p.length), MPI_BYTE, p.peer, f.base_tag + p.tag_offset, f.comm, &r);
    reqs.push_back(r);
    owner.push_back(i);
    ++left;
  };
  for (std::size_t i = 0; i < n; ++i)
    if (f.pieces[i].dir == Dir::Recv) post(static_cast<int>(i));
  for (std::size_t i = 0; i < n; ++i)  // in the builders' order: priority (all-to-all), chunk order (broadcast)
    if (f.pieces[i].dir == Dir::Send && f.pieces[i].peer >= 0 && f.pieces[i].after < 0) post(static_cast<int>(i));
  const long long start = futex::now_ns();
  while (left > 0) {
    done.resize(reqs.size());
    int count = 0;
    PMPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &count, done.data(), MPI_STATUSES_IGNORE);
    if (count == MPI_UNDEFINED) count = 0;
    for (int k = 0; k < count; ++k) {
      const int i = owner[static_cast<std::size_t>(done[static_cast<std::size_t>(k)])];
      --left;
      if (f.pieces[static_cast<std::size_t>(i)].dir != Dir::Recv) {
        f.done[static_cast<std::size_t>(i)].store(1, std::memory_order_release);
        continue;
      }
      publish_piece(f, i);  // marks it done; copies it only if it was received elsewhere than in place
      for (int j : forwards[static_cast<std::size_t>(i)]) post(j);
    }
    if (count > 0) continue;
    const long long waited = futex::now_ns() - start;
    if (waited > timeout_ns) return false;
    if (waited > poll_ns) {
      struct timespec ts{0, static_cast<long>(poll_ns)};
      nanosleep(&ts, nullptr);
    }
  }
  return true;
}

}  // namespace tnbc
