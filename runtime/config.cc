#include "runtime/config.hh"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tnbc {

namespace {

// One or two plain sentences each (`tnbc --help`); why each default is what it is, and the
// measurements behind it: docs/settings.md.
const std::vector<Option> kOptions = {
    {"mode", OptionType::Choice, "nbc", "off|passthrough|nbc|trace|optimize",
     "What the intercepted collectives do: off calls MPI directly, passthrough runs them blocking and counts them, "
     "nbc returns early, trace runs them blocking and records first reads, optimize is nbc guided by TNBC_PROFILE.",
     &Settings::mode, 0, 0, true},
    {"profile", OptionType::Path, "", "",
     "The profile written by `tnbc merge` that mode optimize follows. One that does not fit the run is reported "
     "once and ignored.",
     &Settings::profile},
    {"machine", OptionType::Path, "", "",
     "The machine file of `tnbc calibrate` the cost model decides from. Empty, or one that does not fit the run "
     "(another MPI library, node count or version): the measurements of the start-up probe.",
     &Settings::machine},
    {"output_dir", OptionType::Path, "", "",
     "Directory for the per-rank summaries and traces; empty: no files.",
     &Settings::output_dir},
    {"timeline_calls", OptionType::Integer, "4", "",
     "Receiving early returns per call site and rank (the 1st, 2nd, 4th, ...) whose sub-message arrivals and first accesses "
     "go into the summary, their received pages guarded until first touched; 0: none.",
     &Settings::timeline_calls, 0, 63},
    {"site_trial_calls", OptionType::Integer, "4", "",
     "Mode nbc (optimize: sites its profile cannot judge): calls per site and rank, after its first, alternating "
     "early return and completion in the call, each timed to the site's next call; where completing is faster, "
     "later calls complete (0: off).",
     &Settings::site_trial_calls, 0, 64, true},  // decides whether the ranks vote (runtime/call_vote.hh)
    {"site_trial_margin_pct", OptionType::Integer, "3", "",
     "Mode nbc: how much faster, in percent, the trial's completions in the call must be than its early returns "
     "for the site's later calls to complete in the call (the other way at optimize's sites priced at a loss).",
     &Settings::site_trial_margin_pct, 0, 100},
    {"site_trial_agree", OptionType::Choice, "on", "on|off",
     "Whether the calls that every rank's site trial completes in the call run as the MPI library's own, agreed "
     "by a vote of the communicator's ranks; off: through tnbc's schedule, each rank deciding alone.",
     &Settings::site_trial_agree, 0, 0, true},
    {"log", OptionType::Choice, "warn", "error|warn|info|debug",
     "How much tnbc says on stderr (lines start with 'tnbc[rank]:').", &Settings::log},
    {"guard", OptionType::Choice, "auto", "auto|uffd|protect",
     "How received pages are held back until their data is in: uffd (userfaultfd), protect (PROT_NONE and a "
     "SIGSEGV handler), or auto (uffd where the kernel allows it; protect for the calls whose size the machine file "
     "prices it cheaper at).",
     &Settings::guard},
    {"uffd_publish", OptionType::Choice, "auto", "auto|copy",
     "auto: the userfaultfd guard moves the buffer's own pages out and back (Linux >= 6.8), copying where it cannot "
     "or the machine file prices copying cheaper; "
     "copy: it empties the pages and installs copies.",
     &Settings::uffd_publish},
    {"send_copy", OptionType::Choice, "auto", "auto|eager|lazy|lazy-sends",
     "When the bytes to send are copied out of the program's buffer: eager, all in the call; lazy, each just before "
     "it is sent (pages read-only until then); lazy-sends, lazy but the own block in the call; auto, as the cost model finds.",
     &Settings::send_copy},
    {"min_bytes", OptionType::Bytes, "auto", "",
     "Smallest sub-message (bytes per peer, or per broadcast) that returns early; smaller collectives run blocking. "
     "auto takes it from the cost model (at least three pages).",
     &Settings::min_bytes, 0, 0, true},
    {"bcast_max_segments", OptionType::Integer, "5", "",
     "Most segments a broadcast is split into; the cost model chooses how many up to this.",
     &Settings::bcast_max_segments, 1, 64, true},
    {"bcast_backend", OptionType::Choice, "p2p", "p2p|rma-binomial|rma-linear|auto",
     "How broadcasts travel: p2p messages, MPI one-sided puts along a binomial tree or from the root to each rank, "
     "or auto (the cheapest by seed 000's LogGP costs). Where RMA does not work, p2p with a message.",
     &Settings::bcast_backend, 0, 0, true},
    {"piece_bytes", OptionType::Bytes, "auto", "",
     "Most bytes per message of a sub-message's body, in whole pages: auto (as many pieces as the cost model finds "
     "worth their fixed costs, the first and last ones smaller; broadcast segments stay whole), 0 (no cut) or a byte "
     "count.",
     &Settings::piece_bytes, 0, 0, true},
    {"send_window", OptionType::Integer, "4", "",
     "Most sends of one collective the progress thread keeps in flight; they start in priority order.",
     &Settings::send_window, 1, 1 << 20},
    {"bcast_send_window", OptionType::AutoInteger, "auto", "",
     "Most middle pieces of a broadcast a root's or forwarding rank's progress thread keeps in flight, on a shared "
     "CPU too; 0: TNBC_SEND_WINDOW, there the root's call starting them; auto: 1 across nodes where MPI lets that "
     "thread's calls through.",
     &Settings::bcast_send_window, 0, 1 << 20},
    {"poll_min_us", OptionType::Microseconds, "20", "",
     "Shortest sleep between polls while traffic is pending.",
     &Settings::poll_min_us, 0, 1000000},
    {"poll_max_us", OptionType::Microseconds, "100", "",
     "Longest sleep between polls (the sleep doubles while nothing completes; a handshake it answers late idles the "
     "link that long).",
     &Settings::poll_max_us, 1, 10000000},
    {"timeout", OptionType::Seconds, "600", "",
     "Seconds tnbc waits for other ranks before it reports what is missing and ends the job.",
     &Settings::timeout_s, 1, 0},
    {"abort_flush_us", OptionType::Microseconds, "100000", "",
     "Pause between a timeout report and MPI_Abort, so that the launcher forwards the report.",
     &Settings::abort_flush_us, 0, 10000000},
    {"profile_blocking", OptionType::Choice, "auto", "auto|off",
     "Mode optimize: auto completes in the call the calls at sites where the profile shows no overlap to gain; "
     "off lets every call return early.",
     &Settings::profile_blocking},
    {"early_return_cost_us", OptionType::AutoMicroseconds, "auto", "",
     "Mode optimize: auto judges each call site with the cost model; a number instead sets a fixed cost of "
     "returning early per call that the profile's overlap must exceed (with TNBC_EARLY_RETURN_COST_US_PER_MIB).",
     &Settings::early_return_cost_us, 0, 0},
    {"early_return_cost_us_per_mib", OptionType::Integer, "0", "",
     "Mode optimize, with a fixed TNBC_EARLY_RETURN_COST_US: the cost of returning early per MiB received, in "
     "microseconds.",
     &Settings::early_return_cost_us_per_mib, 0, 0},
    {"early_return_margin_cost_pct", OptionType::Integer, "15", "",
     "Mode optimize, cost model: a site returns early only when the predicted saving exceeds this percentage of "
     "tnbc's predicted cost plus TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT of the blocking time (docs/settings.md).",
     &Settings::early_return_margin_cost_pct, 0, 1000},
    {"early_return_margin_tcomm_pct", OptionType::Integer, "30", "",
     "Mode optimize, cost model: the share of the blocking time, in percent, by which the model may misjudge tnbc's "
     "own schedule with one rank per node; part of the margin a predicted saving must exceed (below it: "
     "TNBC_TRY_WITHIN_MARGIN).",
     &Settings::early_return_margin_tcomm_pct, 0, 1000},
    {"early_return_margin_shared_node_pct", OptionType::Integer, "100", "",
     "Mode optimize, cost model: TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT where ranks share a node, for the part of its "
     "transfer that is the CPUs' work (all of it through shared memory; measured: docs/settings.md; 100 or more: no "
     "site returns early there).",
     &Settings::early_return_margin_shared_node_pct, 0, 1000},
    {"early_return_margin_busy_poll_pct", OptionType::Integer, "45", "",
     "Mode optimize, cost model: TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT where ranks share a node and the machine file "
     "shows that the MPI library's ranks spin there (busy polling on fewer CPUs than ranks; measured: "
     "docs/settings.md).",
     &Settings::early_return_margin_busy_poll_pct, 0, 1000},
    {"early_return_margin_own_pct", OptionType::Integer, "5", "",
     "Mode optimize, cost model: where tnbc's schedule completed in the call beats the library's call, the share of "
     "that schedule's time, in percent, by which an early return must beat it (plus the cost share; measured: "
     "docs/settings.md).",
     &Settings::early_return_margin_own_pct, 0, 1000},
    {"try_within_margin", OptionType::Choice, "on", "on|off",
     "Mode optimize: a site whose predicted saving lies inside the model's margins (below the margin, above minus "
     "the cost's share, called more often than the trial takes) is left to the site trial (TNBC_SITE_TRIAL_CALLS); "
     "off: it runs the library's call.",
     &Settings::try_within_margin, 0, 0, true},
    {"skip_costly_trial", OptionType::Choice, "off", "on|off",
     "Mode optimize: on, a site inside the model's margins priced at a gain returns early untried where the "
     "trial's completions in the call would cost more than it could save over the site's calls (trial_costlier).",
     &Settings::skip_costly_trial, 0, 0, true},
    {"staging_huge_pages", OptionType::Choice, "on", "on|off",
     "tnbc's staging blocks of whole huge pages (2 MiB and up) use them where the kernel has transparent huge "
     "pages (one first-touch fault per huge page); off: small pages.",
     &Settings::staging_huge_pages},
    {"node_priorities", OptionType::Choice, "auto", "auto|on|off",
     "Whether the ranks of a node start their sends to other nodes most urgent first, node-wide (shared memory); "
     "auto: in mode optimize with a profile, on nodes with more than one rank.",
     &Settings::node_priorities, 0, 0, true},
    {"node_priorities_margin_pct", OptionType::Integer, "45", "",
     "Node priorities, auto: the share of the blocking time, in percent, by which the model may misjudge when a "
     "reader has its first-read piece; arbitration must bring it forward by more (docs/settings.md).",
     &Settings::node_priorities_margin_pct, 0, 1000},
    {"node_hold_us", OptionType::Microseconds, "20000", "",
     "Node priorities: longest a send waits for a more urgent rank of its node that does not move.",
     &Settings::node_hold_us, 1, 0},
    {"node_local_sends", OptionType::Choice, "shm", "shm|link",
     "Node priorities: sends to ranks of the same node go through shared memory (shm: not arbitrated) or through "
     "the node's link (link: e.g. an MPI restricted to TCP, arbitrated like the others).",
     &Settings::node_local_sends},
    {"progress_cpus", OptionType::Choice, "auto", "auto|rank|node|allowed",
     "CPUs the progress thread may use: the rank's binding (rank), the union of its node's ranks' (node) or all "
     "the process may use (allowed); auto: node where wider than the rank's, else allowed. Program threads keep "
     "theirs.",
     &Settings::progress_cpus},
};

std::vector<std::string_view> split_choices(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    auto bar = s.find('|');
    out.push_back(s.substr(0, bar));
    if (bar == std::string_view::npos) break;
    s.remove_prefix(bar + 1);
  }
  return out;
}

