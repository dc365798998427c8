/* Early-return share from tnbc's per-rank summaries (see fuzz_summary.h). */
#define _GNU_SOURCE
#include "fuzz_summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* kinds[] = {"bcast", "alltoall", "alltoallv", "allgather", "allgatherv"};
static const char* fields[] = {"calls", "early_return", "completed_in_call", "passthrough"};
enum { KINDS = 5, FIELDS = 4 };

static char* slurp(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return NULL;
  char* text = NULL;
  size_t len = 0;
  FILE* mem = open_memstream(&text, &len);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, mem);
  fclose(f);
  fclose(mem);
  return text;
}

/* The number after "field": inside the object that follows "kind": (0 if absent). */
static long field_of(const char* json, const char* kind, const char* field) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\": {", kind);
  const char* at = strstr(json, key);
  if (!at) return 0;
  const char* end = strchr(at, '}');
  snprintf(key, sizeof key, "\"%s\": ", field);
  const char* f = strstr(at, key);
  return f && (!end || f < end) ? atol(f + strlen(key)) : 0;
}

/* Adds the counts of the "reasons" object of `kind` to names/counts (at most MAX_REASONS). */
#define MAX_REASONS 16
static int add_reasons(const char* json, const char* kind, char names[][40], long* counts, int n) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\": {", kind);
  const char* at = strstr(json, key);
  const char* r = at ? strstr(at, "\"reasons\": {") : NULL;
  if (!r) return n;
  const char* end = strchr(r + 12, '}');
  for (const char* q = strchr(r + 12, '"'); q && q < end; q = strchr(q, '"')) {
    const char* close = strchr(q + 1, '"');
    char name[40];
    snprintf(name, sizeof name, "%.*s", (int)(close - q - 1), q + 1);
    const long v = atol(close + 2);
    int i = 0;
    while (i < n && strcmp(names[i], name) != 0) i++;
    if (i == n && n < MAX_REASONS) snprintf(names[n++], 40, "%s", name);
    if (i < n) counts[i] += v;
    q = close + 1;
  }
  return n;
}

int fuzz_summary_report(int np, long calls_made) {
  const char* dir = getenv("TNBC_OUTPUT_DIR");
  if (!dir || !*dir) return 0;
  long total[KINDS][FIELDS] = {{0}};
  char reasons[MAX_REASONS][40];
  long reason_counts[MAX_REASONS] = {0};
  int nreasons = 0;
  for (int r = 0; r < np; r++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/tnbc-summary.%d.json", dir, r);
    /* This rank's own summary is written in its MPI_Finalize: without it tnbc did not run. The
     * others' are written in theirs, which may still be ending. */
    char* json = slurp(path);
    for (int tries = 0; r > 0 && tries < 100 && !json; tries++) {
      usleep(100 * 1000);
      json = slurp(path);
    }
    if (!json) {
      printf("fuzz: no tnbc summary %s: early returns not counted\n", path);
      return 0;
    }
    for (int k = 0; k < KINDS; k++) {
      for (int f = 0; f < FIELDS; f++) total[k][f] += field_of(json, kinds[k], fields[f]);
      nreasons = add_reasons(json, kinds[k], reasons, reason_counts, nreasons);
    }
    free(json);
  }
  long calls = 0, early = 0;
  for (int k = 0; k < KINDS; k++) calls += total[k][0], early += total[k][1];
  printf("fuzz: %ld of %ld intercepted calls returned early (%.0f%%):", early, calls,
         calls ? 100.0 * (double)early / (double)calls : 0.0);
  for (int k = 0; k < KINDS; k++)
    printf(" %s %ld/%ld (completed in call %ld, passthrough %ld);", kinds[k], total[k][1], total[k][0], total[k][2],
           total[k][3]);
  printf("\nfuzz: why the others did not:");
  for (int i = 0; i < nreasons; i++) printf(" %s %ld;", reasons[i], reason_counts[i]);
  printf("\n");
  if (calls != calls_made) {
    printf("fuzz: FAILED: tnbc counted %ld calls, the fuzzer made %ld\n", calls, calls_made);
    return 1;
  }
  return 0;
}
