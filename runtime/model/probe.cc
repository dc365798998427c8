#include "runtime/model/probe.hh"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <map>

#include "runtime/futex.hh"
#include "runtime/guard_backend.hh"
#include "runtime/host_cpu.hh"
#include "runtime/model/measure.hh"
#include "runtime/mpi_threads.hh"

namespace tnbc::model {

namespace {

// Sizes the probe measures: one page, and a sub-message large enough for the per-byte terms to
// show (64 pages = 256 KiB with 4 KiB pages) yet cheap to exchange at start-up.
constexpr std::size_t kProbePages = 64;
constexpr int kRepetitions = 5;
constexpr int kIdlePolls = 10;  // per round of the idle-test measurement (2 rounds)
// Tags on tnbc's duplicate of MPI_COMM_WORLD, before any collective uses it: every probe
// message is matched before the reduction that ends the probe.
constexpr int kRingTag = 0, kPolledTag = 1, kTestTag = 2, kAloneTag = 3;
constexpr int kTestPending = 8;  // receives MPI_Testsome looks at, as for a collective in flight

// The probe keeps a guard's publication as one line with the reader's first reads in it (the
// model prices them with the publication where a machine has no GuardCost::first_read).
Line with_first_read(const Line& publish, const Line& first_read) {
  return {publish.ns + first_read.ns, publish.ns_per_byte + first_read.ns_per_byte};
}

}  // namespace

std::string mpi_library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (PMPI_Get_library_version(v, &len) != MPI_SUCCESS) return "unknown";
  std::string s(v, static_cast<std::size_t>(std::max(0, len)));
  const auto nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\0')) s.pop_back();
  return s;
}

Topology World::topology() const {
  Topology t;
  t.node = node;
  t.cpus_per_node = cpus_per_node;
  t.cpus_per_rank = cpus_per_rank;
  return t;
}

RunFacts World::facts() const {
  const Topology t = topology();
  return {mpi_library, t.nodes(), t.max_per_node()};
}

World gather_world(MPI_Comm world) {
  World w;
  w.mpi_library = mpi_library_version();
  w.mpi_transport = mpi_threads().transport;
  int rank = 0, size = 1;
  PMPI_Comm_rank(world, &rank);
  PMPI_Comm_size(world, &size);
  cpu_set_t mine;
  CPU_ZERO(&mine);
  int own = 1;
  if (sched_getaffinity(0, sizeof mine, &mine) == 0) own = std::max(1, CPU_COUNT(&mine));
  std::array<unsigned char, sizeof(cpu_set_t)> bytes{}, all{};
  std::memcpy(bytes.data(), &mine, sizeof mine);
  // The node: the smallest world rank on it names it; the CPUs: the union of its ranks' masks.
  int leader = rank, node_cpus = own;
  MPI_Comm node = MPI_COMM_NULL;
  if (PMPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    PMPI_Allreduce(&rank, &leader, 1, MPI_INT, MPI_MIN, node);
    PMPI_Allreduce(bytes.data(), all.data(), static_cast<int>(all.size()), MPI_BYTE, MPI_BOR, node);
    cpu_set_t un;
    std::memcpy(&un, all.data(), sizeof un);
    node_cpus = std::max(1, CPU_COUNT(&un));
    PMPI_Comm_free(&node);
  }
  // Nodes that are one machine's kernel (emulated nodes: network namespaces on one host, as the
  // NPB harness's --nodes K) share its CPUs: a node counts its share of the host's CPUs, by its
  // ranks, not the whole mask its ranks may use. Ranks with the same kernel (its boot id) share
  // the machine's CPUs, whatever node (network namespace, hostname) MPI places them on.
  const int host_color = static_cast<int>(kernel_id() & 0x7fffffff);
  MPI_Comm host = MPI_COMM_NULL;
  if (PMPI_Comm_split(world, host_color, rank, &host) == MPI_SUCCESS) {
    int host_ranks = 1, node_ranks = 1;
    std::array<unsigned char, sizeof(cpu_set_t)> host_all{};
    PMPI_Comm_size(host, &host_ranks);
    PMPI_Allreduce(bytes.data(), host_all.data(), static_cast<int>(host_all.size()), MPI_BYTE, MPI_BOR, host);
    MPI_Comm same_node = MPI_COMM_NULL;
    if (PMPI_Comm_split(host, leader, rank, &same_node) == MPI_SUCCESS) {
      PMPI_Comm_size(same_node, &node_ranks);
      PMPI_Comm_free(&same_node);
    }
    cpu_set_t un;
    std::memcpy(&un, host_all.data(), sizeof un);
    const int share = std::max(1, CPU_COUNT(&un) * node_ranks / std::max(1, host_ranks));
    node_cpus = std::min(node_cpus, share);
    PMPI_Comm_free(&host);
  }
  std::vector<int> leaders(static_cast<std::size_t>(size));
  PMPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, world);
  std::map<int, int> index;
  for (int l : leaders) index.emplace(l, static_cast<int>(index.size()));
  for (int l : leaders) w.node.push_back(index[l]);
  int mins[2] = {node_cpus, own}, agreed[2] = {1, 1};
  PMPI_Allreduce(mins, agreed, 2, MPI_INT, MPI_MIN, world);
  w.cpus_per_node = agreed[0];
  w.cpus_per_rank = agreed[1];
  return w;
}

