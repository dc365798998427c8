/* Test helper (MPI C programs): computes on registers for `ms` milliseconds of the monotonic clock
 * (a program's work after a collective, touching no buffer of it). */
#pragma once

#include <time.h>

static volatile double compute_ms_sink;  /* keeps the computation */

static inline void compute_ms(double ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double x = 0;
  do {
    for (int k = 0; k < 2000; k++) x += k * 1e-9;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
  compute_ms_sink = x;
}
