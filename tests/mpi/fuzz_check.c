/* Checks and mismatch reports of the differential fuzzer (see fuzz_check.h). */
#include "fuzz_check.h"

#include <stdio.h>
#include <string.h>

static int rank;
static FuzzContext* current;
static long printed;
#define MAX_PRINTED 20

void fuzz_check_init(int world_rank) { rank = world_rank; }

void fuzz_context_push(FuzzContext* c) {
  c->failed = 0;
  c->outer = current;
  current = c;
}

int fuzz_context_pop(void) {
  FuzzContext* c = current;
  current = c->outer;
  return c->failed;
}

void fuzz_print_context(const char* prefix) {
  const FuzzContext* c = current;
  fprintf(stderr, "%s seed %llu op %ld%s rank %d: %s\n", prefix, (unsigned long long)c->seed, c->op,
          c->depth ? " (nested)" : "", rank, c->desc);
  if (c->outer) fprintf(stderr, "  inside: %s\n", c->outer->desc);
}

static void report(const char* what, size_t off, int expected, int got, int bytes) {
  current->failed = 1;
  if (printed++ >= MAX_PRINTED) return;
  fuzz_print_context("MISMATCH");
  if (bytes)
    fprintf(stderr, "  %s: first difference at offset %zu: expected 0x%02x, got 0x%02x\n", what, off,
            expected & 0xff, got & 0xff);
  else
    fprintf(stderr, "  %s\n", what);
  fflush(stderr);
}

int fuzz_compare(const char* what, const unsigned char* got, const unsigned char* want, size_t n, size_t at) {
  if (n == 0 || memcmp(got, want, n) == 0) return 0;
  size_t i = 0;
  while (got[i] == want[i]) i++;
  report(what, at + i, want[i], got[i], 1);
  return 1;
}

void fuzz_fail(const char* what) { report(what, 0, 0, 0, 0); }
