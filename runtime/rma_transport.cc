#include "runtime/rma_transport.hh"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "runtime/comm_cache.hh"
#include "runtime/futex.hh"
#include "runtime/inflight.hh"
#include "runtime/model/probe.hh"

namespace tnbc {

namespace {

// Control window layout, in int64 words.
constexpr int kDescrWords = 4;  // root, window id, size, sequence + 1
constexpr MPI_Aint flag_disp(int slot, int flag) { return static_cast<MPI_Aint>(slot) * kRmaFlagsPerSlot + flag; }
constexpr MPI_Aint descr_disp(int slot) {
  return static_cast<MPI_Aint>(kRmaSlots) * kRmaFlagsPerSlot + static_cast<MPI_Aint>(slot) * kDescrWords;
}
constexpr MPI_Aint done_disp(int slot) {
  return static_cast<MPI_Aint>(kRmaSlots) * (kRmaFlagsPerSlot + kDescrWords) + slot;
}
constexpr MPI_Aint kCtrlWords = static_cast<MPI_Aint>(kRmaSlots) * (kRmaFlagsPerSlot + kDescrWords + 1);

std::size_t slot_size_for(std::size_t bytes) {
  std::size_t s = kRmaMinSlotBytes;
  while (s < bytes) s *= 2;
  return s;
}

Status mpi_failed(const std::string& what, int rc) {
  return Status::error(what + " failed: " + mpi_error_text(rc), rc);
}

// MPI_ERRORS_RETURN on a communicator for as long as it lives (window creation reports its
// errors through the communicator's handler; tnbc's private ones are fatal otherwise).
class ReturnErrors {
 public:
  explicit ReturnErrors(MPI_Comm c) : comm_(c) {
    PMPI_Comm_get_errhandler(comm_, &saved_);
    PMPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~ReturnErrors() {
    PMPI_Comm_set_errhandler(comm_, saved_);
    PMPI_Errhandler_free(&saved_);
  }
  ReturnErrors(const ReturnErrors&) = delete;
  ReturnErrors& operator=(const ReturnErrors&) = delete;

 private:
  MPI_Comm comm_;
  MPI_Errhandler saved_ = MPI_ERRHANDLER_NULL;
};

}  // namespace

class RmaComm {
 public:
  struct DataWin {
    MPI_Win win = MPI_WIN_NULL;
    char* base = nullptr;
    std::size_t slot_bytes = 0;
  };
  PrivateComm* owner = nullptr;
  MPI_Win ctrl = MPI_WIN_NULL;
  std::int64_t* ctrl_base = nullptr;
  std::vector<DataWin> data;  // by window id; the last one is current
  std::string broken;         // why RMA cannot be used on this communicator (same on every rank)
  std::uint64_t next_sequence = 0;
  struct Use {
    int root = -1;
    std::int64_t target = 0;
  };
  Use last_use[kRmaSlots];
  std::vector<std::int64_t> uses;  // per (root, slot): broadcasts so far

