#include "runtime/guard.hh"

#include <dlfcn.h>
#include <sched.h>
#include <ucontext.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "runtime/futex.hh"
#include "runtime/log.hh"

namespace tnbc {

namespace {

thread_local bool tls_progress_thread = false;
thread_local RaceRetry tls_race;
thread_local int tls_tid = 0;
thread_local bool tls_in_table = false;

int my_tid() {
  if (tls_tid == 0) tls_tid = static_cast<int>(syscall(SYS_gettid));
  return tls_tid;
}

std::uintptr_t page_down(std::uintptr_t a, std::size_t page) { return a & ~(static_cast<std::uintptr_t>(page) - 1); }
std::uintptr_t page_up(std::uintptr_t a, std::size_t page) { return page_down(a + page - 1, page); }

// The handlers tnbc passes faults that are not its own to. Chain position 0 was installed before
// tnbc; each later one replaced tnbc's handler behind the interposers' back (a raw rt_sigaction)
// and was found by ensure_fault_handler(), which put tnbc's back on top. A handler that saved
// tnbc's as "the previous one" calls it back for faults it does not want: that call is passed
// further down the chain (tls_chain_next / tls_chain_info).
//
// Written under g_chain_mutex (install, ensure, the program's sigaction through
// intercept_sigaction), read by the fault handler without a lock: a writer fills a fresh slot
// and then publishes its index (release); the handler loads the index (acquire) and reads a
// slot no writer touches again until kChainSlots later writes.
constexpr int kMaxChain = 8;
constexpr int kChainSlots = 64;
struct sigaction g_slots[kChainSlots];
int g_next_slot = 0;                               // under g_chain_mutex
std::atomic<int> g_chain_slot[kMaxChain] = {};     // chain position -> slot
std::atomic<int> g_chain_len{0};
std::mutex g_chain_mutex;
std::atomic<bool> g_installed{false};
std::atomic<long long> g_timeout_ns{kDefaultTimeoutS * 1000000000LL};
std::atomic<TimeoutReporter> g_reporter{nullptr};
std::atomic<RegionOpener> g_opener{nullptr};

// The handler at chain position `i` (async-signal-safe).
const struct sigaction& chain_entry(int i) { return g_slots[g_chain_slot[i].load(std::memory_order_acquire)]; }

// Puts `a` at chain position `i` (with g_chain_mutex held).
void set_chain_entry(int i, const struct sigaction& a) {
  const int slot = g_next_slot;
  g_next_slot = (g_next_slot + 1) % kChainSlots;
  g_slots[slot] = a;
  g_chain_slot[i].store(slot, std::memory_order_release);
}

thread_local int tls_chain_next = -1;                 // inside a chained handler: the next one down
thread_local const siginfo_t* tls_chain_info = nullptr;  // ... and the fault it was given

void on_fault(int sig, siginfo_t* info, void* ctx);

// libc's own sigaction, not the next interposer: libraries that keep their handler first by
// ignoring sigaction() calls for SIGSEGV (UCX's libucs_signal, sanitizer runtimes) would
// otherwise swallow tnbc's installation silently.
using RealSigaction = int (*)(int, const struct sigaction*, struct sigaction*);
RealSigaction libc_sigaction() {
  static RealSigaction fn = [] {
    void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void* f = libc ? dlsym(libc, "sigaction") : nullptr;
    return reinterpret_cast<RealSigaction>(f ? f : dlsym(RTLD_NEXT, "sigaction"));
  }();
  return fn;
}

// The kernel's SIGSEGV action, asked with the raw system call (no library in between).
struct KernelSigaction {
  void* handler;
  unsigned long flags;
  void* restorer;
  std::uint64_t mask;
};
bool kernel_action(KernelSigaction& k) {
  return syscall(SYS_rt_sigaction, SIGSEGV, nullptr, &k, sizeof k.mask) == 0;
}

// Whether the byte at `addr` can be read, asked of the kernel (which returns EFAULT instead of
// faulting): async-signal-safe.
bool readable(std::uintptr_t addr) {
  char byte;
  struct iovec local{&byte, 1}, remote{reinterpret_cast<void*>(addr), 1};
  return syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0) == 1;
}

// Passes a fault that is not tnbc's to chain position `start`, or the next one below that is not tnbc's
// own; the default action when none is left.
void chain_from(int start, int sig, siginfo_t* info, void* ctx) {
  for (int i = start; i >= 0; --i) {
    const struct sigaction& c = chain_entry(i);
    if (c.sa_flags & SA_SIGINFO) {
      if (c.sa_sigaction == on_fault) continue;
      if (c.sa_sigaction == nullptr) break;
    } else if (c.sa_handler == SIG_DFL || c.sa_handler == SIG_IGN) {
      break;
    }
    const int outer_next = tls_chain_next;
    const siginfo_t* outer_info = tls_chain_info;
    tls_chain_next = i - 1;
    tls_chain_info = info;
    if (c.sa_flags & SA_SIGINFO) c.sa_sigaction(sig, info, ctx);
    else c.sa_handler(sig);
    tls_chain_next = outer_next;
    tls_chain_info = outer_info;
    return;
  }
  // Default action: reinstall it and return; the access faults again and the kernel
  // terminates the process as it would have without tnbc (core dump included).
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  libc_sigaction()(sig, &dfl, nullptr);
  g_installed.store(false);
}

void chain(int sig, siginfo_t* info, void* ctx) {
  chain_from(g_chain_len.load(std::memory_order_acquire) - 1, sig, info, ctx);
}

void on_fault(int sig, siginfo_t* info, void* ctx) {
  if (tls_chain_info != nullptr && info == tls_chain_info) {
    // Called back by a handler tnbc chained to, for a fault that handler does not take: it is
    // not tnbc's either (that was checked first), so it goes further down the chain.
    chain_from(tls_chain_next, sig, info, ctx);
    return;
  }
  const int saved_errno = errno;
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  if (!tls_progress_thread) {
    if (Region* r = guards().acquire(addr)) {
      if (r->hook) {
        const auto* uc = static_cast<const ucontext_t*>(ctx);
        const bool write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
        r->hook(r, addr, write ? Access::Write : Access::Read,
                reinterpret_cast<const void*>(uc->uc_mcontext.gregs[REG_RIP]));
      } else {
        wait_published(r, "an access to a received buffer", WaitSource::Fault, true);
      }
      guards().release(r);
      tls_race.handled();
      errno = saved_errno;
      return;
    }
    // Published and erased between the fault and the look-up: the page is readable now, so
    // retry (once per region unlisted: RaceRetry; the count read after the look-up missed
    // includes the erasure that made it miss).
    if (guards().recently_erased(addr) && readable(addr) && tls_race.retry(addr, guards().erasures())) {
      errno = saved_errno;
      return;
    }
  } else if (guards().acquire(addr) != nullptr) {
    log_raw("internal error: the progress thread touched a guarded page (MPI wrote into a "
            "receive buffer tnbc guards); aborting");
  }
  if (log_enabled(LogLevel::Debug) || guards().near(addr)) guards().describe(addr);
  tls_race.handled();
  errno = saved_errno;
  chain(sig, info, ctx);
}

}  // namespace

