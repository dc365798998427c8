/* Blocking references for the Fortran differential tests (module pmpi_reference in
 * pmpi_reference.f90): the C PMPI_* functions, which tnbc never intercepts. The Fortran PMPI
 * names cannot serve: MPICH's PMPI_ALLTOALL is an alias of MPI_ALLTOALL and calls the C
 * MPI_Alltoall, which tnbc intercepts, and MPICH's mpi_f08 has no PMPI names at all.
 * Handles come as Fortran integers (mpif.h's, or MPI_VAL of mpi_f08's derived types). */
#include <mpi.h>

void ref_bcast(void* buf, int count, MPI_Fint type, int root, MPI_Fint comm) {
  PMPI_Bcast(buf, count, MPI_Type_f2c(type), root, MPI_Comm_f2c(comm));
}

void ref_alltoall(const void* sendbuf, int sendcount, MPI_Fint sendtype, void* recvbuf, int recvcount,
                  MPI_Fint recvtype, MPI_Fint comm, int in_place) {
  PMPI_Alltoall(in_place ? MPI_IN_PLACE : sendbuf, sendcount, MPI_Type_f2c(sendtype), recvbuf, recvcount,
                MPI_Type_f2c(recvtype), MPI_Comm_f2c(comm));
}

void ref_alltoallv(const void* sendbuf, const int* sendcounts, const int* sdispls, MPI_Fint sendtype, void* recvbuf,
                   const int* recvcounts, const int* rdispls, MPI_Fint recvtype, MPI_Fint comm) {
  PMPI_Alltoallv(sendbuf, sendcounts, sdispls, MPI_Type_f2c(sendtype), recvbuf, recvcounts, rdispls,
                 MPI_Type_f2c(recvtype), MPI_Comm_f2c(comm));
}

void ref_allgather(const void* sendbuf, int sendcount, MPI_Fint sendtype, void* recvbuf, int recvcount,
                   MPI_Fint recvtype, MPI_Fint comm, int in_place) {
  PMPI_Allgather(in_place ? MPI_IN_PLACE : sendbuf, sendcount, MPI_Type_f2c(sendtype), recvbuf, recvcount,
                 MPI_Type_f2c(recvtype), MPI_Comm_f2c(comm));
}

void ref_allgatherv(const void* sendbuf, int sendcount, MPI_Fint sendtype, void* recvbuf, const int* recvcounts,
                    const int* displs, MPI_Fint recvtype, MPI_Fint comm) {
  PMPI_Allgatherv(sendbuf, sendcount, MPI_Type_f2c(sendtype), recvbuf, recvcounts, displs, MPI_Type_f2c(recvtype),
                  MPI_Comm_f2c(comm));
}

void ref_sendrecv(const void* sendbuf, int sendcount, MPI_Fint type, int dest, void* recvbuf, int recvcount,
                  int source, int tag, MPI_Fint comm) {
  PMPI_Sendrecv(sendbuf, sendcount, MPI_Type_f2c(type), dest, tag, recvbuf, recvcount, MPI_Type_f2c(type), source,
                tag, MPI_Comm_f2c(comm), MPI_STATUS_IGNORE);
}
