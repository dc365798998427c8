#include "runtime/engine.hh"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <numeric>

#include "runtime/comm_cache.hh"
#include "runtime/cost_probe.hh"
#include "runtime/cpu_share.hh"
#include "runtime/futex.hh"
#include "runtime/guard.hh"
#include "runtime/in_call.hh"
#include "runtime/inflight.hh"
#include "runtime/log.hh"
#include "runtime/memory_map.hh"
#include "runtime/pool.hh"
#include "runtime/progress.hh"
#include "runtime/publish.hh"
#include "runtime/send_copy.hh"
#include "runtime/uffd.hh"

namespace tnbc {

namespace {

std::atomic<Engine*> g_current{nullptr};
std::int64_t g_abort_flush_us = 0;  // TNBC_ABORT_FLUSH_US, for the timeout reporter

// After a timeout report: gives the launcher TNBC_ABORT_FLUSH_US to forward it (hydra drops what
// a rank wrote just before aborting), then ends every rank, not just this one. Async-signal-
// safe: the reporter may run in the fault handler.
[[noreturn]] void abort_after_report() {
  const timespec pause{static_cast<time_t>(g_abort_flush_us / 1000000), static_cast<long>(g_abort_flush_us % 1000000) * 1000};
  nanosleep(&pause, nullptr);
  PMPI_Abort(MPI_COMM_WORLD, 1);
  _exit(1);  // PMPI_Abort does not return; the compiler cannot know
}

// Tags: each collective on a communicator gets a block of kTagStride tags (the schedule
// builders keep every piece's tag_offset below it).
constexpr int kTagStride = kTagsPerCollective;

// What a collective still waits for: the receives that have not arrived (the peer never sent
// them) and the sends not yet taken (the peer never received them). Used by every timeout
// message; also called from the SIGSEGV handler (snprintf into a stack buffer, log_raw).
void report_missing(const void* owner) {
  const auto* f = static_cast<const InFlight*>(owner);
  if (!f) return;
  char line[256];
  std::snprintf(line, sizeof line, "  collective: %s #%llu on a communicator of %d ranks (tnbc tag base %d)",
                kind_name(f->kind), static_cast<unsigned long long>(f->sequence), f->comm_size,
                f->base_tag);
  log_raw(line);
  // Peers nothing was received from (or, for a peer we only send to, none of whose sends was
  // taken): those have most likely not called the collective, since a peer that did sends its
  // edge pieces at once. Sends that completed say little (an eager send completes locally), so
  // they only count where nothing is to be received. Said first: MPI_Abort may cut the list
  // below short.
  int suspects = 0;
  for (std::size_t i = 0; i < f->pieces.size() && suspects < 16; ++i) {
    const int peer = f->pieces[i].peer;
    bool seen_before = false, receives = false, received = false, delivered = false;
    for (std::size_t j = 0; j < f->pieces.size() && !seen_before; ++j) {
      const Piece& p = f->pieces[j];
      if (p.peer != peer) continue;
      seen_before = j < i;
      const bool done = f->done[j].load();
      if (p.dir == Dir::Recv) {
        receives = true;
        received = received || done;
      } else {
        delivered = delivered || done;
      }
    }
    if (seen_before || peer < 0 || (receives ? received : delivered)) continue;
    std::snprintf(line, sizeof line, "  rank %d: nothing %s in this collective (it has most likely not called it, or died)",
                  peer, receives ? "received from it" : "delivered to it");
    log_raw(line);
    ++suspects;
  }
  int shown = 0;
  for (std::size_t i = 0; i < f->pieces.size() && shown < 16; ++i) {
    const Piece& p = f->pieces[i];
    if (f->done[i].load()) continue;
    if (p.dir == Dir::Recv)
      std::snprintf(line, sizeof line, "  missing: %zu bytes at offset %zu from rank %d (sub-message %d)", p.length,
                    p.offset, p.peer, p.sub);
    else
      std::snprintf(line, sizeof line, "  not delivered: %zu bytes to rank %d (sub-message %d)", p.length, p.peer, p.sub);
    log_raw(line);
    ++shown;
  }
}

class EngineImpl final : public Engine {
 public:
  EngineImpl(const Settings& s, Stats& stats, std::unique_ptr<ReadOrderSource> orders)
      : s_(s), stats_(stats), page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))), orders_(std::move(orders)),
        progress_(s) {
    timeout_ns_ = s.timeout_s * 1000000000LL;
    g_abort_flush_us = s.abort_flush_us;
    set_timeout_reporter([](const void* owner) {
      report_missing(owner);
      abort_after_report();
    });
    // Every rank is in MPI_Init now: duplicate MPI_COMM_WORLD here rather than in its first
    // collective (a rank that never reaches that collective would hang the duplication inside
    // MPI, where no timeout can report it).
    PrivateComm& world = comms_.get(MPI_COMM_WORLD, timeout_ns_, "MPI_Init");
    if (s.min_bytes) {
      min_bytes_ = *s.min_bytes;
      stats_.set_threshold({min_bytes_, "set", {}, true});
    } else {
      min_bytes_ = measured_threshold(world);
    }
    const CpuShare cpus = measure_cpu_share(world.comm);
    const std::string problem = cpu_share_problem(cpus);
    stats_.set_node(cpus, problem);
    if (!problem.empty() && cpus.node_rank == 0) log(LogLevel::Info, "%s (docs/limitations.md)", problem.c_str());
  }

  // ------------------------------------------------------------------ collectives
  int bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, CallSite site) override {
    const std::size_t bytes = type_bytes(type, count);
    if (Reason why = global_reason(comm, bytes); why != Reason::None) {
      const int rc = PMPI_Bcast(buffer, count, type, root, comm);
      stats_.record(Kind::Bcast, site, bytes, Outcome::Passthrough, why);
      return rc;
    }
    const bool no_gain = orders_ && bcast_no_gain(bytes, root, comm, site);
    const long long t_enter = futex::now_ns();
    fence(span_of(buffer, count, type), "MPI_Bcast on a buffer still being received");
    // The private duplicate is made collectively: never under call_mutex_, which another
    // thread's collective on another communicator may hold while its peers wait for this one.
    PrivateComm& pc = comms_.get(comm, timeout_ns_, "MPI_Bcast");
    std::unique_lock lock(call_mutex_);
    auto f = start(Kind::Bcast, pc);
    f->call_start_ns = t_enter;
    const bool dense = is_dense(type);
    const int segments = bcast_segments(bytes);
    const auto chunks = bcast_chunks(bytes, page_, segments);
    f->pieces = build_bcast(pc.rank, pc.size, root, chunks, bcast_order(chunks, root, pc.size, site), page_,
                            s_.piece_bytes);

    if (pc.rank == root) {
      if (no_gain && dense) {
        f->send_data = static_cast<char*>(buffer);  // sent from where it is: the call waits for the sends
      } else {
        f->send_block = pool_.acquire(bytes);
        if (!f->send_block.data) return out_of_memory_bcast(buffer, count, type, root, comm, site, bytes);
        f->send_data = f->send_block.data;
        copy_in(buffer, count, type, dense, f->send_data, bytes, pc.comm);
      }
      if (no_gain) {
        f->to_completion = true;  // the root too waits until its sends are taken
        lock.unlock();
        return complete(f, Reason::NoOverlapToGain, Kind::Bcast, site, bytes, [] {});
      }
      finish_setup(*f);
      progress_.submit(f);
      stats_.record(Kind::Bcast, site, bytes, Outcome::EarlyReturn, Reason::None);
      stats_.record_in_call(futex::now_ns() - t_enter);
      return MPI_SUCCESS;
    }
    // No overlap to gain: received into (and forwarded from) the program's buffer itself, the
    // call waits for every piece (InFlight::to_completion). Else into staging.
    f->recv_data = f->send_data =
        no_gain && dense ? static_cast<char*>(buffer) : staging_for(f->recv_block, bytes, buffer);
    if (!f->recv_data) return out_of_memory_bcast(buffer, count, type, root, comm, site, bytes);
    f->user_recv = dense ? static_cast<char*>(buffer) : nullptr;
    const auto base = reinterpret_cast<std::uintptr_t>(buffer);
    f->to_completion = no_gain;
    const Reason why = no_gain ? Reason::NoOverlapToGain
                               : dense ? try_guard(*f, base, base, base + bytes) : Reason::NoncontiguousDatatype;
    lock.unlock();
    return complete(f, why, Kind::Bcast, site, bytes, [&] {
      int pos = 0;
      PMPI_Unpack(f->recv_data, static_cast<int>(bytes), &pos, buffer, count, type, pc.comm);
    });
  }

  int alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf, int recvcount,
               MPI_Datatype recvtype, MPI_Comm comm, CallSite site) override {
    const std::size_t per_peer = type_bytes(recvtype, recvcount);  // equal on every rank
    int n = 0;
    PMPI_Comm_size(comm, &n);
    if (Reason why = global_reason(comm, per_peer); why != Reason::None) {
      const int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      stats_.record(Kind::Alltoall, site, per_peer * static_cast<std::size_t>(n), Outcome::Passthrough, why);
      return rc;
    }
    bool no_gain = false;
    if (orders_) {
      const std::uint64_t sent = sendbuf == MPI_IN_PLACE ? 0 : type_bytes(sendtype, sendcount);
      const auto N = static_cast<std::size_t>(n);
      no_gain = orders_->run_blocking({Kind::Alltoall, site, n, -1, std::vector<std::uint64_t>(N, per_peer),
                                       std::vector<std::uint64_t>(N, sent)});
    }
    std::vector<int> sc(static_cast<std::size_t>(n), sendcount), rc(static_cast<std::size_t>(n), recvcount);
    std::vector<int> sd(static_cast<std::size_t>(n)), rd(static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p) {
      sd[static_cast<std::size_t>(p)] = p * sendcount;
      rd[static_cast<std::size_t>(p)] = p * recvcount;
    }
    return all_to_all(Kind::Alltoall, sendbuf, sc.data(), sd.data(), sendtype, recvbuf, rc.data(), rd.data(),
                      recvtype, comm, site, no_gain);
  }

  int alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                CallSite site) override {
    // Sizes differ between ranks, so only rank-independent facts may route it to PMPI.
    if (Reason why = global_reason(comm, SIZE_MAX); why != Reason::None) {
      int n = 0;
      PMPI_Comm_size(comm, &n);
      std::size_t bytes = 0;
      for (int p = 0; p < n; ++p) bytes += type_bytes(recvtype, recvcounts[p]);
      const int rc = PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
      stats_.record(Kind::Alltoallv, site, bytes, Outcome::Passthrough, why);
      return rc;
    }
    const bool no_gain = orders_ && alltoallv_no_gain(sendbuf, sendcounts, sendtype, recvcounts, recvtype, comm, site);
    return all_to_all(Kind::Alltoallv, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                      recvtype, comm, site, no_gain);
  }

  // ------------------------------------------------------------------ fences
  void fence(ByteRange r, const char* what) override { fence_range(r.lo, r.hi, Access::MpiCall, what); }

  void complete_all() override { fence_all("a fence"); }

  void drain() override { drain_or_abort("before a communicator is freed (MPI_Comm_free)"); }

  void shutdown() override {
    complete_all();
    drain_or_abort("in MPI_Finalize");
    stats_.set_thread_cpu(progress_.cpu_seconds(), uffd::listener_cpu_seconds());
    progress_.stop();
    g_current.store(nullptr);
  }

 private:
  // Waits until every collective in flight has finished, sends included; after TNBC_TIMEOUT
  // says what is missing and ends the job.
  void drain_or_abort(const char* when) {
    if (on_progress_thread() || progress_.drain(timeout_ns_)) return;
    log(LogLevel::Error, "timeout (TNBC_TIMEOUT=%llds) %s: collectives still in flight, their peers never "
                         "took or sent their part:", static_cast<long long>(s_.timeout_s), when);
    progress_.for_each_in_flight([](const InFlight& f) { report_missing(&f); });
    abort_after_report();
  }

  // The calling thread waited TNBC_TIMEOUT inside a collective: says what is missing, ends the job.
  [[noreturn]] void timeout_in_call(const InFlight& f) {
    log(LogLevel::Error, "timeout (TNBC_TIMEOUT=%llds) inside %s: data from other ranks did not arrive",
        static_cast<long long>(s_.timeout_s), kind_name(f.kind));
    report_missing(&f);
    abort_after_report();
  }

  // Decisions every rank makes alike: communicator kind and message size.
  Reason global_reason(MPI_Comm comm, std::size_t bytes) const {
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) return Reason::Intercommunicator;
    if (bytes < min_bytes_) return Reason::BelowThreshold;
    return Reason::None;
  }

  std::shared_ptr<InFlight> start(Kind kind, PrivateComm& pc) {
    auto f = std::make_shared<InFlight>();
    f->kind = kind;
    f->pool = &pool_;
    f->recv_pool = &recv_pool_;
    f->comm = pc.comm;
    f->comm_size = pc.size;
    f->sequence = pc.next_sequence++;
    const std::uint64_t cycle = static_cast<std::uint64_t>(std::max(1, pc.tag_ub / kTagStride));
    f->base_tag = static_cast<int>(f->sequence % cycle) * kTagStride;
    return f;
  }

  static void copy_in(const void* src, int count, MPI_Datatype type, bool dense, char* dst, std::size_t bytes,
                      MPI_Comm comm) {
    if (bytes == 0) return;
    if (dense) {
      std::memcpy(dst, src, bytes);
    } else {
      int pos = 0;
      PMPI_Pack(src, count, type, dst, static_cast<int>(bytes), &pos, comm);
    }
  }

  // Per-piece bookkeeping once the piece list is final.
  static void finish_setup(InFlight& f) {
    const std::size_t n = f.pieces.size();
    f.done = std::make_unique<std::atomic<std::uint8_t>[]>(n);
    int recvs = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const Piece& p = f.pieces[i];
      if (p.dir == Dir::Recv) {
        ++recvs;
      } else if (p.peer >= 0) {
        f.unposted_sends.push_back(static_cast<int>(i));
      }
    }
    std::stable_sort(f.unposted_sends.begin(), f.unposted_sends.end(),
                     [&](int a, int b) { return f.pieces[a].priority < f.pieces[b].priority; });
    f.sends_remaining = static_cast<int>(f.unposted_sends.size());
    f.recv_remaining.store(recvs);
  }

  // Plans, registers and guards the regions of the receive layout at `base`; returns
  // Reason::None when the call can return early, else why it must complete in the call.
  // The pieces that must complete in the call are marked in `f.in_call`. `own` is the rank's
  // own block, already in place (it is no received piece, but no stranger's data either).
  Reason try_guard(InFlight& f, std::uintptr_t base, std::uintptr_t lo, std::uintptr_t hi, ByteRange own = {}) {
    finish_setup(f);
    RegionPlan plan = plan_regions(base, f.pieces, lo, hi, page_, {});
    f.in_call = plan.in_call;
    if (plan.regions.empty()) return Reason::NotGuardable;
    if (!memory_is_private(plan.regions.front().lo, plan.regions.back().hi)) return Reason::NotGuardable;
    const bool uffd_ok = s_.guard != GuardBackend::Protect && uffd::active() && f.user_recv &&
                         regions_hold_only_ours(f, plan, base, own);
    if (!uffd_ok && !publication_available()) return Reason::NotGuardable;
    f.region_count = plan.regions.size();
    f.regions = std::make_unique<Region[]>(f.region_count);
    f.piece_regions.assign(f.pieces.size(), {0, 0});
    for (std::size_t k = 0; k < f.region_count; ++k) {
      Region& r = f.regions[k];
      r.lo = plan.regions[k].lo;
      r.hi = plan.regions[k].hi;
      r.pending.store(static_cast<int>(plan.regions[k].pieces.size()));
      r.owner = &f;
      for (int i : plan.regions[k].pieces) {
        auto& pr = f.piece_regions[static_cast<std::size_t>(i)];
        if (pr.first == pr.second) pr = {static_cast<int>(k), static_cast<int>(k) + 1};
        else pr = {std::min(pr.first, static_cast<int>(k)), std::max(pr.second, static_cast<int>(k) + 1)};
      }
    }
    f.regions_remaining.store(static_cast<int>(f.region_count));
    std::size_t listed = 0;
    while (listed < f.region_count && guards().insert(&f.regions[listed])) ++listed;
    const bool listed_all = listed == f.region_count;
    if (!listed_all) {
      // Overlaps a region still in use: another thread's collective on these pages.
      log(LogLevel::Info, "receive buffer overlaps a buffer still guarded: completing in the call");
    } else if (uffd_ok && (f.swapped = can_swap_pages(f, base), empty_regions(f, base, own))) {
      f.guard = InFlight::Guard::Uffd;
      return Reason::None;
    }
    // PROT_NONE pages need tnbc's SIGSEGV handler in place (another may have replaced it).
    const bool handler = !listed_all || ensure_fault_handler() != HandlerState::Lost;
    if (listed_all && handler && publication_available() && protect_regions(f)) {
      ensure_signal_stack();
      f.guard = InFlight::Guard::Protect;
      return Reason::None;
    }
    for (std::size_t j = 0; j < f.region_count; ++j) guards().erase(&f.regions[j]);
    f.regions.reset();
    f.region_count = 0;
    f.piece_regions.clear();
    f.regions_remaining.store(0);
    return handler ? Reason::NotGuardable : Reason::SignalHandler;
  }

  // Page swapping needs the staging at the same offset in its pages as the user's buffer (see
  // staging_for) and no send reading the staging after publication (a broadcast's forwards).
  bool can_swap_pages(const InFlight& f, std::uintptr_t base) const {
    if (s_.uffd_publish != UffdPublish::Auto || !uffd::can_swap()) return false;
    if ((reinterpret_cast<std::uintptr_t>(f.recv_data) - base) % page_ != 0) return false;
    if (f.send_data != f.recv_data) return true;
    return std::none_of(f.pieces.begin(), f.pieces.end(), [](const Piece& p) { return p.dir == Dir::Send; });
  }

  // Receive staging for `bytes` laid out like the user's buffer at `user`: at the same offset in
  // its pages, so that whole pages can move between the two (page swapping).
  char* staging_for(Block& block, std::size_t bytes, const void* user) {
    const std::size_t shift = reinterpret_cast<std::uintptr_t>(user) % page_;
    block = recv_pool_.acquire(bytes + shift);
    return block.data ? block.data + shift : nullptr;
  }

  // Runs of adjacent regions, each handled with one system call: fn(lo, hi) for each.
  template <class Fn>
  static bool for_each_run(InFlight& f, Fn fn) {
    for (std::size_t k = 0; k < f.region_count;) {
      std::size_t e = k + 1;
      while (e < f.region_count && f.regions[e].lo == f.regions[e - 1].hi) ++e;
      if (!fn(f.regions[k].lo, f.regions[e - 1].hi)) return false;
      k = e;
    }
    return true;
  }

  bool protect_regions(InFlight& f) {
    std::uintptr_t done_to = f.regions[0].lo;
    const bool ok = for_each_run(f, [&](std::uintptr_t a, std::uintptr_t b) {
      if (::mprotect(reinterpret_cast<void*>(a), b - a, PROT_NONE) == 0) {
        done_to = b;
        return true;
      }
      log(LogLevel::Info, "cannot protect %p+%zu (%s): completing in the call", reinterpret_cast<void*>(a),
          static_cast<std::size_t>(b - a), std::strerror(errno));
      return false;
    });
    if (!ok) ::mprotect(reinterpret_cast<void*>(f.regions[0].lo), done_to - f.regions[0].lo, PROT_READ | PROT_WRITE);
    return ok;
  }

  // Whether every byte of the regions' pages is received by this collective or is the own
  // block: then emptying the pages loses nothing another thread could be writing meanwhile.
  static bool regions_hold_only_ours(const InFlight& f, const RegionPlan& plan, std::uintptr_t base, ByteRange own) {
    for (const auto& span : plan.regions) {
      std::vector<ByteRange> cover;
      for (int i : span.pieces) {
        const Piece& p = f.pieces[static_cast<std::size_t>(i)];
        cover.push_back({base + p.offset, base + p.offset + p.length});
      }
      if (!own.empty()) cover.push_back(own);
      std::sort(cover.begin(), cover.end(), [](ByteRange a, ByteRange b) { return a.lo < b.lo; });
      std::uintptr_t at = span.lo;
      for (const ByteRange& c : cover) {
        if (c.lo > at) break;
        at = std::max(at, c.hi);
      }
      if (at < span.hi) return false;
    }
    return true;
  }

  // userfaultfd. Page swapping when it can (runtime/uffd.hh): each run of regions moves its
  // pages, own bytes included, into the staging, which is at the same offset in its pages;
  // all runs or none (publication treats the whole collective alike). Else saves the own
  // block's bytes in the regions to staging (the publication copies whole pages from there),
  // then registers and empties each run of regions.
  bool empty_regions(InFlight& f, std::uintptr_t base, ByteRange own) {
    if (f.swapped) {
      std::vector<ByteRange> moved;
      const bool all = for_each_run(f, [&](std::uintptr_t a, std::uintptr_t b) {
        if (!uffd::arm_swap(a, b, f.recv_data + (a - base))) return false;
        moved.push_back({a, b});
        return true;
      });
      if (all) return true;
      for (const ByteRange& r : moved) uffd::fill_swapped(r.lo, r.hi, f.recv_data + (r.lo - base));
      f.swapped = false;
      log(LogLevel::Debug, "userfaultfd: pages would not move; copying instead");
    }
    for (std::size_t k = 0; k < f.region_count && !own.empty(); ++k) {
      const std::uintptr_t a = std::max(own.lo, f.regions[k].lo), b = std::min(own.hi, f.regions[k].hi);
      if (a < b) std::memcpy(f.recv_data + (a - base), reinterpret_cast<const void*>(a), b - a);
    }
    std::vector<ByteRange> armed;
    const bool ok = for_each_run(f, [&](std::uintptr_t a, std::uintptr_t b) {
      if (!uffd::arm(a, b)) return false;
      armed.push_back({a, b});
      return true;
    });
    if (ok) return true;
    // Put back what was emptied (own bytes from staging; received bytes come later anyway).
    for (const ByteRange& r : armed) uffd::fill(r.lo, r.hi, f.recv_data + (r.lo - base));
    return false;
  }

  // Submits `f` and returns early (why == None: wait for the in-call pieces only) or after
  // every receive has arrived (then `unpack` runs when the data needs it). With
  // `to_completion` the calling thread runs every piece itself, sends included.
  template <class Unpack>
  int complete(const std::shared_ptr<InFlight>& f, Reason why, Kind kind, CallSite site, std::size_t bytes,
               Unpack unpack) {
    if (why != Reason::None && f->done == nullptr) finish_setup(*f);
    if (why == Reason::None) {
      // Early return. The calling thread itself moves what must arrive before it returns:
      // it posts the receives of the in-call pieces and sends every edge piece (small, and
      // what other ranks wait for in their calls), so this path does not depend on when the
      // progress threads get a CPU. The progress thread adopts the send requests.
      std::vector<MPI_Request> reqs;
      std::vector<int> recv_pieces;
      f->by_caller.assign(f->pieces.size(), false);
      for (std::size_t i = 0; i < f->pieces.size(); ++i) {
        const Piece& p = f->pieces[i];
        const bool mine = p.dir == Dir::Recv ? f->in_call[i]
                                             : (p.edge && (p.after < 0 || f->in_call[static_cast<std::size_t>(p.after)]));
        if (!mine) continue;
        f->by_caller[i] = true;
        if (p.dir == Dir::Recv) {
          reqs.emplace_back();
          PMPI_Irecv(f->recv_data + p.offset, static_cast<int>(p.length), MPI_BYTE, p.peer, f->base_tag + p.tag_offset,
                     f->comm, &reqs.back());
          recv_pieces.push_back(static_cast<int>(i));
        }
      }
      std::erase_if(f->unposted_sends, [&](int i) { return f->by_caller[static_cast<std::size_t>(i)]; });
      auto post_sends = [&](auto ready) {
        for (std::size_t i = 0; i < f->pieces.size(); ++i) {
          const Piece& p = f->pieces[i];
          if (p.dir != Dir::Send || !f->by_caller[i] || !ready(p)) continue;
          MPI_Request req;
          PMPI_Isend(f->send_data + p.offset, static_cast<int>(p.length), MPI_BYTE, p.peer, f->base_tag + p.tag_offset,
                     f->comm, &req);
          progress_.adopt(f.get(), static_cast<int>(i), req);
        }
      };
      post_sends([](const Piece& p) { return p.after < 0; });
      f->bodies_released.store(false);
      progress_.submit(f);
      const long long t_submit = futex::now_ns();
      wait_requests(*f, reqs);
      for (int i : recv_pieces) publish_piece(*f, i);
      post_sends([](const Piece& p) { return p.after >= 0; });  // a broadcast's forwards
      f->bodies_released.store(true);
      urgency().poke();
      if (log_enabled(LogLevel::Debug))
        log(LogLevel::Debug, "%s #%llu: in-call wait %.3f ms, %.3f ms in the call", kind_name(kind),
            static_cast<unsigned long long>(f->sequence), (futex::now_ns() - t_submit) / 1e6,
            (futex::now_ns() - f->call_start_ns) / 1e6);
      if (f->guard != InFlight::Guard::None) ensure_signal_stack();
      stats_.record(kind, site, bytes, Outcome::EarlyReturn, Reason::None);
      stats_.record_in_call(futex::now_ns() - f->call_start_ns);
      if (f->guard != InFlight::Guard::None)
        stats_.record_guard(f->guard == InFlight::Guard::Uffd ? Stats::GuardUsed::Userfaultfd : Stats::GuardUsed::ProtNone);
      if (f->swapped) stats_.record_guard(Stats::GuardUsed::UserfaultfdMoved);
      return MPI_SUCCESS;
    }
    if (f->to_completion) {
      if (!run_in_caller(*f, timeout_ns_, std::max<long long>(s_.poll_min_us * 1000, 1000))) timeout_in_call(*f);
    } else {
      progress_.submit(f);
      wait_until(*f, [&] { return f->recv_remaining.load(std::memory_order_acquire) == 0; });
    }
    if (!f->user_recv && f->recv_data) unpack();
    stats_.record(kind, site, bytes, Outcome::CompletedInCall, why);
    return MPI_SUCCESS;
  }

  // Completes the calling thread's own requests (testing, so that a missing peer ends in a
  // message after TNBC_TIMEOUT instead of a silent hang).
  void wait_requests(InFlight& f, std::vector<MPI_Request>& reqs) {
    if (reqs.empty()) return;
    const long long start = futex::now_ns();
    int flag = 0;
    while (true) {
      PMPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE);
      if (flag) return;
      if (futex::now_ns() - start > timeout_ns_) timeout_in_call(f);
      // Test back to back for TNBC_POLL_MIN_US, then sleep that long between tests rather than
      // yield: a thread that keeps yielding loses its place to computing threads (EEVDF pushes
      // its deadline back), while a sleeper wakes with credit and runs as soon as it is due.
      const long long poll_ns = std::max<long long>(s_.poll_min_us * 1000, 1000);
      if (futex::now_ns() - start > poll_ns) {
        struct timespec ts{0, static_cast<long>(poll_ns)};
        nanosleep(&ts, nullptr);
      }
    }
  }

  template <class Pred>
  void wait_until(InFlight& f, Pred done) {
    if (done()) return;
    auto& u = urgency();
    u.waiting.fetch_add(1);
    u.poke();
    const long long start = futex::now_ns();
    while (true) {
      const std::uint32_t seen = publish_word().load(std::memory_order_acquire);
      if (done()) break;
      futex::wait(publish_word(), seen, 100 * 1000 * 1000LL);
      if (futex::now_ns() - start > timeout_ns_) timeout_in_call(f);
    }
    u.waiting.fetch_sub(1);
  }

  int all_to_all(Kind kind, const void* sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                 void* recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                 CallSite site, bool no_gain) {
    const long long t_enter = futex::now_ns();
    const bool in_place = sendbuf == MPI_IN_PLACE;
    const void* sbuf = in_place ? recvbuf : sendbuf;
    const int* scounts = in_place ? recvcounts : sendcounts;
    const int* sdisp = in_place ? rdispls : sdispls;
    MPI_Datatype stype = in_place ? recvtype : sendtype;

    // Not under call_mutex_ (see bcast).
    PrivateComm& pc = comms_.get(comm, timeout_ns_, kind == Kind::Alltoall ? "MPI_Alltoall" : "MPI_Alltoallv");
    std::unique_lock lock(call_mutex_);
    const int n = pc.size, me = pc.rank;
    const auto N = static_cast<std::size_t>(n);
    MPI_Aint lb = 0, sext = 0, rext = 0;
    PMPI_Type_get_extent(stype, &lb, &sext);
    PMPI_Type_get_extent(recvtype, &lb, &rext);
    const bool sdense = is_dense(stype), rdense = is_dense(recvtype);

    std::vector<std::size_t> sbytes(N), soff(N), rbytes(N), roff(N);
    std::size_t stotal = 0, rtotal = 0, packed = 0;
    bool negative = false;
    for (std::size_t p = 0; p < N; ++p) {
      sbytes[p] = type_bytes(stype, scounts[p]);
      rbytes[p] = type_bytes(recvtype, recvcounts[p]);
      soff[p] = stotal;
      stotal += sbytes[p];
      if (rbytes[p] == 0) continue;
      negative = negative || rdispls[p] < 0;
      rtotal += rbytes[p];
    }
    const bool layout = rdense && !negative;  // staging mirrors the user's receive layout
    // No overlap to gain (mode optimize): the calling thread runs every piece to completion
    // (InFlight::to_completion) and nothing is ever guarded, so MPI may receive straight into the
    // program's buffer and send straight from it (dense types, displacements >= 0): no staging
    // copy either way. The pieces are the same messages (sizes, peers, tags); only their
    // rank-local offsets follow the program's layout.
    const bool direct_recv = no_gain && layout;
    bool direct_send = no_gain && sdense && !in_place;
    for (std::size_t p = 0; p < N && direct_send; ++p) direct_send = !sbytes[p] || sdisp[p] >= 0;
    if (direct_send)
      for (std::size_t p = 0; p < N; ++p) soff[p] = static_cast<std::size_t>(sdisp[p]) * static_cast<std::size_t>(sext);
    std::size_t rspan = 0;
    for (std::size_t p = 0; p < N; ++p) {
      if (layout) {
        roff[p] = static_cast<std::size_t>(rdispls[p]) * static_cast<std::size_t>(rext);
        if (rbytes[p]) rspan = std::max(rspan, roff[p] + rbytes[p]);
      } else {
        roff[p] = packed;
        packed += rbytes[p];
      }
    }
    if (!layout) rspan = packed;
    lock.unlock();
    // Complete what is still in flight on these buffers (a new collective may reuse them).
    for (std::size_t p = 0; p < N; ++p) {
      if (sbytes[p] && !in_place)
        fence(span_of(static_cast<const char*>(sbuf) + static_cast<std::ptrdiff_t>(sdisp[p]) * sext, scounts[p], stype), "a collective on a guarded buffer");
      if (rbytes[p])
        fence(span_of(static_cast<char*>(recvbuf) + static_cast<std::ptrdiff_t>(rdispls[p]) * rext, recvcounts[p], recvtype), "a collective on a guarded buffer");
    }
    lock.lock();
    const long long t_setup = futex::now_ns();
    auto f = start(kind, pc);
    f->call_start_ns = t_enter;
    f->to_completion = no_gain;
    if (!direct_send) f->send_block = pool_.acquire(stotal);
    f->recv_data = direct_recv ? static_cast<char*>(recvbuf) : staging_for(f->recv_block, rspan, recvbuf);
    if ((stotal && !direct_send && !f->send_block.data) || (rspan && !f->recv_data)) {
      log(LogLevel::Error, "out of memory for staging (%zu + %zu bytes)", stotal, rspan);
      PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    f->send_data = direct_send ? const_cast<char*>(static_cast<const char*>(sbuf)) : f->send_block.data;
    const std::size_t self = static_cast<std::size_t>(me);
    if (sbytes[self] != rbytes[self]) {
      log(LogLevel::Error, "%s: rank %d sends %zu bytes to itself but expects %zu (type signatures differ)",
          kind_name(kind), me, sbytes[self], rbytes[self]);
      PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    // Send data: packed now when it must be (non-dense type, or in place: the receive will
    // overwrite it); otherwise staged piece by piece below (runtime/send_copy.hh).
    const bool pack_sends = !sdense || in_place;
    auto send_block_of = [&](std::size_t p) { return static_cast<const char*>(sbuf) + static_cast<std::ptrdiff_t>(sdisp[p]) * sext; };
    for (std::size_t p = 0; p < N && pack_sends; ++p) {
      if (!sbytes[p] || p == self) continue;
      copy_in(send_block_of(p), scounts[p], stype, sdense, f->send_data + soff[p], sbytes[p], pc.comm);
    }
    // Own block: straight into place (no guard is up yet; in place it is there already), or into
    // the receive staging when the receive side is unpacked at the end.
    if (rbytes[self] && !(in_place && layout)) {
      const char* src = static_cast<const char*>(sbuf) + static_cast<std::ptrdiff_t>(sdisp[self]) * sext;
      char* dst = layout ? static_cast<char*>(recvbuf) + roff[self] : f->recv_data + roff[self];
      copy_in(src, scounts[self], stype, sdense, dst, sbytes[self], pc.comm);
    }
    f->pieces = build_alltoallv(me, n, sbytes, soff, rbytes, roff, page_,
                                alltoall_order(kind, site, n, rbytes, in_place ? std::vector<std::size_t>(N) : sbytes),
                                s_.piece_bytes);
    if (!pack_sends && !direct_send) {
      std::vector<const char*> src(f->pieces.size(), nullptr);
      for (std::size_t i = 0; i < src.size(); ++i) {
        const Piece& piece = f->pieces[i];
        const auto p = static_cast<std::size_t>(piece.peer);
        if (piece.dir == Dir::Send) src[i] = send_block_of(p) + (piece.offset - soff[p]);
      }
      stage_sends(*f, src, s_.send_copy == SendCopy::Lazy && !no_gain, page_);  // lazy only pays on an early return
    }
    f->user_recv = layout ? static_cast<char*>(recvbuf) : nullptr;
    const long long t_staged = futex::now_ns();
    Reason why = Reason::None;
    if (no_gain) why = Reason::NoOverlapToGain;
    else if (!layout) why = Reason::NoncontiguousDatatype;
    else if (rtotal < min_bytes_) why = Reason::BelowThreshold;
    else {
      std::uintptr_t lo = UINTPTR_MAX, hi = 0;
      const auto base = reinterpret_cast<std::uintptr_t>(recvbuf);
      for (std::size_t p = 0; p < N; ++p)
        if (rbytes[p]) {
          lo = std::min(lo, base + roff[p]);
          hi = std::max(hi, base + roff[p] + rbytes[p]);
        }
      ByteRange own{};
      if (rbytes[self]) own = {base + roff[self], base + roff[self] + rbytes[self]};
      why = try_guard(*f, base, lo, hi, own);
    }
    if (log_enabled(LogLevel::Debug))
      log(LogLevel::Debug, "%s #%llu: set-up %.3f ms, staging %.3f ms, guard %.3f ms (%zu regions, %s)", kind_name(kind),
          static_cast<unsigned long long>(f->sequence), (t_setup - t_enter) / 1e6, (t_staged - t_setup) / 1e6, (futex::now_ns() - t_staged) / 1e6,
          f->region_count, f->guard == InFlight::Guard::Uffd ? "userfaultfd" : f->guard == InFlight::Guard::Protect ? "PROT_NONE" : "not guarded");
    lock.unlock();
    return complete(f, why, kind, site, rtotal, [&] {
      for (std::size_t p = 0; p < N; ++p) {
        if (!rbytes[p]) continue;
        int pos = 0;
        PMPI_Unpack(f->recv_data + roff[p], static_cast<int>(rbytes[p]), &pos,
                    static_cast<char*>(recvbuf) + static_cast<std::ptrdiff_t>(rdispls[p]) * rext, recvcounts[p],
                    recvtype, pc.comm);
      }
    });
  }

  // Read orders (runtime/read_order.hh): the profile's, else the default. Only priorities
  // change with the order, so ranks that disagree still match every message.
  std::vector<int> alltoall_order(Kind kind, CallSite site, int n, const std::vector<std::size_t>& rbytes,
                                  const std::vector<std::size_t>& sbytes) {
    std::vector<int> order;
    if (orders_)
      order = orders_->order({kind, site, n, -1, {rbytes.begin(), rbytes.end()}, {sbytes.begin(), sbytes.end()}});
    if (order.size() != static_cast<std::size_t>(n)) {
      order.resize(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0);
    }
    return order;
  }

  // Chunks of a broadcast: the first and the last (they may land in partial pages and are
  // received in the call) go first, then the middle ones in read order.
  std::vector<int> bcast_order(const std::vector<Chunk>& chunks, int root, int n, CallSite site) {
    const int last = static_cast<int>(chunks.size()) - 1;
    std::vector<int> read;
    if (orders_ && last >= 2) {
      CallShape call{Kind::Bcast, site, n, root, {}, {}};
      for (const Chunk& c : chunks) call.recv_bytes.push_back(c.length);
      read = orders_->order(call);
    }
    if (read.size() != chunks.size()) {
      read.resize(chunks.size());
      std::iota(read.begin(), read.end(), 0);
    }
    std::vector<int> order;
    if (last >= 0) order.push_back(0);
    if (last >= 1) order.push_back(last);
    for (int c : read)
      if (c != 0 && c != last) order.push_back(c);
    return order;
  }

  static int comm_size(MPI_Comm comm) {
    int n = 0;
    PMPI_Comm_size(comm, &n);
    return n;
  }

  int bcast_segments(std::size_t bytes) const {
    return tnbc::bcast_segments(bytes, page_, static_cast<int>(s_.bcast_max_segments));
  }

  // Mode optimize: whether the profile says this call has no overlap to gain (trace/gain.hh);
  // then it runs tnbc's schedule to completion in the call (InFlight::to_completion). A rank may
  // decide otherwise than its peers: the pieces are the same either way. The call shapes are
  // those the read order look-ups pass (alltoall_order, bcast_order), which follow for the same
  // call and reuse its stack walk.
  bool bcast_no_gain(std::size_t bytes, int root, MPI_Comm comm, CallSite site) {
    CallShape call{Kind::Bcast, site, comm_size(comm), root, {}, {}};
    for (const Chunk& c : bcast_chunks(bytes, page_, bcast_segments(bytes))) call.recv_bytes.push_back(c.length);
    return orders_->run_blocking(call);
  }

  bool alltoallv_no_gain(const void* sendbuf, const int sendcounts[], MPI_Datatype sendtype, const int recvcounts[],
                         MPI_Datatype recvtype, MPI_Comm comm, CallSite site) {
    const int n = comm_size(comm);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    CallShape call{Kind::Alltoallv, site, n, -1, {}, {}};
    for (int p = 0; p < n; ++p) {
      call.recv_bytes.push_back(type_bytes(recvtype, recvcounts[p]));
      call.send_bytes.push_back(in_place ? 0 : type_bytes(sendtype, sendcounts[p]));
    }
    return orders_->run_blocking(call);
  }

  int out_of_memory_bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, CallSite site,
                          std::size_t bytes) {
    log(LogLevel::Error, "out of memory for staging %zu bytes", bytes);
    PMPI_Abort(comm, 1);
    (void)buffer, (void)count, (void)type, (void)root, (void)site;
    return MPI_ERR_NO_MEM;
  }

  // TNBC_MIN_BYTES=auto: the threshold from the costs measured on this rank (runtime/threshold.hh),
  // the largest over the ranks (one reduction on the private duplicate of MPI_COMM_WORLD, which
  // every rank reaches in MPI_Init), so that every rank decides alike.
  std::size_t measured_threshold(PrivateComm& world) {
    const std::size_t floor = 3 * page_;
    const bool uffd_ok = s_.guard != GuardBackend::Protect && uffd::active();
    const bool guardable = uffd_ok || publication_available();
    std::uint64_t mine = floor;
    MeasuredCosts c;
    std::string why;
    const char* basis = "measured";
    const ProbeBackend b = !guardable ? ProbeBackend::None
                           : !uffd_ok ? ProbeBackend::ProtNone
                           : s_.uffd_publish == UffdPublish::Auto && uffd::can_swap() ? ProbeBackend::UffdMove
                                                                                       : ProbeBackend::UffdCopy;
    // Every rank measures the link, whatever it can guard (the exchange is collective). Tag 0 of
    // the duplicate: every probe message is matched before the reduction below completes, so
    // none can meet a collective's messages.
    const long long t0 = futex::now_ns();
    const bool measured = measure_costs(world.comm, 0, b, page_, c, why);
    const double probe_ms = static_cast<double>(futex::now_ns() - t0) / 1e6;
    if (!guardable) {
      basis = "nothing_to_guard";  // every collective completes in the call anyway
    } else if (!measured) {
      basis = "not_measured";
      log(LogLevel::Warn, "cannot measure the costs of returning early (%s); TNBC_MIN_BYTES=auto uses %s",
          why.c_str(), bytes_text(floor).c_str());
    } else if (world.size == 1) {
      basis = "single_rank";
    } else {
      mine = threshold_from_costs(c, page_);
    }
    std::uint64_t all = mine;
    PMPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_MAX, world.comm);
    const auto chosen = static_cast<std::size_t>(all);
    stats_.set_threshold({chosen, basis, c, mine == chosen});
    // Rank 0 says it (a warning when no size pays), the others at debug level.
    const LogLevel level = world.rank != 0 ? LogLevel::Debug : chosen == kNeverPays ? LogLevel::Warn : LogLevel::Info;
    if (log_enabled(level)) {
      const double us_per_mib = static_cast<double>(1 << 20) / 1e3;
      log(level,
          "TNBC_MIN_BYTES=auto: %s%s (largest over the ranks; here %s from link %.0f us + %.0f us/MiB, guard (%s) "
          "%.0f us + %.0f us/MiB, copy %.0f us/MiB; measured in %.1f ms)",
          bytes_text(chosen).c_str(),
          chosen == kNeverPays ? ": returning early does not pay at any size by the measured costs, collectives run "
                                 "blocking (set TNBC_MIN_BYTES to override)"
                               : "",
          bytes_text(mine).c_str(), c.link.fixed_ns / 1e3, c.link.per_byte_ns * us_per_mib, c.backend,
          c.guard.fixed_ns / 1e3, c.guard.per_byte_ns * us_per_mib, c.copy_per_byte_ns * us_per_mib, probe_ms);
    }
    return chosen;
  }

  Settings s_;
  Stats& stats_;
  std::size_t page_;
  std::size_t min_bytes_ = 0;
  long long timeout_ns_ = 0;
  std::unique_ptr<ReadOrderSource> orders_;
  Pool pool_;       // send staging (kept populated)
  Pool recv_pool_;  // receive staging (emptied by page swapping; InFlight::recv_pool)
  CommCache comms_;
  Progress progress_;
  std::mutex call_mutex_;
};

}  // namespace

