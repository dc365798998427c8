// One collective in flight: its schedule, data areas, guard regions, execution state and timing
// record. Created by the engine in the calling thread, run by executors (the calling thread's,
// then the progress thread's: runtime/executor.hh), freed when the last reference lets go.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/coll/collective.hh"
#include "runtime/guard.hh"
#include "runtime/node_arbiter.hh"
#include "runtime/pool.hh"
#include "runtime/schedule.hh"
#include "runtime/vocabulary.hh"

namespace tnbc {

class GuardBackend;
struct RmaCall;

// A step's state. A step is started by exactly one executor (compare-and-swap Idle -> Started),
// which also completes it; Done is final.
enum StepState : std::uint8_t { kIdle = 0, kStarted = 1, kDone = 2 };

// The per-call record, cheap enough to keep for every call (times from futex::now_ns, monotonic
// ns). For the overlap reports (docs/reports.md): Tinit = returned - called; the collective's
// duration = last_step - called; blocked = what `waits` adds up (faults, userfaultfd, fences,
// drains after the return); each step's completion in InFlight::done_ns, each region's first
// touch in Region::first_touch_ns (sampled calls: runtime/observe.hh).
struct CallTimes {
  long long called = 0;
  std::atomic<long long> returned{0};  // 0 while the calling thread is still in the call
  std::atomic<long long> last_step{0};
  WaitLog waits;
};

struct InFlight {
  Kind kind = Kind::Alltoall;
  CallSite site;                  // the call's, for its record in the summary
  bool observe = false;           // a sampled call: its timeline is recorded (runtime/observe.hh)
  std::uint64_t call_index = 0;   // its index at its site on this rank
  std::uint64_t sequence = 0;     // per communicator, for messages
  MPI_Comm comm{};                // tnbc's private duplicate
  int comm_size = 0;
  int base_tag = 0;
  Schedule schedule;
  std::shared_ptr<const RmaCall> rma;  // an RMA broadcast's slot and windows (runtime/rma_transport.hh)

  // Send and receive staging come from separate pools: a receive staging whose pages were swapped
  // back to the program (runtime/uffd.hh) is left empty, and copying the next send data into such
  // a block would fault in every page afresh.
  Pool* pool = nullptr;       // send_block's
  Pool* recv_pool = nullptr;  // recv_block's
  Block send_block, recv_block;
  char* send_data = nullptr;  // what Send steps read (offsets index it)
  char* recv_data = nullptr;  // what Recv steps write
  char* user_recv = nullptr;  // where published steps go (nullptr: unpacked at the end;
                              // == recv_data: received in place, nothing to copy)
  std::vector<Unpack> unpack;

  // Guard: the backend holding the regions back (nullptr: none), and the userfaultfd backend's
  // per-call choice (pages moved into the staging, or emptied and copied back).
  GuardBackend* guard = nullptr;
  bool swapped = false;
  std::unique_ptr<Region[]> regions;
  std::size_t region_count = 0;
  std::vector<std::pair<int, int>> step_regions;  // per step: [first, last) region index
  std::vector<bool> in_call;    // per step: must arrive before the call returns
  std::vector<bool> by_caller;  // per step: started by the calling thread, not the progress thread

  // Lazy send copy (runtime/send_copy.hh): per Send step, where its bytes are in the program's
  // send buffer (nullptr: already in staging) and their state: 0 only there, 1 being copied,
  // 2 in staging. The read-only page runs are regions with a hook; `send_open`: 0 read-only,
  // 1 being made writable, 2 writable again.
  std::vector<const char*> send_src;
  std::unique_ptr<std::atomic<std::uint8_t>[]> send_state;
  std::atomic<int> sends_unstaged{0};
  std::unique_ptr<Region[]> send_regions;
  std::size_t send_region_count = 0;
  std::atomic<int> send_open{2};

  // Execution (runtime/executor.hh).
  std::unique_ptr<std::atomic<std::uint8_t>[]> state;  // StepState per step
  std::unique_ptr<long long[]> done_ns;                // per step, when it completed
  std::unique_ptr<long long[]> started_ns;             // per step, when it was started (debug log)
  std::atomic<int> steps_left{0};
  std::atomic<int> regions_remaining{0};
  // False while the calling thread is still in the call: bodies wait so that the edge steps other
  // ranks need before they can return are not queued behind bulk data on the link.
  std::atomic<bool> bodies_released{true};
  SendRole send_role = SendRole::Staged;  // schedule.send_role(), set by ready_to_run
  CallTimes times;
  NodeCall node;  // node-level priorities (runtime/node_gate.hh): the board, held-back counts
  std::uint64_t polls_at_submit = 0;  // for the debug log
  long long submitted_ns = 0;

  ~InFlight() {
    if (pool) pool->release(send_block);
    if (recv_pool) recv_pool->release(recv_block);
  }
  // Per-step state, once the schedule is final.
  void ready_to_run() {
    const std::size_t n = schedule.size();
    state = std::make_unique<std::atomic<std::uint8_t>[]>(n);
    done_ns = std::make_unique<long long[]>(n);
    started_ns = std::make_unique<long long[]>(n);
    steps_left.store(static_cast<int>(n));
    send_role = schedule.send_role();
  }
  bool done(std::size_t i) const { return state[i].load(std::memory_order_acquire) == kDone; }
  bool finished() const {
    return steps_left.load(std::memory_order_acquire) == 0 && regions_remaining.load(std::memory_order_acquire) == 0;
  }
};

// Marks step `i` done (its data, if it lands, is published first: publish_step), stamps it.
void step_done(InFlight& f, int i, long long now_ns);
// Copies landing step `i` into the program's buffer and publishes every region it completes,
// then marks it done (runtime/publish.cc). An error if writing the program's memory failed: the
// data could never be seen, the job must end.
Status publish_step(InFlight& f, int i, long long now_ns);

// What a collective still waits for (the steps not done, the peers nothing came from), for
// every timeout message. Async-signal-safe (the SIGSEGV handler's timeout calls it).
void report_missing(const InFlight& f);

}  // namespace tnbc
