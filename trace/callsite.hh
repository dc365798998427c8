// Call-site identity for the trace pass (and the optimized pass, which must find the same
// instance again): the return addresses of a few frames outside libtnbc, each as
// (module basename, offset from the module's load base) so that ASLR does not change them,
// hashed together with the collective kind and communicator size. The instance key adds the
// per-peer size signature; the occurrence index of that key on the rank completes it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "trace/format.hh"

namespace tnbc::trace {

inline constexpr int kMaxSiteFrames = 4;
// Frames the fast capture looks at: tnbc's own (entry point, engine, profile look-up) and then
// kMaxSiteFrames of the program's.
inline constexpr int kMaxBacktrace = 24;

struct Stack {
  int n = 0;
  std::uintptr_t pcs[kMaxSiteFrames] = {};
};

class CallSites {
 public:
  CallSites();
  // Frames of the caller outside libtnbc (innermost first). `return_address` (the MPI entry
  // point's) is the fallback when unwinding is unavailable or fails.
  Stack capture(const void* return_address);
  // Module, offset and symbol of a code address (cached).
  const Frame& describe(std::uintptr_t pc);
  // Hash of the frames' (module, offset) pairs, the kind and the communicator size.
  std::uint64_t site_hash(const Stack& s, const std::string& kind, int comm_size);
  // "module+0xoffset" of a code address (faulting instruction), or "" for nullptr.
  std::string code_string(const void* code);

 private:
  struct Cached {
    Frame frame;
    bool self = false;  // inside libtnbc
    std::uint64_t hash = 0;
  };
  const Cached& lookup(std::uintptr_t pc, const char* symbol_hint);
  std::uintptr_t self_base_ = 0;
  std::uintptr_t self_lo_ = 0, self_hi_ = 0;  // libtnbc's loaded segments
  std::unordered_map<std::uintptr_t, Cached> cache_;
};

// The per-peer size signature (bytes received and sent per peer; bcast: bytes and root).
std::uint64_t size_signature(const std::vector<std::uint64_t>& recv_bytes, const std::vector<std::uint64_t>& send_bytes,
                             int root);
std::uint64_t instance_key(std::uint64_t site, std::uint64_t size_sig);

// The running program (/proc/self/exe), as traces and profiles record it; "?" if unknown.
std::string executable_path();

}  // namespace tnbc::trace