Engine* Engine::current() { return g_current.load(); }

std::unique_ptr<Engine> Engine::create(const Settings& s, Stats& stats, int world_rank, int world_size,
                                       std::unique_ptr<ReadOrderSource> orders) {
  (void)world_rank;
  (void)world_size;
  std::string why;
  if (s.guard != GuardBackend::Protect && !uffd::start(why))
    log(s.guard == GuardBackend::Uffd ? LogLevel::Warn : LogLevel::Info,
        "%s: guarding receive buffers with PROT_NONE instead of userfaultfd", why.c_str());
  if (!uffd::active() && !publication_available())
    log(LogLevel::Warn, "/proc/self/mem is not writable here: receive buffers cannot be guarded, "
                        "collectives complete before returning");
  if (uffd::active() && !uffd::kernel_faults_wait())
    log(LogLevel::Info, "userfaultfd in user-mode-only mode: system calls on a guarded buffer are fenced");
  auto e = std::make_unique<EngineImpl>(s, stats, std::move(orders));
  install_fault_handler(s.timeout_s * 1000000000LL);
  // A child process has no progress thread: complete every guarded buffer before fork().
  static bool atfork_registered = false;
  if (!atfork_registered) {
    atfork_registered = true;
    pthread_atfork([] { fence_all("fork()"); }, nullptr, nullptr);
  }
  g_current.store(e.get());
  return e;
}

}  // namespace tnbc
