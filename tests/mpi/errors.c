/* Errors tnbc detects inside a collective go through the communicator's error handler, as MPI's
 * own do (runtime/engine.cc, detected_error): a call whose own block is sent with another size
 * than it is received (type signatures that differ) is found before anything is exchanged.
 *
 *   errors return   on a communicator with MPI_ERRORS_RETURN: each erroneous call returns an
 *                   error of class MPI_ERR_TRUNCATE (more sent than received) or MPI_ERR_TYPE,
 *                   leaves the receive buffer as it was, and the next, correct calls on the same
 *                   communicator return early and are right (compared with PMPI_*).
 *                   Ends with "errors return: N passed, 0 failed".
 *   errors fatal    the same mismatch on MPI_COMM_WORLD (MPI_ERRORS_ARE_FATAL): the job ends,
 *                   after tnbc's message naming the call and the sizes.
 * Sizes are large enough to take tnbc's schedule (above the threshold the tests pin). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "finish_checks.h"

#define PER (16 * 4096) /* bytes received per peer */

static int rank, np;
static long bad, checks;

static void check(int ok, const char* what) {
  checks++;
  if (!ok) {
    bad++;
    fprintf(stderr, "errors[%d]: FAILED %s\n", rank, what);
  }
}

static void check_class(int rc, int want, const char* what) {
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  char msg[200];
  snprintf(msg, sizeof msg, "%s: error class %d, expected %d", what, cls, want);
  check(cls == want, msg);
}

static void fill(unsigned char* p, size_t n, int salt) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + rank * 13 + salt);
}

/* A correct Alltoall(v) on `comm` right after the errors: early return, right bytes. */
static void correct_calls(MPI_Comm comm, unsigned char* s, unsigned char* r, unsigned char* ref) {
  fill(s, (size_t)np * PER, 3);
  PMPI_Alltoall(s, PER, MPI_BYTE, ref, PER, MPI_BYTE, comm);
  check(MPI_Alltoall(s, PER, MPI_BYTE, r, PER, MPI_BYTE, comm) == MPI_SUCCESS, "a correct Alltoall after the errors");
  check(memcmp(r, ref, (size_t)np * PER) == 0, "its data");
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "return";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const size_t total = (size_t)np * PER * 2;
  unsigned char* s = malloc(total);
  unsigned char* r = malloc(total);
  unsigned char* ref = malloc(total);
  unsigned char* before = malloc(total);
  fill(s, total, 1);
  fill(r, total, 2);
  memcpy(before, r, total);

  if (strcmp(mode, "fatal") == 0) {
    /* Twice as much sent to each rank as it receives: the job ends in here. */
    MPI_Alltoall(s, 2 * PER, MPI_BYTE, r, PER, MPI_BYTE, MPI_COMM_WORLD);
    printf("errors fatal: the erroneous call returned\n");
    MPI_Finalize();
    return 3;
  }

  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  /* More sent than received: truncation. */
  check_class(MPI_Alltoall(s, 2 * PER, MPI_BYTE, r, PER, MPI_BYTE, comm), MPI_ERR_TRUNCATE, "Alltoall sending more");
  check(memcmp(r, before, total) == 0, "receive buffer untouched by the failed Alltoall");
  /* Less sent than received. */
  check_class(MPI_Alltoall(s, PER / 2, MPI_BYTE, r, PER, MPI_BYTE, comm), MPI_ERR_TYPE, "Alltoall sending less");
  /* Alltoallv: the own block's counts differ (the others agree). */
  int sc[64], sd[64], rc[64], rd[64];
  for (int p = 0; p < np; p++) {
    sc[p] = rc[p] = PER;
    sd[p] = rd[p] = p * PER;
  }
  sc[rank] = PER + 4096;
  check_class(MPI_Alltoallv(s, sc, sd, MPI_BYTE, r, rc, rd, MPI_BYTE, comm), MPI_ERR_TRUNCATE, "Alltoallv own block");
  check(memcmp(r, before, total) == 0, "receive buffer untouched by the failed calls");
  correct_calls(comm, s, r, ref);
  MPI_Comm_free(&comm);
  free(s), free(r), free(ref), free(before);
  return finish_checks("errors return", bad, checks);
}
