#include "runtime/model/measure.hh"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "runtime/bulk_copy.hh"
#include "runtime/cpu_cache.hh"
#include "runtime/futex.hh"
#include "runtime/guard_backend.hh"
#include "runtime/pool.hh"
#include "runtime/return_wait.hh"
#include "runtime/sched_slice.hh"

namespace tnbc::model {

namespace {
double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void sleep_for(long long ns) {
  if (ns <= 0) return;
  const struct timespec ts{static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
  nanosleep(&ts, nullptr);
}
}  // namespace

double median_ns(FunctionRef<bool()> once, FunctionRef<void()> before, int reps) {
  before();
  if (!once()) return -1;
  std::vector<double> t;
  for (int i = 0; i < std::max(1, reps); ++i) {
    before();
    const long long start = futex::now_ns();
    if (!once()) return -1;
    t.push_back(static_cast<double>(futex::now_ns() - start));
  }
  return median(std::move(t));
}

double median_ns(FunctionRef<bool()> once, int reps) {
  return median_ns(once, [] {}, reps);
}

double thread_cpu_ns() {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

int allowed_cpu(int nth, cpu_set_t* allowed) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  if (allowed) *allowed = set;
  if (nth >= CPU_COUNT(&set)) nth = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set) && nth-- == 0) return cpu;
  return -1;
}

cpu_set_t only_cpu(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return one;
}

Computation::Computation() : work_(256 * 1024 / sizeof(std::uint64_t), 1) {}

double Computation::run(long passes) {
  const long long t0 = futex::now_ns();
  std::uint64_t acc = 0;
  for (long p = 0; p < passes; ++p)
    for (std::uint64_t& w : work_) acc += (w = w * 6364136223846793005ull + 1442695040888963407ull) >> 33;
  const long long took = futex::now_ns() - t0;
  sink_.fetch_add(acc, std::memory_order_relaxed);
  return static_cast<double>(took);
}