std::string trim(std::string_view v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  return std::string(v);
}

std::string lower(std::string v) {
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return v;
}


}  // namespace

bool parse_bytes(std::string_view v, std::uint64_t& out) {
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p == v.data()) return false;
  std::string suffix = lower(std::string(p, v.data() + v.size()));
  std::uint64_t mult = 1;
  if (suffix.empty() || suffix == "b") mult = 1;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib") mult = 1ull << 10;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib") mult = 1ull << 20;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib") mult = 1ull << 30;
  else return false;
  if (n > UINT64_MAX / mult) return false;
  out = n * mult;
  return true;
}

std::string format_bytes(double b) {
  char s[32];
  if (b < 1024) std::snprintf(s, sizeof s, "%.0f B", b);
  else if (b < 1024.0 * 1024) std::snprintf(s, sizeof s, "%.4g KiB", b / 1024);
  else if (b < 1024.0 * 1024 * 1024) std::snprintf(s, sizeof s, "%.4g MiB", b / 1024 / 1024);
  else std::snprintf(s, sizeof s, "%.4g GiB", b / 1024 / 1024 / 1024);
  return s;
}

namespace {

std::string range_text(const Option& o) {
  std::ostringstream s;
  s << "an integer";
  if (o.max > 0) s << " from " << o.min << " to " << o.max;
  else s << " >= " << o.min;
  return s.str();
}

}  // namespace

