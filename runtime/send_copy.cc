#include "runtime/send_copy.hh"

#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/bulk_copy.hh"
#include "runtime/futex.hh"
#include "runtime/inflight.hh"
#include "runtime/log.hh"
#include "runtime/memory_map.hh"

namespace tnbc {

namespace {

enum : std::uint8_t { kInUser = 0, kCopying = 1, kStaged = 2 };
enum : int { kReadOnly = 0, kOpening = 1, kOpen = 2 };

// How long a thread waiting for another's copy (a memcpy of one piece) sleeps between looks.
constexpr long kCopyWaitNs = 10 * 1000;

void pause_briefly() {
  struct timespec ts{0, kCopyWaitNs};
  nanosleep(&ts, nullptr);
}

// Makes the read-only pages writable again, once (async-signal-safe). The regions then count as
// done (`published`): a later collective on these pages replaces them in the guard table.
void open_pages(InFlight& f) {
  int expected = kReadOnly;
  if (f.send_open.compare_exchange_strong(expected, kOpening, std::memory_order_acq_rel)) {
    for (std::size_t k = 0; k < f.send_region_count; ++k) {
      Region& r = f.send_regions[k];
      if (::mprotect(reinterpret_cast<void*>(r.lo), r.hi - r.lo, PROT_READ | PROT_WRITE) != 0)
        log_raw("tnbc: cannot make a send buffer writable again (mprotect failed)");
      r.published.store(1, std::memory_order_release);
    }
    f.send_open.store(kOpen, std::memory_order_release);
    return;
  }
  while (f.send_open.load(std::memory_order_acquire) != kOpen) pause_briefly();  // another opener
}

// Where a lazily copied step's bytes go: a Send piece's into the send staging, the own block's
// Copy step straight to its place in the receive area (whichever thread copies it first).
char* destination(const InFlight& f, const Step& p) {
  return p.kind == StepKind::Copy ? f.recv_data + p.offset : f.send_data + p.offset;
}

// Copies piece i to its destination if nobody has; with `wait`, also waits for another
// thread's copy. Only a memcpy is ever waited for, never another rank.
bool stage_piece(InFlight& f, std::size_t i, bool wait) {
  auto& state = f.send_state[i];
  std::uint8_t expected = kInUser;
  if (state.compare_exchange_strong(expected, kCopying, std::memory_order_acq_rel)) {
    const Step& p = f.schedule[i];
    std::memcpy(destination(f, p), f.send_src[i], p.length);
    state.store(kStaged, std::memory_order_release);
    if (f.sends_unstaged.fetch_sub(1, std::memory_order_acq_rel) == 1) open_pages(f);
    return true;
  }
  if (expected == kStaged) return true;
  if (!wait) return false;
  while (state.load(std::memory_order_acquire) != kStaged) pause_briefly();  // a memcpy elsewhere
  return true;
}

std::uintptr_t page_down(std::uintptr_t a, std::size_t page) { return a & ~(static_cast<std::uintptr_t>(page) - 1); }
std::uintptr_t page_up(std::uintptr_t a, std::size_t page) { return page_down(a + page - 1, page); }

// The page size, for the hook (set by stage_sends before any region exists).
std::size_t g_page = 4096;

// The span of piece i in the program's send buffer.
std::pair<std::uintptr_t, std::uintptr_t> span_of(const InFlight& f, std::size_t i) {
  const auto a = reinterpret_cast<std::uintptr_t>(f.send_src[i]);
  return {a, a + f.schedule[i].length};
}

// A write fault at `addr`: copies only the pieces on its page, and makes writable the pages
// those pieces span (so a program writing on sequentially faults once per piece, not per page),
// after copying every other piece with a byte on those pages (a neighbour sharing the first or
// last one). The rest stays read-only until the progress thread has copied it or the program
// writes there (async-signal-safe). False if no piece lies on that page (then nothing is done).
bool open_pieces_at(InFlight& f, std::uintptr_t addr) {
  const std::uintptr_t at = page_down(addr, g_page);
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (std::size_t i = 0; i < f.send_src.size(); ++i) {
    if (!f.send_src[i]) continue;
    const auto [a, b] = span_of(f, i);
    if (a >= at + g_page || b <= at) continue;
    lo = std::min(lo, page_down(a, g_page));
    hi = std::max(hi, page_up(b, g_page));
  }
  if (lo >= hi) return false;
  for (std::size_t i = 0; i < f.send_src.size(); ++i) {
    if (!f.send_src[i]) continue;
    const auto [a, b] = span_of(f, i);
    if (a < hi && b > lo) stage_piece(f, i, true);
  }
  if (f.send_open.load(std::memory_order_acquire) == kOpen) return true;  // the last copy opened them all
  if (::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE) != 0)
    log_raw("tnbc: cannot make a send buffer writable again (mprotect failed)");
  return true;
}

// The regions' hook: a write by the program (fault: `code` is where) copies the pieces on its
// page and opens their pages (open_pieces_at); a fence (a call on the buffer, free, munmap,
// fork), or a fault where no piece lies, copies everything left and opens every page. The
// access is then retried.
void on_send_page(Region* r, std::uintptr_t addr, Access how, const void* code) {
  auto& f = *static_cast<InFlight*>(r->hook_data);
  if (code != nullptr && how == Access::Write && open_pieces_at(f, addr)) return;
  for (std::size_t i = 0; i < f.send_src.size(); ++i)
    if (f.send_src[i]) stage_piece(f, i, true);
  open_pages(f);
}

// Page runs that hold any byte of a piece left in place, merged.
std::vector<std::pair<std::uintptr_t, std::uintptr_t>> runs_of(const InFlight& f, std::size_t page) {
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> spans;
  for (std::size_t i = 0; i < f.send_src.size(); ++i) {
    if (!f.send_src[i]) continue;
    const auto [a, b] = span_of(f, i);
    spans.emplace_back(page_down(a, page), page_up(b, page));
  }
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> runs;
  for (const auto& s : spans) {
    if (!runs.empty() && s.first <= runs.back().second) runs.back().second = std::max(runs.back().second, s.second);
    else runs.push_back(s);
  }
  return runs;
}

// Leaves the body pieces in place behind read-only pages; false (nothing changed) if the memory
// does not allow it. If mprotect refuses, everything is copied at once (and true returned).
bool guard_bodies(InFlight& f, const std::vector<const char*>& src, std::size_t page) {
  f.send_src.assign(f.schedule.size(), nullptr);
  int left = 0;
  for (std::size_t i = 0; i < f.schedule.size(); ++i) {
    const Step& p = f.schedule[i];
    // Send bodies and the own block's whole pages (coll/exchange.cc): pages that hold only
    // bytes of the program's send buffer.
    if ((p.kind != StepKind::Send && p.kind != StepKind::Copy) || !src[i] || p.edge || p.length == 0) continue;
    f.send_src[i] = src[i];
    ++left;
  }
  const auto runs = runs_of(f, page);
  bool ok = left > 0;
  for (const auto& [lo, hi] : runs)
    ok = ok && memory_is_private(lo, hi, /*writable=*/true) && !on_this_threads_stack(lo, hi);
  if (!ok) {
    f.send_src.clear();
    return false;
  }
  f.send_state = std::make_unique<std::atomic<std::uint8_t>[]>(f.schedule.size());
  f.sends_unstaged.store(left);
  f.send_region_count = runs.size();
  f.send_regions = std::make_unique<Region[]>(runs.size());
  for (std::size_t k = 0; k < runs.size(); ++k) {
    Region& r = f.send_regions[k];
    r.lo = runs[k].first;
    r.hi = runs[k].second;
    r.owner = &f;
    r.hook = on_send_page;
    r.hook_data = &f;
    // Listed before the pages turn read-only, so a fault always finds it. A region in use
    // there (another thread's collective sending from the same pages) keeps them: copy now.
    if (!guards().insert(&r)) {
      for (std::size_t j = 0; j < k; ++j) guards().erase(&f.send_regions[j]);
      f.send_regions.reset();
      f.send_region_count = 0;
      f.send_src.clear();
      return false;
    }
  }
  f.send_open.store(kReadOnly);
  for (const auto& [lo, hi] : runs) {
    if (::mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ) == 0) continue;
    log(LogLevel::Info, "cannot make send pages %p+%zu read-only (%s): copying them in the call",
        reinterpret_cast<void*>(lo), static_cast<std::size_t>(hi - lo), std::strerror(errno));
    on_send_page(&f.send_regions[0], lo, Access::MpiCall, nullptr);  // copy all, pages RW again
    break;
  }
  return true;
}

}  // namespace

