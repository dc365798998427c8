#include "tools/symbolize.hh"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace tnbc::tools {

namespace {

std::string demangle(const char* name) {
  if (!name || !*name) return {};
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string s = d;
  std::free(d);
  return s;
}

std::string hex(const unsigned char* bytes, int n) {
  std::string s;
  char b[3];
  for (int i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", bytes[i]);
    s += b;
  }
  return s;
}

const Dwfl_Callbacks kOffline = {
    dwfl_build_id_find_elf, dwfl_standard_find_debuginfo, dwfl_offline_section_address, nullptr};

// The innermost function (inlined or not) whose code holds `addr` (module-relative to the CU's
// bias): its DWARF name, following abstract origins.
std::string dwarf_function(Dwfl_Module* mod, Dwarf_Addr addr) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(mod, addr, &bias);
  if (!cu) return {};
  Dwarf_Die* scopes = nullptr;
  const int n = dwarf_getscopes(cu, addr - bias, &scopes);
  std::string name;
  for (int i = 0; i < n && name.empty(); ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) continue;
    Dwarf_Attribute a;
    const char* linkage = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_linkage_name, &a));
    const char* plain = dwarf_formstring(dwarf_attr_integrate(&scopes[i], DW_AT_name, &a));
    name = linkage ? demangle(linkage) : plain ? plain : "";
  }
  std::free(scopes);
  return name;
}

}  // namespace

struct Symbolizer::Module {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* mod = nullptr;
  Dwarf_Addr base = 0;  // where the module's lowest mapped page is in dwfl's addresses
  bool usable = false;  // nothing is looked up in a module that is not the one that ran
  bool no_lines_said = false;
  ~Module() {
    if (dwfl) dwfl_end(dwfl);
  }
};

Symbolizer::Symbolizer() = default;

Symbolizer::~Symbolizer() = default;

Symbolizer::Module& Symbolizer::module(const std::string& path, const std::string& build_id, std::string& note) {
  if (auto it = modules_.find(path); it != modules_.end()) return *it->second;
  Module* m = (modules_[path] = std::make_unique<Module>()).get();
  struct stat st;
  if (path.empty() || path == "?" || ::stat(path.c_str(), &st) != 0) {
    note = path + ": not found (moved or deleted since the run?): its call sites are shown as module+offset";
    return *m;
  }
  m->dwfl = dwfl_begin(&kOffline);
  if (m->dwfl) {
    m->mod = dwfl_report_offline(m->dwfl, path.c_str(), path.c_str(), -1);
    dwfl_report_end(m->dwfl, nullptr, nullptr);
  }
  GElf_Addr bias = 0;
  Elf* elf = m->mod ? dwfl_module_getelf(m->mod, &bias) : nullptr;
  if (!elf) {
    note = path + ": cannot be read as an ELF file (" + dwfl_errmsg(-1) + "): its call sites are shown as module+offset";
    return *m;
  }
  const unsigned char* bits = nullptr;
  GElf_Addr at = 0;
  const int n = dwfl_module_build_id(m->mod, &bits, &at);
  const std::string file_id = n > 0 ? hex(bits, n) : "";
  if (!build_id.empty() && file_id != build_id) {
    note = path + ": not the file that ran (" + (file_id.empty() ? "it has no build ID" : "its build ID differs") +
           ": rebuilt or replaced since the run): its call sites are shown as module+offset";
    return *m;
  }
  // The summary's offsets count from the module's lowest mapped page (dladdr's dli_fbase): the
  // first PT_LOAD segment's address, rounded down to a page, plus the load bias.
  std::size_t phnum = 0;
  elf_getphdrnum(elf, &phnum);
  GElf_Addr lowest = ~GElf_Addr{0};
  for (std::size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < lowest) lowest = ph.p_vaddr;
  }
  const GElf_Addr page = static_cast<GElf_Addr>(sysconf(_SC_PAGESIZE));
  m->base = bias + (lowest == ~GElf_Addr{0} ? 0 : lowest & ~(page - 1));
  m->usable = true;
  return *m;
}

SourceLocation Symbolizer::locate(const std::string& path, const std::string& build_id, unsigned long long offset,
                                  std::string& note) {
  SourceLocation loc;
  Module& m = module(path, build_id, note);
  if (!m.usable || offset == 0) return loc;
  // The return address points after the call: the call itself is the byte before.
  const Dwarf_Addr addr = m.base + offset - 1;
  loc.function = dwarf_function(m.mod, addr);
  if (loc.function.empty()) loc.function = demangle(dwfl_module_addrname(m.mod, addr));
  if (Dwfl_Line* line = dwfl_module_getsrc(m.mod, addr)) {
    int l = 0;
    if (const char* file = dwfl_lineinfo(line, nullptr, &l, nullptr, nullptr, nullptr)) {
      loc.file = file;
      loc.line = l;
    }
  }
  if (!loc.resolved() && !m.no_lines_said) {
    m.no_lines_said = true;  // said once per module
    note = path + ": no debug information (line numbers) for its call sites (built without -g, or stripped; "
             "Debian: the -dbgsym package): shown as " + (loc.function.empty() ? "module+offset" : "function (module+offset)");
  }
  return loc;
}

std::string Symbolizer::name_call(const std::string& symbol, const std::string& module, unsigned long long offset,
                                  const std::map<std::string, std::string>& modules, std::string& note) {
  for (const auto& [path, build_id] : modules) {
    if (std::filesystem::path(path).filename() != module) continue;
    const SourceLocation loc = locate(path, build_id, offset, note);
    if (!loc.resolved()) return {};
    const std::string line = std::filesystem::path(loc.file).filename().string() + ":" + std::to_string(loc.line);
    if (symbol == "?" && !loc.function.empty()) return loc.function + " (" + line + ")";
    const bool inlined = !loc.function.empty() && loc.function != symbol && symbol != "?";
    return symbol + " (" + line + (inlined ? ", in " + loc.function : "") + ")";
  }
  return {};
}

std::string Symbolizer::locate_frame(const std::string& where, const std::map<std::string, std::string>& modules,
                                     std::string& note) {
  const std::size_t open = where.rfind(" (");
  if (open == std::string::npos || where.back() != ')') return where;
  const std::string place = where.substr(open + 2, where.size() - open - 3);  // module+0xoffset
  const std::size_t plus = place.rfind("+0x");
  if (plus == std::string::npos || plus == 0) return where;
  char* end = nullptr;
  const unsigned long long offset = std::strtoull(place.c_str() + plus + 1, &end, 16);
  if (!end || *end != '\0') return where;
  const std::string head = where.substr(0, open);
  const std::size_t label = head.rfind(": ");
  const std::size_t at = label == std::string::npos ? 0 : label + 2;
  const std::string named = name_call(head.substr(at), place.substr(0, plus), offset, modules, note);
  return named.empty() ? where : head.substr(0, at) + named;
}

}  // namespace tnbc::tools
