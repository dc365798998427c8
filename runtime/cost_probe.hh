// Measuring the costs of runtime/threshold.hh on this rank, when the engine starts (MPI_Init).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "runtime/status.hh"
#include "runtime/threshold.hh"

namespace tnbc {

class GuardBackend;
class Stats;

// Measures the guard backend's (the one the engine will use first; nullptr: none works on this
// rank) and memcpy's costs on scratch memory, and the link with a ring exchange on `comm`
// (collective: every rank of `comm` calls it at once, whatever failed locally; `tag` is used on
// `comm`, where nothing else may be in flight). With one rank the link costs stay 0. An error
// when scratch memory or the guard primitive failed.
Result<MeasuredCosts> measure_costs(MPI_Comm comm, int tag, GuardBackend* backend, std::size_t page);

// TNBC_MIN_BYTES=auto: the threshold from the costs measured on this rank (runtime/threshold.hh),
// the largest over the ranks of `world` (one reduction: every rank decides alike). Collective.
// Recorded in `stats` (summary `threshold`) and said by rank 0.
std::size_t agree_threshold(MPI_Comm world, GuardBackend* backend, std::size_t page, Stats& stats);

}  // namespace tnbc
