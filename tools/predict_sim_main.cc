// tnbc-predict-sim: `tnbc predict --profile ...` (the SimGrid simulation, tools/predict_profile.hh),
// a program of its own that `tnbc` execs. So the `tnbc` command does not load SimGrid and ns-3:
// every rank runs `tnbc exec` before the program, and those libraries cost each of them ~30 ms
// and ~1500 page faults at its start (docs/benchmarks.md, Session 14).
#include <string>
#include <vector>

#include "tools/predict_profile.hh"

int main(int argc, char** argv) {
  return tnbc::tools::cmd_predict_profile(std::vector<std::string>(argv + 1, argv + argc));
}