RegionPlan plan_regions(std::uintptr_t base, std::span<const Step> pieces, std::uintptr_t lo, std::uintptr_t hi,
                        std::size_t page, const std::vector<bool>& force_in_call) {
  RegionPlan plan;
  plan.in_call.assign(pieces.size(), false);
  const std::uintptr_t glo = page_up(lo, page), ghi = page_down(hi, page);
  std::vector<std::uintptr_t> cuts;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Step& p = pieces[i];
    if (!lands(p.kind) || p.length == 0) continue;
    const std::uintptr_t s = base + p.offset, e = s + p.length;
    if (s < glo || e > ghi || glo >= ghi || (i < force_in_call.size() && force_in_call[i])) plan.in_call[i] = true;
    cuts.push_back(std::clamp(page_down(s, page), glo, std::max(glo, ghi)));
    cuts.push_back(std::clamp(page_up(e, page), glo, std::max(glo, ghi)));
  }
  if (glo >= ghi) return plan;
  cuts.push_back(glo);
  cuts.push_back(ghi);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  // Pieces sorted by start, to find overlaps with a sweep.
  std::vector<int> by_start;
  for (std::size_t i = 0; i < pieces.size(); ++i)
    if (lands(pieces[i].kind) && pieces[i].length > 0) by_start.push_back(static_cast<int>(i));
  std::sort(by_start.begin(), by_start.end(), [&](int a, int b) { return pieces[a].offset < pieces[b].offset; });
  std::size_t first = 0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    RegionPlan::Span span{cuts[k], cuts[k + 1], {}};
    while (first < by_start.size() &&
           base + pieces[by_start[first]].offset + pieces[by_start[first]].length <= span.lo &&
           base + pieces[by_start[first]].offset < span.lo)
      ++first;  // skip pieces that ended before (offsets may overlap only in erroneous programs)
    bool any_guarded = false;
    for (std::size_t j = 0; j < by_start.size(); ++j) {
      const Step& p = pieces[static_cast<std::size_t>(by_start[j])];
      const std::uintptr_t s = base + p.offset, e = s + p.length;
      if (s >= span.hi) break;
      if (e <= span.lo) continue;
      span.pieces.push_back(by_start[j]);
      any_guarded = any_guarded || !plan.in_call[by_start[j]];
    }
    if (any_guarded) plan.regions.push_back(std::move(span));
  }
  return plan;
}

