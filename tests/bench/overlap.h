/* The T-NBC paper's Table 1 micro-benchmark (section 6.2), independent of the collective:
 * calibration (Tcomm, Dcomm, Rcomm and the cost of the compute units, measured first in the
 * same run), the five scenarios, CURC and CRC, the interleaved variants, verification, and the
 * report (Eq. 1 and Eq. 3 of the mission brief). A program supplies the collective
 * (table1_alltoall.c, table1_bcast.c).
 *
 * Calibration: Tcomm (wall clock, max over ranks) and the CPU cost of a compute step; then per
 * scenario three blocking trial runs measure Tcomm again and how much longer than their CPU
 * time CURC and CRC take here and now (other processes share the cores), and the plan is made
 * from those, so that the scenario's condition holds where it runs. The condition is checked
 * again on the measured medians and reported.
 *
 * One iteration of a variant, timed on every rank (then max over ranks, median over iterations):
 *   t0  call (blocking PMPI_X; MPI-3 peer: PMPI_IX; tnbc: MPI_X)     -> Tinit = t1 - t0
 *   t1  CURC: arithmetic touching no collective buffer, T_CURC long   (MPI-3 peer: then PMPI_Wait)
 *   t2  CRC: reads the receive buffer sub-message by sub-message in the chosen order, with
 *       computation per 64-byte line so that it consumes data at R_CRC
 *   t3  total = t3 - t0
 */
#pragma once

#include <mpi.h>
#include <stddef.h>

enum { VAR_BLOCKING, VAR_MPI3, VAR_TNBC, VAR_COUNT };

typedef struct overlap_params {
  size_t bytes;          /* per peer (Alltoall) or whole buffer (Bcast) */
  int segments;          /* Bcast: sub-messages the CRC reads */
  int root;              /* Bcast */
  int iterations;
  int calibration;       /* blocking calls that measure Tcomm */
  const char* order;     /* seq | reverse | swap | comma-separated permutation */
  const char* scenarios; /* subset of "abcde" */
  double curc_long, curc_short;  /* T_CURC as a multiple of Tcomm: (a), and (d)/(e) */
  double rate_slow, rate_fast;   /* R_CRC as a multiple of Rcomm: (b)/(d), and (a)/(c)/(e) */
  const char* json;
  int curc_sleep;        /* CURC sleeps as long as its computation would take (diagnostic) */
  int page_aligned;      /* buffers start on a page (--align page) instead of where malloc puts them */
} overlap_params;

/* What a program supplies: the collective, its buffers and how to check them. */
struct overlap_collective {
  const char* program;     /* "table1_alltoall" */
  const char* collective;  /* "alltoall" */
  size_t dcomm;            /* bytes the CRC reads on each rank: the receive buffer */
  int nblocks;             /* sub-messages, read one after another */
  size_t block_bytes;      /* dcomm / nblocks, a multiple of 64 */
  void* ctx;
  /* Fills what variant v sends with values that depend on `seed` (all variants send the same).
   * Called before each variant's run, as a program writes what it sends just before its call. */
  void (*prepare)(void* ctx, long seed, int variant);
  /* Runs variant v into its own receive buffer. VAR_MPI3 starts it and sets *req. */
  void (*run)(void* ctx, int variant, MPI_Request* req);
  const unsigned char* (*buffer)(void* ctx, int variant);
  /* Offset of the first byte of the blocking result that differs from what `seed` must
   * deliver, or -1 when it is all right. */
  long (*check_reference)(void* ctx, long seed);
};

/* A zeroed buffer of `bytes` for the collective, placed as --align says (free() it). */
void* overlap_alloc(const overlap_params* p, size_t bytes);

/* Defaults, then the command line (every rank parses the same). Returns 0, 1 after --help,
 * or -1 after a message on rank 0. `bcast` enables --segments and --root. */
int overlap_parse(int argc, char** argv, overlap_params* p, int bcast, const char* usage);

/* Calibrates, runs every selected scenario, prints the table (rank 0), writes the JSON.
 * Returns the program's exit status: 0, or 1 when a result differed from the blocking one. */
int overlap_run(const overlap_params* p, const struct overlap_collective* c);

/* The pattern both programs send: a 64-bit word that depends on every argument. */
static inline unsigned long long overlap_word(long seed, int src, int dst, size_t index) {
  unsigned long long z = (unsigned long long)seed * 0x9E3779B97F4A7C15ULL ^ ((unsigned long long)src << 48) ^
                         ((unsigned long long)dst << 32) ^ (unsigned long long)index;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
