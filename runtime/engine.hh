// The engine: turns an intercepted collective into a schedule (runtime/schedule.hh), stages
// its data, guards the receive buffer (runtime/guard.hh), hands it to the progress thread
// (runtime/progress.hh) and returns as soon as the bytes in unguardable pages have arrived.
//
//   MPI_Alltoall(...)            [calling thread]
//     decide (inputs equal on all ranks) -- small / intercomm --> PMPI_Alltoall
//     copy send data to staging; copy own block
//     build pieces; plan regions; mprotect(PROT_NONE); submit -------> [progress thread]
//     wait for in-call pieces (partial first/last page)                 Irecv all, Isend window
//     return                                                            Testsome -> publish
//   ... program computes; touching a region not yet published -> SIGSEGV -> wait -> retry
#pragma once

#include <mpi.h>

#include <memory>

#include "runtime/config.hh"
#include "runtime/datatype.hh"
#include "runtime/read_order.hh"
#include "runtime/stats.hh"

namespace tnbc {

class Engine {
 public:
  // nullptr (after a message) when the machinery is not usable here. `orders` (may be null:
  // default order) gives the read order of each call's sub-messages (mode optimize).
  static std::unique_ptr<Engine> create(const Settings& s, Stats& stats, int world_rank, int world_size,
                                        std::unique_ptr<ReadOrderSource> orders = nullptr);
  static Engine* current();
  virtual ~Engine() = default;

  virtual int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, CallSite site) = 0;
  virtual int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, CallSite site) = 0;
  virtual int alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                        void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                        MPI_Comm comm, CallSite site) = 0;

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
