#include "runtime/modules.hh"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>

namespace tnbc {

namespace {

std::string real_path(const char* path) {
  char buf[PATH_MAX];
  return path && *path && ::realpath(path, buf) ? std::string(buf) : std::string(path ? path : "");
}

// The GNU build ID in the loaded notes of the object that maps `addr`, and whether that object
// is the main program (dl_iterate_phdr names it "").
struct Found {
  std::uintptr_t addr = 0;
  std::string build_id;
  bool main_program = false;
  bool found = false;
};

int visit(struct dl_phdr_info* info, std::size_t, void* data) {
  auto& f = *static_cast<Found*>(data);
  bool inside = false;
  for (int i = 0; i < info->dlpi_phnum && !inside; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    inside = ph.p_type == PT_LOAD && f.addr >= lo && f.addr < lo + ph.p_memsz;
  }
  if (!inside) return 0;
  f.found = true;
  f.main_program = info->dlpi_name == nullptr || info->dlpi_name[0] == '\0';
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* n = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((n->n_namesz + 3) & ~3u);
      const char* next = desc + ((n->n_descsz + 3) & ~3u);
      if (next > end) break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        char hex[3];
        for (unsigned k = 0; k < n->n_descsz; ++k) {
          std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(desc[k]));
          f.build_id += hex;
        }
        return 1;
      }
      p = next;
    }
  }
  return 1;
}

}  // namespace

CodeLocation locate_return_address(const void* return_address) {
  CodeLocation loc;
  if (!return_address) return loc;
  const char* at = static_cast<const char*>(return_address) - 1;
  Dl_info info{};
  loc.offset = reinterpret_cast<std::uintptr_t>(return_address);
  if (!dladdr(at, &info)) return loc;
  loc.offset -= reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  if (info.dli_sname) loc.symbol = info.dli_sname;
  Found f;
  f.addr = reinterpret_cast<std::uintptr_t>(at);
  dl_iterate_phdr(visit, &f);
  // The main program's name in the link map is how it was started (maybe a relative path, from
  // another directory): /proc/self/exe is the file.
  loc.module = f.found && f.main_program ? real_path("/proc/self/exe") : real_path(info.dli_fname);
  if (loc.module.empty()) loc.module = "?";
  loc.build_id = f.build_id;
  return loc;
}

}  // namespace tnbc
