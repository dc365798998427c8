// tnbc configuration: one declarative table (name, type, default, description).
// The environment variable of an option is TNBC_<NAME in upper case>; `tnbc --help`,
// `tnbc config` and the library's debug dump are all printed from the same table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "runtime/status.hh"

namespace tnbc {

enum class Mode { Off, Passthrough, Nbc, Trace, Optimize };
enum class LogLevel { Error, Warn, Info, Debug };
// How received pages are held back until their data is there (runtime/uffd.hh, runtime/guard.hh).
enum class GuardChoice { Auto, Uffd, Protect };
// When the bytes to send are copied out of the program's send buffer (runtime/send_copy.hh);
// auto: as the cost model finds cheaper (runtime/model/estimate.hh, lazy_copy_pays).
// lazy-sends: the pieces sent lazily, the block a rank sends to itself still copied in the call.
enum class SendCopy { Auto, Eager, Lazy, LazySends };
// How the userfaultfd guard publishes a region (runtime/uffd.hh): moving pages where it can.
enum class UffdPublish { Auto, Copy };
// Mode optimize: whether call sites where the profile shows nothing to gain run blocking
// (trace/gain.hh).
enum class ProfileBlocking { Auto, Off };
// How a broadcast's data travels (runtime/coll/bcast.cc, runtime/coll/bcast_rma.cc): messages,
// or one-sided puts into tnbc's windows along a binomial tree or from the root to every rank.
enum class BcastBackend { P2p, RmaBinomial, RmaLinear, Auto };
// Node-level priorities (runtime/node_gate.hh): auto = in mode optimize with a profile.
enum class NodePriorities { Auto, On, Off };
// A setting that is on or off (its choices "on|off", in this order).
enum class Switch { On, Off };
// How the ranks of one node reach each other: shared memory (not the node's link: not
// arbitrated) or through the node's link (an MPI restricted to TCP over a NIC: arbitrated).
enum class NodeLocalSends { Shm, Link };
// Which CPUs the progress thread may run on (runtime/progress.hh, Progress::place): the rank's own
// binding, the union of the node's ranks' bindings, or every CPU the process is allowed (its
// cpuset); auto: the node's union where it is wider than the rank's binding, else every allowed CPU.
enum class ProgressCpus { Auto, Rank, Node, Allowed };

// TNBC_TIMEOUT's default, in seconds (the table's default text says the same; a unit test checks).
inline constexpr std::int64_t kDefaultTimeoutS = 600;
// TNBC_BCAST_MAX_SEGMENTS's default (the table's default text says the same; a unit test checks;
// the cost model's Execution and `tnbc predict`'s simulation start from it too).
inline constexpr std::int64_t kDefaultBcastMaxSegments = 5;

// Effective settings, filled from the table below.
struct Settings {
  Mode mode = Mode::Nbc;
  std::string profile;
  std::string machine;                      // TNBC_MACHINE: `tnbc calibrate`'s file ("" : the probe)
  std::string output_dir;
  std::int64_t timeline_calls = 4;
  std::int64_t site_trial_calls = 4;        // mode nbc's trial per site (runtime/site_trial.hh)
  std::int64_t site_trial_margin_pct = 3;
  Switch site_trial_agree = Switch::On;     // runtime/call_vote.hh
  LogLevel log = LogLevel::Warn;
  GuardChoice guard = GuardChoice::Auto;
  SendCopy send_copy = SendCopy::Auto;
  UffdPublish uffd_publish = UffdPublish::Auto;
  std::optional<std::uint64_t> min_bytes;   // nullopt = "auto" (from the cost model)
  std::int64_t bcast_max_segments = kDefaultBcastMaxSegments;
  std::optional<std::uint64_t> piece_bytes; // nullopt = "auto" (runtime/schedule.hh); 0 = no cut
  std::int64_t send_window = 4;
  std::optional<std::uint64_t> bcast_send_window;  // nullopt = "auto" (runtime/mpi_threads.hh); 0 = as send_window, the root's call starts them on a shared CPU
  std::int64_t poll_min_us = 20;
  std::int64_t poll_max_us = 100;
  std::int64_t timeout_s = kDefaultTimeoutS;
  std::int64_t abort_flush_us = 100000;
  ProfileBlocking profile_blocking = ProfileBlocking::Auto;
  BcastBackend bcast_backend = BcastBackend::P2p;
  // Mode optimize's decision per site: nullopt = auto (the cost model); a value = the fixed rule
  // (this many us per call, plus the per-MiB cost; trace/gain.hh).
  std::optional<std::uint64_t> early_return_cost_us;
  std::int64_t early_return_cost_us_per_mib = 0;
  // Mode optimize with the cost model: the margin a predicted saving must exceed (trace/gain.hh).
  std::int64_t early_return_margin_cost_pct = 15;
  std::int64_t early_return_margin_tcomm_pct = 30;
  std::int64_t early_return_margin_shared_node_pct = 100;
  std::int64_t early_return_margin_busy_poll_pct = 45;
  std::int64_t early_return_margin_own_pct = 5;
  // Mode optimize: sites whose predicted saving is within the model's margins (trace/gain.hh,
  // Basis::WithinMargin) are left to the site trial.
  Switch try_within_margin = Switch::On;
  // Of those, the ones priced at a gain whose trial would cost more than it protects return early
  // untried (trace/gain.hh, trial_costlier; off by default: docs/settings.md).
  Switch skip_costly_trial = Switch::Off;
  Switch staging_huge_pages = Switch::On;   // runtime/pool.hh
  NodePriorities node_priorities = NodePriorities::Auto;
  std::int64_t node_priorities_margin_pct = 45;
  std::int64_t node_hold_us = 20000;
  NodeLocalSends node_local_sends = NodeLocalSends::Shm;
  ProgressCpus progress_cpus = ProgressCpus::Auto;
};

// Where a parsed value goes; the alternative must agree with the option's type.
using Field = std::variant<Mode Settings::*, LogLevel Settings::*, GuardChoice Settings::*, SendCopy Settings::*,
                           UffdPublish Settings::*, ProfileBlocking Settings::*, BcastBackend Settings::*,
                           NodePriorities Settings::*, Switch Settings::*, NodeLocalSends Settings::*,
                           ProgressCpus Settings::*,
                           std::string Settings::*,
                           std::optional<std::uint64_t> Settings::*, std::int64_t Settings::*>;

enum class OptionType { Choice, Path, Bytes, Integer, Seconds, Microseconds, AutoMicroseconds, AutoInteger };

struct Option {
  std::string_view name;         // lower case; env name is TNBC_ + upper(name)
  OptionType type;
  std::string_view default_value;
  std::string_view choices;      // '|'-separated, for OptionType::Choice
  std::string_view description;
  Field field;
  std::int64_t min = 0, max = 0; // inclusive range for numbers (max 0 = unbounded)
  // Must be equal on every rank: it decides which messages exist (their number, sizes, tags),
  // so ranks that disagree would wait for each other forever. Checked at MPI_Init
  // (uniform_settings, runtime/runtime.cc); `tnbc --help` says so.
  bool uniform = false;
};

// The table (defined in config.cc).
const std::vector<Option>& options();

std::string env_name(const Option& o);
// The environment variable of the integer option whose value goes to `field` ("" if none does).
std::string env_name_of(std::int64_t Settings::*field);

// One problem found while reading the environment.
struct ConfigError {
  std::string variable;
  std::string value;
  std::string message;  // complete sentence naming the variable and what is accepted
};

struct ConfigResult {
  Settings settings;
  std::vector<ConfigError> errors;  // empty when every TNBC_* value was valid
};

// Reads every option from `getenv` (a parameter so tests can feed their own).
using Getenv = const char* (*)(const char*);
ConfigResult load_config(Getenv getenv_fn);
// The process environment, as a Getenv.
const char* process_getenv(const char* name);

// Parses one value for one option into `s`; an error names the variable and what it accepts.
Status parse_option(const Option& o, std::string_view value, Settings& s);

// Human-readable help (one block per option) and `NAME=value` dump of effective values.
std::string help_text();
std::string dump(const Settings& s);
std::string value_string(const Option& o, const Settings& s);

// `NAME=value` lines of the options marked `uniform`, for comparing them between ranks.
std::string uniform_settings(const Settings& s);

// Names of unknown TNBC_* variables present in `environ` (probably misspelled).
std::vector<std::string> unknown_variables(char** environ_list);

std::string_view mode_name(Mode m);

// A byte count for people: "100 B", "12 KiB", "1.5 MiB", "2 GiB" (4 significant digits).
std::string format_bytes(double bytes);

// Parses an unsigned decimal with an optional binary suffix, any case (k, m, g; optional "ib"/"b":
// 64k, 1M, 32768K as sysfs writes cache sizes); false when `v` is not one or overflows.
bool parse_bytes(std::string_view v, std::uint64_t& out);

}  // namespace tnbc
