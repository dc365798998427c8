/* Datatypes for the differential fuzzer: for each base type (MPI_BYTE, MPI_INT, MPI_DOUBLE) the
 * base type itself and derived types built on it, dense (contiguous, nested contiguous) and not
 * (vectors, a type resized with a hole after each element). A type carries `k` base elements;
 * a message of E base elements is `E / k` items of any type of that base whose k divides E, so
 * the sender and the receiver of a block may use different types with the same signature. */
#ifndef TNBC_FUZZ_TYPES_H
#define TNBC_FUZZ_TYPES_H

#include <mpi.h>

#include "fuzz_rng.h"

enum { BASE_BYTE, BASE_INT, BASE_DOUBLE, BASE_KINDS };

typedef struct {
  MPI_Datatype type;
  char name[48];
  int base;          /* BASE_* */
  int k;             /* base elements per item: 1, 2, 3 or 6 */
  MPI_Aint extent;   /* stride between consecutive items */
  int dense;         /* items are contiguous bytes without holes */
} FuzzType;

void fuzz_types_init(void);
void fuzz_types_free(void);
int fuzz_base_size(int base);
/* A type of `base` whose k divides `unit` (unit is 1, 2, 3 or 6): one in four not dense; among
 * the dense ones the base type twice as likely. */
const FuzzType* fuzz_type_pick(Rng* r, int base, int unit);
/* Bytes from the first to one past the last byte `count` items touch (0 for count 0). */
size_t fuzz_type_span(const FuzzType* t, long count);

#endif
