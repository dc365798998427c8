/* Byte-for-byte checks of the differential fuzzer and their report: every failing check prints
 * the seed, the op index, the op's description, the rank, the first differing offset (into the
 * receive buffer) and both bytes. A mismatch counts once per op and rank. */
#ifndef TNBC_FUZZ_CHECK_H
#define TNBC_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>

typedef struct FuzzContext {
  uint64_t seed;
  long op;      /* index of the top-level op in this seed's sequence */
  int depth;    /* 0: top level, 1: nested inside the op's accesses */
  char desc[768];
  int failed;
  struct FuzzContext* outer;
} FuzzContext;

void fuzz_check_init(int world_rank);
void fuzz_context_push(FuzzContext* c);
/* Pops the current context; returns 1 if a check failed in it. */
int fuzz_context_pop(void);
/* Compares n bytes; `at` is the offset of got[0] in the buffer the check is about. Returns 0 if equal. */
int fuzz_compare(const char* what, const unsigned char* got, const unsigned char* want, size_t n, size_t at);
/* Records a failed check that is not a byte comparison. */
void fuzz_fail(const char* what);
/* Prefix for messages: "seed S op K rank R (desc)". */
void fuzz_print_context(const char* prefix);

#endif
