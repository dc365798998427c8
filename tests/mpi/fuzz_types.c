/* Datatypes for the differential fuzzer (see fuzz_types.h). */
#include "fuzz_types.h"

#include <stdio.h>

enum { SHAPE_PLAIN, SHAPE_GAP, SHAPE_CONTIG2, SHAPE_VEC2, SHAPE_CONTIG3, SHAPE_NEST6, SHAPE_VEC6, SHAPES };
static const int shape_k[SHAPES] = {1, 1, 2, 2, 3, 6, 6};
static const char* base_name[BASE_KINDS] = {"byte", "int", "double"};
static const MPI_Datatype base_type[BASE_KINDS] = {MPI_BYTE, MPI_INT, MPI_DOUBLE};
static FuzzType types[BASE_KINDS][SHAPES];

int fuzz_base_size(int base) { return base == BASE_BYTE ? 1 : base == BASE_INT ? 4 : 8; }

static MPI_Datatype build(int shape, MPI_Datatype b, int bsize, char* name, size_t len, const char* bn) {
  MPI_Datatype t = b, inner;
  switch (shape) {
    case SHAPE_PLAIN: snprintf(name, len, "%s", bn); return b;
    case SHAPE_GAP: /* one element, then a hole of one element */
      MPI_Type_create_resized(b, 0, 2 * bsize, &t);
      snprintf(name, len, "resized(%s,extent 2)", bn);
      break;
    case SHAPE_CONTIG2: MPI_Type_contiguous(2, b, &t); snprintf(name, len, "contiguous(2,%s)", bn); break;
    case SHAPE_VEC2: /* elements 0 and 3 of a 4-element block */
      MPI_Type_vector(2, 1, 3, b, &inner);
      MPI_Type_create_resized(inner, 0, 4 * bsize, &t);
      MPI_Type_free(&inner);
      snprintf(name, len, "vector(2,1,3,%s)/4", bn);
      break;
    case SHAPE_CONTIG3: MPI_Type_contiguous(3, b, &t); snprintf(name, len, "contiguous(3,%s)", bn); break;
    case SHAPE_NEST6:
      MPI_Type_contiguous(2, b, &inner);
      MPI_Type_contiguous(3, inner, &t);
      MPI_Type_free(&inner);
      snprintf(name, len, "contiguous(3,contiguous(2,%s))", bn);
      break;
    case SHAPE_VEC6: MPI_Type_vector(3, 2, 4, b, &t); snprintf(name, len, "vector(3,2,4,%s)", bn); break;
  }
  MPI_Type_commit(&t);
  return t;
}

void fuzz_types_init(void) {
  for (int b = 0; b < BASE_KINDS; b++)
    for (int s = 0; s < SHAPES; s++) {
      FuzzType* t = &types[b][s];
      t->base = b;
      t->k = shape_k[s];
      t->type = build(s, base_type[b], fuzz_base_size(b), t->name, sizeof t->name, base_name[b]);
      MPI_Aint lb;
      MPI_Type_get_extent(t->type, &lb, &t->extent);
      t->dense = s == SHAPE_PLAIN || s == SHAPE_CONTIG2 || s == SHAPE_CONTIG3 || s == SHAPE_NEST6;
    }
}

void fuzz_types_free(void) {
  for (int b = 0; b < BASE_KINDS; b++)
    for (int s = 1; s < SHAPES; s++) MPI_Type_free(&types[b][s].type);
}

const FuzzType* fuzz_type_pick(Rng* r, int base, int unit) {
  const int dense = !rng_chance(r, 250); /* non-contiguous receive types complete in the call */
  int fits[SHAPES + 1], n = 0;
  for (int s = 0; s < SHAPES; s++)
    if (unit % shape_k[s] == 0 && types[base][s].dense == dense) fits[n++] = s;
  if (dense) fits[n++] = SHAPE_PLAIN;
  return &types[base][fits[rng_below(r, (size_t)n)]];
}

size_t fuzz_type_span(const FuzzType* t, long count) {
  if (count <= 0) return 0;
  MPI_Aint tlb, textent;
  MPI_Type_get_true_extent(t->type, &tlb, &textent);
  return (size_t)((count - 1) * t->extent + tlb + textent);
}
