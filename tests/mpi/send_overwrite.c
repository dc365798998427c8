/* The program overwrites its send buffer right after MPI_Alltoall returns while a peer is slow
 * (it enters the same call only after a sleep), then reads what it received, its own block
 * included. With the lazy send copy (runtime/send_copy.hh) the bodies still to send, and the own
 * block, are only in that buffer behind read-only pages when the write comes: the write must not
 * wait for the slow peer (its rendezvous cannot complete before the peer calls), and the data
 * received must be the buffer's contents at the call, not the new ones. A hang ends in tnbc's
 * timeout report (TNBC_TIMEOUT) or the runner's; a wrong byte is counted.
 * --write-part: only one byte in the middle of each block is written (and the buffer's first):
 * a write fault then copies only the pieces on its page, the rest stay read-only until the
 * progress thread sends them (or the next iteration's fill writes them); the send buffer must
 * then hold exactly those writes and the old bytes elsewhere.
 *
 * usage: send_overwrite [--bytes N] [--iterations K] [--slow-ms MS] [--read-own-first] [--write-part]
 * Prints "send_overwrite: P passed, F failed"; exit 1 if F > 0. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned char value(int iter, int from, int to, size_t i) {
  return (unsigned char)((size_t)(iter * 131 + from * 31 + to * 7) + i * 13 + (i >> 12));
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
  size_t bytes = 1 << 20;
  int iterations = 4, read_own_first = 0, write_part = 0;
  long slow_ms = 300;
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--bytes") == 0 && a + 1 < argc) bytes = (size_t)strtoull(argv[++a], NULL, 10);
    else if (strcmp(argv[a], "--iterations") == 0 && a + 1 < argc) iterations = atoi(argv[++a]);
    else if (strcmp(argv[a], "--slow-ms") == 0 && a + 1 < argc) slow_ms = atol(argv[++a]);
    else if (strcmp(argv[a], "--read-own-first") == 0) read_own_first = 1;
    else if (strcmp(argv[a], "--write-part") == 0) write_part = 1;
    else {
      fprintf(stderr, "usage: send_overwrite [--bytes N] [--iterations K] [--slow-ms MS] [--read-own-first] [--write-part]\n");
      return 2;
    }
  }
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const size_t total = bytes * (size_t)np;
  unsigned char *send = NULL, *recv = NULL;
  if (posix_memalign((void**)&send, 4096, total) || posix_memalign((void**)&recv, 4096, total)) MPI_Abort(MPI_COMM_WORLD, 3);
  long passed = 0, failed = 0;
  for (int it = 0; it < iterations; it++) {
    for (int to = 0; to < np; to++)
      for (size_t i = 0; i < bytes; i++) send[(size_t)to * bytes + i] = value(it, rank, to, i);
    memset(recv, 0xee, total);
    /* The slow peer: the last rank, alternating with rank 0 so that each side is once the writer
     * whose peer has not called yet. */
    const int slow = it % 2 ? 0 : np - 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == slow) sleep_ms(slow_ms);
    MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    unsigned char own_first = 0;
    if (read_own_first) own_first = recv[(size_t)rank * bytes + bytes / 2];
    /* At once: every byte of the send buffer, the own block's included (or a few: --write-part). */
    const unsigned char mark = (unsigned char)(0x5a ^ it);
    if (write_part) {
      send[0] = mark;
      for (int to = 0; to < np; to++) send[(size_t)to * bytes + bytes / 2] = mark;
    } else {
      memset(send, mark, total);
    }
    long bad = 0;
    for (int from = 0; from < np; from++)
      for (size_t i = 0; i < bytes; i++)
        if (recv[(size_t)from * bytes + i] != value(it, from, rank, i)) {
          if (bad++ == 0)
            printf("MISMATCH rank %d iteration %d: byte %zu from rank %d is %u, expected %u\n", rank, it, i, from,
                   recv[(size_t)from * bytes + i], value(it, from, rank, i));
        }
    if (read_own_first && own_first != value(it, rank, rank, bytes / 2)) bad++;
    for (int to = 0; to < np && write_part; to++)
      for (size_t i = 0; i < bytes; i++) {
        const size_t at = (size_t)to * bytes + i;
        const unsigned char want = at == 0 || i == bytes / 2 ? mark : value(it, rank, to, i);
        if (send[at] != want && bad++ == 0)
          printf("MISMATCH rank %d iteration %d: send byte %zu to rank %d is %u, expected %u\n", rank, it, i, to,
                 send[at], want);
      }
    if (bad) failed++;
    else passed++;
  }
  long sums[2] = {passed, failed}, all[2];
  MPI_Reduce(sums, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("send_overwrite: %ld passed, %ld failed\n", all[0], all[1]);
  free(send);
  free(recv);
  MPI_Finalize();
  return rank == 0 && all[1] ? 1 : 0;
}
