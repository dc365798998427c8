#include "runtime/model/calibrate.hh"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "runtime/bulk_copy.hh"
#include "runtime/function_ref.hh"
#include "runtime/futex.hh"
#include "runtime/guard_backend.hh"
#include "runtime/model/calibrate_load.hh"
#include "runtime/model/measure.hh"
#include "runtime/model/probe.hh"
#include "runtime/pool.hh"
#include "runtime/publish.hh"
#include "runtime/uffd.hh"

namespace tnbc::model {

namespace {

constexpr int kTrain = 8;       // messages in a train
constexpr int kMinReps = 5;
constexpr int kMaxReps = 200;
constexpr int kTag = 7;         // on a duplicate of the world made for the calibration
constexpr int kTestPending = 8;
constexpr int kIdlePolls = 40;  // per round of the idle-test measurement (3 rounds)
constexpr std::size_t kBufferedFrom = 1u << 20;  // buffered_send_bytes: sizes that may end the search
constexpr int kGuardReps = 9;    // guard: cycles per size, each after emptying the caches (median)
constexpr int kInCallReps = 11;  // tnbc's in-call copy: copies per size in each of its 3 passes (median)
constexpr double kInCallSpreadNote = 2;  // its passes this far apart at the largest size: say so (a note only)
constexpr int kOwnCallReps = 9;  // node_mpi_alltoall: timed rounds (median per size), as tests/bench/blocking_times
constexpr int kHandoverReps = 21;  // the hand-over: pokes 1 ms apart (median)

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Ctx {
  MPI_Comm comm;
  int me, n;
  const CalibrateOptions& o;
  std::vector<char> a, b;  // send and receive buffers, max_bytes x kTrain
  // Read through to empty the caches before a measurement (eviction_scratch): made once, at the
  // start, with the in-call copy's arena (see calibrate()).
  std::vector<char> evict;
  std::size_t llc = 0;  // the last-level cache the cold measurements find emptied (eviction_scratch)
  double idle_test_ns = 0;  // this rank's CPU per idle MPI_Testall between sleeps, at the current size
};

// Waits for `r` asleep between tests (MPI's own waits spin): the ranks that wait while others
// measure must not take the CPU from them.
void wait_asleep(MPI_Request& r) {
  for (int done = 0; PMPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done;) {
    const struct timespec ts{0, 20000};
    nanosleep(&ts, nullptr);
  }
}

// A barrier that sleeps instead of spinning.
void barrier(const Ctx& c) {
  MPI_Request r;
  PMPI_Ibarrier(c.comm, &r);
  wait_asleep(r);
}

// The largest `mine` over the ranks, asleep while waiting (ranks that took no part in a
// measurement must not spin while the others finish it).
double sleeping_max(const Ctx& c, double mine) {
  double worst = 0;
  MPI_Request r;
  PMPI_Iallreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, c.comm, &r);
  wait_asleep(r);
  return worst;
}

// Per size the slowest rank's figure (`mine`: this rank's, 0 where it takes no part, < 0 where it
// failed), the line through them, keeping them; {0, 0} with fewer than two sizes measured.
Line slowest_line(const Ctx& c, const std::vector<std::size_t>& sizes, FunctionRef<double(std::size_t)> mine) {
  std::vector<double> x, y;
  for (std::size_t b : sizes) {
    const double slowest = sleeping_max(c, mine(b));
    if (slowest < 0) continue;
    x.push_back(static_cast<double>(b));
    y.push_back(slowest);
  }
  return x.size() >= 2 ? fit_through(x, y) : Line{};
}

// `sizes` (ascending) without those above `largest` (0: all), but never fewer than the first two:
// a line needs two points.
std::vector<std::size_t> capped_sizes(std::vector<std::size_t> sizes, std::size_t largest) {
  std::size_t keep = sizes.size();
  while (largest && keep > 2 && sizes[keep - 1] > largest) --keep;
  sizes.resize(keep);
  return sizes;
}

// What the in-call copy's arena may map on a node (over its ranks) for the sizes above 4 MiB:
// as much as it mapped for them before session 29, when the last-level cache was read from
// sysconf (3 x 384 MiB here), so that the 16 and 64 MiB points are measured where they were.
constexpr std::size_t kCopyArenaNodeBytes = std::size_t{1} << 30;

// The sizes of tnbc's in-call copy: 64 KiB to 4 MiB always, and 16 and 64 MiB where the arena
// made to find no copy in the caches (uncached_copy_bytes: 3 x 32 MiB / ranks of the node here)
// grows for them to no more than the node's kCopyArenaNodeBytes, so that a node of many ranks
// maps no more than that.
// `largest` (CalibrateOptions::copy_bytes, 0: no limit) leaves out the sizes above it, keeping two.
std::vector<std::size_t> in_call_copy_sizes(int ranks_per_node, std::size_t llc, std::size_t largest) {
  std::vector<std::size_t> sizes{65536, 256u << 10, 1u << 20, 4u << 20};
  const std::size_t arena = std::max(uncached_copy_bytes(sizes.back(), ranks_per_node, llc),
                                     kCopyArenaNodeBytes / static_cast<std::size_t>(std::max(1, ranks_per_node)));
  for (std::size_t b : {std::size_t{16} << 20, std::size_t{64} << 20})
    if (uncached_copy_bytes(b, ranks_per_node, llc) <= arena) sizes.push_back(b);
  return capped_sizes(sizes, largest);
}

// tnbc's copies in a collective's call (model::Machine::memcpy_in_call): every rank copies at
// once between buffers outside the caches; per size the slowest rank's median. Measured in
// passes spread over the calibration (after the levels, after the node measurements, at its
// end), per size the median over the passes: one calibration here measured 3.8 ms for 4 MiB
// where the twelve after it measured 0.19-0.37 (a disturbance of the VM that grew over the sizes;
// session 20's two such files priced Tinit 2-8x above what the runs then measured:
// docs/benchmarks.md, "Session 20", "Session 21"). The Scratch lives from the first pass to the
// last. The sizes reach the largest calls the model prices where memory allows (NPB FT.A at np 2:
// 32 MiB per peer): a line from 4 MiB up priced 16 MiB at 56 us/MiB where the calls copied at ~83
// (session 22). Each pass measures the same copies once more with rank 0 copying alone, the others
// asleep (model::Machine::memcpy_in_call_alone: a broadcast's root).
class InCallCopy {
 public:
  InCallCopy(const Ctx& c, std::vector<std::size_t> sizes, int ranks_per_node)
      : sizes_(std::move(sizes)),
        s_(uncached_copy_bytes(sizes_.empty() ? 0 : *std::max_element(sizes_.begin(), sizes_.end()), ranks_per_node,
                               c.llc)) {
    double ok = s_.user ? 1 : 0;
    PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_DOUBLE, MPI_MIN, c.comm);
    ok_ = ok != 0;
  }

