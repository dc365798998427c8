// `tnbc predict MACHINE --np N [--per-node M] [--sizes LIST] [--json]`: the cost model's
// predictions for a placement, without running anything — the MPI library's blocking MPI_Bcast
// and MPI_Alltoall at each size, and tnbc's schedule returning early (time in the call, until
// the last piece is published). tests/bench/model_validation.py compares them with what
// tests/bench/blocking_times measures (docs/benchmarks.md, "The cost model against measurements").
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tnbc::tools {

int cmd_predict(const std::vector<std::string>& args);
// "64k", "1m", "4096": bytes (0: not a size); the size lists of predict and bcast-plan.
std::size_t parse_size(const std::string& s);
// A comma-separated list of sizes into out; false with bad set to the first token that is not one.
bool parse_sizes(const std::string& list, std::vector<std::size_t>& out, std::string& bad);

}  // namespace tnbc::tools