  Status ensure(std::size_t bytes, FunctionRef<void()> drain) {
    if (!broken.empty()) return Status::error(broken);
    const bool need_ctrl = ctrl == MPI_WIN_NULL;
    const bool grow = data.empty() || bytes > data.back().slot_bytes;
    if (!need_ctrl && !grow) return {};
    if (grow && !data.empty() && data.back().win != MPI_WIN_NULL) {
      // Every broadcast that used it has finished on this rank (its puts flushed, its awaits
      // copied out), and MPI_Win_free returns on no rank before every rank has come here.
      drain();
      free_data(data.back());
    }
    MPI_Comm comm = owner->comm;
    int ok = 1;
    std::string why;
    MPI_Win new_ctrl = MPI_WIN_NULL, new_data = MPI_WIN_NULL;
    void* ctrl_mem = nullptr;
    void* data_mem = nullptr;
    const std::size_t slot_bytes = grow ? slot_size_for(bytes) : 0;
    {
      ReturnErrors returning(comm);
      if (need_ctrl) {
        const int rc = PMPI_Win_allocate(kCtrlWords * static_cast<MPI_Aint>(sizeof(std::int64_t)), sizeof(std::int64_t),
                                         MPI_INFO_NULL, comm, &ctrl_mem, &new_ctrl);
        if (rc != MPI_SUCCESS) ok = 0, why = "MPI_Win_allocate of the control window failed: " + mpi_error_text(rc);
        else std::memset(ctrl_mem, 0, static_cast<std::size_t>(kCtrlWords) * sizeof(std::int64_t));
      }
      if (grow && ok) {
        const int rc = PMPI_Win_allocate(static_cast<MPI_Aint>(slot_bytes * kRmaSlots), 1, MPI_INFO_NULL, comm, &data_mem,
                                         &new_data);
        if (rc != MPI_SUCCESS)
          ok = 0, why = "MPI_Win_allocate of " + std::to_string(slot_bytes * kRmaSlots) + " bytes failed: " + mpi_error_text(rc);
      }
      int all = 0;
      // Also what keeps any rank from writing into a window before its owner has zeroed it.
      PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
      if (!all && ok) why = "MPI_Win_allocate failed on another rank";
      ok = all;
    }
    if (!ok) {
      broken = "RMA windows for broadcasts on this communicator: " + why;
      return Status::error(broken);
    }
    for (MPI_Win w : {new_ctrl, new_data}) {
      if (w == MPI_WIN_NULL) continue;
      PMPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
      if (const int rc = PMPI_Win_lock_all(MPI_MODE_NOCHECK, w); rc != MPI_SUCCESS) {
        broken = "MPI_Win_lock_all failed: " + mpi_error_text(rc);
        return Status::error(broken);
      }
    }
    if (need_ctrl) ctrl = new_ctrl, ctrl_base = static_cast<std::int64_t*>(ctrl_mem);
    if (grow) data.push_back({new_data, static_cast<char*>(data_mem), slot_bytes});
    return {};
  }

  std::shared_ptr<const RmaCall> begin(int root, std::size_t bytes) {
    auto c = std::make_shared<RmaCall>();
    c->sequence = next_sequence++;
    c->slot = static_cast<int>(c->sequence % kRmaSlots);
    c->root = root;
    c->rank = owner->rank;
    c->size = owner->size;
    c->bytes = bytes;
    c->wid = static_cast<int>(data.size()) - 1;
    c->data = data.back().win;
    c->data_base = data.back().base;
    c->slot_bytes = data.back().slot_bytes;
    c->ctrl = ctrl;
    c->ctrl_base = ctrl_base;
    uses.resize(static_cast<std::size_t>(owner->size) * kRmaSlots);
    Use& last = last_use[c->slot];
    c->prev_root = last.root;
    c->prev_target = last.target;
    const std::int64_t n = ++uses[static_cast<std::size_t>(root) * kRmaSlots + static_cast<std::size_t>(c->slot)];
    c->target = n * (owner->size - 1);
    last = {root, c->target};
    return c;
  }

  static void free_data(DataWin& d) {
    if (d.win == MPI_WIN_NULL) return;
    PMPI_Win_unlock_all(d.win);
    PMPI_Win_free(&d.win);
    d.base = nullptr;
  }