// ---------------------------------------------------------------- table
GuardTable& guards() {
  static GuardTable* t = new GuardTable();  // never destroyed: the handler may run at exit
  return *t;
}

std::atomic<std::uint32_t>& publish_word() {
  static std::atomic<std::uint32_t> w{0};
  return w;
}

Urgency& urgency() {
  static Urgency u;
  return u;
}

void Urgency::poke() {
  wake.fetch_add(1, std::memory_order_release);
  futex::wake_all(wake);
}

bool GuardTable::held_by_this_thread() { return tls_in_table; }

void GuardTable::lock() const {
  const int me = my_tid();
  int expected = 0;
  while (!lock_.compare_exchange_weak(expected, me, std::memory_order_acquire)) {
    if (expected == me) {  // a signal handler nested inside our own critical section
      log_raw("internal error: guard table re-entered from a signal handler; aborting");
      abort();
    }
    expected = 0;
    sched_yield();
  }
  tls_in_table = true;
}

void GuardTable::unlock() const {
  tls_in_table = false;
  lock_.store(0, std::memory_order_release);
}

bool GuardTable::insert(Region* r) {
  lock();
  // The overlapping regions: the one starting at or before r->lo, and those starting inside r.
  auto first = map_.upper_bound(r->lo);
  if (first != map_.begin() && std::prev(first)->second->hi > r->lo) --first;
  auto last = map_.lower_bound(r->hi);
  for (auto it = first; it != last; ++it) {
    if (!it->second->published.load(std::memory_order_acquire)) {
      unlock();
      return false;
    }
  }
  for (auto it = first; it != last;) {
    remember_erased(it->second);
    it = map_.erase(it);
    count_.fetch_sub(1, std::memory_order_release);
  }
  map_.emplace(r->lo, r);
  count_.fetch_add(1, std::memory_order_release);
  unlock();
  return true;
}

void GuardTable::remember_erased(const Region* r) {
  const auto slot = static_cast<unsigned>(erasures_.fetch_add(1, std::memory_order_relaxed) % kRecent);
  recent_lo_[slot].store(r->lo, std::memory_order_relaxed);
  recent_hi_[slot].store(r->hi, std::memory_order_release);
}

void GuardTable::erase(Region* r) {
  lock();
  auto it = map_.find(r->lo);
  if (it != map_.end() && it->second == r) {
    map_.erase(it);
    count_.fetch_sub(1, std::memory_order_release);
  }
  remember_erased(r);
  unlock();
  while (r->waiters.load(std::memory_order_acquire) != 0) sched_yield();
}