  // One pass: per size the slowest rank's median of `reps` copies (every rank, collectively);
  // then rank 0's median of `reps` copies alone.
  void pass(const Ctx& c, int reps) {
    if (!ok_) return;
    std::vector<double> row, alone;
    for (std::size_t b : sizes_)
      row.push_back(sleeping_max(c, uncached_copy_ns(s_, cursor_, b, [&] {
        // A sleeping barrier, then MPI's own: every rank starts its copy within a few microseconds.
        barrier(c);
        PMPI_Barrier(c.comm);
      }, reps)));
    for (std::size_t b : sizes_)
      alone.push_back(sleeping_max(c, c.me == 0 ? uncached_copy_ns(s_, cursor_, b, [] {}, reps) : 0));
    passes_.push_back(std::move(row));
    alone_passes_.push_back(std::move(alone));
  }

  // Per size the median over the passes, the line through them (keeping them); {0, 0} when a rank
  // could not map its buffers or fewer than two sizes were measured (then the model keeps the
  // memcpy line). line_alone: the same of rank 0's copies alone.
  Line line() const { return fit_through_pass_medians(std::vector<double>(sizes_.begin(), sizes_.end()), passes_); }
  Line line_alone() const {
    return fit_through_pass_medians(std::vector<double>(sizes_.begin(), sizes_.end()), alone_passes_);
  }

  // The largest size's passes, slowest over quickest (1: they agree; 0: not measured).
  double spread() const {
    double lo = 0, hi = 0;
    for (const auto& row : passes_)
      if (!row.empty() && row.back() > 0) {
        lo = lo > 0 ? std::min(lo, row.back()) : row.back();
        hi = std::max(hi, row.back());
      }
    return lo > 0 ? hi / lo : 0;
  }
  const std::vector<std::vector<double>>& passes() const { return passes_; }
  const std::vector<std::size_t>& sizes() const { return sizes_; }

 private:
  std::vector<std::size_t> sizes_;
  Scratch s_;
  bool ok_ = false;
  std::size_t cursor_ = 0;
  std::vector<std::vector<double>> passes_, alone_passes_;
};

// After a sleeping barrier the pair meets once more with MPI's own spinning waits, so that
// neither is still asleep when the other starts the clock.
void sync_pair(const Ctx& c, int x, int y) {
  char z = 0;
  if (c.me == x) {
    PMPI_Send(&z, 0, MPI_BYTE, y, kTag + 3, c.comm);
    PMPI_Recv(&z, 0, MPI_BYTE, y, kTag + 3, c.comm, MPI_STATUS_IGNORE);
  } else if (c.me == y) {
    PMPI_Recv(&z, 0, MPI_BYTE, x, kTag + 3, c.comm, MPI_STATUS_IGNORE);
    PMPI_Send(&z, 0, MPI_BYTE, x, kTag + 3, c.comm);
  }
}

int reps_for(const Ctx& c, double estimate_ns) {
  if (estimate_ns <= 0) return kMinReps;
  return std::clamp(static_cast<int>(c.o.seconds_per_size * 1e9 / estimate_ns), kMinReps, kMaxReps);
}

// Every rank runs the same number of rounds (the repetitions are agreed from rank `from`'s
// estimate), so barriers match; only `x` and `y` exchange.
int agreed_reps(const Ctx& c, double estimate_ns, int from) {
  int r = reps_for(c, estimate_ns);
  PMPI_Bcast(&r, 1, MPI_INT, from, c.comm);
  return r;
}

// Half the round trip of a ping-pong of m bytes between x and y (median), on every rank.
double ping_pong(Ctx& c, int x, int y, std::size_t m) {
  auto once = [&] {
    sync_pair(c, x, y);
    const long long t0 = futex::now_ns();
    if (c.me == x) {
      PMPI_Send(c.a.data(), static_cast<int>(m), MPI_BYTE, y, kTag, c.comm);
      PMPI_Recv(c.b.data(), static_cast<int>(m), MPI_BYTE, y, kTag, c.comm, MPI_STATUS_IGNORE);
    } else if (c.me == y) {
      PMPI_Recv(c.b.data(), static_cast<int>(m), MPI_BYTE, x, kTag, c.comm, MPI_STATUS_IGNORE);
      PMPI_Send(c.a.data(), static_cast<int>(m), MPI_BYTE, x, kTag, c.comm);
    }
    return static_cast<double>(futex::now_ns() - t0) / 2;
  };
  barrier(c);
  const double first = once();  // warm-up and estimate
  const int reps = agreed_reps(c, first, x);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    barrier(c);
    t.push_back(once());
  }
  double r = median(t);
  PMPI_Bcast(&r, 1, MPI_DOUBLE, x, c.comm);
  return r;
}

// A train of k messages of m bytes from x to y; `polled`: both sides test like the progress
// thread (CPU per message into os/orr); else the sender waits (MPI_Waitall) and the time until
// the receiver's acknowledgement is returned.
//
// The CPU a message costs (polled) is the thread's CPU inside the MPI calls that post and test
// its requests, less what its idle tests cost (tests that found them incomplete x
// c.idle_test_ns): a test that finds nothing to do costs the same whether a message is in
// flight or not, and their number grows with the wall time (a slow link: more tests), so
// counting them, or the sleeps between them, would make o proportional to the transfer time
// (o_s ~ G, as calibrate measured until 2026-11-24). The acknowledgement is outside too: the
// sender's MPI_Recv spins until the receiver has everything. Only a polled train writes
// os/orr (a waited one's CPU is its wall time: MPI_Waitall spins), and `post` at x: the wall
// time of its MPI_Isend loop per message (the k sends started back to back, as a broadcast's
// root starts its pieces' sends in its call).
double train(Ctx& c, int x, int y, std::size_t m, int k, bool polled, double& os, double& orr, double* post = nullptr) {
  std::vector<MPI_Request> req(static_cast<std::size_t>(k));
  sync_pair(c, x, y);
  double c0 = thread_cpu_ns();
  const long long t0 = futex::now_ns();
  char ack = 0;
  if (c.me == x) {
    for (int i = 0; i < k; ++i)
      PMPI_Isend(c.a.data() + static_cast<std::size_t>(i) * m, static_cast<int>(m), MPI_BYTE, y, kTag, c.comm, &req[static_cast<std::size_t>(i)]);
    if (polled && post) *post = static_cast<double>(futex::now_ns() - t0) / k;
  } else if (c.me == y) {
    for (int i = 0; i < k; ++i)
      PMPI_Irecv(c.b.data() + static_cast<std::size_t>(i) * m, static_cast<int>(m), MPI_BYTE, x, kTag, c.comm, &req[static_cast<std::size_t>(i)]);
  }
  double busy = thread_cpu_ns() - c0;
  int idle = 0;
  if (c.me == x || c.me == y) {
    if (polled) {
      for (int done = 0; !done;) {
        c0 = thread_cpu_ns();
        PMPI_Testall(k, req.data(), &done, MPI_STATUSES_IGNORE);
        busy += thread_cpu_ns() - c0;
        if (!done) {
          ++idle;
          const struct timespec ts{0, static_cast<long>(c.o.poll_ns)};
          nanosleep(&ts, nullptr);
        }
      }
    } else {
      PMPI_Waitall(k, req.data(), MPI_STATUSES_IGNORE);
    }
    if (c.me == y) PMPI_Send(&ack, 1, MPI_BYTE, x, kTag + 1, c.comm);
    else PMPI_Recv(&ack, 1, MPI_BYTE, y, kTag + 1, c.comm, MPI_STATUS_IGNORE);
  }
  const double cpu = std::max(0.0, busy - idle * c.idle_test_ns) / k;
  if (polled && c.me == x) os = cpu;
  if (polled && c.me == y) orr = cpu;
  return static_cast<double>(futex::now_ns() - t0);
}

