// Measuring the costs of runtime/threshold.hh on this rank, when the engine starts (MPI_Init).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "runtime/threshold.hh"

namespace tnbc {

// The guard backend whose costs are measured (the one the engine will use); None: no guard
// works on this rank, only the link is measured (every rank must take part in that).
enum class ProbeBackend { UffdMove, UffdCopy, ProtNone, None };
const char* probe_backend_name(ProbeBackend b);

// Measures the guard backend's and memcpy's costs on scratch memory, and the link with a ring
// exchange on `comm` (collective: every rank of `comm` calls it at once; `tag` is used on `comm`,
// where nothing else may be in flight). With one rank the link costs stay 0. False, with `why`,
// when scratch memory or the guard primitive failed.
bool measure_costs(MPI_Comm comm, int tag, ProbeBackend backend, std::size_t page, MeasuredCosts& out,
                   std::string& why);

}  // namespace tnbc
