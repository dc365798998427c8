// The trace pass. Every intercepted collective runs blocking (PMPI_*). Before it returns:
//   receive buffer -> whole pages cut into regions per sub-message (trace/layout.hh), PROT_NONE;
//   send buffer    -> its whole pages (those not in the receive regions) PROT_READ;
// each region is registered in the guard table with `on_touch` as its hook. The SIGSEGV
// handler (runtime/guard.cc) and the fences (syscalls, MPI calls) call the hook, which records
// the first touch of the sub-message (order, ticks since return, how, code address), opens the
// region and returns, so the access is retried and succeeds. Everything the hook writes is
// preallocated; it makes one system call (mprotect). Regions leave the table (guards().erase,
// never from the handler) when the next collective starts on an overlapping buffer, when all
// regions of a call were touched, when too many calls are live, and at MPI_Finalize, where the
// per-rank trace file is written (trace/format.hh; at exit too, best effort).
#include "trace/tracer.hh"

#include "runtime/output_file.hh"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/datatype.hh"
#include "runtime/futex.hh"
#include "runtime/guard.hh"
#include "runtime/log.hh"
#include "runtime/memory_map.hh"
#include "runtime/observe.hh"
#include "runtime/coll/collective.hh"
#include "runtime/model/probe.hh"
#include "runtime/policy.hh"
#include "trace/callsite.hh"
#include "trace/format.hh"
#include "trace/page_reopen.hh"
#include "trace/layout.hh"

