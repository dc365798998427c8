! Interfaces of pmpi_reference.c: the blocking PMPI_* results the Fortran differential tests
! compare tnbc's with. Buffers by address, handles as Fortran integers (MPI_VAL for mpi_f08).
module pmpi_reference
  use, intrinsic :: iso_c_binding, only : c_int
  implicit none
  interface
    subroutine ref_bcast(buf, count, type, root, comm) bind(C, name='ref_bcast')
      import :: c_int
      type(*), dimension(*) :: buf
      integer(c_int), value :: count, type, root, comm
    end subroutine ref_bcast
    subroutine ref_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, in_place) &
        bind(C, name='ref_alltoall')
      import :: c_int
      type(*), dimension(*) :: sendbuf, recvbuf
      integer(c_int), value :: sendcount, sendtype, recvcount, recvtype, comm, in_place
    end subroutine ref_alltoall
    subroutine ref_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm) &
        bind(C, name='ref_alltoallv')
      import :: c_int
      type(*), dimension(*) :: sendbuf, recvbuf
      integer(c_int) :: sendcounts(*), sdispls(*), recvcounts(*), rdispls(*)
      integer(c_int), value :: sendtype, recvtype, comm
    end subroutine ref_alltoallv
    subroutine ref_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, in_place) &
        bind(C, name='ref_allgather')
      import :: c_int
      type(*), dimension(*) :: sendbuf, recvbuf
      integer(c_int), value :: sendcount, sendtype, recvcount, recvtype, comm, in_place
    end subroutine ref_allgather
    subroutine ref_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm) &
        bind(C, name='ref_allgatherv')
      import :: c_int
      type(*), dimension(*) :: sendbuf, recvbuf
      integer(c_int) :: recvcounts(*), displs(*)
      integer(c_int), value :: sendcount, sendtype, recvtype, comm
    end subroutine ref_allgatherv
    subroutine ref_sendrecv(sendbuf, sendcount, type, dest, recvbuf, recvcount, source, tag, comm) &
        bind(C, name='ref_sendrecv')
      import :: c_int
      type(*), dimension(*) :: sendbuf, recvbuf
      integer(c_int), value :: sendcount, type, dest, recvcount, source, tag, comm
    end subroutine ref_sendrecv
  end interface
end module pmpi_reference