  void free_windows() {
    for (DataWin& d : data) free_data(d);
    data.clear();
    if (ctrl != MPI_WIN_NULL) {
      PMPI_Win_unlock_all(ctrl);
      PMPI_Win_free(&ctrl);
    }
  }
};

namespace {
std::mutex g_rma_mutex;
std::vector<RmaComm*> g_rma_comms;  // creation order (= the order of the collective creations)
}  // namespace

Status rma_ensure(PrivateComm& pc, std::size_t bytes, FunctionRef<void()> drain) {
  if (!pc.rma) {
    pc.rma = new RmaComm();
    pc.rma->owner = &pc;
    std::lock_guard lock(g_rma_mutex);
    g_rma_comms.push_back(pc.rma);
  }
  return pc.rma->ensure(bytes, drain);
}

std::shared_ptr<const RmaCall> rma_begin(PrivateComm& pc, int root, std::size_t bytes) {
  return pc.rma->begin(root, bytes);
}

void rma_release(PrivateComm& pc) {
  if (!pc.rma) return;
  {
    std::lock_guard lock(g_rma_mutex);
    std::erase(g_rma_comms, pc.rma);
  }
  pc.rma->free_windows();
  delete pc.rma;
  pc.rma = nullptr;
}

void rma_release_all() {
  std::vector<RmaComm*> all;
  {
    std::lock_guard lock(g_rma_mutex);
    all.swap(g_rma_comms);
  }
  for (RmaComm* r : all) {
    r->free_windows();
    r->owner->rma = nullptr;
    delete r;
  }
}

// ---------------------------------------------------------------- the transport
namespace {

// Named apart from p2p_transport.cc's step_error: in a unity build (the MPICH build's) both share
// one translation unit, where the calls here with a string literal went to that one.
Status rma_step_error(const InFlight& f, int i, const std::string& what, int rc) {
  const Step& s = f.schedule[static_cast<std::size_t>(i)];
  return Status::error(what + " (" + step_kind_name(s.kind) + " of " + std::to_string(s.length) + " bytes, rank " +
                           std::to_string(s.peer) + ", " + kind_name(f.kind) + " #" + std::to_string(f.sequence) +
                           ") failed: " + mpi_error_text(rc),
                       rc);
}

// Lets the MPI library progress everything it has, not only this thread's one-sided state:
// Open MPI's osc ucx gives each thread its own UCX worker, and where UCX emulates RMA in software
// (its TCP transport) the puts of other ranks land on the window's default worker, which only
// opal_progress() drives; a Fetch_and_op on the progress thread's own worker never does, so
// without this a rank whose calling thread is outside MPI (returned early, reading) never
// receives (measured: hangs over netrun.py --pml ucx). An MPI_Iprobe that matches nothing
// calls opal_progress (ob1 and ucx alike) and receives nothing.
void progress_library() {
  int flag = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
}

Result<std::int64_t> read_word(const RmaCall& r, int target, MPI_Aint disp) {
  std::int64_t v = 0;
  if (int rc = PMPI_Fetch_and_op(nullptr, &v, MPI_INT64_T, target, disp, MPI_NO_OP, r.ctrl); rc != MPI_SUCCESS)
    return mpi_failed("MPI_Fetch_and_op", rc);
  if (int rc = PMPI_Win_flush(target, r.ctrl); rc != MPI_SUCCESS) return mpi_failed("MPI_Win_flush", rc);
  return v;
}

class RmaTransport final : public Transport {
 public:
  bool carries(StepKind k) const override { return k == StepKind::Put || k == StepKind::Flag || k == StepKind::Await; }

  Status start(InFlight& f, int i) override {
    const Step& s = f.schedule[static_cast<std::size_t>(i)];
    if (!f.rma) return Status::error(std::string("internal error: an RMA step in ") + kind_name(f.kind) + " without windows");
    const RmaCall& r = *f.rma;
    switch (s.kind) {
      case StepKind::Put: {
        if (s.length == 0) {
          ready_.push_back({&f, i, MPI_REQUEST_NULL, false});
          return {};
        }
        if (s.length > static_cast<std::size_t>(INT_MAX))
          return rma_step_error(f, i, "MPI_Rput of more than INT_MAX bytes", MPI_ERR_COUNT);
        const std::size_t at = static_cast<std::size_t>(r.slot) * r.slot_bytes + s.offset;
        const char* src = r.rank == r.root ? f.send_data + s.offset : r.data_base + at;
        MPI_Request req = MPI_REQUEST_NULL;
        const int n = static_cast<int>(s.length);
        if (int rc = PMPI_Rput(src, n, MPI_BYTE, s.peer, static_cast<MPI_Aint>(at), n, MPI_BYTE, r.data, &req);
            rc != MPI_SUCCESS)
          return rma_step_error(f, i, "MPI_Rput", rc);
        puts_.push_back({&f, i, req, false});
        return {};
      }
      case StepKind::Flag: {
        if (Status st = raise(f, i, r, s); !st.ok()) return st;
        ready_.push_back({&f, i, MPI_REQUEST_NULL, false});
        return {};
      }
      case StepKind::Await: waits_.push_back({&f, i, MPI_REQUEST_NULL, false}); return {};
      default: return Status::error("internal error: the RMA transport got a " + std::string(step_kind_name(s.kind)) + " step");
    }
  }

