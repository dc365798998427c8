// Which module (the executable or a shared object) a code address is in, as the summary records
// call sites: the module's absolute path, the address's offset from where the module is mapped
// (stable under ASLR), the dynamic symbol dladdr knows (if exported) and the module's GNU build
// ID, so that `tnbc report` can resolve `file:line` later and tell when the file on disk is no
// longer the one that ran (docs/reports.md). Local only; not on the hot path (summary time).
#pragma once

#include <cstdint>
#include <string>

namespace tnbc {

struct CodeLocation {
  std::string module = "?";   // absolute path ("?" when unknown)
  std::uintptr_t offset = 0;  // address - the module's lowest mapped address (dladdr's dli_fbase)
  std::string symbol = "?";   // exported symbol containing it, "?" if none
  std::string build_id;       // hex, "" when the module has none
};

// `return_address`: the return address of a call (the byte before it is looked up, so that a
// call at the very end of a function is attributed to that function).
CodeLocation locate_return_address(const void* return_address);

}  // namespace tnbc
