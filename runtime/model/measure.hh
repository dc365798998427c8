// Measuring the cost model's parameters: the primitives the start-up probe
// (runtime/model/probe.hh) and `tnbc calibrate` (runtime/model/calibrate.hh) share. Times are
// medians of repetitions after a warm-up (first touches, first use of a connection), in ns.
#pragma once

#include <mpi.h>
#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/function_ref.hh"
#include "runtime/model/machine.hh"

namespace tnbc {
class GuardBackend;
}

namespace tnbc::model {

// The median of `reps` timed runs of `once` (false: it failed, -1), each after an untimed
// `before`, following one warm-up run.
double median_ns(FunctionRef<bool()> once, FunctionRef<void()> before, int reps);
double median_ns(FunctionRef<bool()> once, int reps);

// The CPU time of the calling thread, ns.
double thread_cpu_ns();

// The CPU numbered `nth` (0: the first) among those the calling thread may run on, its first where
// it may run on fewer; -1 when the kernel does not say. `*allowed` (if given): the whole set.
int allowed_cpu(int nth, cpu_set_t* allowed = nullptr);
// A set of the one CPU `cpu`.
cpu_set_t only_cpu(int cpu);

// The computation calibrate times alone and beside a transfer on the same CPU (Level::shared_cpu,
// Machine::cpu_taken): a fixed loop over an L2-sized array, as a program's computation keeps its
// working set in the cache that the transfer's copies then partly evict.
class Computation {
 public:
  Computation();
  // `passes` over the array on the calling thread; its wall time, ns.
  double run(long passes);

