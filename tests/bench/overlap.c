#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* RUSAGE_THREAD */
#endif
#include "overlap.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_mpi.h"

static const char* const kVariant[VAR_COUNT] = {"blocking", "mpi3", "tnbc"};
/* A scenario during which the hypervisor took more than this share of the machine's CPU time
 * gets a line (the harness measures such a run again: npb-harness/hostload.py). */
static const double kStealNote = 0.01;

enum { CURC_NONE, CURC_LONG, CURC_SHORT };
enum { RATE_SLOW, RATE_FAST };

typedef struct scenario_def {
  char id;
  const char* what;
  int curc;   /* CURC_* */
  int rate;   /* RATE_*; (a) reads fast so that the run stays short */
} scenario_def;

static const scenario_def kScenarios[] = {
    {'a', "T_CURC >= Tcomm", CURC_LONG, RATE_FAST},
    {'b', "no CURC, R_CRC < Rcomm", CURC_NONE, RATE_SLOW},
    {'c', "no CURC, R_CRC > Rcomm", CURC_NONE, RATE_FAST},
    {'d', "0 < T_CURC < Tcomm, R_CRC < Rcomm", CURC_SHORT, RATE_SLOW},
    {'e', "0 < T_CURC < Tcomm, R_CRC > Rcomm", CURC_SHORT, RATE_FAST},
};
enum { NSCEN = sizeof kScenarios / sizeof kScenarios[0] };

/* Times of one run of one variant (seconds). */
/* F_INIT_PREEMPT: the calling thread's involuntary context switches inside the call (another
 * thread took its CPU: on a one-CPU node tnbc's progress thread woken by the call, or the kernel). */
enum { F_TOTAL, F_INIT, F_CURC, F_WAIT, F_CRC, F_INIT_CPU, F_INIT_PREEMPT, F_COUNT };

/* The options every Table 1 program takes (after its own, in --help). */
static const char kCommonUsage[] =
    "  --iterations N      interleaved iterations per scenario (default 10)\n"
    "  --calibration N     blocking calls that measure Tcomm first (default 5)\n"
    "  --scenarios LETTERS subset of abcde (default abcde)\n"
    "  --curc-long F       T_CURC = F * Tcomm in (a) (default 1.5)\n"
    "  --curc-short F      T_CURC = F * Tcomm in (d), (e) (default 0.5)\n"
    "  --rate-slow F       R_CRC = F * Rcomm in (b), (d) (default 0.5)\n"
    "  --rate-fast F       R_CRC = F * Rcomm in (a), (c), (e) (default 2)\n"
    "  --json FILE         write the results as JSON (format tnbc-bench)\n"
    "  --curc-sleep        diagnostic: CURC sleeps for the time its computation would take, so\n"
    "                      the CPU is free meanwhile (not the paper's scenarios: it shows what the\n"
    "                      communication's own CPU work costs the computation on this machine)\n"
    "  --align WHERE       buffers where malloc puts them (malloc, the default: a large block\n"
    "                      starts 16 bytes into a page, so tnbc completes the pieces landing in\n"
    "                      the partial first and last pages in the call) or on a page (page)\n";


/* ---------------------------------------------------------------- computation ---- */

static volatile double g_sink;
static volatile uint64_t g_checksum;   /* keeps calibration's CRC passes from being optimised away */

/* CURC: `units` steps of a dependent floating-point chain; touches no memory. */
static void curc_compute(long units) {
  double x = 1.0;
  for (long i = 0; i < units; i++) x = x * 1.0000001 + 1e-9;
  g_sink = x;
}

static double g_curc_sleep_unit;  /* seconds per CURC step when CURC sleeps (--curc-sleep), else 0 */