const std::vector<Option>& options() { return kOptions; }

const char* process_getenv(const char* name) { return std::getenv(name); }

std::string env_name(const Option& o) {
  std::string n = "TNBC_";
  for (char c : o.name) n += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return n;
}

std::string env_name_of(std::int64_t Settings::*field) {
  for (const auto& o : kOptions)
    if (const auto* f = std::get_if<std::int64_t Settings::*>(&o.field); f && *f == field) return env_name(o);
  return {};
}

std::string_view mode_name(Mode m) {
  return split_choices(kOptions[0].choices)[static_cast<std::size_t>(m)];
}

Status parse_option(const Option& o, std::string_view raw, Settings& s) {
  const std::string v = trim(raw);
  const std::string bad = env_name(o) + "='" + std::string(raw) + "' is not valid: expected ";
  switch (o.type) {
    case OptionType::Choice: {
      auto names = split_choices(o.choices);
      const std::string lv = lower(v);
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (lv != names[i]) continue;
        std::visit(
            [&](auto field) {
              using T = std::remove_cvref_t<decltype(s.*field)>;
              if constexpr (std::is_enum_v<T>) s.*field = static_cast<T>(i);  // choices list the enum in order
            },
            o.field);
        return {};
      }
      return Status::error(bad + "one of " + std::string(o.choices) + ".");
    }
    case OptionType::Path:
      s.*std::get<std::string Settings::*>(o.field) = v;
      return {};
    case OptionType::Bytes: {
      auto& f = s.*std::get<std::optional<std::uint64_t> Settings::*>(o.field);
      if (lower(v) == "auto") { f.reset(); return {}; }
      std::uint64_t n = 0;
      if (!parse_bytes(v, n)) return Status::error(bad + "'auto' or a byte count such as 4096, 64k or 1M.");
      f = n;
      return {};
    }
    case OptionType::AutoMicroseconds:
    case OptionType::AutoInteger: {
      auto& f = s.*std::get<std::optional<std::uint64_t> Settings::*>(o.field);
      const bool us = o.type == OptionType::AutoMicroseconds;
      std::string num = lower(v);
      if (num == "auto") {
        f.reset();
        return {};
      }
      if (us && num.size() > 2 && num.ends_with("us")) num.resize(num.size() - 2);
      std::uint64_t n = 0;
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
      const bool in_range = static_cast<std::int64_t>(n) >= o.min && (o.max == 0 || static_cast<std::int64_t>(n) <= o.max);
      if (ec != std::errc() || p != num.data() + num.size() || num.empty() || (!us && !in_range))
        return Status::error(bad + (us ? std::string("'auto' or a whole number of microseconds.")
                                       : "'auto' or " + range_text(o) + "."));
      f = n;
      return {};
    }
    case OptionType::Integer:
    case OptionType::Seconds:
    case OptionType::Microseconds: {
      std::string num = v;
      const char* unit = o.type == OptionType::Seconds ? "s" : o.type == OptionType::Microseconds ? "us" : "";
      if (*unit && num.size() > std::strlen(unit) &&
          lower(num).ends_with(unit))
        num.resize(num.size() - std::strlen(unit));
      std::int64_t n = 0;
      auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
      if (ec != std::errc() || p != num.data() + num.size() || num.empty() || n < o.min ||
          (o.max > 0 && n > o.max))
        return Status::error(bad + range_text(o) + (*unit ? std::string(" (unit: ") + unit + ")" : "") + ".");
      s.*std::get<std::int64_t Settings::*>(o.field) = n;
      return {};
    }
  }
  return Status::error(bad + "a known option type.");
}

