! Differential test of the Fortran 2008 bindings (`use mpi_f08`): MPI_Alltoall (also with
! MPI_IN_PLACE), MPI_Alltoallv with gaps and zero counts, MPI_Allgather (also in place),
! MPI_Allgatherv with gaps and an empty block, MPI_Bcast from every root, on
! MPI_COMM_WORLD and on a split communicator (ranks reversed), through tnbc against the blocking
! PMPI_* results of the same inputs (module pmpi_reference), compared bit for bit. The received
! data is read right after each call, in peer order, or first passed on with MPI_Sendrecv (a
! fenced call) from the buffer itself and through MPI_BOTTOM with an absolute-address datatype;
! the send buffer is overwritten at once. ierror, optional in mpi_f08, is left out of some calls.
!
! usage: diff_f08 [init | init_thread]
program diff_f08
  use, intrinsic :: iso_fortran_env, only : int64
  use mpi_f08
  use pmpi_reference
  implicit none
  integer, parameter :: n = 70000
  integer :: ierr, rank, np, bad, allbad, cases, allcases, provided
  type(MPI_Comm) :: half
  character(len=16) :: how

  bad = 0
  cases = 0
  call get_command_argument(1, how)
  if (how == 'init_thread') then
    call MPI_Init_thread(MPI_THREAD_FUNNELED, provided)
    if (provided /= MPI_THREAD_FUNNELED) then
      print '(a,i0)', 'diff_f08: MPI_Init_thread gave the program level ', provided
      bad = bad + 1
    end if
  else
    call MPI_Init(ierr)
  end if
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, np)

  call run_cases(MPI_COMM_WORLD)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), np - rank, half, ierr)
  call run_cases(half)
  call MPI_Comm_free(half)

  call MPI_Reduce(bad, allbad, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(cases, allcases, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) then
    if (allbad /= 0) then
      print '(a,i0,a)', 'diff_f08: ', allbad, ' mismatching values'
      call MPI_Abort(MPI_COMM_WORLD, 3)
    end if
    print '(a,i0,a)', 'diff_f08: ', allcases, ' passed, 0 failed'
  end if
  call MPI_Finalize(ierr)

contains

  ! Counts the values of got that differ bit for bit from want; names the first one.
  subroutine compare(what, got, want)
    character(len=*), intent(in) :: what
    double precision, intent(in) :: got(:), want(:)
    integer :: i
    integer :: wrong
    wrong = 0
    do i = 1, size(want)
      if (transfer(got(i), 1_int64) /= transfer(want(i), 1_int64)) then
        if (wrong == 0) print '(a,i0,3a,i0,a,g0,a,g0)', 'MISMATCH rank ', rank, ' (', what, ') at ', i, &
                              ': expected ', want(i), ' got ', got(i)
        wrong = wrong + 1
      end if
    end do
    bad = bad + wrong
    cases = cases + 1
  end subroutine compare

  subroutine run_cases(comm)
    type(MPI_Comm), intent(in) :: comm
    type(MPI_Datatype) :: absolute
    integer :: size, me, i, p, root, left, right, params(8), pref(8)
    integer, allocatable :: sc(:), sd(:), rc(:), rd(:)
    integer(MPI_ADDRESS_KIND) :: address
    double precision, allocatable :: s(:), r(:), ref(:), b(:), bref(:), got(:), want(:)

    call MPI_Comm_size(comm, size)
    call MPI_Comm_rank(comm, me)
    left = mod(me + size - 1, size)
    right = mod(me + 1, size)
    allocate(s(n*size), r(n*size), ref(n*size), b(3*n), bref(3*n), got(n*size), want(n*size))
    allocate(sc(size), sd(size), rc(size), rd(size))

    ! A small broadcast of parameters (below tnbc's threshold: passes through).
    params = 0
    if (me == 0) params = [(i * 3, i = 1, 8)]
    pref = params
    call ref_bcast(pref, 8, MPI_INTEGER%MPI_VAL, 0, comm%MPI_VAL)
    call MPI_Bcast(params, 8, MPI_INTEGER, 0, comm)
    if (any(params /= pref)) bad = bad + 1
    cases = cases + 1

    ! Alltoall, read in peer order at once, send buffer overwritten at once.
    do i = 1, n*size
      s(i) = rank * 1.0d6 + i
    end do
    call ref_alltoall(s, n, MPI_DOUBLE_PRECISION%MPI_VAL, ref, n, MPI_DOUBLE_PRECISION%MPI_VAL, comm%MPI_VAL, 0)
    call MPI_Alltoall(s, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, comm, ierr)
    s = -1.0d0
    call compare('alltoall, read at once', r, ref)

    ! Alltoall in place (no ierror).
    r = ref
    call ref_alltoall(ref, n, MPI_DOUBLE_PRECISION%MPI_VAL, ref, n, MPI_DOUBLE_PRECISION%MPI_VAL, comm%MPI_VAL, 1)
    call MPI_Alltoall(MPI_IN_PLACE, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, comm)
    call compare('alltoall in place', r, ref)

    ! Alltoall, the received buffer passed on to the right neighbour at once (MPI_Sendrecv fences it).
    do i = 1, n*size
      s(i) = rank * 2.0d6 - i
    end do
    call ref_alltoall(s, n, MPI_DOUBLE_PRECISION%MPI_VAL, ref, n, MPI_DOUBLE_PRECISION%MPI_VAL, comm%MPI_VAL, 0)
    call ref_sendrecv(ref, n*size, MPI_DOUBLE_PRECISION%MPI_VAL, right, want, n*size, left, 5, comm%MPI_VAL)
    call MPI_Alltoall(s, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, comm)
    call MPI_Sendrecv(r, n*size, MPI_DOUBLE_PRECISION, right, 5, got, n*size, MPI_DOUBLE_PRECISION, left, 5, comm, &
                      MPI_STATUS_IGNORE)
    call compare('MPI_Sendrecv of a received buffer', got, want)
    call compare('alltoall, then MPI_Sendrecv', r, ref)

    ! The same through MPI_BOTTOM: a datatype holding the buffer's absolute address.
    call MPI_Get_address(r, address)
    call MPI_Type_create_hindexed(1, [n*size], [address], MPI_DOUBLE_PRECISION, absolute)
    call MPI_Type_commit(absolute)
    do i = 1, n*size
      s(i) = rank * 3.0d6 + 0.5d0 * i
    end do
    call ref_alltoall(s, n, MPI_DOUBLE_PRECISION%MPI_VAL, ref, n, MPI_DOUBLE_PRECISION%MPI_VAL, comm%MPI_VAL, 0)
    call ref_sendrecv(ref, n*size, MPI_DOUBLE_PRECISION%MPI_VAL, right, want, n*size, left, 6, comm%MPI_VAL)
    call MPI_Alltoall(s, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, comm)
    call MPI_Sendrecv(MPI_BOTTOM, 1, absolute, right, 6, got, n*size, MPI_DOUBLE_PRECISION, left, 6, comm, &
                      MPI_STATUS_IGNORE)
    call MPI_Type_free(absolute)
    call compare('MPI_Sendrecv from MPI_BOTTOM of a received buffer', got, want)
    call compare('alltoall, then MPI_Sendrecv from MPI_BOTTOM', r, ref)

    ! Alltoallv with gaps between receive blocks (the gaps must keep their values) and zero counts.
    do p = 1, size
      sc(p) = mod(me + p, 3) * (n / 4)
      sd(p) = (p - 1) * (n / 2)
      rc(p) = mod(p + me, 3) * (n / 4)
      rd(p) = (p - 1) * (n / 2) + 7
    end do
    do i = 1, n*size
      s(i) = rank * 1.0d6 - i
    end do
    r = -7.0d0
    ref = -7.0d0
    call ref_alltoallv(s, sc, sd, MPI_DOUBLE_PRECISION%MPI_VAL, ref, rc, rd, MPI_DOUBLE_PRECISION%MPI_VAL, comm%MPI_VAL)
    call MPI_Alltoallv(s, sc, sd, MPI_DOUBLE_PRECISION, r, rc, rd, MPI_DOUBLE_PRECISION, comm, ierr)
    s = 0.0d0
    call compare('alltoallv with gaps', r, ref)

    ! Allgather, read in reverse at once, send buffer overwritten at once.
    do i = 1, n
      s(i) = rank * 1.0d6 + 3 * i
    end do
    call ref_allgather(s, n, MPI_DOUBLE_PRECISION%MPI_VAL, ref, n, MPI_DOUBLE_PRECISION%MPI_VAL, comm%MPI_VAL, 0)
    call MPI_Allgather(s, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, comm, ierr)
    s = -1.0d0
    got = r(n*size:1:-1)
    want = ref(n*size:1:-1)
    call compare('allgather, read in reverse', got, want)

    ! Allgather in place (no ierror): each rank's block is already at its place.
    r = -5.0d0
    do i = me*n + 1, (me+1)*n
      r(i) = rank * 2.0d6 + i
    end do
    ref = r
    call ref_allgather(ref, n, MPI_DOUBLE_PRECISION%MPI_VAL, ref, n, MPI_DOUBLE_PRECISION%MPI_VAL, comm%MPI_VAL, 1)
    call MPI_Allgather(MPI_IN_PLACE, n, MPI_DOUBLE_PRECISION, r, n, MPI_DOUBLE_PRECISION, comm)
    call compare('allgather in place', r, ref)

    ! Allgatherv: uneven blocks (one empty), gaps between them that must keep their values.
    do p = 1, size
      rc(p) = mod(p, 3) * (n / 3)
      rd(p) = (p - 1) * (n / 2) + 5
    end do
    do i = 1, n
      s(i) = rank * 1.0d6 + 7 * i
    end do
    r = -9.0d0
    ref = -9.0d0
    call ref_allgatherv(s, rc(me+1), MPI_DOUBLE_PRECISION%MPI_VAL, ref, rc, rd, MPI_DOUBLE_PRECISION%MPI_VAL, &
                        comm%MPI_VAL)
    call MPI_Allgatherv(s, rc(me+1), MPI_DOUBLE_PRECISION, r, rc, rd, MPI_DOUBLE_PRECISION, comm, ierr)
    s = 0.0d0
    call compare('allgatherv with gaps', r, ref)

    ! Broadcast from every root, read at once.
    do root = 0, size - 1
      if (me == root) then
        do i = 1, 3*n
          b(i) = root + i * 0.25d0
        end do
      else
        b = 0.0d0
      end if
      bref = b
      call ref_bcast(bref, 3*n, MPI_DOUBLE_PRECISION%MPI_VAL, root, comm%MPI_VAL)
      call MPI_Bcast(b, 3*n, MPI_DOUBLE_PRECISION, root, comm)
      call compare('bcast', b, bref)
    end do
  end subroutine run_cases
end program diff_f08
