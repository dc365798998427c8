// tnbc-calibrate: the MPI program behind `tnbc calibrate` (tools/tnbc.cc execs it on every rank
// the launcher starts). It measures this machine for the cost model (runtime/model/calibrate.hh)
// and rank 0 writes the machine file (runtime/model/machine.hh; docs/formats.md).
//
//   mpirun -np 4 tnbc calibrate -o machine.json        # 4 ranks on this node
//   srun -N 2 -n 4 --mpi=pmix tnbc calibrate -o m.json  # 2 nodes, 2 ranks each: both levels
//
// Linked with the library's runtime objects (the guard backends, the measuring primitives), not
// with its MPI entry points: nothing here is intercepted.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "runtime/config.hh"
#include "runtime/model/calibrate.hh"
#include "runtime/output_file.hh"
#include "tools/calibrate_own_call.hh"

namespace {

const char* kUsage =
    "usage: tnbc calibrate [-o FILE] [--max-bytes SIZE] [--seconds-per-size S] [--cache-bytes SIZE] [--copy-bytes SIZE] [--quiet]\n"
    "  run under the launcher (mpirun -np 4 tnbc calibrate -o machine.json); at least 2 ranks, 2 on a node\n"
    "  and 2 nodes to measure both levels. FILE (default machine.json) is written by rank 0; use it with\n"
    "  TNBC_MACHINE=FILE (docs/architecture.md, \"The cost model\").\n";

// A positive number of seconds, the whole word; 0 where it is not one.
double parse_seconds(const char* s) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  return end != s && *end == '\0' && v > 0 ? v : 0;
}

// A byte count of at least 4k (64k, 4M); SIZE_MAX where it is not one (--cache-bytes, --copy-bytes).
std::size_t parse_buffer_bytes(const char* s) {
  std::uint64_t b = 0;
  return tnbc::parse_bytes(s, b) && b >= 4096 ? static_cast<std::size_t>(b) : SIZE_MAX;
}

}  // namespace

int main(int argc, char** argv) {
  tnbc::model::CalibrateOptions o;
  std::string out = "machine.json";
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "-o" || a == "--output") && i + 1 < argc) out = argv[++i];
    else if (a == "--max-bytes" && i + 1 < argc) {
      std::uint64_t b = 0;
      o.max_bytes = tnbc::parse_bytes(argv[++i], b) ? static_cast<std::size_t>(b) : 0;
    } else if (a == "--cache-bytes" && i + 1 < argc) o.cache_bytes = parse_buffer_bytes(argv[++i]);
    else if (a == "--copy-bytes" && i + 1 < argc) o.copy_bytes = parse_buffer_bytes(argv[++i]);
    else if (a == "--seconds-per-size" && i + 1 < argc) o.seconds_per_size = parse_seconds(argv[++i]);
    else if (a == "--quiet" || a == "-q") quiet = true;
    else {
      std::fprintf(stderr, "tnbc: calibrate: unknown option '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (o.max_bytes < 4096 || o.seconds_per_size <= 0 || o.cache_bytes == SIZE_MAX || o.copy_bytes == SIZE_MAX) {
    std::fprintf(stderr, "tnbc: calibrate: --max-bytes, --cache-bytes and --copy-bytes must be byte counts of at least 4k (such as "
                         "64k, 4M) and --seconds-per-size a positive number\n");
    return 2;
  }
  // The progress thread's sleeps as the runs will have them (TNBC_POLL_MIN_US, TNBC_POLL_MAX_US).
  const tnbc::ConfigResult cfg = tnbc::load_config(tnbc::process_getenv);
  if (!cfg.errors.empty()) {
    for (const auto& e : cfg.errors) std::fprintf(stderr, "tnbc: calibrate: %s\n", e.message.c_str());
    return 2;
  }
  o.poll_ns = cfg.settings.poll_min_us * 1000;
  o.poll_max_ns = cfg.settings.poll_max_us * 1000;
  // tnbc's own calls (the last measurement) run its engine, whose progress thread calls MPI beside
  // the calling thread, as in a program under tnbc (shim/init.cc asks for the same level): without
  // it MPICH over UCX aborted in the first such call (ucp_worker_progress: `worker->inprogress++ == 0`).
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::FILE* progress = rank == 0 && !quiet ? stderr : nullptr;
  o.last = [&](tnbc::model::Machine& mach, const std::function<void()>& empty_caches) {
    if (provided < MPI_THREAD_MULTIPLE) {
      if (progress)
        std::fprintf(progress, "tnbc's own call: not measured (the MPI library does not provide MPI_THREAD_MULTIPLE, "
                               "which tnbc's progress thread needs)\n");
      return;
    }
    tnbc::tools::measure_own_call(MPI_COMM_WORLD, mach, o.max_bytes, empty_caches, progress);
  };
  auto m = tnbc::model::calibrate(MPI_COMM_WORLD, o, progress);
  int rc = 0;
  if (rank == 0) {
    if (!m.ok()) {
      std::fprintf(stderr, "tnbc: calibrate: %s\n", m.status().message().c_str());
      rc = 2;
    } else {
      const std::string text = tnbc::model::machine_json(m.value());
      const std::size_t slash = out.rfind('/');
      const std::string dir = slash == std::string::npos ? "." : out.substr(0, slash);
      if (auto st = tnbc::write_output_file(dir.empty() ? "/" : dir, out.substr(slash + 1), text); !st.ok()) {
        std::fprintf(stderr, "tnbc: calibrate: %s\n", st.message().c_str());
        rc = 2;
      } else {
        std::fprintf(stderr, "tnbc: calibrate: machine file written to %s (use it with TNBC_MACHINE=%s)\n", out.c_str(),
                     out.c_str());
        if (const tnbc::model::Machine& mm = m.value(); mm.disturbed())
          std::fprintf(stderr, "tnbc: calibrate: warning: during the measurements %s: its figures are likely too high, "
                       "and the decisions taken from them off; %s, or several times and combine them (tnbc calibrate "
                       "--combine; docs/cluster.md)\n",
                       tnbc::model::load_words(mm.others_cpu_share, mm.steal_share).c_str(),
                       tnbc::model::load_advice(mm.others_cpu_share, mm.steal_share).c_str());
      }
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