Topology comm_topology(MPI_Comm comm, const Topology& world) {
  Topology t;
  t.cpus_per_node = world.cpus_per_node;
  t.cpus_per_rank = world.cpus_per_rank;
  MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
  int n = 0;
  PMPI_Comm_size(comm, &n);
  std::vector<int> ranks(static_cast<std::size_t>(n)), in_world(ranks.size(), MPI_UNDEFINED);
  for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)] = i;
  if (PMPI_Comm_group(comm, &g) == MPI_SUCCESS && PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS)
    PMPI_Group_translate_ranks(g, n, ranks.data(), wg, in_world.data());
  if (g != MPI_GROUP_NULL) PMPI_Group_free(&g);
  if (wg != MPI_GROUP_NULL) PMPI_Group_free(&wg);
  // Nodes renumbered in the order the communicator meets them; a rank outside the world (a
  // spawned one) counts as a node of its own.
  std::map<int, int> index;
  int outside = world.n();
  for (int r : in_world) {
    const int world_node = r >= 0 && r < world.n() ? world.node[static_cast<std::size_t>(r)] : outside++;
    t.node.push_back(index.emplace(world_node, static_cast<int>(index.size())).first->second);
  }
  return t;
}

namespace {

// This rank's measurements, as values every rank agrees on by taking the largest.
enum Slot {
  kCopyNs, kCopyPerByte, kHoldNs, kHoldPerByte, kPublishNs, kPublishPerByte, kTest, kSleep,
  kLevelBase,  // then per level: link fixed, link per byte, CPU fixed, CPU per byte
  kAloneBase = kLevelBase + 4 * kLevels,  // then per level: one message alone, fixed and per byte (0: not measured)
  kSlots = kAloneBase + 2 * kLevels
};

// Where a node has more ranks than CPUs, the ring's flows share fewer CPUs than there are flows
// (and Open MPI's ranks poll back to back while they wait): a ring flow's time there is the
// CPUs' share of a message, not a message's T(m) (np 4 on 2 CPUs: G 0.28-0.56 ns/B per flow
// against 0.07-0.09 at np 2; docs/benchmarks.md, "Session 12"). There each level's message
// alone is measured: a ping-pong on the first ring edge at that level while every other rank
// waits asleep (sleeping_barrier). Its half round trip per size; the line through the medians
// into `v` at kAloneBase, on the edge's first rank only (the others leave 0: the reduction takes
// the largest).
void measure_alone(MPI_Comm comm, const Topology& t, int me, const std::vector<std::size_t>& sizes, char* send,
                   char* recv, long long poll_ns, std::array<double, kSlots>& v) {
  const int n = t.n();
  for (int k = 0; k < kLevels; ++k) {
    int a = -1;
    for (int r = 0; r < n && a < 0; ++r)
      if (static_cast<int>(t.level(r, (r + 1) % n)) == k) a = r;
    if (a < 0) continue;
    const int b = (a + 1) % n;
    if (me == a || me == b) {
      const int peer = me == a ? b : a;
      std::vector<double> x, y;
      for (std::size_t bytes : sizes) {
        const int count = static_cast<int>(bytes);
        auto send_one = [&] { return PMPI_Send(send, count, MPI_BYTE, peer, kAloneTag, comm) == MPI_SUCCESS; };
        auto recv_one = [&] {
          return PMPI_Recv(recv, count, MPI_BYTE, peer, kAloneTag, comm, MPI_STATUS_IGNORE) == MPI_SUCCESS;
        };
        if (me == a) {
          x.push_back(static_cast<double>(bytes));
          y.push_back(median_ns([&] { return send_one() && recv_one(); }, kRepetitions) / 2);
        } else {
          for (int i = 0; i <= kRepetitions; ++i) (void)(recv_one() && send_one());  // median_ns: a warm-up + reps
        }
      }
      if (me == a) {
        const Line alone = fit(x, y);
        v[kAloneBase + 2 * k + 0] = alone.ns;
        v[kAloneBase + 2 * k + 1] = alone.ns_per_byte;
      }
    }
    sleeping_barrier(comm, poll_ns);
  }
}

std::array<double, kSlots> measure(MPI_Comm comm, const World& w, GuardBackend* backend, std::size_t page,
                                   long long poll_min_ns) {
  std::array<double, kSlots> v{};
  const std::vector<std::size_t> sizes{page, kProbePages * page};
  Scratch s(kProbePages * page);
  if (s.user) {
    const Line c = memcpy_line(s, sizes, kRepetitions);
    v[kCopyNs] = c.ns;
    v[kCopyPerByte] = c.ns_per_byte;
    Line hold, publish, first_read;
    if (backend && guard_lines(*backend, s, sizes, kRepetitions, [] {}, hold, publish, first_read)) {
      publish = with_first_read(publish, first_read);
      v[kHoldNs] = hold.ns;
      v[kHoldPerByte] = hold.ns_per_byte;
      v[kPublishNs] = publish.ns;
      v[kPublishPerByte] = publish.ns_per_byte;
    }
  }
  v[kTest] = testsome_ns(comm, kTestTag, kTestPending);
  v[kSleep] = sleep_ns(poll_min_ns);
  int n = 1, me = 0;
  PMPI_Comm_size(comm, &n);
  PMPI_Comm_rank(comm, &me);
  if (n < 2) return v;
  std::vector<char> send(kProbePages * page, 2), recv(kProbePages * page);
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  auto barrier = [&] { PMPI_Barrier(comm); };
  std::vector<double> x, t, cpu;
  double idle_test = -1;
  for (std::size_t bytes : sizes) {
    x.push_back(static_cast<double>(bytes));
    t.push_back(median_ns([&] {
      return PMPI_Sendrecv(send.data(), static_cast<int>(bytes), MPI_BYTE, right, kRingTag, recv.data(),
                           static_cast<int>(bytes), MPI_BYTE, left, kRingTag, comm, MPI_STATUS_IGNORE) == MPI_SUCCESS;
    }, barrier, kRepetitions));
    // After the first exchange (connections made): what a test that finds nothing costs here,
    // taken out of the polled exchange's CPU (its number of idle tests grows with the wall time).
    if (idle_test < 0) idle_test = idle_test_cpu_ns(comm, kTestTag, 2, poll_min_ns, kIdlePolls, 2);
    std::vector<double> c;
    for (int i = 0; i <= kRepetitions; ++i) {
      barrier();
      double ns = 0;
      polled_exchange(comm, right, left, kPolledTag, send.data(), recv.data(), bytes, poll_min_ns, poll_min_ns, idle_test, ns);
      if (i > 0) c.push_back(ns);
    }
    std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(c.size() / 2), c.end());
    cpu.push_back(c[c.size() / 2]);
  }
  const Line link = fit(x, t), work = fit(x, cpu);
  const Topology top = w.topology();
  const int k = static_cast<int>(top.level(me, right));
  v[kLevelBase + 4 * k + 0] = link.ns;
  v[kLevelBase + 4 * k + 1] = link.ns_per_byte;
  v[kLevelBase + 4 * k + 2] = work.ns;
  v[kLevelBase + 4 * k + 3] = work.ns_per_byte;
  if (top.max_per_node() > std::max(1, w.cpus_per_node)) {
    sleeping_barrier(comm, poll_min_ns);
    measure_alone(comm, top, me, sizes, send.data(), recv.data(), poll_min_ns, v);
  }
  return v;
}

