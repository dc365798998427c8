/* What makes one launch of np 4 on 2 CPUs fast or slow as a whole (docs/benchmarks.md, "The cost
 * model against measurements", session 13): which ranks share a CPU (with more ranks than CPUs,
 * `mpirun --oversubscribe` binds nothing and the scheduler pairs them), the buffers' memory, and
 * what the CPUs did before the timing. This program, in one launch, times MPI_Bcast and
 * MPI_Alltoall (sizes and kinds interleaved, each call after a barrier, the slowest rank's time,
 * median over iterations) in rounds; each round runs every "mode" once, rotated:
 *   launched   the ranks' own CPU mask (what the launcher gave: nothing is changed); every call
 *              records the CPU each rank ran on just before it (sched_getcpu)
 *   s:AB|CD    rank i pinned (sched_setaffinity) to the first or second CPU of its launched mask,
 *              by the pattern: s:01|23 puts ranks 0,1 on the first CPU and 2,3 on the second
 * Every rank's original mask is restored before MPI_Finalize. With --sets S (S >= 2) the modes are
 * instead S sets of buffers, each allocated on its own (other pages of memory), all under the
 * launched mask: "buf0", "buf1", ... Run it without tnbc.
 * --spacer-mib X: X MiB allocated and touched after each set (kept), so that the sets lie further apart
 * in physical memory; the JSON gives each set's median physical address per rank (root only).
 * --spin-s S / --idle-s S: before any timing, every rank busy on its CPU for S seconds / asleep S seconds.
 * usage: cpu_pairing [--sizes 64k,4m] [--iterations 5] [--rounds 3] [--sets S] [--spacer-mib X] [--spin-s S]
 *                    [--idle-s S] [--json FILE]
 *        (np 4 for the pinned modes; another np runs `launched` only)
 */
#include <getopt.h>
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_mpi.h"

#define MAX_SIZES 8
#define MAX_RANKS 64
#define NUM_MODES 4
#define MAX_SETS 8

static const char* const kModes[NUM_MODES] = {"launched", "s:01|23", "s:02|13", "s:03|12"};
/* For the pinned modes at np 4: the CPU slot (0 or 1) of each rank. */
static const int kSlot[NUM_MODES][4] = {{-1, -1, -1, -1}, {0, 0, 1, 1}, {0, 1, 0, 1}, {0, 1, 1, 0}};

/* The pairing the ranks' CPUs show: "01|23" when ranks 0,1 share one CPU and 2,3 another (np 4, two
 * ranks per CPU), else the CPUs themselves ("0,0,0,1"). */
static void pairing_name(const int* cpu, int np, char* out, size_t n) {
  if (np == 4) {
    int partner = -1, with_zero = 0;
    for (int r = 1; r < 4; r++)
      if (cpu[r] == cpu[0]) partner = r, with_zero++;
    int a = -1, b = -1; /* the two ranks not with rank 0 */
    for (int r = 1; r < 4; r++)
      if (r != partner) *(a < 0 ? &a : &b) = r;
    if (with_zero == 1 && cpu[a] == cpu[b]) {
      snprintf(out, n, "0%d|%d%d", partner, a, b);
      return;
    }
  }
  size_t used = 0;
  out[0] = 0;
  for (int r = 0; r < np && used + 8 < n; r++) used += (size_t)snprintf(out + used, n - used, r ? ",%d" : "%d", cpu[r]);
}