SizePoint measure_size(Ctx& c, int x, int y, std::size_t m) {
  SizePoint p;
  p.bytes = static_cast<double>(m);
  p.t_ns = ping_pong(c, x, y, m);
  // After the ping-pong (connections made, buffers touched): each end's idle test, the others asleep.
  barrier(c);
  if (c.me == x || c.me == y) c.idle_test_ns = idle_test_cpu_ns(c.comm, kTag + 4, kTrain, c.o.poll_ns, kIdlePolls, 3);
  const int reps = std::max(kMinReps, reps_for(c, p.t_ns * kTrain) / 2);
  std::vector<double> os, orr, one, many, posts;
  for (int i = 0; i <= reps; ++i) {
    double s = 0, r = 0, post = 0;
    barrier(c);
    train(c, x, y, m, kTrain, true, s, r, &post);
    barrier(c);
    const double t1 = train(c, x, y, m, 1, false, s, r);
    barrier(c);
    double s2 = 0, r2 = 0;
    const double tk = train(c, x, y, m, kTrain, false, s2, r2);
    if (i == 0) continue;  // warm-up
    if (c.me == x) {
      os.push_back(s);
      posts.push_back(post);
    }
    if (c.me == y) orr.push_back(r);
    one.push_back(t1);
    many.push_back(tk);
  }
  double v[3] = {median(os), median(orr), std::max(0.0, (median(many) - median(one)) / (kTrain - 1))};
  double sx = v[0], gx = v[2], px = c.me == x ? median(posts) : 0;
  PMPI_Bcast(&sx, 1, MPI_DOUBLE, x, c.comm);
  PMPI_Bcast(&px, 1, MPI_DOUBLE, x, c.comm);
  PMPI_Bcast(&gx, 1, MPI_DOUBLE, x, c.comm);
  double ry = v[1];
  PMPI_Bcast(&ry, 1, MPI_DOUBLE, y, c.comm);
  p.os_ns = sx;
  p.or_ns = ry;
  p.g_ns = std::max(gx, std::max(p.os_ns, p.or_ns));
  p.post_ns = px;
  return p;
}

// Level::buffered_send_bytes: x sends one message of m bytes with a blocking MPI_Send, y
// receives it at once with MPI_Recv (both clocks start as they leave sync_pair); the bytes the
// transport still held for y when x's send returned are m (t_recv - t_send) / t_recv, at the
// transfer's own rate. The median of kMinReps per size, sizes doubling from 64 KiB up to the
// buffers, stopping after two sizes from kBufferedFrom whose send waited for most of its message
// (the buffers are smaller; below it a rendezvous's first fragment and its acknowledgement hide
// the buffers: ob1 over TCP held 11-13 KiB at 64-128 KiB and MiBs from 256 KiB); the largest
// median. Measured with the receiver receiving, not asleep: over TCP, ob1's rendezvous (above
// its eager limit) needs the receiver in MPI before any byte moves, after which the kernel's
// socket buffers take the message and the send returns (the case of tnbc's exchanges, whose
// receives are posted first); with the receiver asleep the knee is the eager limit instead
// (32 KiB buffered, 64 KiB not: docs/benchmarks.md, session 10).
double buffered_send_bytes(Ctx& c, int x, int y) {
  double most = 0;
  int waited = 0;
  for (std::size_t m = 64 * 1024; m <= c.a.size() && m <= c.b.size() && waited < 2; m *= 2) {
    std::vector<double> held;
    for (int i = 0; i <= kMinReps; ++i) {
      barrier(c);
      sync_pair(c, x, y);
      const long long t0 = futex::now_ns();
      double recv_ns = 0;
      if (c.me == x) {
        PMPI_Send(c.a.data(), static_cast<int>(m), MPI_BYTE, y, kTag + 6, c.comm);
        const double send_ns = static_cast<double>(futex::now_ns() - t0);
        PMPI_Recv(&recv_ns, 1, MPI_DOUBLE, y, kTag + 6, c.comm, MPI_STATUS_IGNORE);
        if (i > 0 && recv_ns > 0) held.push_back(static_cast<double>(m) * (recv_ns - send_ns) / recv_ns);
      } else if (c.me == y) {
        PMPI_Recv(c.b.data(), static_cast<int>(m), MPI_BYTE, x, kTag + 6, c.comm, MPI_STATUS_IGNORE);
        recv_ns = static_cast<double>(futex::now_ns() - t0);
        PMPI_Send(&recv_ns, 1, MPI_DOUBLE, x, kTag + 6, c.comm);
      }
    }
    double h = median(held);
    PMPI_Bcast(&h, 1, MPI_DOUBLE, x, c.comm);
    most = std::max(most, h);
    waited = h < static_cast<double>(m) / 2 && m >= kBufferedFrom ? waited + 1 : 0;
  }
  return most;
}

