// tnbc_status(): the one C entry point a program may call on purpose, to ask whether tnbc is
// loaded and what it does with the collectives (the benchmarks in tests/bench/ look it up with
// dlsym(RTLD_DEFAULT, "tnbc_status"), so they also run, and say so, without tnbc).
//
// Returns the mode's name ("nbc", "optimize", "trace", "passthrough", "off") when collectives
// are handled as that mode says, or "<mode>:blocking:<reason>" when the engine is not running
// (reasons as in the summary: thread_level, disabled, ...), or "not_initialized" outside
// MPI_Init .. MPI_Finalize. The string stays valid until the calling thread calls it again.
#include <string>

#include "runtime/runtime.hh"

extern "C" __attribute__((visibility("default"))) const char* tnbc_status(void) {
  thread_local std::string s;
  tnbc::Runtime& rt = tnbc::Runtime::get();
  const tnbc::Mode m = rt.settings().mode;
  s = std::string(tnbc::mode_name(m));
  if (m != tnbc::Mode::Off && !rt.intercepting()) {
    s = "not_initialized";
  } else if ((m == tnbc::Mode::Nbc || m == tnbc::Mode::Optimize || m == tnbc::Mode::Trace) && rt.engine() == nullptr) {
    s += ":blocking:";
    s += tnbc::reason_name(rt.blocking_reason());
  }
  return s.c_str();
}
