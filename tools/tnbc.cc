// The `tnbc` command.
//   tnbc exec [--mode M] [--profile F] [--output-dir D] [--log L] -- PROGRAM ARGS
//       runs PROGRAM with libtnbc.so preloaded (use under the launcher: mpirun -np 4 tnbc exec --
//       ./app, srun -n 4 --mpi=pmix tnbc exec -- ./app)
//   tnbc config      prints the effective settings (from the TNBC_* environment)
//   tnbc merge DIR -o app.profile
//                    combines the per-rank traces of a trace pass into a profile (docs/trace.md)
//   tnbc report DIR  what the calls of a run did, from its per-rank summaries (tools/report.cc)
//   tnbc calibrate [-o machine.json]
//                    under the launcher: measures the machine for the cost model (execs the MPI
//                    program tnbc-calibrate on every rank: tools/calibrate_main.cc)
//   tnbc calibrate --combine A.json B.json ... [-o machine.json]
//                    without a launcher: the median of several calibrations (tools/calibrate_combine.hh)
//   tnbc predict ... this machine's predictions; with --profile the SimGrid simulation, run by
//                    execing tnbc-predict-sim (tools/predict_sim_main.cc), so that this command
//                    (every rank's `tnbc exec`) does not load SimGrid
//   tnbc --help      this text and every setting
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "runtime/config.hh"
#include "tools/report.hh"
#include "tools/merge.hh"
#include "tools/bcast_plan.hh"
#include "tools/calibrate_combine.hh"
#include "tools/predict.hh"

extern char** environ;

namespace {

namespace fs = std::filesystem;

const char* kUsage =
    "usage: tnbc <command> [options]\n"
    "\n"
    "commands:\n"
    "  exec [--mode M] [--profile F] [--output-dir D] [--log L] [--set NAME=VALUE]... -- PROGRAM [ARGS]\n"
    "                 run PROGRAM with libtnbc.so preloaded; under MPI: mpirun -np 4 tnbc exec -- ./app,\n"
    "                 srun -n 4 --mpi=pmix tnbc exec -- ./app (Slurm; MPICH: --mpi=pmi2; docs/cluster.md)\n"
    "  config         print the effective settings (TNBC_* environment, defaults)\n"
    "  merge DIR [-o FILE] [--quiet]\n"
    "                 combine the per-rank traces of a trace pass (TNBC_MODE=trace, TNBC_OUTPUT_DIR=DIR)\n"
    "                 into a profile (JSON, default DIR/app.profile) and print a summary\n"
    "  report DIR     what the calls of a run did (DIR: its TNBC_OUTPUT_DIR, or a harness run directory\n"
    "                 holding it in tnbc/): per kind and call site early returns, calls completed in the\n"
    "                 call or run as plain MPI and why, and on which ranks; in mode optimize which sites\n"
    "                 completed in the call because the profile shows no overlap to gain\n"
    "  predict --profile APP.profile --machine MACHINE.json --np N [--ranks-per-node M]\n"
    "          [--platform FILE] [--scaling strong|weak|fixed] [--data-scale X] [--program EXE] [--json FILE]\n"
    "                 SimGrid simulation of the program's collectives at N processes: per call site and\n"
    "                 for the program, the blocking time, tnbc's time in the call, the hidden share and\n"
    "                 the speedup for nbc, optimize, optimize with node priorities (docs/predict.md)\n"
    "  predict MACHINE --np N [--per-node M] [--sizes LIST] [--program CURC_MS,CRC_MS [--tcomm-ms T]] [--json]\n"
    "                 the cost model's predicted times of the blocking MPI_Bcast and MPI_Alltoall, of\n"
    "                 tnbc's early return and of its schedule completed in the call (in-call), per size,\n"
    "                 for N ranks placed M per node; --program: also a\n"
    "                 program's total after an early return (T_CURC, then T_CRC; T: measured blocking time);\n"
    "                 priced with the environment's TNBC_* settings, as a run would take them\n"
    "  calibrate [-o FILE] [--max-bytes SIZE] [--seconds-per-size S] [--cache-bytes SIZE] [--copy-bytes SIZE] [--quiet]\n"
    "                 under the launcher (mpirun -np 4 tnbc calibrate -o machine.json; 2 ranks on each of 2\n"
    "                 nodes measure both levels): LogGP parameters per level, the node's shared link, the\n"
    "                 guard's costs, memcpy; the cost model uses the file with TNBC_MACHINE=FILE.\n"
    "                 --cache-bytes: the last-level cache emptied before cold measurements (default: the\n"
    "                 CPU's; smaller is quicker and prices cold copies too low); --copy-bytes: the largest\n"
    "                 copy and guard cycle measured (default 16 MiB, in a call 64 MiB, the guard 32 MiB;\n"
    "                 smaller maps less memory and prices the guard above it by its largest sizes)\n"
    "  calibrate --combine A.json B.json ... [-o FILE]\n"
    "                 one machine file, each field the median of several calibrations of the same placement\n"
    "                 (each launch of calibrate is one draw: launches differ by up to 1.5x on a busy node)\n"
    "  bcast-plan MACHINE --np N [--per-node M] --rma L,o,G,O_r [--sizes LIST]\n"
    "                 what TNBC_BCAST_BACKEND=auto chooses: per size the cost model's time of each broadcast\n"
    "                 backend, from the machine file and the RMA probe's figures (its TNBC_LOG=info line)\n"
    "  library        print the path of libtnbc.so that exec preloads\n"
    "  --help         this text\n"
    "\n"
    "The raw interface works too: LD_PRELOAD=/path/libtnbc.so TNBC_MODE=nbc mpirun ... ./app\n"
    "\n"
    "settings (environment variables):\n";

fs::path self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return fs::path(buf).parent_path();
}