// A computation that shares one CPU with a transfer (Level::shared_cpu). Ranks x and y each pin
// this thread and a computing thread to one CPU they may run on (x its first, y its second where
// it has two, so that two ranks of one node do not share it); the computing thread runs the
// Computation (measure.hh; about 1.5 times the exchange alone), once alone and once while
// this thread exchanges `bytes` each way with the other rank, polled as the progress thread polls
// a long transfer (polled_exchange up to TNBC_POLL_MAX_US). Per size the loop's extra time, the
// larger of the two ranks' medians; the line through them. The other ranks sleep meanwhile.
// {0, 0} if a rank cannot pin.
Line measure_shared_cpu(Ctx& c, int x, int y, const std::vector<std::size_t>& sizes, int reps) {
  const bool in_pair = c.me == x || c.me == y;
  const int peer = c.me == x ? y : x;
  cpu_set_t before;
  CPU_ZERO(&before);
  const int cpu = in_pair ? allowed_cpu(c.me == y ? 1 : 0, &before) : -1;
  const cpu_set_t one = only_cpu(std::max(cpu, 0));
  double pinned = !in_pair || (cpu >= 0 && pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0) ? 1 : 0;
  PMPI_Allreduce(MPI_IN_PLACE, &pinned, 1, MPI_DOUBLE, MPI_MIN, c.comm);
  Line line;
  if (pinned > 0) {
    Computation work;
    // Runs `passes` of the computation on a thread pinned to `cpu`; its wall time, ns.
    auto compute = [&](long passes, FunctionRef<void()> meanwhile) {
      double took = 0;
      std::thread t([&] {
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        took = work.run(passes);
      });
      meanwhile();
      t.join();
      return took;
    };
    auto exchange = [&](std::size_t b) {
      double cpu_ns = 0;
      return polled_exchange(c.comm, peer, peer, kTag + 5, c.a.data(), c.b.data(), b, c.o.poll_ns, c.o.poll_max_ns, 0,
                             cpu_ns);
    };
    std::vector<std::size_t> fitting;
    for (std::size_t b : sizes)
      if (b <= c.o.max_bytes) fitting.push_back(b);
    line = slowest_line(c, fitting, [&](std::size_t b) {
      if (!in_pair) return 0.0;
      sync_pair(c, x, y);
      const double alone_exchange = exchange(b);
      const double pass = compute(8, [] {}) / 8;
      const long passes = std::max(1L, static_cast<long>(1.5 * alone_exchange / std::max(1.0, pass)));
      std::vector<double> alone, with;
      for (int r = 0; r < reps; ++r) {
        sync_pair(c, x, y);
        alone.push_back(compute(passes, [] {}));
        sync_pair(c, x, y);
        with.push_back(compute(passes, [&] { exchange(b); }));
      }
      return std::max(0.0, median(with) - median(alone));
    });
  }
  if (in_pair && cpu >= 0) pthread_setaffinity_np(pthread_self(), sizeof before, &before);
  return line;
}

Level measure_level(Ctx& c, int x, int y, std::FILE* progress) {
  Level l;
  l.measured = true;
  for (std::size_t m = 1; m <= c.o.max_bytes; m = m < 64 ? 64 : m < 1024 ? 1024 : m * 4) {
    l.sweep.push_back(measure_size(c, x, y, m));
    if (progress && c.me == 0)
      std::fprintf(progress, "  %9zu B: T %.1f us, o_s %.1f us, o_r %.1f us, g %.1f us, MPI_Isend %.1f us\n", m,
                   l.sweep.back().t_ns / 1e3, l.sweep.back().os_ns / 1e3, l.sweep.back().or_ns / 1e3,
                   l.sweep.back().g_ns / 1e3, l.sweep.back().post_ns / 1e3);
  }
  const SizePoint& s0 = l.sweep.front();
  l.os_ns = s0.os_ns;
  l.or_ns = s0.or_ns;
  l.g_ns = s0.g_ns;
  l.L_ns = latency_of(l.sweep);
  std::vector<double> x_, g_, os_, or_;
  for (std::size_t i = l.sweep.size() >= 3 ? l.sweep.size() - 3 : 0; i < l.sweep.size(); ++i) {
    x_.push_back(l.sweep[i].bytes);
    g_.push_back(l.sweep[i].g_ns);
    os_.push_back(l.sweep[i].os_ns);
    or_.push_back(l.sweep[i].or_ns);
  }
  l.G_ns_per_byte = fit(x_, g_).ns_per_byte;
  l.Os_ns_per_byte = fit(x_, os_).ns_per_byte;
  l.Or_ns_per_byte = fit(x_, or_).ns_per_byte;
  l.buffered_send_bytes = buffered_send_bytes(c, x, y);
  if (progress && c.me == 0)
    std::fprintf(progress, "  a blocking send returns with up to %.0f KiB still buffered for its receiver\n",
                 l.buffered_send_bytes / 1024);
  return l;
}

// All `pairs` at once, 8 messages of m bytes each way (`both`) or from the first of each pair.
// Returns the slowest rank's time.
double streams(Ctx& c, const std::vector<std::pair<int, int>>& pairs, std::size_t m, bool both) {
  int partner = -1;
  bool sends = false, receives = false;
  for (const auto& [p, q] : pairs) {
    if (c.me == p) partner = q, sends = true, receives = both;
    if (c.me == q) partner = p, receives = true, sends = both;
  }
  std::vector<double> t;
  for (int i = 0; i <= kMinReps; ++i) {
    barrier(c);
    const long long t0 = futex::now_ns();
    std::vector<MPI_Request> req;
    for (int k = 0; k < kTrain && partner >= 0; ++k) {
      MPI_Request r;
      if (receives) {
        PMPI_Irecv(c.b.data() + static_cast<std::size_t>(k) * m, static_cast<int>(m), MPI_BYTE, partner, kTag, c.comm, &r);
        req.push_back(r);
      }
      if (sends) {
        PMPI_Isend(c.a.data() + static_cast<std::size_t>(k) * m, static_cast<int>(m), MPI_BYTE, partner, kTag, c.comm, &r);
        req.push_back(r);
      }
    }
    PMPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
    double mine = static_cast<double>(futex::now_ns() - t0), worst = 0;
    PMPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, c.comm);
    if (i > 0) t.push_back(worst);
  }
  return median(t);
}

void measure_node(Ctx& c, Level& l, const std::vector<std::pair<int, int>>& pairs, double per_node_pairs) {
  if (pairs.empty()) return;
  const std::size_t m = std::max<std::size_t>(4096, c.o.max_bytes / 4);
  const double out = streams(c, pairs, m, false), bi = streams(c, pairs, m, true);
  const double bytes = per_node_pairs * kTrain * static_cast<double>(m);
  l.node_out_ns_per_byte = out / bytes;
  l.node_bi_ns_per_byte = bi / (2 * bytes);
  l.flows = static_cast<int>(per_node_pairs);
}

// A scratch twice the last-level cache, written once so that its pages exist (untouched pages
// all read the one zero page).
std::vector<char> eviction_scratch(std::size_t llc) { return std::vector<char>(2 * llc, 1); }