/* The median physical address (GiB) of the pages of [p, p + n) (/proc/self/pagemap; root only: -1 otherwise). */
static double median_phys_gib(const char* p, size_t n) {
  const long page = sysconf(_SC_PAGESIZE);
  FILE* f = fopen("/proc/self/pagemap", "rb");
  if (!f) return -1;
  const size_t pages = n / (size_t)page;
  double* g = calloc(pages ? pages : 1, sizeof(double));
  size_t k = 0;
  for (size_t i = 0; i < pages; i++) {
    uint64_t e = 0;
    const uintptr_t v = ((uintptr_t)p + i * (size_t)page) / (uintptr_t)page;
    if (fseek(f, (long)(v * sizeof e), SEEK_SET) == 0 && fread(&e, sizeof e, 1, f) == 1 && (e >> 63) && (e & ((1ULL << 55) - 1)))
      g[k++] = (double)(e & ((1ULL << 55) - 1)) * (double)page / (1u << 30);
  }
  fclose(f);
  const double med = k ? bench_median(g, (int)k) : -1;
  free(g);
  return med;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  size_t sizes[MAX_SIZES];
  int nsizes = 0, iterations = 5, rounds = 3, sets = 1, spacer_mib = 0, bad = np > MAX_RANKS;
  double spin_s = 0, idle_s = 0;
  const char* json = NULL;
  char list[256] = "64k,4m";
  static const struct option opts[] = {{"sizes", required_argument, 0, 's'}, {"iterations", required_argument, 0, 'i'},
                                       {"rounds", required_argument, 0, 'r'}, {"sets", required_argument, 0, 'b'}, {"spacer-mib", required_argument, 0, 'p'}, {"spin-s", required_argument, 0, 'w'}, {"idle-s", required_argument, 0, 'z'}, {"json", required_argument, 0, 'j'},
                                       {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 's') snprintf(list, sizeof list, "%s", optarg);
    else if (c == 'i') bad |= (iterations = atoi(optarg)) < 1;
    else if (c == 'r') bad |= (rounds = atoi(optarg)) < 1;
    else if (c == 'b') bad |= (sets = atoi(optarg)) < 1 || sets > MAX_SETS;
    else if (c == 'p') bad |= (spacer_mib = atoi(optarg)) < 0;
    else if (c == 'w') bad |= (spin_s = atof(optarg)) < 0;
    else if (c == 'z') bad |= (idle_s = atof(optarg)) < 0;
    else if (c == 'j') json = optarg;
    else bad = 1;
  }
  nsizes = bench_parse_sizes(list, sizes, MAX_SIZES);
  if (bad || nsizes <= 0) {
    if (rank == 0)
      fprintf(stderr, "usage: cpu_pairing [--sizes 64k,4m] [--iterations N] [--rounds R] [--sets S (<= %d)] "
                      "[--spacer-mib X] [--spin-s S] [--idle-s S] [--json FILE] (np <= %d)\n", MAX_SETS, MAX_RANKS);
    MPI_Finalize();
    return 2;
  }
  cpu_set_t launched;
  CPU_ZERO(&launched);
  if (sched_getaffinity(0, sizeof launched, &launched) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
  int first_cpus[2] = {-1, -1}, found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++)
    if (CPU_ISSET(cpu, &launched)) first_cpus[found++] = cpu;
  int can_pin = np == 4 && found == 2, all_can_pin = 0;
  MPI_Allreduce(&can_pin, &all_can_pin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  const int modes = sets > 1 ? sets : all_can_pin ? NUM_MODES : 1;
  char mode_names[MAX_SETS > NUM_MODES ? MAX_SETS : NUM_MODES][16];
  for (int m = 0; m < modes; m++) {
    if (sets > 1) snprintf(mode_names[m], sizeof mode_names[m], "buf%d", m);
    else snprintf(mode_names[m], sizeof mode_names[m], "%s", kModes[m]);
  }

  size_t largest = 0;
  for (int s = 0; s < nsizes; s++) largest = sizes[s] > largest ? sizes[s] : largest;
  char* sends[MAX_SETS];
  char* recvs[MAX_SETS];
  char* spacers[MAX_SETS] = {0};
  double phys[MAX_SETS][2];
  for (int b = 0; b < sets; b++) {
    sends[b] = malloc(largest * (size_t)np);
    recvs[b] = malloc(largest * (size_t)np);
    memset(sends[b], rank + 1, largest * (size_t)np);
    memset(recvs[b], 0, largest * (size_t)np);
    phys[b][0] = median_phys_gib(sends[b], largest * (size_t)np);
    phys[b][1] = median_phys_gib(recvs[b], largest * (size_t)np);
    if (spacer_mib > 0) { /* other pages between the sets: kept, touched */
      spacers[b] = malloc((size_t)spacer_mib << 20);
      if (spacers[b]) memset(spacers[b], 1, (size_t)spacer_mib << 20);
    }
  }
  /* before any timing: every rank busy on its CPU for spin_s, or asleep for idle_s */
  for (const double t0 = bench_now(); bench_now() - t0 < spin_s;) {
  }
  if (idle_s > 0) {
    const struct timespec ts = {(time_t)idle_s, (long)((idle_s - (double)(time_t)idle_s) * 1e9)};
    nanosleep(&ts, NULL);
  }
  double all_phys[MAX_RANKS * MAX_SETS * 2];
  MPI_Gather(phys, 2 * MAX_SETS, MPI_DOUBLE, all_phys, 2 * MAX_SETS, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  const int cases = 2 * nsizes;
  const size_t per_mode = (size_t)rounds * (size_t)iterations;
  double* t = calloc((size_t)modes * (size_t)cases * per_mode, sizeof(double));
  /* launched mode: per call the pairing seen before it (rank 0 keeps a small table of names). */
  enum { MAX_NAMES = 16 };
  char names[MAX_NAMES][64];
  int counts[MAX_NAMES] = {0}, nnames = 0, others = 0;
  /* per timed call, in order: the index of its pairing's name ('a' + n; '?' past MAX_NAMES) */
  char* sequence = calloc((size_t)modes * (size_t)cases * per_mode + 1, 1);
  size_t calls = 0;
  int cpus[MAX_RANKS];
  for (int round = -1; round < rounds; round++) { /* -1: warm-up, every mode once */
    for (int k = 0; k < modes; k++) {
      const int mode = (k + (round < 0 ? 0 : round)) % modes;
      char* send = sends[sets > 1 ? mode : 0];
      char* recv = recvs[sets > 1 ? mode : 0];
      if (mode == 0 || sets > 1) {
        sched_setaffinity(0, sizeof launched, &launched);
      } else {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(first_cpus[kSlot[mode][rank]], &one);
        sched_setaffinity(0, sizeof one, &one);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      for (int it = 0; it < iterations; it++) {
        for (int q = 0; q < cases; q++) {
          const int which = (q + it) % cases;
          const size_t bytes = sizes[which / 2];
          if (mode == 0 || sets > 1) {
            int mine = sched_getcpu();
            MPI_Gather(&mine, 1, MPI_INT, cpus, 1, MPI_INT, 0, MPI_COMM_WORLD);
            if (rank == 0 && round >= 0) {
              char name[64];
              pairing_name(cpus, np, name, sizeof name);
              int n = 0;
              while (n < nnames && strcmp(names[n], name) != 0) n++;
              if (n == nnames && nnames < MAX_NAMES) snprintf(names[nnames++], sizeof names[0], "%s", name);
              if (n < nnames) counts[n]++;
              else others++;
              sequence[calls++] = n < nnames ? (char)('a' + n) : '?';
            }
          }
          const double worst = bench_timed_bcast_or_alltoall(which % 2 == 0, send, recv, bytes);
          if (round >= 0)
            t[((size_t)mode * (size_t)cases + (size_t)which) * per_mode + (size_t)round * (size_t)iterations +
              (size_t)it] = worst;
        }
      }
    }
  }
  sched_setaffinity(0, sizeof launched, &launched);

  bench_json j;
  if (bench_json_open(&j, rank == 0 ? json : NULL, "cpu_pairing") != 0) MPI_Abort(MPI_COMM_WORLD, 2);
  bench_json_mpi_header(&j);
  bench_json_object(&j, "parameters");
  bench_json_int(&j, "np", np);
  bench_json_int(&j, "iterations", iterations);
  bench_json_int(&j, "rounds", rounds);
  bench_json_end(&j);
  bench_json_array(&j, "pairings_seen");
  for (int n = 0; n < nnames; n++) {
    bench_json_object(&j, NULL);
    bench_json_str(&j, "pairing", names[n]);
    bench_json_int(&j, "calls", counts[n]);
    bench_json_end(&j);
  }
  bench_json_end(&j);
  bench_json_int(&j, "calls_unnamed", others);
  bench_json_array(&j, "buffers_phys_gib"); /* per set, per rank: send, receive buffer's median physical GiB */
  for (int b = 0; b < sets; b++) {
    bench_json_object(&j, NULL);
    double v[2 * MAX_RANKS];
    for (int r = 0; r < np; r++) v[2 * r] = all_phys[r * 2 * MAX_SETS + 2 * b], v[2 * r + 1] = all_phys[r * 2 * MAX_SETS + 2 * b + 1];
    bench_json_nums(&j, "send_recv_per_rank", v, 2 * np);
    bench_json_end(&j);
  }
  bench_json_end(&j);
  bench_json_str(&j, "pairing_sequence", sequence); /* per call in order: 'a' = pairings_seen[0], ... */
  bench_json_array(&j, "results");
  if (rank == 0) {
    printf("cpu_pairing: np=%d, %d rounds x %d iterations (median of the slowest rank's time)\n", np, rounds,
           iterations);
    printf("  %s, pairing before each call:", sets > 1 ? "every mode" : "launched mode");
    for (int n = 0; n < nnames; n++) printf(" %s x%d", names[n], counts[n]);
    printf("\n  %-9s %10s", "kind", "bytes");
    for (int m = 0; m < modes; m++) printf(" %10s", mode_names[m]);
    printf("   (median us)\n");
  }
  for (int which = 0; which < cases; which++) {
    const char* kind = which % 2 == 0 ? "bcast" : "alltoall";
    if (rank == 0) printf("  %-9s %10zu", kind, sizes[which / 2]);
    for (int m = 0; m < modes; m++) {
      const double* v = t + ((size_t)m * (size_t)cases + (size_t)which) * per_mode;
      const double med = bench_median_of(v, (int)per_mode);
      if (rank == 0) printf(" %10.1f", med * 1e6);
      bench_json_object(&j, NULL);
      bench_json_str(&j, "mode", mode_names[m]);
      bench_json_str(&j, "kind", kind);
      bench_json_int(&j, "bytes", (long long)sizes[which / 2]);
      bench_json_num(&j, "median_s", med);
      bench_json_nums(&j, "times_s", v, (int)per_mode);
      bench_json_end(&j);
    }
    if (rank == 0) printf("\n");
  }
  bench_json_close(&j);
  free(t);
  free(sequence);
  for (int b = 0; b < sets; b++) {
    free(sends[b]);
    free(recvs[b]);
    free(spacers[b]);
  }
  MPI_Finalize();
  return 0;
}