// The machine from the agreed measurements. The ring's flows at each level share the busiest
// node's resource: its per-flow time over those flows is the node's per-byte time.
Machine from_probe(const std::array<double, kSlots>& v, const World& w, GuardBackend* backend, std::size_t page) {
  Machine m;
  m.method = "probe";
  m.mpi_library = w.mpi_library;
  m.mpi_transport = w.mpi_transport;
  const Topology t = w.topology();
  m.ranks = t.n();
  m.nodes = t.nodes();
  m.ranks_per_node = t.max_per_node();
  m.cpus_per_node = w.cpus_per_node;
  m.page = page;
  m.memcpy_cost = {v[kCopyNs], v[kCopyPerByte]};
  if (backend) {
    const int b = guard_index(backend->probe_name());
    if (b >= 0) {
      m.guard_measured[b] = true;
      m.guard[b].hold = {v[kHoldNs], v[kHoldPerByte]};
      m.guard[b].publish = {v[kPublishNs], v[kPublishPerByte]};
      m.guard[b].fault_ns = v[kHoldNs] + v[kPublishNs];  // one region's system calls: not measured
    }
  }
  m.test_ns = v[kTest];
  m.sleep_ns = v[kSleep];
  // Directed ring edges per node and level: within it, leaving it, entering it.
  const int n = t.n();
  std::vector<int> intra(static_cast<std::size_t>(t.nodes()), 0), out(intra.size(), 0), in(intra.size(), 0);
  for (int r = 0; r < n && n > 1; ++r) {
    const int a = t.node[static_cast<std::size_t>(r)], b = t.node[static_cast<std::size_t>((r + 1) % n)];
    if (a == b) ++intra[static_cast<std::size_t>(a)];
    else ++out[static_cast<std::size_t>(a)], ++in[static_cast<std::size_t>(b)];
  }
  const int most_intra = *std::max_element(intra.begin(), intra.end());
  const int most_out = *std::max_element(out.begin(), out.end());
  int most_bi = 0;
  for (std::size_t j = 0; j < out.size(); ++j) most_bi = std::max(most_bi, out[j] + in[j]);
  for (int k = 0; k < kLevels; ++k) {
    const double a = v[kLevelBase + 4 * k], b = v[kLevelBase + 4 * k + 1];
    const double c0 = v[kLevelBase + 4 * k + 2], c1 = v[kLevelBase + 4 * k + 3];
    if (a <= 0 && b <= 0) continue;
    Level& l = m.level[k];
    l.measured = true;
    // Sendrecv of one message each way: T(s) = o_s + L + s G + o_r; the polled exchange's CPU
    // is both ends' overhead on one thread.
    l.os_ns = l.or_ns = c0 / 2;
    l.Os_ns_per_byte = l.Or_ns_per_byte = c1 / 2;
    // A message alone where it was measured (a node with more ranks than CPUs: measure_alone),
    // else the ring's flow.
    const double alone_ns = v[kAloneBase + 2 * k], alone_per_byte = v[kAloneBase + 2 * k + 1];
    const bool alone = alone_ns > 0 || alone_per_byte > 0;
    l.L_ns = std::max(0.0, (alone ? alone_ns : a) - c0);
    l.g_ns = l.os_ns;
    l.G_ns_per_byte = alone ? alone_per_byte : b;
    const bool inter = k == static_cast<int>(LevelKind::InterNode);
    const int flows = inter ? std::max(1, most_out) : std::max(1, most_intra);
    l.flows = flows;
    l.node_out_ns_per_byte = b / flows;
    l.node_bi_ns_per_byte = b / (inter ? std::max(1, most_bi) : flows);
  }
  (void)page;
  return m;
}