// How many times read_through reads the scratch. One pass of twice the cache leaves part of what
// was there (a cache that inserts streamed lines at low priority keeps some older ones): a 4 MiB
// hold on this VM (32 MiB L3) took 119-148 us after one pass, 177-184 us after 2-12, as after
// a 40 ms sleep. And the node sweep's figures depend on how long the read keeps the CPUs busy
// before each pattern (docs/benchmarks.md, "Session 13"): after 4 passes MPI_Alltoall measured
// 10-20 % slower at 64 KiB-1 MiB than after the 768 MiB read its figures were validated with
// (sysconf's 384 MiB, twice); after 12 (the same read from 64 MiB of memory) as before from
// 256 KiB up, 64 KiB still ~25 % slower ("Session 29").
constexpr int kEvictionPasses = 12;

// Reads every cache line of `v`, kEvictionPasses times (the compiler may not drop the loads: the
// sum is kept). Through a plain pointer and without the sanitizers' checks, which have nothing to
// find in a read of the scratch's own bytes: in the ASan+UBSan build (-O0) the checked loop took
// 0.28 s a read of 256 MiB x 12 against 0.12 s (the memory's rate, as -O2), and a calibration
// empties the caches ~200 times (docs/testing.md).
__attribute__((no_sanitize("address", "undefined"))) void read_through(const std::vector<char>& v) {
  if (v.empty()) return;
  constexpr std::size_t kLine = 64;
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(v.data());
  const std::size_t size = v.size();
  unsigned long sum = 0;
  for (int pass = 0; pass < kEvictionPasses; ++pass)
    for (std::size_t i = 0; i < size; i += kLine) sum += bytes[i];
  [[maybe_unused]] static volatile unsigned long sink;
  sink = sum;
}

// The node sweep (Level::node_sweep): on every node its first `k` ranks at once, each exchanging
// one message of m bytes with each of the others and copying its own block (`exchange`), or
// sending one to the next in a ring; the slowest rank's time (median), per byte received on a node.
// Ranks that take no part wait asleep (sleeping_max), so they leave the CPUs to those that do.
double node_pattern(Ctx& c, const std::vector<std::vector<int>>& on, std::size_t m, int k, bool exchange) {
  std::vector<int> peers;
  int at = -1;
  for (const auto& ranks : on) {
    if (static_cast<int>(ranks.size()) < k) continue;
    for (int i = 0; i < k; ++i)
      if (ranks[static_cast<std::size_t>(i)] == c.me) at = i, peers.assign(ranks.begin(), ranks.begin() + k);
  }
  // Each time from caches holding other data, as a program's collective finds them (its buffers
  // last touched long before): the participants first read a scratch twice the last-level cache.
  // Read, not written: written lines would be dirty, and the measured copies would pay for
  // writing them back to memory, which a program's collective does not. (That was one
  // candidate for the sweep measuring 20-40 % slower than MPI's own calls at np 4; measured in
  // session 9, it is not the cause: docs/benchmarks.md.)
  std::vector<double> t;
  for (int rep = 0; rep <= kMinReps; ++rep) {
    if (at >= 0) read_through(c.evict);
    barrier(c);
    PMPI_Barrier(c.comm);  // all awake now: start together (the sleeping barrier wakes them ~0.1 ms apart)
    const long long t0 = futex::now_ns();
    std::vector<MPI_Request> req;
    auto post = [&](int slot, int peer, bool send) {
      MPI_Request r;
      char* buf = (send ? c.a.data() : c.b.data()) + static_cast<std::size_t>(slot) * m;
      if (send) PMPI_Isend(buf, static_cast<int>(m), MPI_BYTE, peer, kTag + 5, c.comm, &r);
      else PMPI_Irecv(buf, static_cast<int>(m), MPI_BYTE, peer, kTag + 5, c.comm, &r);
      req.push_back(r);
    };
    if (at >= 0 && exchange) {
      // In the order of Open MPI's linear Alltoall (coll_base_alltoall.c, what its fixed rules
      // run on one node): receives from the next ranks up, sends to the ranks below, so the
      // first messages form a ring instead of all meeting at one rank.
      for (int d = 1; d < k; ++d) {
        const int j = (at + d) % k;
        post(j, peers[static_cast<std::size_t>(j)], false);
      }
      for (int d = 1; d < k; ++d) {
        const int j = (at + k - d) % k;
        post(j, peers[static_cast<std::size_t>(j)], true);
      }
      std::memcpy(c.b.data() + static_cast<std::size_t>(at) * m, c.a.data() + static_cast<std::size_t>(at) * m, m);
    } else if (at >= 0) {
      post(0, peers[static_cast<std::size_t>((at + k - 1) % k)], false);
      post(1, peers[static_cast<std::size_t>((at + 1) % k)], true);
    }
    PMPI_Waitall(static_cast<int>(req.size()), req.data(), MPI_STATUSES_IGNORE);
    const double worst = sleeping_max(c, static_cast<double>(futex::now_ns() - t0));
    if (rep > 0) t.push_back(worst);
  }
  const double bytes = (exchange ? k - 1.0 : 1.0) * k * static_cast<double>(m);
  return median(t) / bytes;
}