  Status poll(Completions& done) override {
    if (ready_.empty() && puts_.empty() && waits_.empty()) return {};
    if (!puts_.empty() || !waits_.empty()) progress_library();
    const long long now = futex::now_ns();
    for (const Started& s : ready_) done.completed(*s.f, s.step, false, now);
    ready_.clear();
    Status first;
    std::erase_if(puts_, [&](Started& p) {
      if (!first.ok()) return false;
      int complete = 0;
      if (int rc = PMPI_Test(&p.request, &complete, MPI_STATUS_IGNORE); rc != MPI_SUCCESS) {
        first = rma_step_error(*p.f, p.step, "MPI_Test of an MPI_Rput", rc);
        return false;
      }
      if (!complete) return false;
      const Step& s = p.f->schedule[static_cast<std::size_t>(p.step)];
      if (int rc = PMPI_Win_flush(s.peer, p.f->rma->data); rc != MPI_SUCCESS) {
        first = rma_step_error(*p.f, p.step, "MPI_Win_flush", rc);
        return false;
      }
      done.completed(*p.f, p.step, false, futex::now_ns());
      return true;
    });
    if (!first.ok()) return first;
    std::erase_if(waits_, [&](Started& w) {
      if (!first.ok()) return false;
      Result<bool> in = arrived(*w.f, w.step);
      if (!in.ok()) {
        first = in.status();
        return false;
      }
      if (!in.value()) return false;
      done.completed(*w.f, w.step, false, futex::now_ns());
      return true;
    });
    return first;
  }

  std::size_t busy() const override { return ready_.size() + puts_.size() + waits_.size(); }

  std::vector<Started> release() override {
    std::vector<Started> out;
    for (auto* v : {&ready_, &puts_, &waits_}) {
      out.insert(out.end(), v->begin(), v->end());
      v->clear();
    }
    return out;
  }

  void adopt(const Started& s) override {
    const StepKind k = s.f->schedule[static_cast<std::size_t>(s.step)].kind;
    if (k == StepKind::Put && s.request != MPI_REQUEST_NULL) puts_.push_back(s);
    else if (k == StepKind::Await) waits_.push_back(s);
    else ready_.push_back(s);
  }

