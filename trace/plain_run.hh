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

#include <string>
#include <vector>

#include "runtime/config.hh"
#include "runtime/model/summary.hh"

namespace tnbc::trace {

struct PlainRun {
  bool plain = false;
  int np = 0;           // the profile's ranks (the run must have as many)
  std::string because;  // plain: what the verdict rests on; else why not (empty when not asked)
  std::vector<model::Summary::Site> sites;  // plain: every site of the profile, decision "plain"
};

// `mpi_library`: MPI_Get_library_version's first line (callable before MPI_Init), compared with
// the machine file's.
PlainRun judge_plain_run(const Settings& s, const std::string& executable, const std::string& mpi_library,
                         int cpus_per_rank);

// After MPI_Init, from every rank's verdict (`all`: every rank's is plain, `any`: some rank's is):
// the plain program, tnbc's engine, or — where the ranks judged differently (their settings or
// machine files differ) — every collective the MPI library's own call, since ranks that asked MPI
// for their program's own thread level cannot run the engine and the others must not wait for it.
enum class PlainAgreement { Plain, Engine, Disagree };
PlainAgreement agree_plain(bool all, bool any);

}  // namespace tnbc::trace
