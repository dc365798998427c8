// Where the cost model's inputs come from when a run starts (MPI_Init, collective over
// MPI_COMM_WORLD): the run's placement, and the machine — the file TNBC_MACHINE names (written by
// `tnbc calibrate`), or, without a usable one, the start-up probe's measurements. Every rank ends
// with the same machine (a file every rank read alike, or the probe's values agreed by one
// reduction), so decisions that must match across ranks may use it.
//
//   placement   node of every rank (MPI_Comm_split_type), CPUs of each node (the union of its
//               ranks' affinity masks) and of each rank; gathered once
//   file        read by every rank; used when it reads back, fits the run (same MPI library,
//               same node count, the levels the run uses: runtime/model/machine.hh, misfit) and
//               every rank read the same content (a hash compared by one reduction); else one
//               message from rank 0 and the probe
//   probe       per rank, medians of a few repetitions (after a warm-up):
//                 memcpy of 1 page and 64 pages;
//                 the guard backend in use: hold back and publish 1 page and 64 pages;
//                 the link: every rank exchanges 1 page and 64 pages with its ring neighbours
//                 at once (PMPI_Sendrecv), and the same through MPI_Isend/MPI_Irecv tested the
//                 way the progress thread does (for the CPU it costs);
//                 one MPI_Testsome over pending receives, one sleep of TNBC_POLL_MIN_US;
//               then the largest of each value over the ranks (one MPI_Allreduce). From these:
//               L, G and o per level (a ring pair's level), node_out / node_bi as the ring's
//               per-flow time over the flows sharing the node, hold/publish lines, fault round
//               trip taken as one region's hold + publish (not measured). Coarser than a
//               calibration: the link is measured with every rank sending at once.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "runtime/model/machine.hh"
#include "runtime/model/topology.hh"

namespace tnbc {
class GuardBackend;
}

namespace tnbc::model {

// The run's placement, equal on every rank.
struct World {
  std::vector<int> node;  // per rank of MPI_COMM_WORLD
  int cpus_per_node = 1;  // the smallest node's CPUs
  int cpus_per_rank = 1;  // the smallest affinity mask
  std::string mpi_library;
  std::string mpi_transport;  // runtime/mpi_threads.hh
  Topology topology() const;
  RunFacts facts() const;
};
// Collective over `world`.
World gather_world(MPI_Comm world);
// The topology of `comm`'s ranks (its group translated to the world's): local, no communication.
Topology comm_topology(MPI_Comm comm, const Topology& world);
// The first line of MPI_Get_library_version.
std::string mpi_library_version();

struct Obtained {
  Machine machine;
  std::string source;   // "file" or "probe"
  std::string file;     // TNBC_MACHINE as given ("" if none)
  std::string problem;  // why the file was not used (rank 0's view; "" when used or none given)
  double ms = 0;        // what reading or measuring took on this rank
};
// Collective over `comm` (tnbc's duplicate of MPI_COMM_WORLD, nothing else in flight on it).
// `backend`: the guard backend the engine uses first (nullptr: none works here).
Obtained obtain_machine(const std::string& file, MPI_Comm comm, const World& w, GuardBackend* backend,
                        std::size_t page, long long poll_min_ns);

}  // namespace tnbc::model
