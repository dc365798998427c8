// The intercepted collectives: to the engine when it runs, else straight to PMPI (counted).
#include <mpi.h>

#include "runtime/datatype.hh"
#include "runtime/engine.hh"
#include "runtime/runtime.hh"
#include "shim/handlers.hh"

namespace tnbc::shim {

namespace {
std::size_t alltoallv_bytes(MPI_Comm comm, const int counts[], MPI_Datatype type) {
  int n = 0;
  PMPI_Comm_size(comm, &n);
  std::size_t b = 0;
  for (int p = 0; p < n; ++p) b += type_bytes(type, counts[p]);
  return b;
}
}  // namespace

int Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, CallSite site) {
  Runtime& rt = Runtime::get();
  if (!rt.intercepting()) return PMPI_Bcast(buffer, count, datatype, root, comm);
  if (Engine* e = rt.engine()) return e->bcast(buffer, count, datatype, root, comm, site);
  const int rc = PMPI_Bcast(buffer, count, datatype, root, comm);
  rt.stats().record(Kind::Bcast, site, type_bytes(datatype, count), Outcome::Passthrough, rt.blocking_reason());
  return rc;
}

int Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
             MPI_Datatype recvtype, MPI_Comm comm, CallSite site) {
  Runtime& rt = Runtime::get();
  if (!rt.intercepting()) return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  if (Engine* e = rt.engine())
    return e->alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, site);
  const int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
  int n = 0;
  PMPI_Comm_size(comm, &n);
  rt.stats().record(Kind::Alltoall, site, type_bytes(recvtype, recvcount) * static_cast<std::size_t>(n),
                    Outcome::Passthrough, rt.blocking_reason());
  return rc;
}

int Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
              void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
              CallSite site) {
  Runtime& rt = Runtime::get();
  if (!rt.intercepting())
    return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  if (Engine* e = rt.engine())
    return e->alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, site);
  const int rc = PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
  rt.stats().record(Kind::Alltoallv, site, alltoallv_bytes(comm, recvcounts, recvtype), Outcome::Passthrough,
                    rt.blocking_reason());
  return rc;
}

}  // namespace tnbc::shim
