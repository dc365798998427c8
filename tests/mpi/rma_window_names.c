/* Disjoint communicators creating one-sided windows at the same moment on one node (issue 21).
 *
 * Open MPI 4.1's osc/rdma (the one-sided component it picks for MPI_Win_allocate and
 * MPI_Win_create, also on one node) backs a window with a shared-memory file that the
 * communicator's lowest rank on the node creates (open(2) with O_CREAT, no O_EXCL), the others
 * on the node attach to by name, and the creator unlinks once they have attached. The file is
 * named `osc_rdma.<node>.<job>.<context id>` (ompi/mca/osc/rdma/osc_rdma_component.c,
 * allocate_state_shared, v4.1.0 to v4.1.7; Open MPI 5 adds the creator's pid, upstream commit
 * 9bcc823697). A context id is unique only per process: MPI_Comm_split of the world into pairs
 * gives every pair the same ids, and so the same file name for their windows. Pairs creating
 * windows at once then share one file (their windows are one memory: each pair reads the other's
 * data, or the zeros of its initialisation) or one pair's creator unlinks the other's file before
 * its ranks attached (open(2) fails: MPI_Win_allocate returns an error).
 *
 * tnbc gives each process its own backing directory (runtime/rma_transport.hh,
 * rma_before_init), so a file's name is unique per creator: the collision cannot happen.
 *
 *   rma_window_names plain ITERATIONS   MPI_Win_allocate on every pair, at once, ITERATIONS
 *                                       times: each rank fills its window with its own pattern,
 *                                       all ranks synchronise, each checks its window. Without
 *                                       tnbc this fails under Open MPI 4.1 (test
 *                                       rma-window-names-collide: within a few iterations at
 *                                       np 4 on this machine); with tnbc preloaded it must not.
 *   rma_window_names bcast ITERATIONS   per iteration a new split into pairs and one MPI_Bcast
 *                                       of 1 MiB on each pair (a pattern of its own): with
 *                                       TNBC_BCAST_BACKEND=rma-* tnbc creates each pair's windows
 *                                       in that call, at once. Without tnbc's backing directory
 *                                       the collision shows as wrong data or a fallback to p2p.
 *
 * Checked with tnbc's directory disabled (rma_before_init returning at once), np 4, 2026-11-24:
 * `plain` failed at iteration 1 (ranks 0 and 1 read ranks 2 and 3's data), `bcast` at its first
 * windows (Open MPI: "unlink(2) /dev/shm/osc_rdma.vm.<job>.8: No such file or directory", then
 * mpirun crashed); with it, both ran 40 iterations right.
 *
 * Prints "rma_window_names: OK (N iterations)" or the first failure; the exit status says it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kWindowBytes = 4 << 20, kBcastBytes = 1 << 20 };

static int value_at(int owner, int iteration, size_t i) { return owner * 1000003 + iteration * 7919 + (int)i; }

/* Counts the ints of `p` that are not the owner's pattern. */
static long mismatches(const int* p, size_t n, int owner, int iteration) {
  long bad = 0;
  for (size_t i = 0; i < n; ++i) bad += p[i] != value_at(owner, iteration, i);
  return bad;
}

/* One iteration of `plain`: 0 if this rank's window is right, else 1 (and says why). */
static int plain_iteration(MPI_Comm pair, int rank, int iteration) {
  int* base = NULL;
  MPI_Win win = MPI_WIN_NULL;
  MPI_Barrier(MPI_COMM_WORLD); /* every pair creates its window at the same moment */
  int rc = MPI_Win_allocate(kWindowBytes, (int)sizeof(int), MPI_INFO_NULL, pair, &base, &win);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    printf("rank %d iteration %d: MPI_Win_allocate failed: %s\n", rank, iteration, text);
    /* the others' windows, if they got one, are freed collectively by their pair: keep pace */
    MPI_Barrier(MPI_COMM_WORLD);
    return 1;
  }
  const size_t n = kWindowBytes / sizeof(int);
  for (size_t i = 0; i < n; ++i) base[i] = value_at(rank, iteration, i);
  MPI_Barrier(MPI_COMM_WORLD); /* every rank has written its window */
  const long bad = mismatches(base, n, rank, iteration);
  if (bad)
    printf("rank %d iteration %d: %ld of %zu ints of its window are not its own (first: %d, expected %d)\n", rank,
           iteration, bad, n, base[0], value_at(rank, iteration, 0));
  MPI_Win_free(&win);
  return bad != 0;
}

/* One iteration of `bcast`: a new pair communicator, one broadcast on it, 0 if right. */
static int bcast_iteration(int rank, int iteration) {
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  int prank = 0;
  MPI_Comm_rank(pair, &prank);
  const size_t n = kBcastBytes / sizeof(int);
  int* buf = malloc(kBcastBytes);
  const int owner = rank - prank; /* the pair's root: its lowest world rank */
  for (size_t i = 0; i < n; ++i) buf[i] = prank == 0 ? value_at(owner, iteration, i) : -1;
  MPI_Barrier(MPI_COMM_WORLD); /* every pair's first broadcast (its windows) at the same moment */
  int rc = MPI_Bcast(buf, (int)n, MPI_INT, 0, pair);
  long bad = rc != MPI_SUCCESS ? -1 : mismatches(buf, n, owner, iteration);
  if (bad < 0) printf("rank %d iteration %d: MPI_Bcast returned %d\n", rank, iteration, rc);
  if (bad > 0)
    printf("rank %d iteration %d: %ld of %zu ints differ from its root's (first: %d, expected %d)\n", rank, iteration,
           bad, n, buf[0], value_at(owner, iteration, 0));
  free(buf);
  MPI_Comm_free(&pair);
  return bad != 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int bcast = argc > 1 && strcmp(argv[1], "bcast") == 0;
  const int iterations = argc > 2 ? atoi(argv[2]) : 20;
  if (argc < 2 || (!bcast && strcmp(argv[1], "plain") != 0) || iterations < 1 || size < 4) {
    if (rank == 0) fprintf(stderr, "usage: rma_window_names plain|bcast ITERATIONS (np >= 4)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* inherited by the pairs */
  MPI_Comm pair;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
  int failed = 0, it = 0;
  for (; it < iterations && !failed; ++it) {
    int mine = bcast ? bcast_iteration(rank, it) : plain_iteration(pair, rank, it);
    MPI_Allreduce(&mine, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  }
  if (rank == 0) {
    if (failed)
      printf("rma_window_names: FAILED at iteration %d of %d (%s, np %d)\n", it - 1, iterations, argv[1], size);
    else
      printf("rma_window_names: OK (%d iterations, %s, np %d)\n", iterations, argv[1], size);
  }
  MPI_Comm_free(&pair);
  MPI_Finalize();
  return failed ? 1 : 0;
}