StagedCopies stage_sends(InFlight& f, const std::vector<const char*>& src, bool lazy, std::size_t page, bool stream) {
  g_page = page;
  const bool guarded = lazy && guard_bodies(f, src, page);
  // The pieces copied here; they stream past the cache when the call's copies together exceed it
  // (`stream`), or these alone do (an in-place exchange sends from its receive buffer: the call
  // counts nothing sent from a send buffer). runtime/bulk_copy.hh: the call's largest cost at
  // large sizes. Two passes, no allocation.
  auto copied = [&](std::size_t i) {
    const Step& p = f.schedule[i];
    const bool own = p.kind == StepKind::Copy && i < src.size() && src[i];  // into the send area
    return (p.kind == StepKind::Send || own) && p.length != 0 && !(guarded && f.send_src[i]);
  };
  StagedCopies done;
  for (std::size_t i = 0; i < f.schedule.size(); ++i)
    if (copied(i)) done.bytes += f.schedule[i].length, ++done.pieces;
  const bool streamed = stream || streams(done.bytes);
  const long long t0 = futex::now_ns();
  for (std::size_t i = 0; i < f.schedule.size(); ++i) {
    if (!copied(i)) continue;
    const Step& p = f.schedule[i];
    bulk_copy(f.send_data + (p.kind == StepKind::Copy ? p.source : p.offset), src[i], p.length, streamed);
  }
  done.ns = futex::now_ns() - t0;
  return done;
}

void run_copy_step(InFlight& f, int i) {
  const auto k = static_cast<std::size_t>(i);
  const Step& p = f.schedule[k];
  // Left in the program's read-only send buffer: copied from there into place once, here or by
  // a write fault's hook (then waited for: a local memcpy). Else from the send area.
  if (k < f.send_src.size() && f.send_src[k]) {
    stage_piece(f, k, true);
    return;
  }
  std::memcpy(f.recv_data + p.offset, f.send_data + p.source, p.length);
}

bool send_piece_staged(InFlight& f, int i) {
  const auto k = static_cast<std::size_t>(i);
  if (k >= f.send_src.size() || !f.send_src[k]) return true;
  return stage_piece(f, k, false);
}

void retire_send_regions(InFlight& f) {
  for (std::size_t k = 0; k < f.send_region_count; ++k) guards().erase(&f.send_regions[k]);
}

}  // namespace tnbc