 private:
  // Flag: the description with chunk 0, then the flag, each flushed (the flag is seen after
  // the data, which its Put flushed, and after the description).
  static Status raise(InFlight& f, int i, const RmaCall& r, const Step& s) {
    if (s.tag_offset == kDoneCounter) {
      const std::int64_t one = 1;
      if (int rc = PMPI_Accumulate(&one, 1, MPI_INT64_T, s.peer, done_disp(r.slot), 1, MPI_INT64_T, MPI_SUM, r.ctrl);
          rc != MPI_SUCCESS)
        return rma_step_error(f, i, "MPI_Accumulate on the root's done counter", rc);
      if (int rc = PMPI_Win_flush(s.peer, r.ctrl); rc != MPI_SUCCESS) return rma_step_error(f, i, "MPI_Win_flush", rc);
      return {};
    }
    const std::int64_t raised = static_cast<std::int64_t>(r.sequence) + 1;
    if (s.tag_offset == 0) {
      const std::int64_t d[kDescrWords] = {r.root, r.wid, static_cast<std::int64_t>(r.bytes), raised};
      if (int rc = PMPI_Put(d, kDescrWords, MPI_INT64_T, s.peer, descr_disp(r.slot), kDescrWords, MPI_INT64_T, r.ctrl);
          rc != MPI_SUCCESS)
        return rma_step_error(f, i, "MPI_Put of the description", rc);
      if (int rc = PMPI_Win_flush(s.peer, r.ctrl); rc != MPI_SUCCESS) return rma_step_error(f, i, "MPI_Win_flush", rc);
    }
    if (int rc = PMPI_Accumulate(&raised, 1, MPI_INT64_T, s.peer, flag_disp(r.slot, s.tag_offset), 1, MPI_INT64_T,
                                 MPI_REPLACE, r.ctrl);
        rc != MPI_SUCCESS)
      return rma_step_error(f, i, "MPI_Accumulate on a request flag", rc);
    if (int rc = PMPI_Win_flush(s.peer, r.ctrl); rc != MPI_SUCCESS) return rma_step_error(f, i, "MPI_Win_flush", rc);
    return {};
  }

  // Await: whether its flag or counter is up; a chunk is then copied into the receive area.
  static Result<bool> arrived(InFlight& f, int i) {
    const Step& s = f.schedule[static_cast<std::size_t>(i)];
    const RmaCall& r = *f.rma;
    if (s.tag_offset == kSlotFree) {
      if (r.prev_root < 0) return true;
      Result<std::int64_t> v = read_word(r, r.prev_root, done_disp(r.slot));
      if (!v.ok()) return Status(v.status()).with_context("reading the done counter of rank " + std::to_string(r.prev_root));
      return v.value() >= r.prev_target;
    }
    if (s.tag_offset == kAllDone) {
      Result<std::int64_t> v = read_word(r, r.rank, done_disp(r.slot));
      if (!v.ok()) return Status(v.status()).with_context("reading this rank's done counter");
      return v.value() >= r.target;
    }
    const std::int64_t raised = static_cast<std::int64_t>(r.sequence) + 1;
    Result<std::int64_t> v = read_word(r, r.rank, flag_disp(r.slot, s.tag_offset));
    if (!v.ok()) return Status(v.status()).with_context("reading a request flag");
    if (v.value() != raised) return false;
    PMPI_Win_sync(r.ctrl);
    PMPI_Win_sync(r.data);
    if (s.tag_offset == 0) {
      const std::int64_t* d = r.ctrl_base + descr_disp(r.slot);
      if (d[0] != r.root || d[1] != r.wid || d[2] != static_cast<std::int64_t>(r.bytes) || d[3] != raised)
        return Status::error("RMA broadcast #" + std::to_string(r.sequence) + ": rank " + std::to_string(s.peer) +
                             " put a broadcast of " + std::to_string(d[2]) + " bytes from root " + std::to_string(d[0]) +
                             " (window " + std::to_string(d[1]) + "), but this rank called MPI_Bcast with " +
                             std::to_string(r.bytes) + " bytes from root " + std::to_string(r.root) +
                             ": the ranks called MPI_Bcast differently");
    }
    if (s.length > 0)
      std::memcpy(f.recv_data + s.offset, r.data_base + static_cast<std::size_t>(r.slot) * r.slot_bytes + s.offset, s.length);
    return true;
  }

