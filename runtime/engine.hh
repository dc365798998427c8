// The engine: a thin dispatcher from an intercepted collective to its implementation
// (runtime/coll/), the policy's decisions (runtime/policy.hh), the guard (guard_backend.hh) and
// the executors (executor.hh).
//
//   MPI_Alltoall(...) -> shim -> Engine::run(call, PMPI_Alltoall)          [calling thread]
//     route (policy, inputs equal on all ranks) -- small / intercomm --> PMPI_Alltoall
//     layout; complete in the call? (policy, rank-local)
//     prepare (the collective's file): fences, send copy, receive area, schedule
//     stage sends (eager / lazy); hold the receive regions back (first backend that can)
//     early return: run the in-call steps (partial pages' receives, edge sends) here, hand the
//                   rest to the progress thread, return  ----->  [progress thread] executor
//     else:         run every step here, unpack, return
//   ... program computes; touching a region not yet published -> wait -> retry
#pragma once

#include <memory>

#include "runtime/coll/collective.hh"
#include "runtime/config.hh"
#include "runtime/function_ref.hh"
#include "runtime/read_order.hh"
#include "runtime/stats.hh"

namespace tnbc {

// The blocking call an entry point would make (PMPI_X with its arguments).
using BlockingCall = FunctionRef<int()>;

class Engine {
 public:
  // nullptr (after a message) when the machinery is not usable here. `orders` (may be null:
  // default orders) gives mode optimize's read orders and blocking decisions.
  static std::unique_ptr<Engine> create(const Settings& s, Stats& stats, std::unique_ptr<ReadOrderSource> orders = nullptr);
  static Engine* current();
  virtual ~Engine() = default;

  // One intercepted collective: tnbc's schedule, or `blocking` when it runs as plain MPI.
  // Returns the MPI error code (after the communicator's error handler, for errors tnbc detects).
  virtual int run(const CollCall& call, BlockingCall blocking) = 0;

  // Fences: complete and publish whatever overlaps the range / everything in flight.
  virtual void fence(ByteRange r, const char* what) = 0;
  virtual void complete_all() = 0;
  // Waits until every collective in flight has finished, sends included (before a private
  // communicator is freed).
  virtual void drain() = 0;
  // Before MPI_Finalize: completes everything and stops the progress thread.
  virtual void shutdown() = 0;
};

}  // namespace tnbc