Region* GuardTable::acquire(std::uintptr_t addr) {
  if (empty() || tls_in_table) return nullptr;
  Region* found = nullptr;
  lock();
  auto it = map_.upper_bound(addr);
  if (it != map_.begin()) {
    --it;
    if (addr >= it->second->lo && addr < it->second->hi) {
      found = it->second;
      found->waiters.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  unlock();
  return found;
}

bool GuardTable::near(std::uintptr_t addr) const {
  if (tls_in_table) return false;
  lock();
  bool n = false;
  auto it = map_.lower_bound(addr > (1u << 24) ? addr - (1u << 24) : 0);
  if (it != map_.end() && it->first < addr + (1u << 24)) n = true;
  unlock();
  return n || recently_erased(addr);
}

void GuardTable::describe(std::uintptr_t addr) const {
  if (tls_in_table) return;
  auto line = [](const char* a, std::uintptr_t x, const char* b, std::uintptr_t y, const char* c, long z) {
    char msg[200], *p = msg;
    for (const char* s = a; *s;) *p++ = *s++;
    p = format_u64(p, x, 16);
    for (const char* s = b; *s;) *p++ = *s++;
    p = format_u64(p, y, 16);
    for (const char* s = c; *s;) *p++ = *s++;
    p = format_u64(p, static_cast<unsigned long long>(z), 10);
    *p = '\0';
    log_raw(msg);
  };
  line("fault passed on to the previous handler: address 0x", addr, " recent=", recently_erased(addr) ? 1 : 0,
       " regions=", count_.load());
  lock();
  auto it = map_.upper_bound(addr);
  int shown = 0;
  if (it != map_.begin()) --it;
  for (; it != map_.end() && shown < 3; ++it, ++shown)
    line("  region 0x", it->second->lo, "-0x", it->second->hi, " published=", it->second->published.load());
  unlock();
}

bool GuardTable::recently_erased(std::uintptr_t addr) const {
  for (int i = 0; i < kRecent; ++i) {
    const std::uintptr_t hi = recent_hi_[i].load(std::memory_order_acquire);
    if (addr >= recent_lo_[i].load(std::memory_order_relaxed) && addr < hi) return true;
  }
  return false;
}

// ---------------------------------------------------------------- waiting
void set_timeout_reporter(TimeoutReporter fn) { g_reporter.store(fn, std::memory_order_release); }

void set_region_opener(RegionOpener fn) { g_opener.store(fn, std::memory_order_release); }

bool open_if_arrived(Region* r) {
  // Sequentially consistent like the waiter's count in wait_published (publish_step's pairing).
  if (r->published.load(std::memory_order_seq_cst)) return true;
  if (!r->observe || r->arrived_ns.load(std::memory_order_acquire) == 0) return false;
  int idle = 0;
  if (r->opening.compare_exchange_strong(idle, 1, std::memory_order_acq_rel))
    if (RegionOpener open = g_opener.load(std::memory_order_acquire)) open(r);
  return r->published.load(std::memory_order_seq_cst) != 0;
}

void wait_published(Region* r, const char* what, WaitSource source, bool touch, long long since_ns) {
  const long long start = since_ns > 0 ? since_ns : futex::now_ns();
  if (touch) {
    long long never = 0;
    r->first_touch_ns.compare_exchange_strong(never, start, std::memory_order_acq_rel);
  }
  if (r->published.load(std::memory_order_acquire)) return;
  auto& u = urgency();
  // Sequentially consistent with publish_step: either it sees this waiter (and wakes it) or this
  // waiter sees the publication.
  u.waiting.fetch_add(1, std::memory_order_seq_cst);
  u.poke();
  auto& word = publish_word();
  while (true) {
    const std::uint32_t seen = word.load(std::memory_order_seq_cst);
    if (open_if_arrived(r)) break;
    futex::wait(word, seen, futex::kWaitSliceNs);
    const long long timeout_ns = g_timeout_ns.load(std::memory_order_relaxed);
    if (futex::now_ns() - start > timeout_ns) {
      // Async-signal-safe formatting: this may run in the SIGSEGV handler.
      char msg[256] = "timeout (TNBC_TIMEOUT=";
      char* end = format_u64(msg + std::strlen(msg), static_cast<unsigned long long>(timeout_ns / 1000000000LL), 10);
      std::strncat(end, "s) waiting for received data during ", sizeof msg - static_cast<std::size_t>(end - msg) - 1);
      std::strncat(msg, what, sizeof msg - std::strlen(msg) - 1);
      log_raw(msg);
      if (TimeoutReporter report = g_reporter.load(std::memory_order_acquire)) report(r->owner);
      abort();
    }
  }
  u.waiting.fetch_sub(1, std::memory_order_acq_rel);
  if (WaitLog* w = r->waits) {
    // A region held back for observation whose data was in before the wait began: the wait is
    // observation's, not the communication's (docs/reports.md, "Blocked").
    const long long arrived = r->observe ? r->arrived_ns.load(std::memory_order_acquire) : 0;
    const long long waited = futex::now_ns() - start;
    if (arrived != 0 && arrived <= start) {
      w->observe_ns.fetch_add(waited, std::memory_order_relaxed);
      w->observe_count.fetch_add(1, std::memory_order_relaxed);
    } else {
      w->ns[static_cast<std::size_t>(source)].fetch_add(waited, std::memory_order_relaxed);
      w->count[static_cast<std::size_t>(source)].fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void fence_range(std::uintptr_t lo, std::uintptr_t hi, Access how, const char* what) {
  if (lo >= hi || tls_progress_thread) return;
  // Everything (an MPI call of unknown extent, MPI_Finalize): not a touch of these bytes.
  const bool bounded = !(lo == 0 && hi == UINTPTR_MAX);
  guards().for_each_overlapping(lo, hi, [&](Region* r) {
    if (r->hook) r->hook(r, lo, how, nullptr);
    else wait_published(r, what, WaitSource::Fence, bounded);
  });
}

void fence_all(const char* what) { fence_range(0, UINTPTR_MAX, Access::MpiCall, what); }

// ---------------------------------------------------------------- handler
namespace {
struct sigaction tnbc_action() {
  struct sigaction act;
  std::memset(&act, 0, sizeof act);
  act.sa_sigaction = on_fault;
  act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&act.sa_mask);
  return act;
}

// The SIGSEGV handler the kernel has now, as the sigaction a chain entry needs.
struct sigaction as_sigaction(const KernelSigaction& k) {
  struct sigaction a;
  std::memset(&a, 0, sizeof a);
  a.sa_flags = static_cast<int>(k.flags);
  if (k.flags & SA_SIGINFO) a.sa_sigaction = reinterpret_cast<void (*)(int, siginfo_t*, void*)>(k.handler);
  else a.sa_handler = reinterpret_cast<sighandler_t>(k.handler);
  std::memcpy(&a.sa_mask, &k.mask, sizeof k.mask);
  return a;
}

std::string describe_handler(const void* h) {
  Dl_info info{};
  if (h && dladdr(h, &info) && info.dli_fname) {
    std::string s = info.dli_sname ? std::string(info.dli_sname) + " in " : std::string("a handler in ");
    return s + info.dli_fname;
  }
  char b[32];
  std::snprintf(b, sizeof b, "%p", h);
  return std::string("the handler at ") + b;
}

}  // namespace

void install_fault_handler(long long timeout_ns) {
  g_timeout_ns.store(timeout_ns, std::memory_order_relaxed);
  std::lock_guard lock(g_chain_mutex);
  if (g_installed.load()) return;
  const struct sigaction act = tnbc_action();
  struct sigaction before;
  libc_sigaction()(SIGSEGV, &act, &before);
  if (g_chain_len.load() == 0) {
    set_chain_entry(0, before);
    g_chain_len.store(1, std::memory_order_release);
  }
  g_installed.store(true);
}

bool fault_handler_installed() { return g_installed.load(); }

HandlerState ensure_fault_handler() {
  if (!g_installed.load()) return HandlerState::Lost;  // never installed (or given up after a genuine fault)
  KernelSigaction k{};
  if (!kernel_action(k) || k.handler == reinterpret_cast<void*>(&on_fault)) return HandlerState::Ours;
  std::lock_guard lock(g_chain_mutex);
  static bool said_reinstalled = false, said_lost = false;
  if (!kernel_action(k) || k.handler == reinterpret_cast<void*>(&on_fault)) return HandlerState::Ours;
  const std::string who = describe_handler(k.handler);
  const int len = g_chain_len.load(std::memory_order_acquire);
  bool ok = len < kMaxChain;
  int err = 0;
  if (ok) {
    set_chain_entry(len, as_sigaction(k));  // faults that are not tnbc's go to it from now on
    g_chain_len.store(len + 1, std::memory_order_release);
    const struct sigaction act = tnbc_action();
    if (libc_sigaction()(SIGSEGV, &act, nullptr) != 0) err = errno;
    ok = err == 0 && kernel_action(k) && k.handler == reinterpret_cast<void*>(&on_fault);
    if (!ok) g_chain_len.store(len, std::memory_order_release);
  }
  if (ok) {
    log_once(said_reinstalled, LogLevel::Warn,
             "tnbc's SIGSEGV handler was replaced by %s without going through sigaction()/signal() (a raw "
             "rt_sigaction system call, or a library's private copy of sigaction): tnbc installed its handler "
             "again and passes every fault that is not its own on to that one",
             who.c_str());
    return HandlerState::Reinstalled;
  }
  log_once(said_lost, LogLevel::Warn,
           "tnbc's SIGSEGV handler was replaced by %s and cannot be installed again (%s): collectives that "
           "would guard their receive buffer with PROT_NONE complete in the call instead",
           who.c_str(), len >= kMaxChain ? "replaced too often" : err ? std::strerror(err) : "replaced again at once");
  return HandlerState::Lost;
}

namespace {
// Room for tnbc's handler and the handlers it chains to (which may print backtraces); pages
// are committed only when used.
constexpr std::size_t kSignalStackBytes = 256 * 1024;

struct SignalStack {
  void* mem = nullptr;
  bool checked = false;
  ~SignalStack() {
    if (!mem) return;
    stack_t cur{}, off{};
    off.ss_flags = SS_DISABLE;
    if (sigaltstack(nullptr, &cur) == 0 && cur.ss_sp == mem) sigaltstack(&off, nullptr);
    ::munmap(mem, kSignalStackBytes);
  }
};
thread_local SignalStack tls_signal_stack;
}  // namespace

void ensure_signal_stack() {
  SignalStack& st = tls_signal_stack;
  if (st.checked) return;
  st.checked = true;
  stack_t cur{};
  if (sigaltstack(nullptr, &cur) != 0 || !(cur.ss_flags & SS_DISABLE)) return;  // the program's own
  void* p = ::mmap(nullptr, kSignalStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) {
    log(LogLevel::Warn, "no alternate signal stack (%s): a fault on guarded pages of this thread's own stack "
                        "would end the process", std::strerror(errno));
    return;
  }
  stack_t ss{};
  ss.ss_sp = p;
  ss.ss_size = kSignalStackBytes;
  if (sigaltstack(&ss, nullptr) != 0) {
    log(LogLevel::Warn, "sigaltstack failed (%s): a fault on guarded pages of this thread's own stack would end "
                        "the process", std::strerror(errno));
    ::munmap(p, kSignalStackBytes);
    return;
  }
  st.mem = p;
}

bool intercept_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (sig != SIGSEGV || !g_installed.load()) return false;
  // The program replaces the handler it sees, the one on top of the chain.
  std::lock_guard lock(g_chain_mutex);
  const int top = g_chain_len.load(std::memory_order_acquire) - 1;
  if (old) *old = chain_entry(top);
  if (act) set_chain_entry(top, *act);
  return true;
}

std::atomic<int> g_progress_tid{0};

void mark_progress_thread() {
  tls_progress_thread = true;
  g_progress_tid.store(my_tid());
}
int progress_thread_tid() { return g_progress_tid.load(); }
bool on_progress_thread() { return tls_progress_thread; }

}  // namespace tnbc