namespace tnbc::trace {

namespace {

// ------------------------------------------------------------------ clock
bool g_use_tsc = false;

inline std::uint64_t ticks() {
#if defined(__x86_64__)
  if (g_use_tsc) return __rdtsc();
#endif
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000ULL + static_cast<std::uint64_t>(t.tv_nsec);
}

long long mono_ns() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

// The TSC is used when the CPU says it runs at a constant rate, also in deep C-states.
bool tsc_usable() {
#if defined(__x86_64__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
  }
#endif
  return false;
}

// ------------------------------------------------------------------ records
struct SubState {
  std::atomic<int> claimed{0};
  int order = -1;
  std::uint64_t dt = 0;  // ticks since return
  How how = How::None;
  const void* code = nullptr;
  bool shared = false;
};

struct Call;

struct RegionCtx {
  Call* call = nullptr;
  int first = 0, count = 0;  // into Call::region_subs (receive regions)
  bool send = false;
  std::atomic<int> opened{0};  // 1 once the pages are accessible again
  bool by_touch = false;       // opened by a touch (not by retirement)
};

struct Call {
  CallRecord rec;  // metadata; touches are filled in at write time
  std::vector<Span> spans;            // per sub-message, its bytes in the receive buffer
  std::unique_ptr<SubState[]> st;
  SubState send;
  std::vector<int> region_subs;
  std::unique_ptr<Region[]> regions;
  std::unique_ptr<RegionCtx[]> ctx;
  std::size_t nregions = 0;
  std::atomic<int> next_order{0};
  std::atomic<int> open{0};  // regions not yet opened
  std::uint64_t t0 = 0;      // ticks at return
  bool live = false;
  // A sampled call (runtime/observe.hh): its timeline goes into the summary too.
  bool sampled = false;
  std::uint64_t index = 0;   // at its call site (the summary's) on this rank
  Kind kind = Kind::Bcast;
  CallSite where;
  std::uintptr_t lo = UINTPTR_MAX, hi = 0;  // pages it guards
};

// The hook (async-signal-safe: atomics, one mprotect, no allocation, no locks).
void on_touch(Region* r, std::uintptr_t addr, Access access, const void* code) {
  const std::uint64_t now = ticks();
  auto* c = static_cast<RegionCtx*>(r->hook_data);
  Call* call = c->call;
  if (c->opened.load(std::memory_order_acquire)) return;  // another thread is opening it
  How how = How::None;
  switch (access) {
    case Access::Read: how = How::Read; break;
    case Access::Write: how = How::Write; break;
    case Access::Syscall: how = How::Syscall; break;
    case Access::MpiCall: how = addr == 0 ? How::FenceAll : How::MpiCall; break;
  }
  const std::uint64_t dt = now - call->t0;
  auto claim = [&](SubState& s, bool shared, bool numbered) {
    int z = 0;
    if (!s.claimed.compare_exchange_strong(z, 1, std::memory_order_acq_rel)) return;
    s.order = numbered ? call->next_order.fetch_add(1, std::memory_order_acq_rel) : -1;
    s.dt = dt;
    s.how = how;
    s.code = code;
    s.shared = shared;
  };
  if (c->send) {
    if (how != How::Read) claim(call->send, false, false);
  } else if (how == How::FenceAll) {
    for (int k = c->first; k < c->first + c->count; ++k) claim(call->st[static_cast<std::size_t>(call->region_subs[static_cast<std::size_t>(k)])], c->count > 1, false);
  } else {
    const std::uintptr_t a = std::clamp(addr, r->lo, r->hi - 1);
    int pick = -1;
    for (int k = c->first; k < c->first + c->count; ++k) {
      const int s = call->region_subs[static_cast<std::size_t>(k)];
      const Span& sp = call->spans[static_cast<std::size_t>(s)];
      if (a < sp.hi) {  // sorted by address: the first that ends after a (a gap: the next one)
        pick = s;
        break;
      }
    }
    if (pick < 0) pick = call->region_subs[static_cast<std::size_t>(c->first + c->count - 1)];
    claim(call->st[static_cast<std::size_t>(pick)], c->count > 1, true);
  }
  int z = 0;
  if (!c->opened.compare_exchange_strong(z, 1, std::memory_order_acq_rel)) return;
  c->by_touch = true;
  ::mprotect(reinterpret_cast<void*>(r->lo), r->hi - r->lo, PROT_READ | PROT_WRITE);
  r->published.store(1, std::memory_order_release);
  call->open.fetch_sub(1, std::memory_order_acq_rel);
}


class Tracer;
std::atomic<Tracer*> g_tracer{nullptr};

constexpr std::size_t kMaxCalls = 200000;  // recorded calls per rank; later ones are counted
constexpr std::size_t kMaxLive = 64;       // calls whose regions may be in the table at once

class Tracer final : public Engine {
 public:
  Tracer(const Settings& s, Stats& stats, int rank, int size, std::shared_ptr<const model::Inputs> model)
      : s_(s), stats_(stats), rank_(rank), size_(size), page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))),
        policy_(make_policy(s, page_, nullptr)), model_(std::move(model)) {
    // The broadcast's segments as the engine cuts them on this machine (runtime/policy.hh).
    policy_->start(model_, -1, true);
    g_use_tsc = tsc_usable();
    calib_ticks_ = ticks();
    calib_ns_ = mono_ns();
    dir_ = world_output_dir(s.output_dir.empty() ? std::string("tnbc-trace") : s.output_dir, stats.run().id,
                            stats.run().spawned);
    if (s.output_dir.empty() && rank == 0)
      log(LogLevel::Warn, "TNBC_OUTPUT_DIR is not set: trace files go to ./tnbc-trace/ (then: tnbc merge tnbc-trace -o app.profile)");
    executable_ = executable_path();
    // One id for the whole run (drawn at MPI_Init, runtime.cc), so that `tnbc merge` recognises
    // files of different runs.
    char id[17] = {};
    std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(stats.run().id));
    run_id_ = id;
    calls_.reserve(1024);
    page_reopen_ns_ = measure_page_reopen_ns(page_);
    log(LogLevel::Debug, "trace: a page's first access after its protection changed costs %llu ns beyond a warm one",
        static_cast<unsigned long long>(page_reopen_ns_));
  }

  ~Tracer() override { g_tracer.store(nullptr); }

  // ------------------------------------------------------------------ collectives
  int run(const CollCall& c, BlockingCall blocking) override {
    int inter = 0;
    PMPI_Comm_test_inter(c.comm, &inter);
    SiteCounters& site = stats_.site(c.kind, c.site);
    const long long called = futex::now_ns();
    if (inter) {  // remote group sizes: not traced
      const int rc = blocking();
      stats_.record(site, {0, 0, Outcome::Passthrough, Reason::Intercommunicator, called, futex::now_ns()});
      return rc;
    }
    const model::Topology topo = model::comm_topology(c.comm, model_->world);
    CallContext ctx{0, 1, page_, &types_, policy_.get(), &topo};
    PMPI_Comm_rank(c.comm, &ctx.rank);
    PMPI_Comm_size(c.comm, &ctx.size);
    const Layout l = collective(c.kind).layout(c, ctx);
    std::vector<Span> recv_spans, send_spans;
    for (const ByteRange& r : l.recv_spans) recv_spans.push_back({r.lo, r.hi});
    for (const ByteRange& r : l.send_spans) send_spans.push_back({r.lo, r.hi});
    std::unique_lock lock(mutex_);
    Call* call = begin(c.kind, ctx.size, ctx.rank, l.shape.root, l.shape.recv_bytes, l.shape.send_bytes, c.site);
    retire_overlapping(send_spans, l.recv_extent);
    lock.unlock();
    const std::uint64_t t_start = ticks();
    const int rc = blocking();
    const std::uint64_t t_end = ticks();
    lock.lock();
    const std::uint64_t index = site.calls;
    stats_.record(site, {l.received, l.sent, Outcome::Passthrough, Reason::Mode, called, futex::now_ns()});
    // The 1st, 2nd, 4th, ... call at the site that receives here (SiteCounters::sampled_from).
    const bool sampled = l.receives && take_sample(site.sampled_from, s_.timeline_calls);
    if (!call) return rc;
    call->sampled = sampled;
    call->index = index;
    call->kind = c.kind;
    call->where = c.site;
    call->rec.dur_ns = static_cast<std::int64_t>(t_end - t_start);  // ticks until written
    for (std::size_t i = 0; i < call->rec.subs.size(); ++i) call->rec.subs[i].bytes = l.receives ? l.shape.recv_bytes[i] : 0;
    call->rec.send_bytes = l.sent;
    if (l.receives && !l.recv_dense) {
      call->rec.reason = "noncontiguous_datatype";
      recv_spans.clear();
    }
    if (!l.send_dense) send_spans.clear();  // holes of a datatype are not the buffer's
    guard(*call, recv_spans, l.recv_extent.lo, l.recv_extent.hi, send_spans);
    return rc;
  }

  // ------------------------------------------------------------------ fences
  void fence(ByteRange r, const char* what) override { fence_range(r.lo, r.hi, Access::MpiCall, what); }
  void complete_all() override { fence_all("a fence"); }
  void drain() override {}  // collectives run blocking: nothing is ever in flight

  void shutdown() override {
    write_trace("finalize");
    g_tracer.store(nullptr);
  }

  // At exit without MPI_Finalize: what was gathered so far.
  static void at_exit() {
    if (Tracer* t = g_tracer.exchange(nullptr)) t->write_trace("exit");
  }

 private:
  // A new call record (nullptr past the storage limit). Called with the mutex held.
  Call* begin(Kind kind, int n, int me, int root, const std::vector<std::uint64_t>& rb,
              const std::vector<std::uint64_t>& sb, CallSite site) {
    retire_finished();
    if (calls_.size() >= kMaxCalls) {
      if (!dropped_++) log(LogLevel::Warn, "trace storage full (%zu calls): later calls are counted, not traced", kMaxCalls);
      return nullptr;
    }
    const std::string kind_text = kind_name(kind);
    const Stack stack = sites_.capture(site.return_address);
    const std::uint64_t sh = sites_.site_hash(stack, kind_text, n);
    if (!site_index_.count(sh)) {
      SiteInfo info;
      info.site = sh;
      info.kind = kind_text;
      info.comm_size = n;
      for (int i = 0; i < stack.n; ++i) info.frames.push_back(sites_.describe(stack.pcs[i]));
      site_index_[sh] = site_infos_.size();
      site_infos_.push_back(std::move(info));
    }
    auto c = std::make_unique<Call>();
    c->rec.seq = seq_++;
    c->rec.site = sh;
    c->rec.key = instance_key(sh, size_signature(rb, sb, root));
    c->rec.occurrence = occurrences_[c->rec.key]++;
    c->rec.comm_rank = me;
    c->rec.root = root;
    c->rec.subs.resize(rb.size());
    c->st = std::make_unique<SubState[]>(rb.size());
    calls_.push_back(std::move(c));
    return calls_.back().get();
  }

  // Guards the receive sub-messages `spans` (buffer [lo, hi)) and the send pages of `send`.
  void guard(Call& call, const std::vector<Span>& spans, std::uintptr_t lo, std::uintptr_t hi, std::vector<Span> send) {
    call.spans = spans;
    std::vector<TraceRegion> plan;
    if (!spans.empty() && lo < hi && memory_is_private(lo, hi)) plan = plan_trace_regions(spans, lo, hi, page_);
    // Every guard below is PROT_NONE / PROT_READ: its faults must reach tnbc's handler.
    if ((!plan.empty() || !send.empty()) && ensure_fault_handler() == HandlerState::Lost) {
      call.rec.reason = "signal_handler";
      plan.clear();
      send.clear();
    }
    std::vector<Span> recv_pages;
    for (const TraceRegion& r : plan) recv_pages.push_back({r.lo, r.hi});
    // Send blocks merged where they touch, then their whole pages outside the receive regions.
    std::sort(send.begin(), send.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    std::vector<Span> merged;
    for (const Span& b : send) {
      if (b.lo >= b.hi) continue;
      if (!merged.empty() && b.lo <= merged.back().hi) merged.back().hi = std::max(merged.back().hi, b.hi);
      else merged.push_back(b);
    }
    std::vector<Span> send_pages;
    for (const Span& m : merged) {
      auto pages = whole_pages_except(m.lo, m.hi, page_, recv_pages);
      if (!pages.empty() && memory_is_private(pages.front().lo, pages.back().hi, /*writable=*/true))
        send_pages.insert(send_pages.end(), pages.begin(), pages.end());
    }
    call.nregions = plan.size() + send_pages.size();
    for (const TraceRegion& r : plan)
      for (int s : r.subs) call.rec.subs[static_cast<std::size_t>(s)].guarded = true;
    call.rec.send_guarded = !send_pages.empty();
    call.rec.traced = !plan.empty() || !send_pages.empty();
    if (!call.rec.traced && call.rec.reason.empty()) call.rec.reason = spans.empty() ? "no_receive_buffer" : "no_whole_page";
    if (call.nregions == 0) return;
    call.regions = std::make_unique<Region[]>(call.nregions);
    call.ctx = std::make_unique<RegionCtx[]>(call.nregions);
    for (std::size_t k = 0; k < call.nregions; ++k) {
      Region& r = call.regions[k];
      RegionCtx& c = call.ctx[k];
      c.call = &call;
      if (k < plan.size()) {
        r.lo = plan[k].lo;
        r.hi = plan[k].hi;
        c.first = static_cast<int>(call.region_subs.size());
        c.count = static_cast<int>(plan[k].subs.size());
        call.region_subs.insert(call.region_subs.end(), plan[k].subs.begin(), plan[k].subs.end());
      } else {
        r.lo = send_pages[k - plan.size()].lo;
        r.hi = send_pages[k - plan.size()].hi;
        c.send = true;
      }
      r.owner = &call;
      r.hook = &on_touch;
      r.hook_data = &c;
      call.lo = std::min(call.lo, r.lo);
      call.hi = std::max(call.hi, r.hi);
    }
    call.open.store(static_cast<int>(call.nregions));
    // A region overlapping one still in use (another thread's call) is left open, untraced.
    for (std::size_t k = 0; k < call.nregions; ++k) {
      if (guards().insert(&call.regions[k])) continue;
      call.ctx[k].opened.store(1);
      call.regions[k].published.store(1);
      call.open.fetch_sub(1);
    }
    ensure_signal_stack();  // the guarded pages may be stack the next calls write to
    // One mprotect per run of adjacent listed regions of the same kind (mprotect flushes TLBs).
    for (std::size_t k = 0; k < call.nregions;) {
      if (call.ctx[k].opened.load()) {
        ++k;
        continue;
      }
      std::size_t e = k + 1;
      while (e < call.nregions && call.regions[e].lo == call.regions[e - 1].hi && call.ctx[e].send == call.ctx[k].send &&
             !call.ctx[e].opened.load())
        ++e;
      const std::uintptr_t a = call.regions[k].lo, b = call.regions[e - 1].hi;
      if (::mprotect(reinterpret_cast<void*>(a), b - a, call.ctx[k].send ? PROT_READ : PROT_NONE) != 0) {
        log(LogLevel::Info, "trace: cannot protect %p+%zu (%s)", reinterpret_cast<void*>(a),
            static_cast<std::size_t>(b - a), std::strerror(errno));
        for (std::size_t j = k; j < e; ++j) {
          call.ctx[j].opened.store(1);
          call.regions[j].published.store(1);
          call.open.fetch_sub(1);
        }
      }
      k = e;
    }
    live_.push_back(&call);
    call.live = true;
    call.t0 = ticks();  // the call returns now
  }

  // Before a new call: its send buffer overlapping live receive regions is a read of those
  // sub-messages by MPI (recorded); then every live call guarding any of its pages retires:
  // a region of the call inside its receive buffer or one of its send blocks, not merely inside
  // the span of the call's pages (until session 45 a broadcast's buffer lying between an
  // Alltoallv's send and receive buffers, as malloc puts it in ~1 process in 12, retired the
  // Alltoallv unread, and its first touches were lost).
  void retire_overlapping(const std::vector<Span>& send, ByteRange rspan) {
    std::vector<Call*> keep;
    for (Call* c : live_) {
      for (const Span& s : send)  // in the blocks' order, as MPI reads them
        for (std::size_t k = 0; k < c->nregions; ++k)
          if (!c->ctx[k].send && overlaps(c->regions[k], s.lo, s.hi))
            on_touch(&c->regions[k], std::max(s.lo, c->regions[k].lo), Access::MpiCall, nullptr);
      if (guards_any(*c, rspan, send)) retire(*c);
      else keep.push_back(c);
    }
    live_.swap(keep);
  }

  static bool overlaps(const Region& r, std::uintptr_t lo, std::uintptr_t hi) { return lo < hi && r.lo < hi && r.hi > lo; }

  // Whether a region of `c` overlaps `rspan` or one of `send`.
  static bool guards_any(const Call& c, ByteRange rspan, const std::vector<Span>& send) {
    for (std::size_t k = 0; k < c.nregions; ++k) {
      if (overlaps(c.regions[k], rspan.lo, rspan.hi)) return true;
      for (const Span& s : send)
        if (overlaps(c.regions[k], s.lo, s.hi)) return true;
    }
    return false;
  }

  void retire_finished() {
    std::vector<Call*> keep;
    for (Call* c : live_) {
      if (c->open.load(std::memory_order_acquire) == 0) retire(*c);
      else keep.push_back(c);
    }
    while (keep.size() >= kMaxLive) {
      retire(*keep.front());
      keep.erase(keep.begin());
    }
    live_.swap(keep);
  }

  // Opens what is still guarded, takes the regions out of the table, settles the records.
  void retire(Call& call) {
    if (!call.live) return;
    // Regions never touched are opened, adjacent ones with one mprotect.
    std::uintptr_t run_lo = 0, run_hi = 0;
    auto flush = [&] {
      if (run_lo < run_hi) ::mprotect(reinterpret_cast<void*>(run_lo), run_hi - run_lo, PROT_READ | PROT_WRITE);
      run_lo = run_hi = 0;
    };
    for (std::size_t k = 0; k < call.nregions; ++k) {
      int z = 0;
      if (!call.ctx[k].opened.compare_exchange_strong(z, 1)) continue;
      Region& r = call.regions[k];
      if (r.lo != run_hi) flush();
      if (run_lo == run_hi) run_lo = r.lo;
      run_hi = r.hi;
    }
    flush();
    for (std::size_t k = 0; k < call.nregions; ++k) call.regions[k].published.store(1, std::memory_order_release);
    for (std::size_t k = 0; k < call.nregions; ++k) guards().erase(&call.regions[k]);
    // Masked: never touched, and every region holding it was opened by another's touch.
    std::vector<int> seen(call.rec.subs.size(), 0), opened_by_touch(call.rec.subs.size(), 1);
    for (std::size_t k = 0; k < call.nregions; ++k) {
      const RegionCtx& c = call.ctx[k];
      if (c.send) continue;
      for (int j = c.first; j < c.first + c.count; ++j) {
        const auto s = static_cast<std::size_t>(call.region_subs[static_cast<std::size_t>(j)]);
        seen[s] = 1;
        if (!c.by_touch) opened_by_touch[s] = 0;
      }
    }
    for (std::size_t s = 0; s < call.rec.subs.size(); ++s)
      if (seen[s] && opened_by_touch[s] && !call.st[s].claimed.load()) call.rec.subs[s].masked = true;
    call.regions.reset();
    call.ctx.reset();
    call.nregions = 0;
    call.live = false;
  }

  // A traced call as a timeline (runtime/observe.hh): blocking, so every sub-message is in when
  // the call returns; its first touch after that (an unbounded fence's opening is no touch).
  static Timeline timeline(const CallRecord& rec, std::uint64_t index) {
    Timeline t;
    t.call = index;
    t.in_call_ns = t.duration_ns = rec.dur_ns;
    for (const SubRecord& s : rec.subs) {
      t.bytes.push_back(s.bytes);
      t.arrival_ns.push_back(s.bytes ? rec.dur_ns : -1);
      const bool touched = s.t_ns >= 0 && s.how != How::FenceAll;
      t.first_access_ns.push_back(touched ? rec.dur_ns + s.t_ns : -1);
    }
    return t;
  }

  void write_trace(const char* ended_by) {
    std::lock_guard lock(mutex_);
    if (written_) return;
    written_ = true;
    for (Call* c : live_) retire(*c);
    live_.clear();
    // ns per tick over the whole run (at least 2 ms of it).
    double ns_per_tick = 1.0;
    if (g_use_tsc) {
      if (mono_ns() - calib_ns_ < 2000000) ::usleep(2000);
      const std::uint64_t t1 = ticks();
      const long long n1 = mono_ns();
      if (t1 > calib_ticks_) ns_per_tick = static_cast<double>(n1 - calib_ns_) / static_cast<double>(t1 - calib_ticks_);
    }
    auto ns = [&](std::uint64_t t) { return static_cast<std::int64_t>(static_cast<double>(t) * ns_per_tick); };
    TraceFile tf;
    tf.rank = rank_;
    tf.size = size_;
    tf.executable = executable_;
    tf.run_id = run_id_;
    tf.clock = g_use_tsc ? "tsc" : "monotonic";
    tf.page = page_;
    tf.page_reopen_ns = page_reopen_ns_;
    tf.ended_by = ended_by;
    tf.dropped = dropped_;
    tf.sites = site_infos_;
    for (const auto& cp : calls_) {
      Call& c = *cp;
      CallRecord rec = c.rec;
      rec.dur_ns = ns(static_cast<std::uint64_t>(c.rec.dur_ns));
      for (std::size_t i = 0; i < rec.subs.size(); ++i) {
        const SubState& s = c.st[i];
        if (!s.claimed.load()) continue;
        SubRecord& r = rec.subs[i];
        r.order = s.order;
        r.t_ns = ns(s.dt);
        r.how = s.how;
        r.shared = s.shared;
        r.code = sites_.code_string(s.code);
      }
      if (c.send.claimed.load()) {
        rec.send_t_ns = ns(c.send.dt);
        rec.send_how = c.send.how;
        rec.send_code = sites_.code_string(c.send.code);
      }
      if (c.sampled && rec.traced) stats_.add_timeline(c.kind, c.where, timeline(rec, c.index));
      tf.calls.push_back(std::move(rec));
    }
    const std::string text = serialize(tf);
    const std::string path = dir_ + "/" + trace_file_name(rank_);
    if (const Status st = write_output_file(dir_, trace_file_name(rank_), text); !st.ok()) {
      log(LogLevel::Error, "%s; trace not written", st.message().c_str());
      return;
    }
    log(LogLevel::Info, "trace of %zu calls written to %s", calls_.size(), path.c_str());
  }

  Settings s_;
  Stats& stats_;
  int rank_, size_;
  std::size_t page_;
  std::uint64_t page_reopen_ns_ = 0;  // measured at start (trace/page_reopen.hh)
  std::unique_ptr<Policy> policy_;  // the broadcast's segments, cut as the engine cuts them
  std::shared_ptr<const model::Inputs> model_;
  MpiTypes types_;
  std::string dir_, executable_, run_id_;
  std::uint64_t calib_ticks_ = 0;
  long long calib_ns_ = 0;
  std::mutex mutex_;
  CallSites sites_;
  std::vector<SiteInfo> site_infos_;
  std::unordered_map<std::uint64_t, std::size_t> site_index_;
  std::unordered_map<std::uint64_t, std::uint64_t> occurrences_;
  std::vector<std::unique_ptr<Call>> calls_;
  std::vector<Call*> live_;
  std::uint64_t seq_ = 0, dropped_ = 0;
  bool written_ = false;
};

}  // namespace

std::unique_ptr<Engine> make_tracer(const Settings& s, Stats& stats, int world_rank, int world_size,
                                    std::shared_ptr<const model::Inputs> model) {
  auto t = std::make_unique<Tracer>(s, stats, world_rank, world_size, std::move(model));
  install_fault_handler(s.timeout_s * 1000000000LL);
  static bool registered = false;
  if (!registered) {
    registered = true;
    std::atexit(&Tracer::at_exit);
  }
  g_tracer.store(t.get());
  return t;
}

}  // namespace tnbc::trace
