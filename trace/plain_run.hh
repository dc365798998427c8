// Whether a run of mode optimize can be the plain program, judged before MPI_Init from files
// only: the profile (TNBC_PROFILE) and the machine (TNBC_MACHINE).
//
// tnbc's progress thread calls MPI concurrently with the program, so the engine needs
// MPI_THREAD_MULTIPLE, an engine, a progress thread and a look-up per call. Where every site of
// the profile is judged no gain (the cost model's decision mode optimize would take for it,
// trace/gain.hh) or lies below the size threshold, no call would return early, and none of that
// can pay: MPI_Init then asks for the program's own thread level and every collective is the
// plain PMPI_* call (no engine, no progress thread, no model probe at start-up). Measured
// (docs/benchmarks.md, "Cost model"): is-proxy np 4 on one node, where every call is plain.
//
// The placement is not known before MPI_Init: it is assumed block-wise, the machine file's
// ranks per node, the profile's rank count, `cpus_per_rank` CPUs per rank (this process's
// affinity). A run placed otherwise may judge a site otherwise; it then runs plain, which is
// never wrong (the start-up message says on what the verdict rests). After MPI_Init the shim
// checks that the profile's rank count is the run's (else the profile does not fit: blocking,
// with the message it gets anyway).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/config.hh"
#include "runtime/model/summary.hh"

namespace tnbc::trace {

struct PlainRun {
  bool plain = false;
  int np = 0;           // the profile's ranks (the run must have as many)
  std::string because;  // plain: what the verdict rests on; else why not (empty when not asked)
  std::vector<model::Summary::Site> sites;  // plain: every site of the profile, decision "plain"
  // plain: what the verdict's sites received per call, for sizes_not_recorded.
  struct Recorded {
    std::string kind, module;  // the profile site's kind and innermost frame's module basename
    std::uintptr_t offset = 0;  // and offset in it
    // (rank, bytes received a call) of the ranks that receive (a broadcast's root does not: its
    // profile says 0, its summary the message) one size there (else the median says too little).
    std::vector<std::pair<int, std::uint64_t>> bytes_per_call;
  };
  std::vector<Recorded> recorded;
};

// `mpi_library`: MPI_Get_library_version's first line (callable before MPI_Init), compared with
// the machine file's.
PlainRun judge_plain_run(const Settings& s, const std::string& executable, const std::string& mpi_library,
                         int cpus_per_rank);

// A plain run is judged before MPI_Init, from the profile's sites alone: a profile traced at other
// sizes (a smaller class of the program) decides a run whose calls it never saw. At the end of such
// a run, what its call sites did against the profile, as mode optimize's engine judges a call
// (trace/profile.hh, ProfileIndex::find): a site the profile does not hold, or an Alltoall's or a
// broadcast's that received another number of bytes a call than the profile's median for this
// rank (the exchanges whose blocks differ between calls, Alltoallv, match on the site alone). A
// summary's site is the innermost frame: where several profile sites share it, their sizes are
// compared only where they recorded the same one.
struct RunSite {
  std::string kind, module;  // the kind's name; the module's path (its basename is compared)
  std::uintptr_t offset = 0;
  std::uint64_t calls = 0, bytes = 0;  // bytes received, over the calls
};
struct SizesNotRecorded {
  std::uint64_t unknown_site_calls = 0, other_sizes_calls = 0;
  std::vector<std::string> sites;  // one phrase per site, for the message
};
SizesNotRecorded sizes_not_recorded(const PlainRun& p, int rank, const std::vector<RunSite>& run);

// After MPI_Init, from every rank's verdict (`all`: every rank's is plain, `any`: some rank's is):
// the plain program, tnbc's engine, or — where the ranks judged differently (their settings or
// machine files differ) — every collective the MPI library's own call, since ranks that asked MPI
// for their program's own thread level cannot run the engine and the others must not wait for it.
enum class PlainAgreement { Plain, Engine, Disagree };
PlainAgreement agree_plain(bool all, bool any);

}  // namespace tnbc::trace