ConfigResult load_config(Getenv getenv_fn) {
  ConfigResult r;
  for (const auto& o : kOptions) {
    // Defaults go through the same parser, so the table's text is the single source.
    if (Status st = parse_option(o, o.default_value, r.settings); !st.ok())
      r.errors.push_back({env_name(o), std::string(o.default_value), "default: " + st.message()});
    const char* v = getenv_fn(env_name(o).c_str());
    if (v == nullptr) continue;
    if (Status st = parse_option(o, v, r.settings); !st.ok()) {
      r.errors.push_back({env_name(o), v, st.message()});
      (void)parse_option(o, o.default_value, r.settings);  // valid: checked above
    }
  }
  if (r.settings.poll_min_us > r.settings.poll_max_us)
    r.errors.push_back({"TNBC_POLL_MIN_US", std::to_string(r.settings.poll_min_us),
                        "TNBC_POLL_MIN_US must not exceed TNBC_POLL_MAX_US."});
  return r;
}

std::string value_string(const Option& o, const Settings& s) {
  return std::visit(
      [&](auto field) -> std::string {
        using T = std::remove_cvref_t<decltype(s.*field)>;
        const auto& v = s.*field;
        if constexpr (std::is_enum_v<T>)
          return std::string(split_choices(o.choices)[static_cast<std::size_t>(v)]);
        else if constexpr (std::is_same_v<T, std::string>)
          return v;
        else if constexpr (std::is_same_v<T, std::optional<std::uint64_t>>)
          return v ? std::to_string(*v) : std::string("auto");
        else
          return std::to_string(v);
      },
      o.field);
}

