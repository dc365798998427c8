// The intercepted collectives: each entry point normalizes its arguments (CollCall) and hands
// them, with the blocking call it would make, to the engine (runtime/engine.hh); without an
// engine the blocking call runs (counted, outside mode off).
#include <mpi.h>

#include "runtime/coll/collective.hh"
#include "runtime/engine.hh"
#include "runtime/futex.hh"
#include "runtime/runtime.hh"
#include "shim/handlers.hh"

namespace tnbc::shim {

namespace {

int run(const CollCall& c, BlockingCall blocking) {
  Runtime& rt = Runtime::get();
  if (!rt.intercepting()) return blocking();
  if (Engine* e = rt.engine()) return e->run(c, blocking);
  const long long called = futex::now_ns();
  const int rc = blocking();
  const long long returned = futex::now_ns();
  MpiTypes types;
  CallContext ctx{0, 1, 0, &types, nullptr};
  PMPI_Comm_size(c.comm, &ctx.size);
  PMPI_Comm_rank(c.comm, &ctx.rank);
  const Collective::Size size = collective(c.kind).size(c, ctx);
  Stats& stats = rt.stats();
  stats.record(stats.site(c.kind, c.site),
               {size.received, size.sent, Outcome::Passthrough, rt.blocking_reason(), called, returned});
  return rc;
}

}  // namespace

int Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, CallSite site) {
  return run({Kind::Bcast, site, comm, {}, {buffer, count, nullptr, nullptr, datatype}, root, false},
             [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); });
}

int Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, MPI_Comm comm, CallSite site) {
  return run({Kind::Alltoall, site, comm, {sendbuf, sendcount, nullptr, nullptr, sendtype},
              {recvbuf, recvcount, nullptr, nullptr, recvtype}, -1, sendbuf == MPI_IN_PLACE},
             [&] { return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

int Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
              void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
              CallSite site) {
  return run({Kind::Alltoallv, site, comm, {sendbuf, 0, sendcounts, sdispls, sendtype},
              {recvbuf, 0, recvcounts, rdispls, recvtype}, -1, sendbuf == MPI_IN_PLACE},
             [&] {
               return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
             });
}

int Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
              MPI_Datatype recvtype, MPI_Comm comm, CallSite site) {
  return run({Kind::Allgather, site, comm, {sendbuf, sendcount, nullptr, nullptr, sendtype},
              {recvbuf, recvcount, nullptr, nullptr, recvtype}, -1, sendbuf == MPI_IN_PLACE},
             [&] { return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm); });
}

int Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
               const int displs[], MPI_Datatype recvtype, MPI_Comm comm, CallSite site) {
  return run({Kind::Allgatherv, site, comm, {sendbuf, sendcount, nullptr, nullptr, sendtype},
              {recvbuf, 0, recvcounts, displs, recvtype}, -1, sendbuf == MPI_IN_PLACE},
             [&] { return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm); });
}

}  // namespace tnbc::shim