// The MPI library's own MPI_Alltoall at each of `sizes` bytes per peer on every node's first `k`
// ranks at once (a communicator per node; NodePoint::mpi_alltoall_ns_per_byte), measured by
// tests/bench/blocking_times' rule, as a program calls it: the sizes interleaved (rotated every
// round, a first round untimed), the caches emptied once per round (the program's other data
// between two calls of a size: without it the rotation's buffers stay in the cache at 2 ranks,
// 1.5-3x faster than blocking_times' calls, session 14), each call between MPI_Barrier and an
// MPI_Allreduce of the slowest rank's time, the ranks taking part waiting in MPI's own waits; the
// others asleep meanwhile. Per size the median, the slowest node's, per byte received on a node.
// Why beside the exchange pattern: at np 4 on 2 CPUs the pattern after emptying the caches ran
// 10-18 % slower than MPI_Alltoall at 1-4 MiB and 30-60 % at 64 KiB in the same launch, and from
// warm caches 10-45 % faster below 4 MiB (docs/benchmarks.md, session 14).
std::vector<double> node_mpi_alltoall(Ctx& c, const std::vector<std::vector<int>>& on, const std::vector<std::size_t>& sizes,
                                      int k) {
  int color = MPI_UNDEFINED;  // this rank's node, if it is among the node's first k
  for (std::size_t j = 0; j < on.size(); ++j) {
    if (static_cast<int>(on[j].size()) < k) continue;
    for (int i = 0; i < k; ++i)
      if (on[j][static_cast<std::size_t>(i)] == c.me) color = static_cast<int>(j);
  }
  MPI_Comm node = MPI_COMM_NULL;
  PMPI_Comm_split(c.comm, color, c.me, &node);
  const std::size_t n = sizes.size();
  std::vector<std::vector<double>> t(n);
  // The call's buffers are its own, made here, as a program's arrays: through the calibration's
  // shared ones (Ctx::a, b) this loop ran 10-40 % slower at 256 KiB-4 MiB than through buffers
  // made just before it, in one process (np 2 on one node, three launches), and priced programs'
  // MPI_Alltoall 17-26 % high there (docs/benchmarks.md, "Session 31"). Why those buffers are
  // slower for the library's single-copy transfers was not found.
  std::vector<char> send, recv;
  if (node != MPI_COMM_NULL && !sizes.empty()) {
    const std::size_t most = *std::max_element(sizes.begin(), sizes.end()) * static_cast<std::size_t>(k);
    send.assign(most, 1);
    recv.assign(most, 0);
  }
  for (int round = 0; node != MPI_COMM_NULL && round <= kOwnCallReps; ++round) {
    read_through(c.evict);
    for (std::size_t s = 0; s < n; ++s) {
      const std::size_t which = (s + static_cast<std::size_t>(round)) % n;
      const int m = static_cast<int>(sizes[which]);
      PMPI_Barrier(node);
      const long long t0 = futex::now_ns();
      PMPI_Alltoall(send.data(), m, MPI_BYTE, recv.data(), m, MPI_BYTE, node);
      const double mine = static_cast<double>(futex::now_ns() - t0);
      double worst = 0;
      PMPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, node);
      if (round > 0) t[which].push_back(worst);
    }
  }
  if (node != MPI_COMM_NULL) PMPI_Comm_free(&node);
  std::vector<double> rate(n);
  for (std::size_t s = 0; s < n; ++s)  // the others wait asleep here
    rate[s] = sleeping_max(c, t[s].empty() ? 0 : median(t[s]) / ((k - 1.0) * k * static_cast<double>(sizes[s])));
  return rate;
}

void measure_node_sweep(Ctx& c, Level& l, const std::vector<std::vector<int>>& on, std::FILE* progress) {
  std::size_t most = 0;
  for (const auto& ranks : on) most = std::max(most, ranks.size());
  const int top = static_cast<int>(std::min<std::size_t>(most, kTrain));  // the buffers hold kTrain messages
  std::vector<std::size_t> sizes;
  for (std::size_t m = 64 * 1024; m <= c.o.max_bytes; m *= 4) sizes.push_back(m);
  for (int k = 2; k <= top; ++k) {
    const std::size_t first = l.node_sweep.size();
    for (const std::size_t m : sizes) {
      NodePoint p;
      p.bytes = static_cast<double>(m);
      p.ranks = k;
      p.exchange_ns_per_byte = node_pattern(c, on, m, k, true);
      p.ring_ns_per_byte = node_pattern(c, on, m, k, false);
      l.node_sweep.push_back(p);
    }
    const std::vector<double> own = node_mpi_alltoall(c, on, sizes, k);
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      NodePoint& p = l.node_sweep[first + s];
      p.mpi_alltoall_ns_per_byte = own[s];
      if (progress && c.me == 0)
        std::fprintf(progress, "  node, %d ranks, %9zu B: exchange %.3f ns/B, ring %.3f ns/B, MPI_Alltoall %.3f ns/B\n", k,
                     sizes[s], p.exchange_ns_per_byte, p.ring_ns_per_byte, p.mpi_alltoall_ns_per_byte);
    }
  }
}

// ---- the guard (rank 0) ----

std::atomic<std::uintptr_t> g_fault_page{0};
std::size_t g_page = 4096;

void restore_page(int, siginfo_t* si, void*) {
  const auto page = reinterpret_cast<std::uintptr_t>(si->si_addr) & ~static_cast<std::uintptr_t>(g_page - 1);
  if (::mprotect(reinterpret_cast<void*>(page), g_page, PROT_READ | PROT_WRITE) != 0) _exit(3);
}

// A reader's wait on a page held back, besides the data's arrival: the trap (a SIGSEGV round
// trip: handler, mprotect, retry, less the mprotect pair alone) and the wake-up of a sleeping
// thread (futex) once the page is published.
double reader_wait_ns(std::size_t page) {
  g_page = page;
  Scratch s(page);
  if (!s.user) return 0;
  struct sigaction act{}, old{};
  act.sa_sigaction = restore_page;
  act.sa_flags = SA_SIGINFO;
  sigemptyset(&act.sa_mask);
  if (::sigaction(SIGSEGV, &act, &old) != 0) return 0;
  volatile char* p = s.user;
  const double pair = median_ns([&] {
    ::mprotect(s.user, page, PROT_NONE);
    ::mprotect(s.user, page, PROT_READ | PROT_WRITE);
    return true;
  }, 50);
  const double trap = median_ns([&] {
    ::mprotect(s.user, page, PROT_NONE);
    p[0] = static_cast<char>(p[0] + 1);
    return true;
  }, 50);
  ::sigaction(SIGSEGV, &old, nullptr);
  std::atomic<std::uint32_t> word{0};
  std::atomic<long long> woken{0};
  std::vector<double> wake;
  for (int i = 0; i <= 20; ++i) {
    word.store(0);
    std::thread t([&] {
      while (word.load() == 0) futex::wait(word, 0, -1);
      woken.store(futex::now_ns());
    });
    const struct timespec ts{0, 2000000};
    nanosleep(&ts, nullptr);  // asleep by now
    const long long t0 = futex::now_ns();
    word.store(1);
    futex::wake_all(word);
    t.join();
    if (i > 0) wake.push_back(static_cast<double>(woken.load() - t0));
  }
  return std::max(0.0, trap - pair) + median(wake);
}

