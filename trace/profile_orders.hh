// Mode optimize: the profile named by TNBC_PROFILE as the engine's source of read orders.
// Each call is identified as the trace pass identified it (trace/callsite.hh: call site from
// the stack, instance key from the per-peer sizes) and looked up in the profile; the site's
// consensus order is used when this rank recorded the same sizes there, else the default
// order (with one message per kind of problem, and a count in the summary).
#pragma once

#include <memory>
#include <string>

#include "runtime/config.hh"
#include "runtime/read_order.hh"
#include "runtime/status.hh"
#include "runtime/stats.hh"

namespace tnbc::trace {

// Also the source of the blocking decisions (ReadOrderSource::run_blocking, trace/gain.hh):
// per call site, from the profile's site-level estimates and the cost settings only.
//
// Reads and checks the profile against this run (np, executable). An error naming the file when
// it cannot be used (no TNBC_PROFILE, unreadable, corrupt, another np or program): the caller
// reports it and runs with default priorities. Rank-local: ranks that read different files or
// settings decide differently, which changes no message (runtime/read_order.hh), so nothing is
// compared between ranks.
Result<std::unique_ptr<ReadOrderSource>> load_profile_orders(const Settings& s, Stats& stats, int world_rank,
                                                             int world_size);

}  // namespace tnbc::trace