// A machine file without the costs of the guard backend this run uses (one a trace run wrote:
// the trace pass holds nothing back) gets them from the probe's measurement, agreed over the
// ranks (the largest); the rest of the file stays as it is. Collective over `comm`.
void complete_guard(Machine& m, MPI_Comm comm, GuardBackend* backend, std::size_t page) {
  const int b = backend ? guard_index(backend->probe_name()) : -1;
  const bool need = b >= 0 && !m.guard_measured[b];
  double mine[6] = {need ? 1.0 : 0.0, static_cast<double>(b), -static_cast<double>(b), 0, 0, 0}, all[6] = {};
  Line hold, publish, first_read;
  if (need) {
    Scratch s(kProbePages * page);
    if (s.user && guard_lines(*backend, s, {page, kProbePages * page}, kRepetitions, [] {}, hold, publish, first_read)) {
      publish = with_first_read(publish, first_read);
      mine[3] = hold.ns + publish.ns;
      mine[4] = hold.ns_per_byte;
      mine[5] = publish.ns_per_byte;
    }
  }
  // One reduction: whether any rank needs it, the backend (equal on all ranks: max == -min).
  double hold_ns[2] = {need ? hold.ns : 0, need ? publish.ns : 0}, hold_all[2] = {};
  PMPI_Allreduce(mine, all, 6, MPI_DOUBLE, MPI_MAX, comm);
  PMPI_Allreduce(hold_ns, hold_all, 2, MPI_DOUBLE, MPI_MAX, comm);
  if (all[0] < 1 || all[1] != -all[2] || all[1] < 0 || all[3] <= 0) return;
  const int g = static_cast<int>(all[1]);
  m.guard_measured[g] = true;
  m.guard[g].hold = {hold_all[0], all[4]};
  m.guard[g].publish = {hold_all[1], all[5]};
  m.guard[g].fault_ns = hold_all[0] + hold_all[1];  // one region's system calls, as the probe takes it
}

}  // namespace