// Each cycle after the caches were emptied (a scratch of twice the last-level cache read
// through): a collective's call finds its receive buffer's pages so after the program's work.
// With them cached a 4 MiB hold back took 74 us on this VM, after emptying 170-290 us, in
// Table 1's calls 160-430 us (docs/benchmarks.md, "Session 18").
// And where the call's data fits in the cache (Machine::fits_cache): the sizes below warm_below_bytes
// again, each cycle finding the caches as the previous one left them (hold_warm; a 64 KiB hold
// took 17 us in Table 1's calls, 53 us emptied: docs/benchmarks.md, "Session 24").
// Up to 8192 pages (32 MiB at 4 KiB): where a guard empties pages and installs new ones
// (userfaultfd copying), every call frees and allocates its buffer's pages, which on the guests
// here costs far more per byte at NPB's sizes than up to 4 MiB (copying's publication ~2 ns/B at
// 32 MiB against 0.7 up to 4 MiB; PROT_NONE, whose pages stay, 1.2 against 1.5): the engine takes
// the guard per call by its size (model::guard_by_size) from these points (docs/benchmarks.md,
// "Session 56"). `largest` (--copy-bytes; the tests' 4 MiB) leaves out the sizes above it: the
// 32 MiB cycles took ~3 minutes of the test suite's calibrations.
void measure_guard(Machine& mach, std::size_t page, const std::vector<char>& evict, std::size_t largest, std::FILE* progress) {
  const std::vector<std::size_t> sizes = capped_sizes({page, 16 * page, 256 * page, 1024 * page, 8192 * page}, largest);
  Scratch s(sizes.back());
  if (!s.user) return;
  const double wait = reader_wait_ns(page);
  std::vector<std::unique_ptr<GuardBackend>> backends;
  if (uffd::start().ok()) {
    if (uffd::can_swap()) backends.push_back(make_uffd_backend(true));
    backends.push_back(make_uffd_backend(false));
  }
  if (publication_available()) backends.push_back(make_protect_backend());
  if (backends.empty()) return;
  for (auto& b : backends) {
    const int k = guard_index(b->probe_name());
    if (k < 0) continue;
    Line hold, publish, first_read;
    if (!guard_lines(*b, s, sizes, kGuardReps, [&] { read_through(evict); }, hold, publish, first_read)) continue;
    mach.guard_measured[k] = true;
    mach.guard[k] = {hold, publish, wait, {}, first_read};
    std::vector<std::size_t> warm;
    for (std::size_t bytes : sizes)
      if (mach.fits_cache(static_cast<double>(bytes))) warm.push_back(bytes);
    Line hold_warm, unused, unused_read;
    if (!warm.empty() && guard_lines(*b, s, warm, kGuardReps, [] {}, hold_warm, unused, unused_read))
      mach.guard[k].hold_warm = hold_warm;
    if (progress)
      std::fprintf(progress, "  guard %s: hold %s (caches warm: %s), publish %s, reader's first read %s, reader's wait %.1f us\n",
                   b->probe_name(), cost_text(hold).c_str(),
                   hold_warm.points.empty() ? "not measured" : cost_text(hold_warm).c_str(), cost_text(publish).c_str(),
                   cost_text(first_read).c_str(), wait / 1e3);
  }
}

}  // namespace