  std::vector<Started> ready_;  // done when started (flags, empty puts): reported at the next poll
  std::vector<Started> puts_;   // MPI_Rput requests not yet locally complete
  std::vector<Started> waits_;  // Await steps
};

}  // namespace

std::unique_ptr<Transport> make_rma_transport() { return std::make_unique<RmaTransport>(); }

// ---------------------------------------------------------------- the start-up probe
namespace {
// Timings per figure and rank: the probe's figures are the median over every rank's samples.
// (They were the slowest rank's median of five: on an oversubscribed node one descheduled rank
// set a figure, which moved from run to run by 10-100x (np 4: L 0 or 253 us, np 8: o 1.3 ms for a
// local atomic), and auto's choice with it; docs/benchmarks.md, "RMA broadcast".)
constexpr int kProbeSamples = 7;

// kProbeSamples timings of `op` (seconds). `op` returns false when an MPI call failed: the
// timing stops after that one (the probe then fails: the samples are not used).
template <class Op>
std::vector<double> timings(Op op) {
  std::vector<double> t;
  for (int k = 0; k < kProbeSamples; ++k) {
    const long long s = futex::now_ns();
    const bool fine = op();
    t.push_back((futex::now_ns() - s) * 1e-9);
    if (!fine) break;
  }
  t.resize(kProbeSamples, t.back());
  return t;
}

// Per figure, the median of all ranks' samples (the same on every rank: collective over `comm`).
template <std::size_t N>
std::array<double, N> pooled_medians(const std::array<std::vector<double>, N>& mine, MPI_Comm comm, int size) {
  std::vector<double> local;
  for (const auto& t : mine) local.insert(local.end(), t.begin(), t.end());
  std::vector<double> all(local.size() * static_cast<std::size_t>(size));
  PMPI_Allgather(local.data(), static_cast<int>(local.size()), MPI_DOUBLE, all.data(), static_cast<int>(local.size()),
                 MPI_DOUBLE, comm);
  std::array<double, N> out{};
  for (std::size_t f = 0; f < N; ++f) {
    std::vector<double> v;
    for (int r = 0; r < size; ++r)
      for (int k = 0; k < kProbeSamples; ++k)
        v.push_back(all[(static_cast<std::size_t>(r) * N + f) * kProbeSamples + static_cast<std::size_t>(k)]);
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    out[f] = v[v.size() / 2];
  }
  return out;
}
}  // namespace

namespace {
// This process's osc/rdma backing directory (rma_before_init).
struct BackingDir {
  std::string dir;      // made here, removed after MPI_Finalize ("": none)
  std::string problem;  // why this process's windows could collide ("": they cannot)
  bool restore = false;
  std::string saved;  // the variable's value before (restore: it was set)
};
BackingDir& backing() {
  static BackingDir b;
  return b;
}
constexpr const char* kOscBackingVar = "OMPI_MCA_osc_rdma_backing_directory";
}  // namespace

void rma_before_init() {
  BackingDir& b = backing();
  if (model::mpi_library_version().find("Open MPI") == std::string::npos) return;
  const char* set = std::getenv(kOscBackingVar);
  std::string base;
  if (set != nullptr && *set != '\0') {
    b.restore = true;
    b.saved = set;
    base = set;
  } else if (::access("/dev/shm", W_OK) == 0) {
    base = "/dev/shm";
  } else {
    return;  // Open MPI's default is then the process's own session directory: unique already
  }
  std::string dir = base + "/tnbc-osc.XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    b.problem = "cannot make this process's one-sided backing directory in " + base + " (" + std::strerror(errno) +
                "), without which Open MPI's windows of disjoint communicators can share memory (docs/limitations.md)";
    return;
  }
  b.dir = dir;
  ::setenv(kOscBackingVar, b.dir.c_str(), 1);
}

void rma_after_init() {
  const BackingDir& b = backing();
  if (b.dir.empty()) return;
  if (b.restore) ::setenv(kOscBackingVar, b.saved.c_str(), 1);
  else ::unsetenv(kOscBackingVar);
}

void rma_after_finalize() {
  BackingDir& b = backing();
  if (!b.dir.empty()) ::rmdir(b.dir.c_str());
  b.dir.clear();
}

RmaFacts rma_probe(MPI_Comm comm, std::size_t page, double poll_floor_s, long long timeout_ns, std::string& problem) {
  RmaFacts facts;
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  // The per-byte costs are fitted between kMidPages and kPages pages: over smaller sizes a put
  // is a copy between caches and its fixed costs hide the bytes (session 2's fit over 1-64
  // pages gave a put G 3-10x below what broadcasts of 1-8 MiB cost per byte).
  constexpr int kPages = 1024, kMidPages = 16;
  const MPI_Aint flag_bytes = 64;
  int ok = 1;
  MPI_Win win = MPI_WIN_NULL;
  void* mem = nullptr;
  // Every rank's windows must have unique backing files (rma_before_init) before any is made.
  int ready = backing().problem.empty() ? 1 : 0, all_ready = 0;
  PMPI_Allreduce(&ready, &all_ready, 1, MPI_INT, MPI_MIN, comm);
  if (!all_ready) {
    problem = ready ? "another rank has no one-sided backing directory of its own" : backing().problem;
    return facts;
  }
  {
    ReturnErrors returning(comm);
    const int rc = PMPI_Win_allocate(flag_bytes + static_cast<MPI_Aint>(page * kPages), 1, MPI_INFO_NULL, comm, &mem, &win);
    if (rc != MPI_SUCCESS) ok = 0, problem = "MPI_Win_allocate failed: " + mpi_error_text(rc);
    else std::memset(mem, 0, static_cast<std::size_t>(flag_bytes));
    int all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all && ok) problem = "MPI_Win_allocate failed on another rank";
    ok = all;
  }
  if (!ok) return facts;
  PMPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  const int right = (rank + 1) % size;
  const std::vector<double> none(kProbeSamples, 0.0);
  std::vector<double> t_flag = none, t_poll = none, t_mid = none, t_large = none, m_small, m_mid, m_large, c_mid, c_large;
  std::vector<char> out(page * kPages), in(page * kPages);
  {
    // Point-to-point for comparison: a message of 1, kMidPages and kPages pages to the right, from the left.
    const int left = (rank + size - 1) % size;
    auto message_time = [&](std::size_t bytes) {
      return timings([&] {
        PMPI_Sendrecv(out.data(), static_cast<int>(bytes), MPI_BYTE, right, 0, in.data(), static_cast<int>(bytes),
                      MPI_BYTE, left, 0, comm, MPI_STATUS_IGNORE);
        return true;
      });
    };
    m_small = message_time(page);
    m_mid = message_time(page * kMidPages);
    m_large = message_time(page * kPages);
  }
  if (PMPI_Win_lock_all(MPI_MODE_NOCHECK, win) != MPI_SUCCESS) {
    ok = 0;
    problem = "MPI_Win_lock_all failed";
  } else {
    // Passive-target progress: the left neighbour's flag must show up while this rank only polls.
    const std::int64_t one = 1;
    if (PMPI_Accumulate(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, MPI_REPLACE, win) != MPI_SUCCESS ||
        PMPI_Win_flush(right, win) != MPI_SUCCESS) {
      ok = 0;
      problem = "MPI_Accumulate with MPI_Win_flush failed";
    }
    const long long deadline = futex::now_ns() + std::min<long long>(timeout_ns, 5'000'000'000LL);
    std::int64_t seen = 0;
    while (ok && seen == 0) {
      progress_library();  // as the transport's poll does
      if (PMPI_Fetch_and_op(nullptr, &seen, MPI_INT64_T, rank, 0, MPI_NO_OP, win) != MPI_SUCCESS ||
          PMPI_Win_flush(rank, win) != MPI_SUCCESS) {
        ok = 0;
        problem = "MPI_Fetch_and_op failed";
      }
      if (seen == 0 && futex::now_ns() > deadline) {
        ok = 0;
        problem = "a flag raised by another rank with MPI_Accumulate and MPI_Win_flush was not seen within 5 s (no "
                  "passive-target progress)";
      }
    }
    // One poll's cost, timed apart: the mean over the wait above holds the time
    // the rank was descheduled on an oversubscribed node (session 2's np 4 and 8 probes: 223 and
    // 333 us per "poll", which made auto rule RMA out where it was as fast as p2p).
    if (ok)
      t_poll = timings([&] {
        progress_library();
        if (PMPI_Fetch_and_op(nullptr, &seen, MPI_INT64_T, rank, 0, MPI_NO_OP, win) == MPI_SUCCESS &&
            PMPI_Win_flush(rank, win) == MPI_SUCCESS)
          return true;
        ok = 0;
        problem = "MPI_Fetch_and_op failed";
        return false;
      });
    // The flag's cost, timed after the check (the first operation to a peer may open its
    // connection).
    if (ok)
      t_flag = timings([&] {
        if (PMPI_Accumulate(&one, 1, MPI_INT64_T, right, 0, 1, MPI_INT64_T, MPI_REPLACE, win) == MPI_SUCCESS &&
            PMPI_Win_flush(right, win) == MPI_SUCCESS)
          return true;
        ok = 0;
        problem = "MPI_Accumulate with MPI_Win_flush failed";
        return false;
      });
    // Puts of kMidPages and kPages pages to the right: the per-byte gap.
    auto put_time = [&](std::size_t bytes) {
      if (!ok) return none;
      return timings([&] {
        if (PMPI_Put(static_cast<char*>(mem) + flag_bytes, static_cast<int>(bytes), MPI_BYTE, right, flag_bytes,
                     static_cast<int>(bytes), MPI_BYTE, win) == MPI_SUCCESS &&
            PMPI_Win_flush(right, win) == MPI_SUCCESS)
          return true;
        ok = 0;
        problem = "MPI_Put with MPI_Win_flush failed";
        return false;
      });
    };
    t_mid = put_time(page * kMidPages);
    t_large = put_time(page * kPages);
    // What a target then does with a chunk: copy it out of the data window.
    auto copy_time = [&](std::size_t bytes) {
      return timings([&] {
        std::memcpy(out.data(), static_cast<char*>(mem) + flag_bytes, bytes);
        return true;
      });
    };
    c_mid = copy_time(page * kMidPages);
    c_large = copy_time(page * kPages);
    PMPI_Win_unlock_all(win);
  }
  PMPI_Win_free(&win);
  int all = 0;
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  if (!all && ok) problem = "the check failed on another rank";
  if (!all) return facts;
  // The median over every rank's samples, so that every rank has the same figures.
  const std::array<double, 9> fig = pooled_medians<9>(
      {t_flag, t_poll, t_mid, t_large, m_small, m_large, m_mid, c_mid, c_large}, comm, size);
  facts.usable = true;
  LogGP& c = facts.costs;
  const auto fitted = static_cast<double>(page * (kPages - kMidPages));
  c.G = std::max(0.0, (fig[3] - fig[2]) / fitted);
  c.C = std::max(0.0, (fig[8] - fig[7]) / fitted);
  c.o = c.g = fig[1];  // one local atomic with its flush: the cost of issuing an operation
  c.L = std::max(0.0, fig[0] - 2 * c.o);
  c.O_r = fig[1] + poll_floor_s;
  // A message stage costs t(m) = L + (m-1)G with o folded into L (2o + L measured together).
  LogGP& m = facts.p2p;
  m.G = std::max(0.0, (fig[5] - fig[6]) / fitted);
  // A put's bytes cost at least a message's between the same ranks at the same sizes: the
  // flushed put reads a source the probe just wrote (in cache) and measured 0.04 ns/B on shared
  // memory at np 2, while RMA broadcasts there cost 0.8 ns/B more per byte and lost 2.4-3.2x to
  // p2p (docs/benchmarks.md, "RMA broadcast", session 3); the messages' figure (0.24 ns/B) is
  // the closer bound.
  c.G = std::max(c.G, m.G);
  m.L = std::max(0.0, fig[4] - m.G * static_cast<double>(page - 1));
  return facts;
}

}  // namespace tnbc
