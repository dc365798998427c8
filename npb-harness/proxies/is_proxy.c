/* is-proxy: the communication and access pattern of NAS IS (integer bucket sort), self-verifying.
 *
 * Each iteration: every rank counts its keys per destination rank (key ranges split evenly),
 * exchanges the counts with MPI_Alltoall, sends the keys with MPI_Alltoallv, clears its send
 * buffer at once (as IS reuses it), then histograms the received keys in arrival order (peer
 * 0..np-1) and ranks them. Verification: every key arrived exactly once (count and checksum
 * over all ranks), each rank holds only keys of its range, and the ranked keys are globally
 * sorted. Output mimics NPB ("Verification = SUCCESSFUL", "Time in seconds").
 *
 * usage: is-proxy [S|W|A|B] [iterations]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char name;
  int log2_keys, log2_max_key;
} Class;

static const Class classes[] = {{'S', 16, 11}, {'W', 20, 16}, {'A', 23, 19}, {'B', 25, 21}};

static uint64_t lcg(uint64_t* s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const char cls = argc > 1 ? argv[1][0] : 'S';
  const int iters = argc > 2 ? atoi(argv[2]) : 10;
  const Class* c = NULL;
  for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
    if (classes[i].name == cls) c = &classes[i];
  if (!c) {
    if (rank == 0) fprintf(stderr, "is-proxy: unknown class '%c' (S, W, A, B)\n", cls);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long total = 1L << c->log2_keys, max_key = 1L << c->log2_max_key;
  const long nlocal = total / np + (rank < total % np);
  const long range = (max_key + np - 1) / np; /* keys [r*range, (r+1)*range) belong to rank r */

  int* keys = malloc(sizeof(int) * (size_t)nlocal);
  int* send = malloc(sizeof(int) * (size_t)nlocal);
  int* recv = malloc(sizeof(int) * (size_t)(total / np * 4 + 1024)); /* generous, like IS */
  long* hist = calloc((size_t)range, sizeof(long));
  int *scount = malloc(sizeof(int) * np), *rcount = malloc(sizeof(int) * np);
  int *sdispl = malloc(sizeof(int) * np), *rdispl = malloc(sizeof(int) * np), *fill = malloc(sizeof(int) * np);
  uint64_t seed = 314159265ull + (uint64_t)rank * 1000003ull;
  long long local_sum = 0;
  for (long i = 0; i < nlocal; i++) {
    /* IS-like distribution: average of four uniform numbers (bell-shaped key counts). */
    long k = 0;
    for (int j = 0; j < 4; j++) k += (long)(lcg(&seed) % (uint64_t)max_key);
    keys[i] = (int)(k / 4);
    local_sum += keys[i];
  }

  double t_total = 0, t_comm = 0;
  int ok = 1;
  long received = 0;
  long long recv_sum = 0;
  for (int it = 0; it <= iters; it++) { /* iteration 0 is untimed warm-up, as in NPB */
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    memset(scount, 0, sizeof(int) * np);
    for (long i = 0; i < nlocal; i++) scount[keys[i] / range]++;
    sdispl[0] = 0;
    for (int p = 1; p < np; p++) sdispl[p] = sdispl[p - 1] + scount[p - 1];
    memcpy(fill, sdispl, sizeof(int) * np);
    for (long i = 0; i < nlocal; i++) send[fill[keys[i] / range]++] = keys[i];
    double tc = MPI_Wtime();
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
    rdispl[0] = 0;
    for (int p = 1; p < np; p++) rdispl[p] = rdispl[p - 1] + rcount[p - 1];
    received = rdispl[np - 1] + rcount[np - 1];
    if (received > total / np * 4 + 1024) {
      fprintf(stderr, "is-proxy: rank %d receives %ld keys, more than its buffer\n", rank, received);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Alltoallv(send, scount, sdispl, MPI_INT, recv, rcount, rdispl, MPI_INT, MPI_COMM_WORLD);
    tc = MPI_Wtime() - tc;
    memset(send, 0, sizeof(int) * (size_t)nlocal); /* the send buffer is reused at once */
    /* Histogram the received keys in arrival order: peer 0's block first. */
    memset(hist, 0, sizeof(long) * (size_t)range);
    recv_sum = 0;
    for (int p = 0; p < np; p++)
      for (int i = rdispl[p]; i < rdispl[p] + rcount[p]; i++) {
        const long k = recv[i] - (long)rank * range;
        if (k < 0 || k >= range) ok = 0;
        else hist[k]++;
        recv_sum += recv[i];
      }
    /* Rank the keys (prefix sums), as IS's full_verify prepares. */
    for (long k = 1; k < range; k++) hist[k] += hist[k - 1];
    const double t1 = MPI_Wtime();
    if (it > 0) {
      t_total += t1 - t0;
      t_comm += tc;
    }
    keys[(it * 7919L) % nlocal] ^= 0; /* keys unchanged between iterations (IS modifies two) */
  }

  /* Verification. */
  long all_received = 0;
  long long all_sum = 0, all_recv_sum = 0;
  MPI_Allreduce(&received, &all_received, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&local_sum, &all_sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&recv_sum, &all_recv_sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (all_received != total || all_sum != all_recv_sum) ok = 0;
  /* Globally sorted: my smallest key >= the left neighbour's largest. */
  int my_min = (int)max_key, my_max = -1;
  for (long i = 0; i < received; i++) {
    if (recv[i] < my_min) my_min = recv[i];
    if (recv[i] > my_max) my_max = recv[i];
  }
  int left_max = -1;
  MPI_Sendrecv(&my_max, 1, MPI_INT, (rank + 1) % np, 1, &left_max, 1, MPI_INT, (rank + np - 1) % np, 1,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rank > 0 && received > 0 && left_max >= 0 && my_min < left_max) ok = 0;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  double tmax = 0, cmax = 0;
  MPI_Reduce(&t_total, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&t_comm, &cmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    printf(" IS-proxy Benchmark Completed\n Class           =                        %c\n", cls);
    printf(" Size            =             %12ld\n Iterations      =             %12d\n", total, iters);
    printf(" Total processes =             %12d\n", np);
    printf(" Time in seconds =             %12.4f\n", tmax);
    printf(" Comm time (alltoall+alltoallv) = %12.4f\n", cmax);
    printf(" Verification    =               %s\n", all_ok ? "SUCCESSFUL" : "UNSUCCESSFUL");
  }
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
