/* Seeded random numbers for the differential fuzzer (fuzz.c): splitmix64 streams.
 *
 * Every decision the ranks must agree on (operation, communicator, counts, roots, which accesses
 * involve other ranks) comes from a stream derived from (seed, op index, depth) alone, so ranks
 * never drift apart even when they run on communicators of different sizes. Rank-local choices
 * (memory kind, alignment, offsets of accesses) come from a stream that also mixes in the rank.
 * A run is reproduced by the same seed, op count, maximum size and number of ranks. */
#ifndef TNBC_FUZZ_RNG_H
#define TNBC_FUZZ_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t s;
} Rng;

static inline uint64_t rng_next(Rng* r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline Rng rng_derive(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  Rng r = {a * 0xD1342543DE82EF95ull + 1};
  r.s ^= rng_next(&r) + b;
  r.s ^= rng_next(&r) + c;
  r.s ^= rng_next(&r) + d;
  rng_next(&r);
  return r;
}

/* Uniform in [0, n) (n > 0). */
static inline size_t rng_below(Rng* r, size_t n) { return (size_t)(rng_next(r) % n); }

/* True with probability permille / 1000. */
static inline int rng_chance(Rng* r, unsigned permille) { return rng_below(r, 1000) < permille; }

#endif
