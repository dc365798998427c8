! A genuine segfault in a Fortran program while tnbc guards its buffers: after tnbc's own faults
! (the received data read right after an early-returning MPI_ALLTOALL), a fault that is not
! tnbc's must reach the handler installed before tnbc's (gfortran's backtrace handler, installed
! at program start, or Open MPI's), and the program must die of SIGSEGV as without tnbc.
program segv_fortran
  implicit none
  include 'mpif.h'
  integer, parameter :: per = 65536
  integer :: ierr, rank, np, i, bad
  integer, allocatable :: s(:), r(:)
  integer, pointer :: nowhere(:)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  allocate(s(per * np), r(per * np))
  do i = 1, per * np
    s(i) = rank * 1000003 + i
  end do
  call MPI_ALLTOALL(s, per, MPI_INTEGER, r, per, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  bad = 0
  do i = 1, per * np
    if (r(i) /= ((i - 1) / per) * 1000003 + rank * per + mod(i - 1, per) + 1) bad = bad + 1
  end do
  print '(a,i0,a,i0)', 'segv_fortran rank ', rank, ': wrong values ', bad
  call flush(6)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  nowhere => null()
  if (rank == 0) nowhere(1) = 42   ! the genuine fault
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)
end program segv_fortran
