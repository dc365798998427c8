// Source locations of call sites for `tnbc report`: a summary records each site as module (the
// file's absolute path), the return address's offset from where the module was mapped, and the
// module's GNU build ID (runtime/modules.hh). At report time elfutils' libdw reads the module's
// DWARF (or its separate debug file, /usr/lib/debug/.build-id/...) and gives the function and
// `file:line` of the call. When it cannot, the site is shown as module+offset and one note per
// module says why: the file is gone (moved, deleted), it is not the file that ran (its build ID
// differs: rebuilt since), or it has no debug information (built without -g, stripped).
#pragma once

#include <map>
#include <memory>
#include <string>

namespace tnbc::tools {

struct SourceLocation {
  std::string function;  // "" when unknown (then the summary's exported symbol, if any, is used)
  std::string file;      // "" when there is no line information
  int line = 0;
  bool resolved() const { return !file.empty() && line > 0; }
};

class Symbolizer {
 public:
  Symbolizer();
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // The call whose return address is `offset` bytes into `module` (as the summary records it;
  // `build_id` hex, "" when unknown). `note` is set, once per module, when nothing or only the
  // function could be found: a sentence naming the module and why.
  SourceLocation locate(const std::string& module, const std::string& build_id, unsigned long long offset,
                        std::string& note);

  // The call whose return address is `offset` bytes into the module named `module` (a base
  // name, as a trace's frames and the runtime's messages name it), shown at its file:line:
  // "symbol (file:line)", or "symbol (file:line, in function)" where the call is in a function
  // the compiler inlined there ("?": DWARF's function names it). `modules`: the run's module
  // paths and build IDs (a summary's `modules`), the module found among them by its base name.
  // "" where it is not there or the call has no line; `note` as locate's (once per module).
  std::string name_call(const std::string& symbol, const std::string& module, unsigned long long offset,
                        const std::map<std::string, std::string>& modules, std::string& note);

  // A frame as the runtime names it in the profile and the summaries' decisions, "symbol
  // (module+0xoffset)" (trace/profile.hh, ProfileSite::where; a leading label such as "plain
  // program: " is kept), named by name_call; unchanged where name_call cannot.
  std::string locate_frame(const std::string& where, const std::map<std::string, std::string>& modules,
                           std::string& note);

 private:
  struct Module;
  Module& module(const std::string& path, const std::string& build_id, std::string& note);
  std::map<std::string, std::unique_ptr<Module>> modules_;
};

}  // namespace tnbc::tools