std::string help_text() {
  std::ostringstream out;
  for (const auto& o : kOptions) {
    out << "  " << env_name(o) << " (default: "
        << (o.default_value.empty() ? "empty" : std::string(o.default_value)) << ")";
    if (!o.choices.empty()) out << "  [" << o.choices << "]";
    out << "\n      " << o.description;
    if (o.uniform) out << " Must be the same on every rank (checked at MPI_Init; if not, collectives run blocking).";
    out << "\n";
  }
  return out.str();
}

std::string uniform_settings(const Settings& s) {
  std::ostringstream out;
  for (const auto& o : kOptions)
    if (o.uniform) out << env_name(o) << "=" << value_string(o, s) << "\n";
  return out.str();
}

std::string dump(const Settings& s) {
  std::ostringstream out;
  for (const auto& o : kOptions) out << env_name(o) << "=" << value_string(o, s) << "\n";
  return out.str();
}

std::vector<std::string> unknown_variables(char** env) {
  std::vector<std::string> unknown;
  for (; env && *env; ++env) {
    std::string_view kv(*env);
    if (!kv.starts_with("TNBC_")) continue;
    std::string name(kv.substr(0, kv.find('=')));
    bool known = name == "TNBC_LIBRARY";  // read by the `tnbc` command only
    for (const auto& o : kOptions) known = known || env_name(o) == name;
    if (!known) unknown.push_back(name);
  }
  return unknown;
}

}  // namespace tnbc