Scratch::Scratch(std::size_t bytes) : len(bytes) {
  void* p = ::mmap(nullptr, 2 * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  user = static_cast<char*>(p);
  staging = user + len;
  std::memset(user, 1, 2 * len);  // populated, like a buffer the program has used
}

Scratch::~Scratch() {
  if (user) ::munmap(user, 2 * len);
}

Line memcpy_line(Scratch& s, const std::vector<std::size_t>& sizes, int reps) {
  std::vector<double> x, y;
  for (std::size_t b : sizes) {
    if (b > s.len) continue;
    x.push_back(static_cast<double>(b));
    y.push_back(median_ns([&] {
      std::memcpy(s.staging, s.user, b);
      return true;
    }, reps));
  }
  return fit(x, y);
}

Line memcpy_cold_line(Scratch& s, const std::vector<std::size_t>& sizes, int reps, bool staging) {
  std::vector<double> x, y;
  for (std::size_t b : sizes) {
    if (b > s.len) continue;
    void* fresh = MAP_FAILED;
    auto unmap = [&] {
      if (fresh != MAP_FAILED) ::munmap(fresh, b);
      fresh = MAP_FAILED;
    };
    const double t = median_ns([&] {
      if (fresh == MAP_FAILED) return false;
      std::memcpy(fresh, s.user, b);
      return true;
    }, [&] {
      unmap();
      if (!staging) fresh = ::mmap(nullptr, b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      else if (char* p = map_staging(b)) fresh = p;
    }, reps);
    unmap();
    if (t < 0) continue;
    x.push_back(static_cast<double>(b));
    y.push_back(t);
  }
  return fit(x, y);
}

std::size_t last_level_cache_bytes() { return last_level_cache_for_sizing(cache_bytes(3), cache_size_from_kernel(3)); }

std::string last_level_cache_note() {
  const std::size_t llc = cache_bytes(3), used = last_level_cache_bytes();
  if (llc <= used) return "";
  return "the kernel does not describe this CPU's caches and sysconf puts its last-level cache at " +
         std::to_string(llc >> 20) + " MiB (a whole socket's?): the caches are emptied as if it held " +
         std::to_string(used >> 20) + " MiB (--cache-bytes SIZE sets it)";
}

std::size_t uncached_copy_bytes(std::size_t largest, int ranks, std::size_t llc) {
  return std::max(3 * llc / static_cast<std::size_t>(std::max(1, ranks)), 4 * largest);
}

double uncached_copy_ns(Scratch& s, std::size_t& cursor, std::size_t bytes, FunctionRef<void()> before, int reps) {
  if (!s.user || bytes == 0 || bytes > s.len) return -1;
  const std::size_t step = (bytes + 4095) / 4096 * 4096;
  const bool stream = streams(bytes);
  std::size_t at = 0;
  return median_ns([&] {
    bulk_copy(s.staging + at, s.user + at, bytes, stream);
    return true;
  }, [&] {
    before();
    // The cursor is shared by every size: one a smaller copy left may not leave room for this one.
    if (cursor + bytes > s.len) cursor = 0;
    at = cursor;
    cursor += step;
  }, reps);
}

namespace {

// The accesses around a guard's cycle in a run: the MPI library's receive writes the staging
// between hold and publish, then the reader reads each page of the buffer. Each returns its time, ns.
double read_pages(const char* p, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const long long t0 = futex::now_ns();
  unsigned sum = 0;
  for (std::size_t i = 0; i < bytes; i += page) sum += static_cast<unsigned char>(p[i]);
  const long long t1 = futex::now_ns();
  static std::atomic<unsigned> sink;  // the reads must happen
  sink.store(sum, std::memory_order_relaxed);
  return static_cast<double>(t1 - t0);
}

double write_pages(char* p, std::size_t bytes) {
  const long long t0 = futex::now_ns();
  std::memset(p, 1, bytes);
  return static_cast<double>(futex::now_ns() - t0);
}

}  // namespace

bool guard_lines(GuardBackend& b, Scratch& s, const std::vector<std::size_t>& sizes, int reps, FunctionRef<void()> before,
                 Line& hold, Line& publish, Line& first_read) {
  std::vector<double> x, h, p, r;
  for (std::size_t bytes : sizes) {
    if (bytes > s.len) continue;
    std::vector<double> th, tp, tr, resident_written, resident_read;
    GuardBackend::CycleTimes t;
    double written = 0;
    auto receive = [&] { written = write_pages(s.staging, bytes); };
    if (!b.cycle(s.user, s.staging, bytes, t, receive)) return false;  // warm-up
    // The same accesses to pages left in place: what a run pays for them without a guard.
    for (int i = 0; i < std::max(1, reps); ++i) {
      before();
      resident_written.push_back(write_pages(s.staging, bytes));
      resident_read.push_back(read_pages(s.user, bytes));
    }
    const double plain_written = median(resident_written), plain_read = median(resident_read);
    for (int i = 0; i < std::max(1, reps); ++i) {
      before();
      if (!b.cycle(s.user, s.staging, bytes, t, receive)) return false;
      const double read = read_pages(s.user, bytes);
      th.push_back(t.hold_ns);
      // What the accesses around the cycle pay beyond resident pages' (pages just moved,
      // unprotected or filled by the kernel: their mappings changed): the staging's write goes
      // with the publication (the progress thread's receive), the reader's first read of each page
      // is the reader's (first_read). Measured on a guest whose page-table updates are dear
      // (session 55): after UFFDIO_MOVE the first write to a page cost ~3.6 us and the first read
      // of a page moved back ~3.7 us, where the two moves took 0.25 ms at 1 MiB and the copy of
      // resident pages 0.02 ms: that was most of publishing by moving, and neither phase's own
      // time showed it (docs/benchmarks.md, "Session 55"). Until session 57 the read was priced
      // with the publication, on the progress thread: a reader reading after the transfer paid it
      // unpriced (~5 ms at 4 MiB on the Firecracker guest; "Session 57").
      tp.push_back(t.publish_ns + std::max(0.0, written - plain_written));
      tr.push_back(std::max(0.0, read - plain_read));
    }
    x.push_back(static_cast<double>(bytes));
    h.push_back(median(th));
    p.push_back(median(tp));
    r.push_back(median(tr));
  }
  hold = fit_through(x, h);  // one run of regions per size: the points price a hold of that size
  // Per region and per byte (estimators count the regions), through the sizes measured: the
  // cost per byte differs with the size where pages are freed and allocated (calibrate's 32 MiB).
  publish = fit_through(x, p);
  first_read = fit_through(x, r);
  return !x.empty();
}

double polled_exchange(MPI_Comm comm, int to, int from, int tag, char* send, char* recv, std::size_t bytes,
                       long long poll_ns, long long poll_max_ns, double idle_test_ns, double& cpu_ns) {
  double c0 = thread_cpu_ns();
  const long long t0 = futex::now_ns();
  MPI_Request req[2];
  PMPI_Irecv(recv, static_cast<int>(bytes), MPI_BYTE, from, tag, comm, &req[0]);
  PMPI_Isend(send, static_cast<int>(bytes), MPI_BYTE, to, tag, comm, &req[1]);
  double busy = thread_cpu_ns() - c0;
  int idle = 0;
  long long sleep_ns = poll_ns;
  for (int done = 0; !done;) {
    c0 = thread_cpu_ns();
    PMPI_Testall(2, req, &done, MPI_STATUSES_IGNORE);
    busy += thread_cpu_ns() - c0;
    if (!done) {
      ++idle;
      sleep_for(sleep_ns);
      sleep_ns = std::min(poll_max_ns, std::max(sleep_ns * 2, 1000LL));
    }
  }
  cpu_ns = std::max(0.0, busy - idle * idle_test_ns);
  return static_cast<double>(futex::now_ns() - t0);
}

void sleeping_barrier(MPI_Comm comm, long long poll_ns) {
  MPI_Request r = MPI_REQUEST_NULL;
  if (PMPI_Ibarrier(comm, &r) != MPI_SUCCESS) return;
  for (int done = 0; !done;) {
    if (PMPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
    if (!done) sleep_for(std::max(poll_ns, 1000LL));
  }
}

double idle_test_cpu_ns(MPI_Comm comm, int tag, int pending, long long poll_ns, int polls, int rounds) {
  std::vector<MPI_Request> req(static_cast<std::size_t>(std::max(1, pending)));
  std::vector<char> buf(req.size());
  for (std::size_t i = 0; i < req.size(); ++i) PMPI_Irecv(&buf[i], 1, MPI_BYTE, MPI_ANY_SOURCE, tag, comm, &req[i]);
  std::vector<double> per_test;
  for (int r = 0; r <= std::max(1, rounds); ++r) {
    double cpu = 0;
    for (int i = 0; i < std::max(1, polls); ++i) {
      sleep_for(poll_ns);
      int done = 0;
      const double c0 = thread_cpu_ns();
      PMPI_Testall(static_cast<int>(req.size()), req.data(), &done, MPI_STATUSES_IGNORE);
      cpu += thread_cpu_ns() - c0;
    }
    if (r > 0) per_test.push_back(cpu / std::max(1, polls));  // round 0: warm-up
  }
  for (MPI_Request& q : req) {
    PMPI_Cancel(&q);
    PMPI_Wait(&q, MPI_STATUS_IGNORE);
  }
  return median(std::move(per_test));
}

double testsome_ns(MPI_Comm comm, int tag, int pending) {
  std::vector<MPI_Request> req(static_cast<std::size_t>(std::max(1, pending)));
  std::vector<char> buf(req.size());
  for (std::size_t i = 0; i < req.size(); ++i) PMPI_Irecv(&buf[i], 1, MPI_BYTE, MPI_ANY_SOURCE, tag, comm, &req[i]);
  std::vector<int> idx(req.size());
  const double t = median_ns([&] {
    int count = 0;
    PMPI_Testsome(static_cast<int>(req.size()), req.data(), &count, idx.data(), MPI_STATUSES_IGNORE);
    return true;
  }, 50);
  for (MPI_Request& r : req) {
    PMPI_Cancel(&r);
    PMPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  return t;
}

double sleep_ns(long long ns) {
  return median_ns([&] {
    sleep_for(ns);
    return true;
  }, 5);
}

double loaded_wake_ns(long long ns) {
  const int cpu = allowed_cpu(0);
  if (cpu < 0) return -1;
  const cpu_set_t one = only_cpu(cpu);
  constexpr int kReps = 21;
  std::atomic<bool> stop{false}, spinning{false}, placed{true};
  double idle = -1, loaded = -1;
  std::thread sleeper([&] {
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) {
      placed = false;
      return;
    }
    request_short_slice(kShortSliceNs);
    idle = sleep_ns(ns);
    std::thread busy([&] {
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) placed = false;
      spinning = true;
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
    while (!spinning.load()) sched_yield();
    if (placed) loaded = median_ns([&] {
        sleep_for(ns);
        return true;
      }, kReps);
    stop = true;
    busy.join();
  });
  sleeper.join();
  if (!placed || idle < 0 || loaded < 0) return -1;
  return std::max(0.0, loaded - idle);
}

Handover handover(int reps, FunctionRef<void()> before) {
  std::atomic<std::uint32_t> wake{0};
  std::atomic<bool> returned{true}, stop{false};
  std::atomic<long long> looked{0};  // when the thread last ended its wait for the return
  std::thread progress([&] {
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int k = 0; k < CPU_SETSIZE; ++k) CPU_SET(k, &all);  // the kernel keeps the cpuset's
    pthread_setaffinity_np(pthread_self(), sizeof all, &all);
    request_short_slice(kShortSliceNs);
    std::uint32_t seen = 0;
    while (!stop.load(std::memory_order_acquire)) {
      futex::wait(wake, seen, -1);
      seen = wake.load(std::memory_order_acquire);
      const long long start = futex::now_ns();
      while (!returned.load(std::memory_order_acquire) && futex::now_ns() - start <= kReturnWaitNs) {
        struct timespec ts{0, kReturnLookNs};
        nanosleep(&ts, nullptr);
      }
      looked.store(futex::now_ns(), std::memory_order_release);  // its first round would start here
    }
  });
  std::vector<double> pokes, rounds;
  for (int i = 0; i <= std::max(1, reps); ++i) {  // the first: a warm-up
    returned.store(true, std::memory_order_release);  // the previous call has returned
    before();
    sleep_for(1000000);  // the thread asleep again, as between two calls
    returned.store(false, std::memory_order_release);
    looked.store(0, std::memory_order_release);
    const long long t0 = futex::now_ns();
    wake.fetch_add(1, std::memory_order_release);  // as Urgency::poke
    futex::wake_all(wake);
    const long long t1 = futex::now_ns();
    returned.store(true, std::memory_order_release);  // the call returns; the program computes on
    long long at = 0;
    while ((at = looked.load(std::memory_order_acquire)) == 0 && futex::now_ns() - t1 <= 2 * kReturnWaitNs) {
    }
    if (i == 0) continue;
    pokes.push_back(static_cast<double>(t1 - t0));
    if (at > 0) rounds.push_back(static_cast<double>(std::max(0LL, at - t1)));
  }
  returned.store(true, std::memory_order_release);
  stop.store(true, std::memory_order_release);
  wake.fetch_add(1, std::memory_order_release);
  futex::wake_all(wake);
  progress.join();
  return {median(std::move(pokes)), rounds.empty() ? -1 : median(std::move(rounds))};
}

}  // namespace tnbc::model
