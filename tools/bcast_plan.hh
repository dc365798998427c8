// `tnbc bcast-plan MACHINE --np N [--per-node M] --rma L,o,G,O_r [--sizes LIST]`: what
// TNBC_BCAST_BACKEND=auto chooses for MPI_COMM_WORLD's broadcasts, offline: per size the cost
// model's time of each backend (runtime/bcast_cost.hh, bcast_costs_pipelined) and auto's pick,
// then the plan over sizes as the start-up log line prints it. The one-sided figures are the RMA
// probe's, as a run's start-up line gives them with TNBC_LOG=info ("RMA probe (seed 000's
// LogGP): L 12.3 us, o = g 4.5 us, G 0.25 ns/B, O_r 25.3 us, copy out 0.1 ns/B"): --rma 12.3,4.5,0.25,25.3,0.1.
// tests/bench/bcast_backends.py uses it to set auto against the measured table.
#pragma once

#include <string>
#include <vector>

namespace tnbc::tools {

int cmd_bcast_plan(const std::vector<std::string>& args);

}  // namespace tnbc::tools
