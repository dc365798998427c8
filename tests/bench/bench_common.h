/* Helpers shared by the benchmark programs (no MPI): clock, medians, tnbc detection, the
 * machine's description, and a small JSON writer for the per-run result files
 * (format "tnbc-bench", version 1; docs/benchmarks.md). */
#pragma once

#include <stddef.h>
#include <stdio.h>

/* Monotonic wall-clock time in seconds. */
double bench_now(void);
/* CPU time of the calling thread in seconds (does not advance while it is preempted). */
double bench_cpu_now(void);

/* The machine's steal so far in seconds, summed over its CPUs (/proc/stat: time a virtual CPU was
 * ready to run and its hypervisor did not run it); -1 where unknown. */
double bench_steal_s(void);
/* Online CPUs of the machine (what bench_steal_s sums over). */
int bench_cpus(void);

/* Median of v[0..n-1] (sorts v in place); NaN when n == 0. */
double bench_median(double* v, int n);
/* Median of v[0..n-1], leaving v as it is. */
double bench_median_of(const double* v, int n);

/* tnbc's own answer (tnbc_status(), shim/status.cc) when libtnbc.so is loaded into this process,
 * NULL otherwise. bench_tnbc_active: loaded and its engine makes collectives return early. */
const char* bench_tnbc_status(void);
int bench_tnbc_active(void);

/* Reads an unsigned size with an optional K/M/G suffix (binary); 0 on error. */
size_t bench_parse_bytes(const char* s);
/* Reads a comma-separated list of such sizes (the text is cut up, strtok) into sizes[0..max):
 * how many; -1 if one is not a size or there are more than max. */
int bench_parse_sizes(char* list, size_t* sizes, int max);

/* JSON writer. Every call is a no-op when the writer has no file (no --json, or not rank 0),
 * so programs call it unconditionally. Nesting is tracked; keys are NULL inside arrays. */
typedef struct bench_json {
  FILE* f;
  int depth;
  int items[32];     /* values written so far at each depth (for commas) */
  char closer[32];   /* '}' or ']' per open depth */
} bench_json;

/* Opens `path` (NULL: a writer that writes nothing) and starts the top-level object with
 * format, version and program. Returns 0, or -1 with a message on stderr. */
int bench_json_open(bench_json* j, const char* path, const char* program);
/* Closes every open level and the file. */
void bench_json_close(bench_json* j);
void bench_json_object(bench_json* j, const char* key);
void bench_json_array(bench_json* j, const char* key);
void bench_json_end(bench_json* j);
void bench_json_num(bench_json* j, const char* key, double v);   /* NaN and infinities -> null */
void bench_json_int(bench_json* j, const char* key, long long v);
void bench_json_str(bench_json* j, const char* key, const char* v);   /* NULL -> null */
void bench_json_bool(bench_json* j, const char* key, int v);
void bench_json_nums(bench_json* j, const char* key, const double* v, int n);

/* "machine": nproc, kernel, CPU model, date; `mpi_library` may be NULL (no MPI). */
void bench_json_machine(bench_json* j, const char* mpi_library);
/* "tnbc": loaded, status, active, and every TNBC_* variable of the environment. */
void bench_json_tnbc(bench_json* j);
/* One line for the text output: "tnbc: <status>" or that tnbc is not loaded. */
void bench_print_tnbc(FILE* out);
