! Fortran program in trace mode (mpif.h, like NPB FT): MPI_Alltoall of double complex blocks,
! read in the order 0..np-1 (as FT's transpose does), and an MPI_Bcast; every value is checked.
! Prints "OK" on rank 0.
program ft_order
  implicit none
  include 'mpif.h'
  integer, parameter :: per = 1024          ! 16 KiB of double complex per peer
  integer :: ierr, rank, np, p, i, it
  double complex, allocatable :: snd(:), rcv(:)
  double precision, allocatable :: b(:)
  double precision :: s, expect
  logical :: good

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  allocate(snd(per * np), rcv(per * np), b(3 * 1024))
  good = .true.
  do it = 1, 3
    do p = 0, np - 1
      do i = 1, per
        snd(p * per + i) = dcmplx(dble(rank * 1000 + p), dble(i + it))
      end do
    end do
    call MPI_Alltoall(snd, per, MPI_DOUBLE_COMPLEX, rcv, per, MPI_DOUBLE_COMPLEX, MPI_COMM_WORLD, ierr)
    s = 0
    do p = 0, np - 1
      do i = 1, per
        if (dble(rcv(p * per + i)) /= dble(p * 1000 + rank) .or. aimag(rcv(p * per + i)) /= dble(i + it)) good = .false.
        s = s + aimag(rcv(p * per + i))
      end do
    end do
    do i = 1, size(b)
      if (rank == 0) then
        b(i) = dble(i) * it
      else
        b(i) = 0
      end if
    end do
    call MPI_Bcast(b, size(b), MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
    do i = 1, size(b)
      expect = dble(i) * it
      if (b(i) /= expect) good = .false.
    end do
  end do
  call MPI_Allreduce(MPI_IN_PLACE, good, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (good) then
      print '(A)', 'OK'
    else
      print '(A)', 'WRONG'
    end if
  end if
  call MPI_Finalize(ierr)
end program ft_order