// TNBC_LIBRARY, else the build tree (tools/../libtnbc.so), else the install tree.
std::string find_library() {
  if (const char* env = std::getenv("TNBC_LIBRARY")) return env;
  const fs::path dir = self_dir();
  for (const fs::path& p : {dir / ".." / "libtnbc.so", dir / TNBC_BINDIR_TO_LIBDIR / "libtnbc.so"}) {
    std::error_code ec;
    if (fs::exists(p, ec)) return fs::canonical(p, ec).string();
  }
  return {};
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "tnbc: %s\n", msg.c_str());
  return 2;
}

const tnbc::Option* option_named(const std::string& name) {
  for (const auto& o : tnbc::options())
    if (o.name == name) return &o;
  return nullptr;
}

// Validates NAME=VALUE against the table and exports it as TNBC_NAME.
std::string set_option(const std::string& name, const std::string& value) {
  const tnbc::Option* o = option_named(name);
  if (!o) return "unknown setting '" + name + "' (see tnbc --help)";
  tnbc::Settings scratch;
  if (tnbc::Status st = tnbc::parse_option(*o, value, scratch); !st.ok()) return st.message();
  setenv(tnbc::env_name(*o).c_str(), value.c_str(), 1);
  return {};
}

// Under srun, a step without an MPI plugin starts tasks that do not form one MPI job: Open MPI
// stops in MPI_Init, MPICH runs every task as a one-rank job. Said by the step's task 0.
void note_srun_without_mpi_plugin() {
  const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  const char* task = std::getenv("SLURM_PROCID");
  if (tasks == nullptr || task == nullptr || std::atoi(tasks) < 2 || std::atoi(task) != 0) return;
  const char* plugin = std::getenv("SLURM_MPI_TYPE");
  if (plugin != nullptr && *plugin != '\0' && std::strcmp(plugin, "none") != 0) return;
  std::fprintf(stderr,
               "tnbc: note: srun runs this step of %s tasks without an MPI plugin (--mpi=none): Open MPI's ranks stop "
               "in MPI_Init, MPICH's run as separate one-rank jobs. Use srun --mpi=pmix for Open MPI, --mpi=pmi2 for "
               "MPICH (srun --mpi=list; docs/cluster.md)\n",
               tasks);
}

