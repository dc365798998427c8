#include "runtime/node_segment.hh"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "runtime/log.hh"

namespace tnbc {

namespace {

constexpr int kNameBytes = 64;

std::atomic<unsigned> g_boards{0};

void say_once(const std::string& what) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    log(LogLevel::Warn, "node-level priorities off on this rank: %s (TNBC_NODE_PRIORITIES)", what.c_str());
}

}  // namespace

std::shared_ptr<NodeLink> open_node_link(MPI_Comm comm, long long hold_ns, bool local_on_link) {
  MPI_Comm node = MPI_COMM_NULL;
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node) != MPI_SUCCESS) {
    say_once("MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
    return nullptr;
  }
  int ranks = 1, node_rank = 0, size = 0;
  PMPI_Comm_size(node, &ranks);
  PMPI_Comm_rank(node, &node_rank);
  PMPI_Comm_size(comm, &size);
  if (ranks <= 1) {
    PMPI_Comm_free(&node);
    return nullptr;
  }
  const std::size_t bytes = sizeof(NodeSlot) * static_cast<std::size_t>(ranks);
  char name[kNameBytes] = {};
  void* map = MAP_FAILED;
  std::string problem;
  if (node_rank == 0) {
    std::snprintf(name, sizeof name, "/tnbc-node-%ld-%u", static_cast<long>(getpid()), g_boards.fetch_add(1));
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
        (map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
      problem = std::string("the shared board ") + name + " could not be made: " + std::strerror(errno);
      if (fd >= 0) shm_unlink(name);
      name[0] = '\0';
    } else {
      // Before anyone else sees it: every slot "nothing outstanding" (a zero key would be the
      // most urgent of all).
      for (int i = 0; i < ranks; ++i) new (static_cast<NodeSlot*>(map) + i) NodeSlot();
    }
    if (fd >= 0) close(fd);
  }
  PMPI_Bcast(name, kNameBytes, MPI_CHAR, 0, node);
  if (node_rank != 0 && name[0]) {
    const int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0 || (map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
      problem = std::string("the shared board ") + name + " could not be opened: " + std::strerror(errno);
    if (fd >= 0) close(fd);
  } else if (!name[0] && problem.empty()) {
    problem = "node rank 0 could not make the shared board";
  }
  PMPI_Barrier(node);
  if (node_rank == 0 && name[0]) shm_unlink(name);
  // Which ranks of `comm` share this node.
  std::vector<bool> same(static_cast<std::size_t>(size), false);
  {
    MPI_Group g_comm, g_node;
    PMPI_Comm_group(comm, &g_comm);
    PMPI_Comm_group(node, &g_node);
    std::vector<int> in_node(static_cast<std::size_t>(ranks)), in_comm(static_cast<std::size_t>(ranks));
    for (int i = 0; i < ranks; ++i) in_node[static_cast<std::size_t>(i)] = i;
    PMPI_Group_translate_ranks(g_node, ranks, in_node.data(), g_comm, in_comm.data());
    for (int r : in_comm)
      if (r >= 0 && r < size && !local_on_link) same[static_cast<std::size_t>(r)] = true;
    PMPI_Group_free(&g_comm);
    PMPI_Group_free(&g_node);
  }
  PMPI_Comm_free(&node);
  if (!problem.empty() || map == MAP_FAILED) {
    say_once(problem.empty() ? "no shared board" : problem);
    return nullptr;
  }
  auto* slots = static_cast<NodeSlot*>(map);
  auto link = std::make_shared<NodeLink>();
  link->board = std::shared_ptr<void>(map, [bytes](void* p) { munmap(p, bytes); });
  link->arbiter = std::make_unique<NodeArbiter>(slots, ranks, node_rank, hold_ns);
  link->same_node = std::move(same);
  return link;
}

double kernel_send_buffer_bytes() {
  static const double bytes = [] {
    std::FILE* f = std::fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
    if (!f) return -1.0;
    long long lo = 0, def = 0, hi = 0;
    const int n = std::fscanf(f, "%lld %lld %lld", &lo, &def, &hi);
    std::fclose(f);
    return n == 3 && hi > 0 ? static_cast<double>(hi) : -1.0;
  }();
  return bytes;
}

}  // namespace tnbc