Result<Machine> calibrate(MPI_Comm world, const CalibrateOptions& o, std::FILE* progress) {
  MPI_Comm comm = MPI_COMM_NULL;
  PMPI_Comm_dup(world, &comm);
  Ctx c{comm, 0, 1, o, {}, {}, {}};
  PMPI_Comm_rank(comm, &c.me);
  PMPI_Comm_size(comm, &c.n);
  if (c.n < 2) {
    PMPI_Comm_free(&comm);
    return Status::error("tnbc calibrate needs at least 2 ranks (run it under the launcher: mpirun -np 4 tnbc calibrate; "
                         "2 ranks on each of 2 nodes measure both levels)");
  }
  // What else ran on the machines meanwhile, from here to the end (Machine::others_cpu_share).
  const LoadWatch load;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  c.a.assign(o.max_bytes * kTrain, 1);
  c.b.assign(o.max_bytes * kTrain, 0);
  const World w = gather_world(comm);
  const Topology t = w.topology();
  // The calibration's large buffers are made here, all of them, and the first timed copies come
  // seconds later (after the levels): memory the process touches for the first time can be slow
  // to come, and disturbs the copies right after it, where the host backs it lazily (this VM's
  // balloon reports freed pages to the host: populating 2 x 1152 MiB took 5 s after a pause, 1.7
  // s right after another run, and the next second's copies had a p90 2.7-4.5x their median;
  // docs/benchmarks.md, "Session 22").
  c.llc = o.cache_bytes ? o.cache_bytes : last_level_cache_bytes();
  InCallCopy in_call(c, in_call_copy_sizes(t.max_per_node(), c.llc, o.copy_bytes), t.max_per_node());
  c.evict = eviction_scratch(c.llc);
  if (o.cache_bytes && progress && c.me == 0)
    std::fprintf(progress, "the caches are emptied as if the last-level cache held %zu KiB (--cache-bytes)\n", c.llc >> 10);
  else if (const std::string note = last_level_cache_note(); progress && c.me == 0 && !note.empty())
    std::fprintf(progress, "%s\n", note.c_str());
  if (o.copy_bytes && progress && c.me == 0)
    std::fprintf(progress, "copies measured up to %zu KiB (--copy-bytes); larger ones priced by the line\n", o.copy_bytes >> 10);
  Machine m;
  m.method = "calibrate";
  m.mpi_library = w.mpi_library;
  m.mpi_transport = w.mpi_transport;
  m.ranks = t.n();
  m.nodes = t.nodes();
  m.ranks_per_node = t.max_per_node();
  m.cpus_per_node = w.cpus_per_node;
  m.page = page;
  m.warm_below_bytes = static_cast<double>(l2_cache_bytes());  // Machine::fits_cache
  {
    char host[256] = "";
    ::gethostname(host, sizeof host - 1);
    m.host = host;
    char when[64] = "";
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    m.created = when;
  }
  // The pairs: two ranks of one node (the first node with two), and rank i of node 0 with
  // rank i of node 1.
  std::vector<std::vector<int>> on(static_cast<std::size_t>(t.nodes()));
  for (int r = 0; r < t.n(); ++r) on[static_cast<std::size_t>(t.node[static_cast<std::size_t>(r)])].push_back(r);
  for (const auto& ranks : on)
    if (ranks.size() >= 2) {
      if (progress && c.me == 0) std::fprintf(progress, "intra-node level: ranks %d and %d\n", ranks[0], ranks[1]);
      m.at(LevelKind::IntraNode) = measure_level(c, ranks[0], ranks[1], progress);
      break;
    }
  if (on.size() >= 2) {
    if (progress && c.me == 0) std::fprintf(progress, "inter-node level: ranks %d and %d\n", on[0][0], on[1][0]);
    m.at(LevelKind::InterNode) = measure_level(c, on[0][0], on[1][0], progress);
  }
  in_call.pass(c, kInCallReps);
  // Node resources: pairs inside every node; rank i of node 0 with rank i of node 1.
  std::vector<std::pair<int, int>> intra, inter;
  std::size_t most = 0;
  for (const auto& ranks : on) {
    for (std::size_t i = 0; i + 1 < ranks.size(); i += 2) intra.emplace_back(ranks[i], ranks[i + 1]);
    most = std::max(most, ranks.size() / 2);
  }
  if (on.size() >= 2)
    for (std::size_t i = 0; i < std::min(on[0].size(), on[1].size()); ++i) inter.emplace_back(on[0][i], on[1][i]);
  if (m.at(LevelKind::IntraNode).measured) {
    measure_node(c, m.at(LevelKind::IntraNode), intra, static_cast<double>(most));
    measure_node_sweep(c, m.at(LevelKind::IntraNode), on, progress);
  }
  if (m.at(LevelKind::InterNode).measured) measure_node(c, m.at(LevelKind::InterNode), inter, static_cast<double>(inter.size()));
  in_call.pass(c, kInCallReps);
  // What a level's transfers take from a computation on the same CPU (the level's pair above).
  const std::vector<std::size_t> shared_sizes{256u << 10, 1u << 20, 4u << 20};
  for (const auto& ranks : on)
    if (ranks.size() >= 2 && m.at(LevelKind::IntraNode).measured) {
      m.at(LevelKind::IntraNode).shared_cpu = measure_shared_cpu(c, ranks[0], ranks[1], shared_sizes, 5);
      break;
    }
  if (m.at(LevelKind::InterNode).measured)
    m.at(LevelKind::InterNode).shared_cpu = measure_shared_cpu(c, on[0][0], on[1][0], shared_sizes, 5);
  if (progress && c.me == 0)
    for (int k = 0; k < kLevels; ++k)
      if (m.level[k].measured)
        std::fprintf(progress, "%s: L %.1f us, G %.3f ns/B, node %.3f ns/B out, %.3f ns/B in+out (%d flows), "
                     "buffered send %.0f KiB\n",
                     level_name(static_cast<LevelKind>(k)), m.level[k].L_ns / 1e3, m.level[k].G_ns_per_byte,
                     m.level[k].node_out_ns_per_byte, m.level[k].node_bi_ns_per_byte, m.level[k].flows,
                     m.level[k].buffered_send_bytes / 1024);
  if (progress && c.me == 0)
    for (int k = 0; k < kLevels; ++k)
      if (m.level[k].shared_cpu_measured())
        std::fprintf(progress, "%s: a computation on the CPU of a transfer loses %s exchanged each way\n",
                     level_name(static_cast<LevelKind>(k)), cost_text(m.level[k].shared_cpu).c_str());
  m.test_ns = testsome_ns(comm, kTag + 2, kTestPending);
  m.sleep_ns = sleep_ns(o.poll_ns);
  barrier(c);
  if (c.me == 0) {
    const std::vector<std::size_t> sizes = capped_sizes({4096, 65536, 1u << 20, 16u << 20}, o.copy_bytes);
    Scratch s(sizes.back());
    if (s.user) {
      m.memcpy_cost = memcpy_line(s, sizes, 20);
      m.memcpy_cold = memcpy_cold_line(s, sizes, 20);
      // tnbc's staging of whole huge pages (runtime/pool.hh): 1, 2 and 8 of them, within the copy sizes.
      std::vector<std::size_t> huge;
      if (const std::size_t h = staging_huge_page_bytes(); h > 0)
        for (std::size_t n : {1, 2, 8})
          if (n * h <= sizes.back()) huge.push_back(n * h);
      if (huge.size() >= 2) {
        m.memcpy_cold_huge = memcpy_cold_line(s, huge, 20, true);
        m.huge_page_bytes = static_cast<double>(staging_huge_page_bytes());
      }
      if (progress)
        std::fprintf(progress,
                     "memcpy: %s; into pages never touched: %s; into tnbc's fresh staging of huge pages: %s\n",
                     cost_text(m.memcpy_cost).c_str(), cost_text(m.memcpy_cold).c_str(),
                     m.memcpy_cold_huge_measured() ? cost_text(m.memcpy_cold_huge).c_str() : "not measured");
    }
    m.wake_loaded_ns = loaded_wake_ns(o.poll_ns);
    if (progress) std::fprintf(progress, "a progress thread's wake-up on a busy CPU: %.1f us later\n", m.wake_loaded_ns / 1e3);
    // Caches emptied before each poke: a call hands over after its copies (with them warm the
    // poke took 11-12 us on this VM, emptied 24, in Table 1's calls 31-35: docs/benchmarks.md,
    // "Session 23").
    const Handover cold = handover(kHandoverReps, [&] { read_through(c.evict); });
    m.handover_ns = cold.handover_ns;
    m.first_round_ns = cold.first_round_ns;
    m.handover_warm_ns = handover(kHandoverReps, [] {}).handover_ns;  // as the previous poke left the caches
    if (progress)
      std::fprintf(progress, "the hand-over to the progress thread at the end of a call: %.1f us (caches warm: %.1f us); "
                   "its first round while the program computes: %.1f us later\n",
                   m.handover_ns / 1e3, m.handover_warm_ns / 1e3, m.first_round_ns / 1e3);
    measure_guard(m, page, c.evict, o.copy_bytes, progress);
  }
  barrier(c);  // the others sleep meanwhile
  in_call.pass(c, kInCallReps);
  m.memcpy_in_call = in_call.line();
  m.memcpy_in_call_alone = in_call.line_alone();
  if (progress && c.me == 0 && m.memcpy_in_call_measured()) {
    std::fprintf(progress, "tnbc's copies in a call (outside the caches, every rank at once, the slowest; the median of %zu "
                 "passes): %s; its passes at %zu KiB:", in_call.passes().size(), cost_text(m.memcpy_in_call).c_str(),
                 in_call.sizes().back() >> 10);
    for (const auto& row : in_call.passes()) std::fprintf(progress, " %.0f us", row.back() / 1e3);
    std::fprintf(progress, "\n");
    if (in_call.spread() > kInCallSpreadNote)
      std::fprintf(progress, "  they disagree: the machine was disturbed during some (the median is kept)\n");
    if (m.memcpy_in_call_alone_measured())
      std::fprintf(progress, "  one rank copying alone (a broadcast's root): %s\n", cost_text(m.memcpy_in_call_alone).c_str());
  }
  if (o.last) o.last(m, [&] { read_through(c.evict); });
  const CalibrationLoad busy = load.finish(comm);
  m.others_cpu_share = busy.others_share;
  m.steal_share = busy.steal_share;
  if (progress && c.me == 0 && m.load_known())
    std::fprintf(progress, "meanwhile other processes took %.1f %% of the CPU time of rank %d's machine (the busiest), "
                 "the hypervisor %.1f %% (the most)\n", 100 * m.others_cpu_share, busy.rank, 100 * m.steal_share);
  PMPI_Comm_free(&comm);
  return m;
}

}  // namespace tnbc::model