Obtained obtain_machine(const std::string& file, MPI_Comm comm, const World& w, GuardBackend* backend,
                        std::size_t page, long long poll_min_ns) {
  Obtained o;
  o.file = file;
  const long long t0 = futex::now_ns();
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  if (!file.empty()) {
    Result<Machine> read = read_machine(file);
    std::string problem = read.ok() ? misfit(read.value(), w.facts()) : read.status().message();
    if (read.ok() && problem.empty() && read.value().page != page)
      problem = "it was measured with pages of " + std::to_string(read.value().page) + " bytes, this run has " +
                std::to_string(page);
    if (read.ok() && !problem.empty()) problem = "machine file " + file + ": " + problem;
    // Used only if every rank read it and found the same content.
    const std::uint64_t h = problem.empty() ? machine_hash(read.value()) : 0;
    std::uint64_t in[3] = {problem.empty() ? 1ULL : 0ULL, h, ~h}, agreed[3] = {0, 0, 0};
    PMPI_Allreduce(in, agreed, 3, MPI_UINT64_T, MPI_MIN, comm);
    if (agreed[0] == 1 && agreed[1] == ~agreed[2]) {
      o.machine = std::move(read).value();
      o.source = "file";
      complete_guard(o.machine, comm, backend, page);
      o.ms = static_cast<double>(futex::now_ns() - t0) / 1e6;
      return o;
    }
    o.problem = !problem.empty() ? problem
                : agreed[0] == 0 ? "machine file " + file + ": not usable on every rank (missing or another file on some node)"
                                 : "machine file " + file + ": the ranks read different contents (another file on some node)";
  }
  std::array<double, kSlots> mine = measure(comm, w, backend, page, poll_min_ns), all{};
  PMPI_Allreduce(mine.data(), all.data(), kSlots, MPI_DOUBLE, MPI_MAX, comm);
  o.machine = from_probe(all, w, backend, page);
  o.source = "probe";
  o.ms = static_cast<double>(futex::now_ns() - t0) / 1e6;
  (void)rank;
  return o;
}

}  // namespace tnbc::model
