#include "runtime/memory_hooks.hh"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "runtime/guard.hh"
#include "runtime/log.hh"

#if TNBC_HAVE_UCM
#include <ucm/api/ucm.h>
#endif

namespace tnbc {

namespace {

// Bytes compared at the start of a function: more than any patch's jump (5 to 13 bytes).
constexpr std::size_t kPrologueBytes = 16;

// Where the code at `addr` lies in its library file (from the loaded PT_LOAD segments), or -1.
off_t file_offset(std::uintptr_t addr) {
  struct Lookup {
    std::uintptr_t addr;
    off_t offset;
  } l{addr, -1};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* l = static_cast<Lookup*>(data);
        for (int k = 0; k < info->dlpi_phnum; ++k) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[k];
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && l->addr >= lo && l->addr + kPrologueBytes <= lo + ph.p_filesz) {
            l->offset = static_cast<off_t>(ph.p_offset + (l->addr - lo));
            return 1;
          }
        }
        return 0;
      },
      &l);
  return l.offset;
}

// Whether the first bytes of function `fn` are still those of its library file (true when
// that cannot be told: no file, or the function is not in a file-backed segment).
bool code_as_in_file(const void* fn, std::string& library) {
  Dl_info info{};
  if (dladdr(fn, &info) == 0 || info.dli_fname == nullptr || info.dli_fname[0] == '\0') return true;
  library = info.dli_fname;
  const off_t off = file_offset(reinterpret_cast<std::uintptr_t>(fn));
  const int fd = ::open(info.dli_fname, O_RDONLY | O_CLOEXEC);
  if (off < 0 || fd < 0) {
    if (fd >= 0) ::close(fd);
    return true;
  }
  unsigned char disk[kPrologueBytes];
  const bool read_all = ::pread(fd, disk, sizeof disk, off) == static_cast<ssize_t>(sizeof disk);
  ::close(fd);
  return !read_all || std::memcmp(disk, fn, sizeof disk) == 0;
}

#if TNBC_HAVE_UCM
// Runs inside UCX's munmap hook, before the memory goes away (no allocation here).
void on_ucx_munmap(ucm_event_type_t, ucm_event_t* event, void*) {
  if (guards().empty() || event->munmap.address == nullptr || event->munmap.size == 0) return;
  const auto lo = reinterpret_cast<std::uintptr_t>(event->munmap.address);
  fence_range(lo, lo + event->munmap.size, Access::Syscall, "munmap of a guarded buffer");
}

// Runs inside UCX's madvise hook, before the call (shim/libc.cc's madvise, which UCX's hook
// bypasses: purging advice must not be followed by published data).
void on_ucx_madvise(ucm_event_type_t, ucm_event_t* event, void*) {
  const int advice = event->madvise.advice;
  if (guards().empty() || event->madvise.addr == nullptr || event->madvise.length == 0 ||
      (advice != MADV_DONTNEED && advice != MADV_FREE && advice != MADV_REMOVE))
    return;
  const auto lo = reinterpret_cast<std::uintptr_t>(event->madvise.addr);
  fence_range(lo, lo + event->madvise.length, Access::Syscall, "madvise of a guarded buffer");
}

// Adds tnbc's handlers to UCX's munmap and madvise events when libucm is in the process.
// Installs no hook UCX has not installed itself (UCM_EVENT_FLAG_NO_INSTALL).
bool watch_ucx_munmap() {
  using SetHandler = ucs_status_t (*)(int, int, ucm_event_callback_t, void*);
  static const auto set = reinterpret_cast<SetHandler>(dlsym(RTLD_DEFAULT, "ucm_set_event_handler"));
  if (set == nullptr) return false;
  static const bool ok = set(UCM_EVENT_MUNMAP | UCM_EVENT_FLAG_NO_INSTALL, -1, on_ucx_munmap, nullptr) == UCS_OK;
  if (!ok) log(LogLevel::Warn, "UCX refused tnbc's munmap event handler");
  static const bool advise_ok =
      set(UCM_EVENT_MADVISE | UCM_EVENT_FLAG_NO_INSTALL, -1, on_ucx_madvise, nullptr) == UCS_OK;
  if (!advise_ok) log(LogLevel::Warn, "UCX refused tnbc's madvise event handler");
  return ok;
}
#else
bool watch_ucx_munmap() { return false; }
#endif

}  // namespace

Status munmap_fence_holds() {
  const bool ucx = watch_ucx_munmap();
  if (ucx) log(LogLevel::Debug, "munmap is also fenced through UCX's memory events");
  std::string library;
  if (code_as_in_file(dlsym(RTLD_DEFAULT, "munmap"), library) || ucx) return {};
  std::string why = "the code of munmap (in " + library +
        ") was patched by another library's memory hooks (UCX or Open MPI's patcher?), which unmaps without "
        "tnbc's fence";
#if !TNBC_HAVE_UCM
  if (dlsym(RTLD_DEFAULT, "ucm_set_event_handler"))
    why += "; UCX is loaded: rebuild tnbc with UCX's headers (Debian: libucx-dev; meson -Ducx=enabled) to fence "
           "through its events";
#endif
  return Status::error(why);
}

}  // namespace tnbc
