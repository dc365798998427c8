/* A genuine segfault must still reach the program's own SIGSEGV handler (installed before or
 * after MPI_Init, with signal() or sigaction()), also while tnbc guards buffers.
 * usage: segv_chain before|after|none ; the handler prints a marker and exits 42. */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void handler(int sig) {
  (void)sig;
  static const char msg[] = "PROGRAM_SEGV_HANDLER_REACHED\n";
  if (write(2, msg, sizeof msg - 1) < 0) _exit(43);
  _exit(42);
}

int main(int argc, char** argv) {
  const char* when = argc > 1 ? argv[1] : "none";
  if (strcmp(when, "before") == 0) signal(SIGSEGV, handler);
  MPI_Init(&argc, &argv);
  if (strcmp(when, "after") == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGSEGV, &sa, NULL);
  }
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const size_t per = 1 << 20;
  char* s = malloc(per * np);
  char* r = malloc(per * np);
  memset(s, rank, per * np);
  MPI_Alltoall(s, (int)per, MPI_BYTE, r, (int)per, MPI_BYTE, MPI_COMM_WORLD);
  long sum = 0;
  if (rank == np - 1) {
    /* Its receive buffer untouched (guarded until its data is in), a real fault elsewhere, once
     * the others have all of this rank's data: a rank that dies while another still reads from
     * it ends that one too (UCX's shared-memory copy aborts), and the job's exit status would
     * then be whichever death the launcher noticed first. */
    for (int p = 0; p < np - 1; p++) PMPI_Recv(NULL, 0, MPI_BYTE, p, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    static volatile uintptr_t nowhere = 16;
    *(volatile int*)nowhere = rank;  /* touches nothing tnbc guards: the fault is the program's */
  } else {
    for (size_t i = 0; i < per * np; i += 4096) sum += r[i];
    PMPI_Send(NULL, 0, MPI_BYTE, np - 1, 99, MPI_COMM_WORLD);
  }
  for (size_t i = 0; i < per * np; i += 4096) sum += r[i];
  MPI_Finalize();
  return sum < 0;
}
