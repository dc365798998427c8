#include "trace/callsite.hh"

#include <cxxabi.h>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "runtime/fnv1a.hh"
#include "trace/trace_config.h"

#if TNBC_HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

namespace tnbc::trace {

namespace {
void self_anchor() {}

std::string basename_of(const char* path) {
  if (!path || !*path) return "?";
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string demangle(const char* name) {
  if (!name || !*name) return {};
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string s = d;
    std::free(d);
    return s;
  }
  return name;
}
}  // namespace

CallSites::CallSites() {
#if TNBC_HAVE_LIBUNWIND
  // One unwind cache per thread: the global one locks with every signal blocked around each step
  // (two rt_sigprocmask system calls per frame, ~18 per call measured).
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
#endif
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&self_anchor), &info)) self_base_ = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
  // The address range of libtnbc's segments: its frames are skipped without a look-up.
  dl_iterate_phdr(
      [](dl_phdr_info* p, std::size_t, void* data) {
        auto* me = static_cast<CallSites*>(data);
        if (p->dlpi_addr != me->self_base_) return 0;
        for (int i = 0; i < p->dlpi_phnum; ++i) {
          if (p->dlpi_phdr[i].p_type != PT_LOAD) continue;
          const std::uintptr_t lo = p->dlpi_addr + p->dlpi_phdr[i].p_vaddr, hi = lo + p->dlpi_phdr[i].p_memsz;
          me->self_lo_ = me->self_lo_ ? std::min(me->self_lo_, lo) : lo;
          me->self_hi_ = std::max(me->self_hi_, hi);
        }
        return 1;
      },
      this);
}

const CallSites::Cached& CallSites::lookup(std::uintptr_t pc, const char* symbol_hint) {
  auto it = cache_.find(pc);
  if (it != cache_.end()) return it->second;
  Cached c;
  Dl_info info;
  // pc - 1: a return address may point past the end of its function (calls to noreturn).
  if (pc && dladdr(reinterpret_cast<void*>(pc - 1), &info)) {
    const auto base = reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    c.self = base == self_base_ && self_base_ != 0;
    c.frame.module = basename_of(info.dli_fname);
    c.frame.offset = pc - base;
    c.frame.symbol = demangle(symbol_hint && *symbol_hint ? symbol_hint : info.dli_sname);
  } else {
    c.frame.module.assign(1, '?');
    c.frame.offset = pc;
  }
  c.hash = fnv1a64(c.frame.module.data(), c.frame.module.size());
  c.hash = fnv1a64(&c.frame.offset, sizeof c.frame.offset, c.hash);
  return cache_.emplace(pc, std::move(c)).first->second;
}

const Frame& CallSites::describe(std::uintptr_t pc) { return lookup(pc, nullptr).frame; }

Stack CallSites::capture(const void* return_address) {
  Stack s;
#if TNBC_HAVE_LIBUNWIND
  // Fast path: unw_backtrace (libunwind caches each frame's unwind rule by address, so a call
  // site seen before costs no DWARF look-up, no dl_iterate_phdr, no signal masking). When a frame
  // is new, the slow walk below gets its name too (unw_get_proc_name sees static functions,
  // which dladdr does not) and caches it.
  void* ips[kMaxBacktrace];
  const int got = unw_backtrace(ips, kMaxBacktrace);
  bool all_known = got > 0;
  for (int i = 0; i < got && all_known && s.n < kMaxSiteFrames; ++i) {
    const auto pc = reinterpret_cast<std::uintptr_t>(ips[i]);
    if (pc > self_lo_ && pc <= self_hi_) continue;  // tnbc's own frames (pc - 1 is inside)
    const auto it = cache_.find(pc);
    all_known = it != cache_.end();
    if (all_known) s.pcs[s.n++] = pc;
  }
  if (all_known && (s.n == kMaxSiteFrames || got < kMaxBacktrace)) return s;
  s = Stack{};
  unw_context_t ctx;
  unw_cursor_t cur;
  if (unw_getcontext(&ctx) == 0 && unw_init_local(&cur, &ctx) == 0) {
    int depth = 0;
    while (s.n < kMaxSiteFrames && depth++ < 64 && unw_step(&cur) > 0) {
      unw_word_t ip = 0;
      if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0 || ip == 0) break;
      const auto pc = static_cast<std::uintptr_t>(ip);
      const Cached* c;
      if (auto it = cache_.find(pc); it != cache_.end()) {
        c = &it->second;
      } else {
        char name[256] = "";
        unw_word_t off = 0;
        if (unw_get_proc_name(&cur, name, sizeof name, &off) != 0) name[0] = '\0';
        c = &lookup(pc, name);
      }
      if (c->self) continue;  // tnbc's own frames (wrappers, engine)
      s.pcs[s.n++] = pc;
    }
  }
#endif
  if (s.n == 0 && return_address) s.pcs[s.n++] = reinterpret_cast<std::uintptr_t>(return_address);
  return s;
}

std::uint64_t CallSites::site_hash(const Stack& s, const std::string& kind, int comm_size) {
  std::uint64_t h = fnv1a64(kind.data(), kind.size());
  h = fnv1a64(&comm_size, sizeof comm_size, h);
  for (int i = 0; i < s.n; ++i) {
    const std::uint64_t fh = lookup(s.pcs[i], nullptr).hash;
    h = fnv1a64(&fh, sizeof fh, h);
  }
  return h;
}

std::string CallSites::code_string(const void* code) {
  if (!code) return {};
  const Frame& f = lookup(reinterpret_cast<std::uintptr_t>(code) + 1, nullptr).frame;  // exact address
  char b[32];
  std::snprintf(b, sizeof b, "+0x%llx", static_cast<unsigned long long>(f.offset - 1));
  return f.module + b;
}

std::uint64_t size_signature(const std::vector<std::uint64_t>& recv_bytes, const std::vector<std::uint64_t>& send_bytes,
                             int root) {
  std::uint64_t h = fnv1a64(&root, sizeof root);
  if (!recv_bytes.empty()) h = fnv1a64(recv_bytes.data(), recv_bytes.size() * sizeof(std::uint64_t), h);
  h = fnv1a64("|", 1, h);
  if (!send_bytes.empty()) h = fnv1a64(send_bytes.data(), send_bytes.size() * sizeof(std::uint64_t), h);
  return h;
}

std::uint64_t instance_key(std::uint64_t site, std::uint64_t size_sig) {
  std::uint64_t h = fnv1a64(&site, sizeof site);
  return fnv1a64(&size_sig, sizeof size_sig, h);
}

std::string executable_path() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string("?");
}

}  // namespace tnbc::trace