 private:
  std::vector<std::uint64_t> work_;
  std::atomic<std::uint64_t> sink_{0};
};

// Two adjacent private, populated mappings of `bytes` each: one stands for a program's
// buffer, the other for tnbc's staging.
struct Scratch {
  char* user = nullptr;
  char* staging = nullptr;
  std::size_t len = 0;
  explicit Scratch(std::size_t bytes);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
};

// memcpy of each size; the line through the medians.
Line memcpy_line(Scratch& s, const std::vector<std::size_t>& sizes, int reps);
// The same copies into a destination never touched before (a fresh anonymous mapping per copy,
// not populated: every page's first-touch fault is in the copy's time, as when a program's
// receive buffer or tnbc's staging is new); the line through the medians.
// `staging`: the destination mapped as tnbc maps its staging (runtime/pool.hh, map_staging: whole
// huge pages where the size is).
Line memcpy_cold_line(Scratch& s, const std::vector<std::size_t>& sizes, int reps, bool staging = false);

// This CPU's last-level cache (its L3) as calibrate sizes its buffers by: 32 MiB where the system
// does not say, at most 128 MiB where only sysconf says (last_level_cache_for_sizing).
std::size_t last_level_cache_bytes();
// One sentence where last_level_cache_bytes bounded sysconf's figure, else "".
std::string last_level_cache_note();

// The Scratch size for copies up to `largest` bytes that find neither side in the caches when
// `ranks` ranks of the node copy at once: together three times the last-level cache `llc`, and at
// least four such copies each (a node of many ranks does not map gigabytes for it).
std::size_t uncached_copy_bytes(std::size_t largest, int ranks, std::size_t llc);

// tnbc's own copy in the call (runtime/bulk_copy.hh, streamed above L2 as the call streams it) of
// `bytes` from `s.user` to `s.staging`, at offsets that walk the Scratch from copy to copy
// (`cursor`, kept by the caller across sizes) so that neither side is in a cache, as a
// collective's own-block and send copies find them; `before` (untimed) runs ahead of each copy,
// e.g. a barrier so that every rank copies at once. The median of `reps` copies, ns.
double uncached_copy_ns(Scratch& s, std::size_t& cursor, std::size_t bytes, FunctionRef<void()> before, int reps);

// A guard backend's hold back and publish of each size (one region), each cycle after an
// untimed `before` (e.g. emptying the caches): the lines through the medians (the hold's keeping
// them: Line::points). The publication's include what the accesses around a cycle cost beyond
// the same accesses to resident pages: the staging written between hold and publish (as MPI's
// receive writes it); `first_read`, what reading each page of the buffer after it costs beyond
// reading resident pages (the reader's, GuardCost::first_read). False when the backend fails on
// scratch memory.
bool guard_lines(GuardBackend& b, Scratch& s, const std::vector<std::size_t>& sizes, int reps, FunctionRef<void()> before,
                 Line& hold, Line& publish, Line& first_read);

// Exchanges `bytes` with `to` and `from` on `comm` (MPI_Isend + MPI_Irecv, tag `tag`), testing
// the requests as tnbc's progress thread does: MPI_Testall, then a sleep when nothing completed,
// of `poll_ns` first and doubling up to `poll_max_ns` (runtime/progress.cc: a transfer whose steps
// take long; `poll_max_ns` = `poll_ns`: a fixed sleep). Returns the wall time; `cpu_ns` the calling
// thread's CPU time inside the MPI calls less its idle tests (tests that found the requests
// incomplete x `idle_test_ns`, idle_test_cpu_ns above): what the messages cost, not how long they took.
double polled_exchange(MPI_Comm comm, int to, int from, int tag, char* send, char* recv, std::size_t bytes,
                       long long poll_ns, long long poll_max_ns, double idle_test_ns, double& cpu_ns);

// The calling thread's CPU time inside one idle MPI_Testall as the progress thread (and
// calibrate's trains) make them: over `pending` receives that cannot complete (posted on `comm`
// with `tag`, then cancelled), one after a sleep of `poll_ns` (caches as cold as between real
// polls). The median of `rounds` of `polls` tests each, per test, ns. What a poll that finds
// nothing costs, to take out of a polled transfer's CPU (polled_exchange, calibrate's trains).
double idle_test_cpu_ns(MPI_Comm comm, int tag, int pending, long long poll_ns, int polls, int rounds);

// A barrier over `comm` that waits asleep: MPI_Ibarrier, tested once every `poll_ns`. Ranks
// that wait in it leave their CPUs to the ranks that measure (a rank waiting in MPI's own barrier
// polls back to back: on a node with more ranks than CPUs it takes a CPU from them).
void sleeping_barrier(MPI_Comm comm, long long poll_ns);

// One MPI_Testsome over `pending` receives that cannot complete (posted on `comm` with `tag`,
// then cancelled): the median, ns.
double testsome_ns(MPI_Comm comm, int tag, int pending);
// How long a sleep of `ns` really lasts here (timer slack included): the median.
double sleep_ns(long long ns);
// What a sleep of `ns` lasts longer when the sleeping thread's CPU runs a busy thread: the
// wait for the scheduler that a progress thread pays at each wake-up on a node whose ranks and
// progress threads outnumber its CPUs (the sleeper asks for the progress thread's short slice,
// runtime/sched_slice.hh; the busy thread stands for a computing rank). Both threads on the
// first CPU the caller may use; the medians with and without the busy thread, their difference
// (>= 0), ns. -1 when the threads cannot be placed.
double loaded_wake_ns(long long ns);
// What the end of an early return costs its calling thread (the hand-over, runtime/engine.cc):
// the poke that wakes tnbc's sleeping progress thread, and where that thread shares the caller's
// CPU, the switch to it, its look whether the call has returned and its sleep
// (runtime/return_wait.hh) before the caller runs again. A thread stands for the progress thread:
// placed as the runtime places it by default (every CPU the rank's cpuset allows: on a node of one
// CPU the caller's), with its short slice, asleep on a futex. The caller's time from the poke until
// it runs on, the median of `reps` (1 ms apart, the thread asleep again; `before` runs before
// each: calibrate empties the caches there), ns. Then the caller computes on (spins, as a program
// after its call) and the thread's first round after the return — its next look finds the call
// returned — comes `first_round_ns` later (the median): its look every kReturnLookNs and the
// timer's slack, or later where the scheduler keeps the computing caller on their one CPU (66 us
// here, as the real progress thread's in Table 1's calls, 63-66 us: docs/benchmarks.md,
// "Session 24").
struct Handover {
  double handover_ns = -1;
  double first_round_ns = -1;
};
Handover handover(int reps, FunctionRef<void()> before);

}  // namespace tnbc::model