static void curc(long units) {
  if (g_curc_sleep_unit <= 0) {
    curc_compute(units);
    return;
  }
  const double s = (double)units * g_curc_sleep_unit;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* CRC: reads the blocks in `order`, every 64-byte line folded into a checksum, with `units`
 * steps of the CURC chain per block spread evenly over its lines (this sets R_CRC). */
static uint64_t crc(const unsigned char* buf, const int* order, int nblocks, size_t block_bytes, long units) {
  const size_t lines = block_bytes / 64;
  uint64_t acc = 0xcbf29ce484222325ULL;
  double x = 1.0;
  for (int b = 0; b < nblocks; b++) {
    const uint64_t* w = (const uint64_t*)(buf + (size_t)order[b] * block_bytes);
    uint64_t done = 0;
    for (size_t l = 0; l < lines; l++, w += 8) {
      for (int k = 0; k < 8; k++) acc = (acc ^ w[k]) * 0x100000001b3ULL;
      const uint64_t upto = (uint64_t)(l + 1) * (uint64_t)units / lines;
      for (; done < upto; done++) x = x * 1.0000001 + 1e-9;
    }
  }
  g_sink = x;
  return acc;
}

/* ---------------------------------------------------------------- parameters ---- */

void* overlap_alloc(const overlap_params* p, size_t bytes) {
  void* b = NULL;
  if (p->page_aligned) {
    if (posix_memalign(&b, (size_t)sysconf(_SC_PAGESIZE), bytes ? bytes : 1) != 0) b = NULL;
  } else {
    b = malloc(bytes ? bytes : 1);
  }
  if (!b) {
    fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(b, 0, bytes);
  return b;
}

int overlap_parse(int argc, char** argv, overlap_params* p, int bcast, const char* usage) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static const struct option opts[] = {
      {"bytes", required_argument, 0, 'b'},       {"segments", required_argument, 0, 'm'},
      {"root", required_argument, 0, 'r'},        {"iterations", required_argument, 0, 'i'},
      {"calibration", required_argument, 0, 'k'}, {"order", required_argument, 0, 'o'},
      {"scenarios", required_argument, 0, 's'},   {"curc-long", required_argument, 0, 'L'},
      {"curc-short", required_argument, 0, 'S'},  {"rate-slow", required_argument, 0, 'W'},
      {"rate-fast", required_argument, 0, 'F'},   {"json", required_argument, 0, 'j'},
      {"curc-sleep", no_argument, 0, 'Z'},        {"align", required_argument, 0, 'A'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  const char* bad = NULL;
  int c;
  opterr = 0;
  while (!bad && (c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
      case 'b': if ((p->bytes = bench_parse_bytes(optarg)) == 0) bad = "--bytes wants a size (e.g. 1048576, 1M)"; break;
      case 'm': if (!bcast || (p->segments = atoi(optarg)) < 1) bad = "--segments wants a count >= 1 (Bcast only)"; break;
      case 'r': if (!bcast || (p->root = atoi(optarg)) < 0) bad = "--root wants a rank (Bcast only)"; break;
      case 'i': if ((p->iterations = atoi(optarg)) < 1) bad = "--iterations wants a count >= 1"; break;
      case 'k': if ((p->calibration = atoi(optarg)) < 1) bad = "--calibration wants a count >= 1"; break;
      case 'o': p->order = optarg; break;
      case 's':
        p->scenarios = optarg;
        if (!*optarg || strspn(optarg, "abcde") != strlen(optarg)) bad = "--scenarios wants letters from abcde";
        break;
      case 'L':
        if ((p->curc_long = atof(optarg)) < 1.0) bad = "--curc-long wants a multiple of Tcomm >= 1 (scenario a)";
        break;
      case 'S':
        p->curc_short = atof(optarg);
        if (!(p->curc_short > 0 && p->curc_short < 1)) bad = "--curc-short wants a multiple of Tcomm in (0, 1) (d, e)";
        break;
      case 'W':
        p->rate_slow = atof(optarg);
        if (!(p->rate_slow > 0 && p->rate_slow < 1)) bad = "--rate-slow wants a multiple of Rcomm in (0, 1) (b, d)";
        break;
      case 'F':
        if ((p->rate_fast = atof(optarg)) <= 1.0) bad = "--rate-fast wants a multiple of Rcomm > 1 (a, c, e)";
        break;
      case 'j': p->json = optarg; break;
      case 'Z': p->curc_sleep = 1; break;
      case 'A':
        if (strcmp(optarg, "page") == 0) p->page_aligned = 1;
        else if (strcmp(optarg, "malloc") == 0) p->page_aligned = 0;
        else bad = "--align wants malloc or page";
        break;
      case 'h':
        if (rank == 0) printf("%s%s", usage, kCommonUsage);
        return 1;
      default: bad = "unknown option or missing value (--help lists them)"; break;
    }
  }
  if (!bad && optind < argc) bad = "unexpected argument (--help lists the options)";
  /* The CRC reads whole 64-byte lines of every sub-message; MPI counts are ints. */
  if (!bad && (p->bytes % (64 * (size_t)(bcast ? p->segments : 1)) != 0 || p->bytes > INT_MAX))
    bad = bcast ? "--bytes must be a multiple of 64 * --segments, below 2 GiB"
                : "--bytes must be a multiple of 64, below 2 GiB";
  if (bad) {
    if (rank == 0) fprintf(stderr, "%s: %s\n", argv[0], bad);
    return -1;
  }
  return 0;
}

/* order: seq 0..n-1 | reverse | swap {n-1, 1, 2, ..., n-2, 0} (the paper's {3,1,2,0} at n=4) |
 * self {rank, rank+1, ..., rank-1 mod n}: each rank its own block first (per rank; with one block
 * per rank, Alltoall) | an explicit comma-separated permutation of 0..n-1. Returns an error
 * message or NULL. */
static const char* make_order(const char* spec, int n, int rank, int* out) {
  if (strcmp(spec, "self") == 0) {
    for (int i = 0; i < n; i++) out[i] = (rank + i) % n;
    return NULL;
  }
  if (strcmp(spec, "seq") == 0 || strcmp(spec, "reverse") == 0 || strcmp(spec, "swap") == 0) {
    for (int i = 0; i < n; i++) out[i] = spec[0] == 'r' ? n - 1 - i : i;
    if (spec[1] == 'w' && n > 1) {
      out[0] = n - 1;
      out[n - 1] = 0;
    }
    return NULL;
  }
  int* seen = calloc((size_t)n, sizeof(int));
  const char* s = spec;
  int k = 0;
  const char* err = NULL;
  while (!err && *s) {
    char* end;
    const long v = strtol(s, &end, 10);
    if (end == s || v < 0 || v >= n || k >= n || seen[v]) {
      err = "--order: seq, reverse, swap, self or a permutation of the sub-messages (e.g. 3,1,2,0)";
    } else if (*end && *end != ',') {
      err = "--order: seq, reverse, swap, self or a comma-separated permutation";
    } else {
      seen[v] = 1;
      out[k++] = (int)v;
      s = *end ? end + 1 : end;
    }
  }
  if (!err && k != n) err = "--order: the permutation must name every sub-message once";
  free(seen);
  return err;
}

/* ---------------------------------------------------------------- calibration ---- */

typedef struct calibration {
  double tcomm;      /* blocking collective, median of the max over ranks */
  double rcomm;      /* Dcomm / Tcomm */
  double curc_unit;  /* seconds per CURC step */
  double crc_base;   /* one CRC pass over Dcomm without computation */
  double crc_unit;   /* seconds per computation step inside the CRC */
} calibration;

static double mean_over_ranks(double v) {
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  double sum = 0;
  PMPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / np;
}

/* Median CPU time of `reps` CURC runs of `units` steps (is_curc), or of `reps` CRC passes over
 * the blocking variant's buffer with `units` steps per block. CPU time, so that other processes
 * on a shared machine do not inflate the cost of a step (the scenarios' wall times are measured,
 * and their conditions checked, on what actually happened). */
static double median_time(int reps, int is_curc, const struct overlap_collective* c, const int* order, long units) {
  double t[9];
  if (reps > 9) reps = 9;
  for (int i = 0; i < reps; i++) {
    const double t0 = bench_cpu_now();
    if (is_curc) curc_compute(units);
    else g_checksum = crc(c->buffer(c->ctx, VAR_BLOCKING), order, c->nblocks, c->block_bytes, units);
    t[i] = bench_cpu_now() - t0;
  }
  return bench_median(t, reps);
}

static void calibrate(const overlap_params* p, const struct overlap_collective* c, const int* order, calibration* k) {
  c->prepare(c->ctx, 0, VAR_BLOCKING);
  for (int w = 0; w < 2; w++) {
    PMPI_Barrier(MPI_COMM_WORLD);
    c->run(c->ctx, VAR_BLOCKING, NULL);
  }
  double* t = calloc((size_t)p->calibration, sizeof(double));
  for (int i = 0; i < p->calibration; i++) {
    PMPI_Barrier(MPI_COMM_WORLD);
    const double t0 = bench_now();
    c->run(c->ctx, VAR_BLOCKING, NULL);
    t[i] = bench_now() - t0;
  }
  bench_max_over_ranks(t, t, p->calibration);
  k->tcomm = bench_median(t, p->calibration);
  k->rcomm = (double)c->dcomm / k->tcomm;
  free(t);

  /* Cost of one computation step, in CPU time (see median_time), averaged over the ranks. */
  long n = 1 << 16;
  while (median_time(1, 1, c, order, n) < 0.005) n *= 2;
  k->curc_unit = mean_over_ranks(median_time(7, 1, c, order, n) / (double)n);

  const double base = median_time(7, 0, c, order, 0);
  const long u1 = (long)(4.0 * base / k->curc_unit / c->nblocks) + 64;
  const double with = median_time(7, 0, c, order, u1);
  double unit = (with - base) / ((double)u1 * c->nblocks);
  if (!(unit > 0)) unit = k->curc_unit;  /* noise swallowed the difference */
  k->crc_base = mean_over_ranks(base);
  k->crc_unit = mean_over_ranks(unit);
}

/* What a scenario runs: the targets and the computation steps that should meet them. */
typedef struct plan {
  double tcomm;                      /* Tcomm the targets are relative to */
  double t_curc, t_crc;              /* targets (wall clock) */
  double stretch_curc, stretch_crc;  /* wall clock / CPU time seen in the trial runs */
  long curc_units, crc_units;        /* CURC steps; CRC steps per block */
  int reachable;                     /* 0: reading alone is slower than the target R_CRC */
} plan;

static void make_plan(const calibration* k, int nblocks, double tcomm, double curc_mult, double rate_mult,
                      double stretch_curc, double stretch_crc, plan* out) {
  out->tcomm = tcomm;
  out->t_curc = curc_mult * tcomm;
  out->t_crc = tcomm / rate_mult;   /* Dcomm / R_CRC with R_CRC = rate_mult * Dcomm / Tcomm */
  out->stretch_curc = stretch_curc;
  out->stretch_crc = stretch_crc;
  out->curc_units = lround(out->t_curc / stretch_curc / k->curc_unit);
  const double extra = out->t_crc / stretch_crc - k->crc_base;
  out->reachable = extra >= 0;
  out->crc_units = extra > 0 ? lround(extra / (k->crc_unit * nblocks)) : 0;
}

/* ---------------------------------------------------------------- measurement ---- */

static void run_variant(const struct overlap_collective* c, int v, long curc_units, long crc_units, const int* order,
                        double* f, uint64_t* sum) {
  MPI_Request req = MPI_REQUEST_NULL;
  PMPI_Barrier(MPI_COMM_WORLD);
  struct rusage ru0, ru1;
  getrusage(RUSAGE_THREAD, &ru0);
  const double t0 = bench_now(), cpu0 = bench_cpu_now();
  c->run(c->ctx, v, &req);
  const double t1 = bench_now(), cpu1 = bench_cpu_now();
  getrusage(RUSAGE_THREAD, &ru1);
  curc(curc_units);
  const double tc = bench_now();
  if (v == VAR_MPI3) PMPI_Wait(&req, MPI_STATUS_IGNORE);
  const double t2 = bench_now();
  *sum = crc(c->buffer(c->ctx, v), order, c->nblocks, c->block_bytes, crc_units);
  const double t3 = bench_now();
  f[F_TOTAL] = t3 - t0;
  f[F_INIT] = t1 - t0;
  f[F_CURC] = tc - t1;
  f[F_WAIT] = t2 - tc;
  f[F_CRC] = t3 - t2;
  f[F_INIT_CPU] = cpu1 - cpu0;
  f[F_INIT_PREEMPT] = (double)(ru1.ru_nivcsw - ru0.ru_nivcsw);
}

static long first_difference(const unsigned char* a, const unsigned char* b, size_t n) {
  if (memcmp(a, b, n) == 0) return -1;
  size_t i = 0;
  while (a[i] == b[i]) i++;
  return (long)i;
}

/* Checks every variant's result of one iteration; returns the number of wrong results. */
static int verify(const struct overlap_collective* c, long seed, const uint64_t* sums, char scen, int it) {
  int rank, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long off = c->check_reference(c->ctx, seed);
  if (off >= 0) {
    fprintf(stderr, "rank %d: scenario %c iteration %d: blocking result wrong at byte %ld\n", rank, scen, it, off);
    bad++;
  }
  const unsigned char* ref = c->buffer(c->ctx, VAR_BLOCKING);
  for (int v = VAR_MPI3; v < VAR_COUNT; v++) {
    off = first_difference(c->buffer(c->ctx, v), ref, c->dcomm);
    if (off >= 0 || sums[v] != sums[VAR_BLOCKING]) {
      fprintf(stderr, "rank %d: scenario %c iteration %d: %s result differs from the blocking one (byte %ld%s)\n",
              rank, scen, it, kVariant[v], off, sums[v] != sums[VAR_BLOCKING] ? ", CRC checksum" : "");
      bad++;
    }
  }
  return bad;
}

typedef struct variant_result {
  double total, init, overlap, achieved, eq3, tinit_ratio, tinit_cpu_ratio, vs_mpi3, preempted;
} variant_result;

/* The per-iteration values of field f of variant v: x[v][f][0..n-1]. */
static double* series(double* x, int n, int v, int f) { return &x[((size_t)v * F_COUNT + f) * n]; }

static int condition_holds(const scenario_def* d, double tcomm, double t_curc, double r_ratio) {
  const int rate_ok = d->rate == RATE_SLOW ? r_ratio < 1.0 : r_ratio > 1.0;
  switch (d->curc) {
    case CURC_LONG: return t_curc >= tcomm;
    case CURC_NONE: return rate_ok;
    default: return t_curc > 0 && t_curc < tcomm && rate_ok;
  }
}

/* Runs one scenario's iterations; x[v][f][it] gets the max over ranks. Returns wrong results. */
static int measure(const overlap_params* p, const struct overlap_collective* c, const int* order, char id,
                   long curc_units, long crc_units, long* seed, double* x) {
  const int n = p->iterations;
  int bad = 0;
  for (int it = 0; it < n; it++) {
    ++*seed;
    uint64_t sums[VAR_COUNT];
    for (int r = 0; r < VAR_COUNT; r++) {   /* rotated, so no variant always runs first */
      const int v = (it + r) % VAR_COUNT;
      double f[F_COUNT];
      /* Each variant's data written just before it, as a program's before its call. Written once
       * per iteration, tnbc's 4 MiB Alltoall spent 0.78 ms in its call where it ran first and
       * 0.95-0.96 where it ran after another variant (np 2 on 2 emulated nodes); written before
       * each, 0.81 in every position (docs/benchmarks.md, "Session 37"). */
      c->prepare(c->ctx, *seed, v);
      run_variant(c, v, curc_units, crc_units, order, f, &sums[v]);
      for (int q = 0; q < F_COUNT; q++) series(x, n, v, q)[it] = f[q];
    }
    bad += verify(c, *seed, sums, id, it);
  }
  bench_max_over_ranks(x, x, VAR_COUNT * F_COUNT * n);
  return bad;
}

/* A few blocking runs with the first plan: Tcomm now, and how much longer than their CPU time
 * CURC and CRC take on this machine at this moment (other processes share the cores). The
 * plan is then made again from those, so that the scenario's conditions hold where it runs. */
static void refine(const calibration* k, const struct overlap_collective* c, const int* order, double curc_mult,
                   double rate_mult, long* seed, plan* pl) {
  enum { TRIALS = 3 };
  double x[F_COUNT][TRIALS];
  for (int it = 0; it < TRIALS; it++) {
    c->prepare(c->ctx, ++*seed, VAR_BLOCKING);
    double f[F_COUNT];
    uint64_t sum;
    run_variant(c, VAR_BLOCKING, pl->curc_units, pl->crc_units, order, f, &sum);
    for (int q = 0; q < F_COUNT; q++) x[q][it] = f[q];
  }
  bench_max_over_ranks(&x[0][0], &x[0][0], F_COUNT * TRIALS);
  const double tcomm = bench_median(x[F_INIT], TRIALS);
  const double curc_cpu = pl->curc_units * k->curc_unit;
  const double crc_cpu = k->crc_base + (double)pl->crc_units * c->nblocks * k->crc_unit;
  const double s_curc = curc_cpu > 0 ? bench_median(x[F_CURC], TRIALS) / curc_cpu : 1.0;
  const double s_crc = bench_median(x[F_CRC], TRIALS) / crc_cpu;
  make_plan(k, c->nblocks, tcomm, curc_mult, rate_mult, s_curc > 1 ? s_curc : 1, s_crc > 1 ? s_crc : 1, pl);
}

/* Runs one scenario; prints its rows and writes its JSON object. Returns wrong results. */
static int run_scenario(const overlap_params* p, const struct overlap_collective* c, const int* order,
                        const calibration* k, const scenario_def* d, long* seed, bench_json* j, int rank) {
  const int n = p->iterations;
  const double curc_mult = d->curc == CURC_NONE ? 0 : d->curc == CURC_LONG ? p->curc_long : p->curc_short;
  const double rate_mult = d->rate == RATE_SLOW ? p->rate_slow : p->rate_fast;
  plan pl;
  make_plan(k, c->nblocks, k->tcomm, curc_mult, rate_mult, 1.0, 1.0, &pl);
  refine(k, c, order, curc_mult, rate_mult, seed, &pl);

  double* x = calloc((size_t)VAR_COUNT * F_COUNT * n, sizeof(double));
  double* tmp = malloc((size_t)n * sizeof(double));
  const double steal0 = bench_steal_s(), wall0 = bench_now();
  const int bad = measure(p, c, order, d->id, pl.curc_units, pl.crc_units, seed, x);
  /* What the hypervisor took from the machine meanwhile (each rank's machine; the most over the
   * ranks): a virtual machine's host busy elsewhere, or backing memory the guest had handed back. */
  const double steal1 = bench_steal_s();
  double stolen[2] = {steal0 >= 0 && steal1 >= 0 ? steal1 - steal0 : -1, 0};
  stolen[1] = stolen[0] >= 0 ? stolen[0] / ((bench_now() - wall0) * bench_cpus()) : -1;
  bench_max_over_ranks(stolen, stolen, 2);

  const double tcomm = bench_median_of(series(x, n, VAR_BLOCKING, F_INIT), n);
  const double t_curc = bench_median_of(series(x, n, VAR_BLOCKING, F_CURC), n);
  const double t_crc = bench_median_of(series(x, n, VAR_BLOCKING, F_CRC), n);
  const double r_ratio = tcomm / t_crc;   /* R_CRC / Rcomm = (Dcomm / T_CRC) / (Dcomm / Tcomm) */
  const int holds = condition_holds(d, tcomm, t_curc, r_ratio);
  /* Eq. 1 per iteration, from the blocking run's parts: Tcomm * Rcomm / R_CRC = T_CRC. */
  double* ideal_it = malloc((size_t)n * sizeof(double));
  for (int it = 0; it < n; it++)
    ideal_it[it] = fmin(series(x, n, VAR_BLOCKING, F_INIT)[it],
                        series(x, n, VAR_BLOCKING, F_CURC)[it] + series(x, n, VAR_BLOCKING, F_CRC)[it]);
  const double ideal = bench_median_of(ideal_it, n);

  variant_result res[VAR_COUNT];
  const double* block_total = series(x, n, VAR_BLOCKING, F_TOTAL);
  const double* block_init = series(x, n, VAR_BLOCKING, F_INIT);
  const double* mpi3_total = series(x, n, VAR_MPI3, F_TOTAL);
  for (int v = 0; v < VAR_COUNT; v++) {
    variant_result* r = &res[v];
    const double* total = series(x, n, v, F_TOTAL);
    const double* init = series(x, n, v, F_INIT);
    r->total = bench_median_of(total, n);
    r->init = bench_median_of(init, n);
    /* Differences and ratios per iteration (the variants ran side by side), then the median. */
    for (int it = 0; it < n; it++) tmp[it] = block_total[it] - total[it];
    r->overlap = bench_median(tmp, n);
    for (int it = 0; it < n; it++) tmp[it] = (block_total[it] - total[it]) / ideal_it[it];
    r->achieved = bench_median(tmp, n);
    for (int it = 0; it < n; it++) tmp[it] = init[it] / block_init[it];
    r->tinit_ratio = bench_median(tmp, n);
    /* The calling thread's CPU time in the call: Tinit without the waits for a core, which on
     * an oversubscribed node (more ranks than cores) the wall time includes. */
    const double* init_cpu = series(x, n, v, F_INIT_CPU);
    for (int it = 0; it < n; it++) tmp[it] = init_cpu[it] / block_init[it];
    r->tinit_cpu_ratio = bench_median(tmp, n);
    /* Share of the calls in which the calling thread lost its CPU involuntarily (any rank). */
    const double* preempt = series(x, n, v, F_INIT_PREEMPT);
    r->preempted = 0;
    for (int it = 0; it < n; it++) r->preempted += preempt[it] > 0 ? 1.0 / n : 0;
    for (int it = 0; it < n; it++) tmp[it] = mpi3_total[it] / total[it];
    r->vs_mpi3 = bench_median(tmp, n);
    r->eq3 = fmin(tcomm - r->init, t_curc + t_crc);   /* Eq. 3 */
  }
  free(tmp);
  free(ideal_it);

  if (rank == 0) {
    printf("(%c) %s: planned T_CURC %.2f ms, R_CRC %.2f Rcomm%s; measured Tcomm %.2f ms, T_CURC %.2f ms, "
           "T_CRC %.2f ms (R_CRC %.2f Rcomm): %s\n",
           d->id, d->what, pl.t_curc * 1e3, rate_mult, pl.reachable ? "" : " (NOT REACHABLE: reading alone is slower)",
           tcomm * 1e3, t_curc * 1e3, t_crc * 1e3, r_ratio,
           holds ? "condition holds" : "CONDITION DOES NOT HOLD (noise or calibration)");
    if (stolen[1] > kStealNote)
      printf("  the hypervisor took %.2f s of the machine's CPU during this scenario (steal, %.1f%% of its CPU time): "
             "its figures may be disturbed\n", stolen[0], 100 * stolen[1]);
    /* tnbc's row says which mode ran: nbc, or optimize (TNBC_PROFILE from a trace pass). */
    const char* st = bench_tnbc_status();
    const int optimize = st && strncmp(st, "optimize", 8) == 0;
    for (int v = 0; v < VAR_COUNT; v++) {
      const variant_result* r = &res[v];
      printf("  %-14s %9.2f %10.2f %9.2f %9.2f %8.2f %11.3f %9.3f %10.2f%s\n",
             v == VAR_TNBC && optimize ? "tnbc-optimize" : kVariant[v], r->total * 1e3,
             r->overlap * 1e3, ideal * 1e3, r->achieved, r->eq3 * 1e3, r->tinit_ratio, r->tinit_cpu_ratio, r->vs_mpi3,
             v == VAR_TNBC && !bench_tnbc_active() ? "   (tnbc not active: plain MPI)" : "");
    }
  }

  const char id[2] = {d->id, 0};
  bench_json_object(j, NULL);
  bench_json_str(j, "id", id);
  bench_json_str(j, "description", d->what);
  bench_json_object(j, "planned");
  bench_json_num(j, "tcomm_s", pl.tcomm);
  bench_json_num(j, "t_curc_s", pl.t_curc);
  bench_json_num(j, "t_crc_s", pl.t_crc);
  bench_json_num(j, "r_crc_over_rcomm", rate_mult);
  bench_json_num(j, "stretch_curc", pl.stretch_curc);
  bench_json_num(j, "stretch_crc", pl.stretch_crc);
  bench_json_int(j, "curc_units", pl.curc_units);
  bench_json_int(j, "crc_units_per_block", pl.crc_units);
  bench_json_bool(j, "rate_reachable", pl.reachable);
  bench_json_end(j);
  bench_json_object(j, "measured");
  bench_json_num(j, "tcomm_s", tcomm);
  bench_json_num(j, "t_curc_s", t_curc);
  bench_json_num(j, "t_crc_s", t_crc);
  bench_json_num(j, "r_crc_over_rcomm", r_ratio);
  bench_json_bool(j, "condition_holds", holds);
  bench_json_num(j, "steal_s", stolen[0] >= 0 ? stolen[0] : NAN);
  bench_json_num(j, "steal_share", stolen[1] >= 0 ? stolen[1] : NAN);
  bench_json_end(j);
  bench_json_num(j, "ideal_overlap_s", ideal);
  bench_json_array(j, "variants");
  for (int v = 0; v < VAR_COUNT; v++) {
    const variant_result* r = &res[v];
    bench_json_object(j, NULL);
    bench_json_str(j, "name", kVariant[v]);
    bench_json_num(j, "total_s", r->total);
    bench_json_num(j, "init_s", r->init);
    bench_json_num(j, "overlap_s", r->overlap);
    bench_json_num(j, "achieved_over_ideal", r->achieved);
    bench_json_num(j, "eq3_bound_s", r->eq3);
    bench_json_num(j, "tinit_over_tcomm", r->tinit_ratio);
    bench_json_num(j, "tinit_cpu_over_tcomm", r->tinit_cpu_ratio);
    bench_json_num(j, "speedup_vs_mpi3", r->vs_mpi3);
    bench_json_num(j, "calls_preempted_share", r->preempted);
    bench_json_nums(j, "init_involuntary_switches_per_iteration", series(x, n, v, F_INIT_PREEMPT), n);
    bench_json_nums(j, "total_per_iteration_s", series(x, n, v, F_TOTAL), n);
    bench_json_nums(j, "init_per_iteration_s", series(x, n, v, F_INIT), n);
    bench_json_nums(j, "init_cpu_per_iteration_s", series(x, n, v, F_INIT_CPU), n);
    bench_json_nums(j, "wait_per_iteration_s", series(x, n, v, F_WAIT), n);
    bench_json_nums(j, "crc_per_iteration_s", series(x, n, v, F_CRC), n);
    bench_json_end(j);
  }
  bench_json_end(j);
  bench_json_end(j);
  free(x);
  return bad;
}

/* ---------------------------------------------------------------- the run ---- */

static void json_parameters(bench_json* j, const overlap_params* p, const struct overlap_collective* c,
                            const int* order, int np) {
  bench_json_object(j, "parameters");
  bench_json_str(j, "collective", c->collective);
  bench_json_int(j, "np", np);
  bench_json_int(j, "bytes", (long long)p->bytes);
  bench_json_int(j, "dcomm_bytes", (long long)c->dcomm);
  bench_json_int(j, "sub_messages", c->nblocks);
  if (p->segments) bench_json_int(j, "root", p->root);
  bench_json_int(j, "iterations", p->iterations);
  bench_json_str(j, "order", p->order);
  bench_json_array(j, "order_list");
  for (int i = 0; i < c->nblocks; i++) bench_json_int(j, NULL, order[i]);
  bench_json_end(j);
  bench_json_num(j, "curc_long", p->curc_long);
  bench_json_num(j, "curc_short", p->curc_short);
  bench_json_num(j, "rate_slow", p->rate_slow);
  bench_json_num(j, "rate_fast", p->rate_fast);
  bench_json_int(j, "curc_sleep", p->curc_sleep);
  bench_json_int(j, "page_aligned", p->page_aligned);
  bench_json_end(j);
}

static void json_calibration(bench_json* j, const calibration* k) {
  bench_json_object(j, "calibration");
  bench_json_num(j, "tcomm_s", k->tcomm);
  bench_json_num(j, "rcomm_bytes_per_s", k->rcomm);
  bench_json_num(j, "curc_unit_s", k->curc_unit);
  bench_json_num(j, "crc_pass_s", k->crc_base);
  bench_json_num(j, "crc_unit_s", k->crc_unit);
  bench_json_end(j);
}

static void print_header(const overlap_params* p, const struct overlap_collective* c, const int* order, int np,
                         const calibration* k) {
  printf("%s: np %d, %zu bytes%s, Dcomm %zu bytes per rank in %d sub-messages, order", c->program, np, p->bytes,
         p->segments ? "" : " per peer", c->dcomm, c->nblocks);
  for (int i = 0; i < c->nblocks && i < 16; i++) printf("%s%d", i ? "," : " ", order[i]);
  printf("%s (%s), %d iterations; medians over iterations of the max over ranks\n", c->nblocks > 16 ? ",..." : "",
         p->order, p->iterations);
  bench_print_tnbc(stdout);
  if (p->curc_sleep) printf("CURC SLEEPS (--curc-sleep, a diagnostic): the CPU is free while the program \"computes\"\n");
  printf("buffers: %s\n", p->page_aligned ? "page-aligned (--align page)" : "from malloc (--align malloc)");
  printf("calibration: Tcomm %.3f ms, Rcomm %.1f MB/s; CURC step %.2f ns; CRC pass %.3f ms + %.2f ns per step\n",
         k->tcomm * 1e3, k->rcomm / 1e6, k->curc_unit * 1e9, k->crc_base * 1e3, k->crc_unit * 1e9);
  printf("  %-14s %9s %10s %9s %9s %8s %11s %9s %10s\n", "variant", "total ms", "overlap ms", "ideal ms", "ach/ideal",
         "Eq.3 ms", "Tinit/Tcomm", "cpu/Tcomm", "MPI-3/this");
}

int overlap_run(const overlap_params* p, const struct overlap_collective* c) {
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  int* order = calloc((size_t)c->nblocks, sizeof(int));
  const char* err = make_order(p->order, c->nblocks, rank, order);
  if (err) {
    if (rank == 0) fprintf(stderr, "%s: %s (%d sub-messages)\n", c->program, err, c->nblocks);
    free(order);
    return 2;
  }
  calibration k;
  calibrate(p, c, order, &k);
  if (p->curc_sleep) g_curc_sleep_unit = k.curc_unit;  /* a step's time, slept */

  bench_json j;
  if (bench_json_open(&j, rank == 0 ? p->json : NULL, c->program) != 0) PMPI_Abort(MPI_COMM_WORLD, 2);
  bench_json_mpi_header(&j);
  json_parameters(&j, p, c, order, np);
  json_calibration(&j, &k);
  if (rank == 0) print_header(p, c, order, np, &k);

  bench_json_array(&j, "scenarios");
  long seed = 0, checked = 0;
  int bad = 0;
  for (int s = 0; s < NSCEN; s++) {
    if (!strchr(p->scenarios, kScenarios[s].id)) continue;
    bad += run_scenario(p, c, order, &k, &kScenarios[s], &seed, &j, rank);
    checked += p->iterations;
  }
  bench_json_end(&j);

  int all_bad = 0;
  PMPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  bench_json_object(&j, "verification");
  bench_json_int(&j, "iterations_checked", checked);
  bench_json_int(&j, "wrong_results", all_bad);
  bench_json_end(&j);
  bench_json_close(&j);
  if (rank == 0)
    printf("verification: %ld iterations x %d variants compared with the blocking result: %s\n", checked, VAR_COUNT - 1,
           all_bad ? "MISMATCH" : "all identical");
  free(order);
  return all_bad ? 1 : 0;
}
