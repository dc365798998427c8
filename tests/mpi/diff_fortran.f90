! Differential test of the Fortran (mpif.h) bindings: MPI_ALLTOALL, MPI_ALLTOALLV, MPI_ALLGATHER,
! MPI_ALLGATHERV and MPI_BCAST through tnbc against the blocking PMPI_* results on the same inputs
! (module pmpi_reference: the C PMPI_* functions; MPICH's Fortran PMPI_ALLTOALL would call the C
! MPI_Alltoall, which tnbc intercepts). Received data is
! read in peer order (or in reverse) right after each call, the send buffer is overwritten at once,
! MPI_IN_PLACE is used for Alltoall and Allgather, the gaps between Alltoallv's and Allgatherv's
! receive blocks must stay untouched.
program diff_fortran
  use pmpi_reference
  implicit none
  include 'mpif.h'
  integer, parameter :: n = 70000
  integer :: ierr, rank, np, i, p, root, bad, allbad, cases, allcases
  double precision, allocatable :: s(:), r(:), ref(:), b(:), bref(:)
  integer, allocatable :: sc(:), sd(:), rc(:), rd(:)
  integer :: params(8), pref(8)
  double precision :: acc

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, np, ierr)
  allocate(s(n*np), r(n*np), ref(n*np), b(3*n), bref(3*n))
  allocate(sc(np), sd(np), rc(np), rd(np))
  bad = 0
  cases = 0

  ! A small broadcast of parameters (below tnbc's threshold: passes through).
  params = 0
  if (rank == 0) params = (/ (i * 3, i = 1, 8) /)
  pref = params
  call ref_bcast(pref, 8, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call MPI_BCAST(params, 8, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (any(params /= pref)) bad = bad + 1
  cases = cases + 1

  ! Alltoall, read in peer order at once, send buffer overwritten at once.
  do i = 1, n*np
    s(i) = rank * 1.0d6 + i
  end do
  call ref_alltoall(s, n, MPI_DOUBLE_PRECISION, ref, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, 0)
  call MPI_ALLTOALL(s, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  s = -1.0d0
  acc = 0
  do p = 0, np - 1
    do i = p*n + 1, (p+1)*n
      acc = acc + r(i)
      if (r(i) /= ref(i)) bad = bad + 1
    end do
  end do
  cases = cases + 1

  ! Alltoall in place.
  r = ref
  call ref_alltoall(ref, n, MPI_DOUBLE_PRECISION, ref, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, 1)
  call MPI_ALLTOALL(MPI_IN_PLACE, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  do i = 1, n*np
    if (r(i) /= ref(i)) bad = bad + 1
  end do
  cases = cases + 1

  ! Alltoallv with gaps between receive blocks (the gaps must stay untouched) and a zero count.
  do p = 1, np
    sc(p) = mod(rank + p, 3) * (n / 4)
    sd(p) = (p - 1) * (n / 2)
  end do
  do p = 1, np
    rc(p) = mod(p - 1 + rank + 1, 3) * (n / 4)
    rd(p) = (p - 1) * (n / 2) + 7
  end do
  do i = 1, n*np
    s(i) = rank * 1.0d6 - i
  end do
  r = -7.0d0
  ref = -7.0d0
  call ref_alltoallv(s, sc, sd, MPI_DOUBLE_PRECISION, ref, rc, rd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  call MPI_ALLTOALLV(s, sc, sd, MPI_DOUBLE_PRECISION, r, rc, rd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  s = 0.0d0
  do i = 1, n*np
    if (r(i) /= ref(i)) bad = bad + 1
  end do
  cases = cases + 1

  ! Allgather, read in reverse at once, send buffer overwritten at once.
  do i = 1, n
    s(i) = rank * 1.0d6 + 3 * i
  end do
  r = -3.0d0
  ref = -3.0d0
  call ref_allgather(s, n, MPI_DOUBLE_PRECISION, ref, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, 0)
  call MPI_ALLGATHER(s, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  s = -1.0d0
  do i = n*np, 1, -1
    if (r(i) /= ref(i)) bad = bad + 1
  end do
  cases = cases + 1

  ! Allgather in place: each rank's block is already at its place.
  do i = 1, n*np
    r(i) = -5.0d0
  end do
  do i = rank*n + 1, (rank+1)*n
    r(i) = rank * 2.0d6 + i
  end do
  ref = r
  call ref_allgather(ref, n, MPI_DOUBLE_PRECISION, ref, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, 1)
  call MPI_ALLGATHER(MPI_IN_PLACE, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  do i = 1, n*np
    if (r(i) /= ref(i)) bad = bad + 1
  end do
  cases = cases + 1

  ! Allgatherv: uneven blocks (one empty), gaps between them that must stay untouched.
  do p = 1, np
    rc(p) = mod(p, 3) * (n / 3)
    rd(p) = (p - 1) * (n / 2) + 5
  end do
  do i = 1, n
    s(i) = rank * 1.0d6 + 7 * i
  end do
  r = -9.0d0
  ref = -9.0d0
  call ref_allgatherv(s, rc(rank+1), MPI_DOUBLE_PRECISION, ref, rc, rd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  call MPI_ALLGATHERV(s, rc(rank+1), MPI_DOUBLE_PRECISION, r, rc, rd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  s = 0.0d0
  do i = 1, n*np
    if (r(i) /= ref(i)) bad = bad + 1
  end do
  cases = cases + 1

  ! Broadcast from every root, read at once.
  do root = 0, np - 1
    if (rank == root) then
      do i = 1, 3*n
        b(i) = root + i * 0.5d0
      end do
    else
      b = 0.0d0
    end if
    bref = b
    call ref_bcast(bref, 3*n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD)
    call MPI_BCAST(b, 3*n, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
    do i = 1, 3*n
      if (b(i) /= bref(i)) bad = bad + 1
    end do
    cases = cases + 1
  end do

  call MPI_REDUCE(bad, allbad, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_REDUCE(cases, allcases, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (allbad /= 0) then
      print '(a,i0,a)', 'diff_fortran: ', allbad, ' mismatching values'
      call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
    end if
    print '(a,i0,a)', 'diff_fortran: ', allcases, ' passed, 0 failed'
  end if
  call MPI_FINALIZE(ierr)
end program diff_fortran
