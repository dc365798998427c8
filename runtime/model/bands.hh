// The sizes at which an early return pays (TNBC_MIN_BYTES=auto), as ranges of sizes rather than
// one threshold: an early-returning broadcast's balance (estimate.hh, bcast_balance) may pay in a
// band and not above it (the MPI library's own broadcast changes algorithm with the size, and
// tnbc's costs read at once grow with it), so the decision is the balance at the call's size.
// The exchange family likewise (exchange_balance), from the size whose transfer covers what
// returning early adds (exchange_floor): on a node with more ranks than CPUs tnbc's exchange read
// at once can cost several times the library's (docs/benchmarks.md, "RMA broadcast", session 13).
//
// Pure (no MPI): the policy caches one SizeBands per communicator placement and kind; its
// inputs (the machine, the placement, the call's size) are equal on every rank, so are the
// answers.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/function_ref.hh"
#include "runtime/model/estimate.hh"

namespace tnbc::model {

struct SizeBands {
  // Sorted, disjoint [from, to) ranges; `to` SIZE_MAX: every larger size.
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  bool contains(std::size_t bytes) const;
  std::size_t first() const;  // the smallest size in a range; SIZE_MAX: none
  // [threshold, every larger size); none for SIZE_MAX.
  static SizeBands from(std::size_t threshold);
  // "12 KiB-96 KiB, from 2 MiB", "never", for messages; as JSON: [[from, to or null], ...].
  std::string text() const;
  std::string json() const;
};

// The ranges of whole pages from `floor` where `pays` holds, found on a geometric grid of
// kBandSteps sizes per doubling up to `largest` (the last range open when `largest` pays) and
// each edge between two grid points bisected to a page. A band narrower than a grid step can be
// missed: the answer is the same on every rank, and a call's size between two grid points takes
// the nearer edge's verdict.
SizeBands scan_bands(FunctionRef<bool(std::size_t)> pays, std::size_t floor, std::size_t page, double largest);

// The sizes (bytes per peer; a broadcast's whole message) at which returning early pays on `t`:
// a broadcast where its bcast_balance pays (at bcast_segments' count), the exchange family from
// exchange_floor where its exchange_balance pays.
SizeBands early_return_bands(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page);

// The sizes (bytes per peer) at which the exchange family's schedule completed in the call beats
// the MPI library's call on `t` by the placement's margin (own_call_pays against nbc_blocking_ns,
// from kMinGuardablePages pages): calls of those sizes that do not return early take tnbc's
// schedule instead of the library's. None for a broadcast (not measured) or one rank.
SizeBands own_call_bands(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page);

// The sizes of `a` and of `b`.
SizeBands unite(const SizeBands& a, const SizeBands& b);

// The kind whose sizes decide a call of kind `k`: Alltoallv's and Allgatherv's sizes differ
// between ranks, so they take Alltoall's and Allgather's (per peer); every other kind its own.
Kind band_kind(Kind k);

// The sizes at which a call of kind `k` returns early on `t`: band_kind's early_return_bands.
SizeBands call_bands(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page);
// The sizes at which a call of kind `k` takes tnbc's schedule on `t` (returning early or completed
// in the call): call_bands united with band_kind's own_call_bands. Outside them it is the MPI
// library's own call (runs_as_mpi).
SizeBands engine_bands(const Machine& m, const Topology& t, Kind k, const Execution& x, std::size_t page);

// Whether a call runs as the MPI library's own under the early-return sizes `sizes` (the rule of
// Policy::route, of the trace's plain-run verdict and of `tnbc predict`): outside `sizes` at
// `unit_bytes`, its size in the kind's unit (SizeUnit); without one (sizes that differ between
// ranks, Alltoallv) only where no size returns early at all.
bool runs_as_mpi(const SizeBands& sizes, std::optional<std::size_t> unit_bytes);

}  // namespace tnbc::model