int cmd_exec(std::vector<std::string> args) {
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") { ++i; break; }
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= args.size()) return {};
      (void)flag;
      return args[++i];
    };
    std::string err;
    if (a == "--mode") err = set_option("mode", value("--mode"));
    else if (a == "--profile") err = set_option("profile", value("--profile"));
    else if (a == "--output-dir") err = set_option("output_dir", value("--output-dir"));
    else if (a == "--log") err = set_option("log", value("--log"));
    else if (a == "--set") {
      const std::string kv = value("--set");
      const auto eq = kv.find('=');
      err = eq == std::string::npos ? "--set takes NAME=VALUE" : set_option(kv.substr(0, eq), kv.substr(eq + 1));
    } else if (!a.empty() && a[0] == '-') err = "unknown option '" + a + "' for exec";
    else break;  // the program (without a "--")
    if (!err.empty()) return fail(err);
  }
  if (i >= args.size()) return fail("exec: no program given (tnbc exec [options] -- PROGRAM ARGS)");
  // The whole environment is checked before the program starts: a bad value stops here.
  auto cfg = tnbc::load_config(&tnbc::process_getenv);
  for (const auto& e : cfg.errors) std::fprintf(stderr, "tnbc: %s\n", e.message.c_str());
  if (!cfg.errors.empty()) return 2;
  const std::string lib = find_library();
  if (lib.empty()) return fail("cannot find libtnbc.so (set TNBC_LIBRARY)");
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  note_srun_without_mpi_plugin();
  std::vector<char*> argv;
  for (std::size_t k = i; k < args.size(); ++k) argv.push_back(args[k].data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  return fail("cannot run '" + args[i] + "': " + std::strerror(errno));
}

// Runs the helper program `name` (next to this program: the build tree's tools/, the install
// tree's bindir) in its place with `args`; returns only if it cannot.
int exec_helper(const char* name, std::vector<std::string> args) {
  const fs::path dir = self_dir();
  const fs::path p = dir / name;
  std::error_code ec;
  if (!fs::exists(p, ec)) return fail(std::string("cannot find ") + name + " next to " + (dir / "tnbc").string());
  std::string helper = p.string();
  std::vector<char*> argv{helper.data()};
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(helper.c_str(), argv.data());
  return fail("cannot run '" + helper + "': " + std::strerror(errno));
}

// Runs tnbc-calibrate in its place, without libtnbc.so preloaded (its calls must be the MPI
// library's own).
int cmd_calibrate(std::vector<std::string> args) {
  if (auto rest = tnbc::tools::combine_request(args)) return tnbc::tools::calibrate_combine(*rest);
  if (const char* old = std::getenv("LD_PRELOAD")) {
    std::string kept, item;
    for (std::size_t i = 0, n = std::strlen(old); i <= n; ++i) {
      if (i == n || old[i] == ':' || old[i] == ' ') {
        if (!item.empty() && item.find("libtnbc") == std::string::npos) kept += (kept.empty() ? "" : ":") + item;
        item.clear();
      } else {
        item += old[i];
      }
    }
    if (kept.empty()) unsetenv("LD_PRELOAD");
    else setenv("LD_PRELOAD", kept.c_str(), 1);
  }
  return exec_helper("tnbc-calibrate", std::move(args));
}

int cmd_config() {
  auto cfg = tnbc::load_config(&tnbc::process_getenv);
  std::fputs(tnbc::dump(cfg.settings).c_str(), stdout);
  for (const auto& e : cfg.errors) std::fprintf(stderr, "tnbc: %s\n", e.message.c_str());
  for (const auto& n : tnbc::unknown_variables(environ))
    std::fprintf(stderr, "tnbc: warning: %s is not a tnbc setting\n", n.c_str());
  return cfg.errors.empty() ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    std::fputs(tnbc::help_text().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string cmd = args[0];
  args.erase(args.begin());
  if (cmd == "exec") return cmd_exec(args);
  if (cmd == "config") return cmd_config();
  if (cmd == "merge") return tnbc::tools::cmd_merge(args);
  if (cmd == "report") return tnbc::tools::cmd_report(args);
  if (cmd == "calibrate") return cmd_calibrate(args);
  if (cmd == "bcast-plan") return tnbc::tools::cmd_bcast_plan(args);
  if (cmd == "predict") {
    if (std::find(args.begin(), args.end(), "--profile") == args.end()) return tnbc::tools::cmd_predict(args);
#ifdef TNBC_HAVE_SIMGRID
    return exec_helper("tnbc-predict-sim", args);  // SimGrid's program (tools/predict_sim_main.cc)
#else
    return fail("predict --profile: this tnbc was built without SimGrid (install libsimgrid-dev: tools/dev.sh does)");
#endif
  }
  if (cmd == "library") {
    const std::string lib = find_library();
    if (lib.empty()) return fail("cannot find libtnbc.so");
    std::puts(lib.c_str());
    return 0;
  }
  return fail("unknown command '" + cmd + "' (see tnbc --help)");
}
