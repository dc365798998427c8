#include "runtime/config.hh"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tnbc {

namespace {

const std::vector<Option> kOptions = {
    {"mode", OptionType::Choice, "nbc", "off|passthrough|nbc|trace|optimize",
     "What the intercepted collectives do. off: call MPI directly, count nothing; passthrough: "
     "count calls and bytes, run blocking; nbc: return early with guarded buffers; trace: run "
     "blocking and record the first access to each received sub-message; optimize: nbc with the "
     "priorities of TNBC_PROFILE.",
     &Settings::mode, 0, 0, true},
    {"profile", OptionType::Path, "", "",
     "Profile written by `tnbc merge` (used by mode optimize). A profile that cannot be used "
     "(unreadable, corrupt, another version, recorded at another np or for another program) is "
     "reported once and the run uses default priorities; so are calls whose sizes differ from "
     "the recorded ones.",
     &Settings::profile},
    {"output_dir", OptionType::Path, "", "",
     "Directory for per-rank summaries, traces and reports; empty: write no files.",
     &Settings::output_dir},
    {"log", OptionType::Choice, "warn", "error|warn|info|debug",
     "Messages printed to stderr (prefixed 'tnbc[rank]:').", &Settings::log},
    {"guard", OptionType::Choice, "auto", "auto|uffd|protect",
     "How received pages are held back until their data has arrived. uffd: the pages are emptied "
     "and registered with userfaultfd, a reader blocks in the kernel and each page is filled "
     "atomically (UFFDIO_COPY); protect: the pages are PROT_NONE, a reader faults into tnbc's "
     "SIGSEGV handler and the data is written through /proc/self/mem; auto: uffd where the "
     "kernel allows it, else protect.",
     &Settings::guard},
    {"uffd_publish", OptionType::Choice, "auto", "auto|copy",
     "How the userfaultfd guard holds back and publishes received pages. auto: it moves the "
     "buffer's own pages into tnbc's staging in the call and moves them back filled "
     "(UFFDIO_MOVE, Linux >= 6.8: nothing copied, freed or allocated), copying where the kernel "
     "will not move a page or the staging forwards data (a broadcast's inner ranks); copy: the "
     "pages are emptied (MADV_DONTNEED) and filled with copies (UFFDIO_COPY).",
     &Settings::uffd_publish},
    {"send_copy", OptionType::Choice, "eager", "eager|lazy",
     "When the bytes to send are copied out of the program's send buffer. eager: all of them "
     "inside the call; lazy: only what is sent from inside the call, the rest by the progress "
     "thread just before sending it, the pages staying read-only until then (a write by the "
     "program first copies what is left). lazy relies on the free() fence: memory freed through "
     "an allocator tnbc does not see (a sanitizer's, one linked statically into the program) "
     "could be purged before it is copied.",
     &Settings::send_copy},
    {"min_bytes", OptionType::Bytes, "auto", "",
     "Smallest sub-message (bytes per peer, or per broadcast) that returns early; smaller "
     "collectives run blocking. auto: measured at MPI_Init (about 20 ms): the smallest size, at "
     "least three pages (a whole page to guard between the partial first and last ones), at "
     "which one exchange with a neighbour rank takes longer than tnbc's copying, holding back and "
     "publishing the same bytes (runtime/threshold.hh); the largest value over the ranks is used, "
     "and the summary's `threshold` shows it with the measured costs. A byte count: that, without "
     "measuring.",
     &Settings::min_bytes, 0, 0, true},
    {"bcast_max_segments", OptionType::Integer, "5", "",
     "Most segments a broadcast is split into (the paper found no gain beyond 5).",
     &Settings::bcast_max_segments, 1, 64, true},
    {"piece_bytes", OptionType::Bytes, "auto", "",
     "Most bytes per message (piece) of a sub-message's body. A sub-message longer than two pages is "
     "sent as its first page, its body and its last page; the body is cut into pieces of whole pages, "
     "each one MPI message and, at the receiver, published on its own, so a program that reads the "
     "data right after the call waits for the first piece, not the whole body. Each piece costs one "
     "more message and one more publication (one more UFFDIO_MOVE, UFFDIO_COPY or mprotect). auto: "
     "max(128 KiB, sub-message / 4) in whole pages, i.e. about 4 pieces per sub-message (at most 5) and none "
     "so small that the per-message costs dominate (measured: 64 KiB pieces slower than uncut "
     "bodies, 128 KiB to 1 MiB as fast or faster; docs/benchmarks.md); broadcast segments "
     "(TNBC_BCAST_MAX_SEGMENTS) stay whole (cutting them measured slower). 0: no cut. A byte "
     "count: at most that (rounded down to whole pages, at least one page), for broadcast segments "
     "too. At most 126 body pieces per sub-message (broadcast: in all segments together), the tags "
     "of one collective: a smaller value then gives larger pieces.",
     &Settings::piece_bytes, 0, 0, true},
    {"send_window", OptionType::Integer, "4", "",
     "Most sends of one collective in flight at once; sends are posted in priority order.",
     &Settings::send_window, 1, 1 << 20},
    {"poll_min_us", OptionType::Microseconds, "20", "",
     "Shortest sleep of the progress thread between polls while traffic is pending.",
     &Settings::poll_min_us, 0, 1000000},
    {"poll_max_us", OptionType::Microseconds, "1000", "",
     "Longest sleep between polls (the sleep doubles while nothing completes).",
     &Settings::poll_max_us, 1, 10000000},
    {"timeout", OptionType::Seconds, "600", "",
     "Seconds a rank waits for other ranks (a sub-message, in the call, a fence, a read of a "
     "guarded buffer; sends to finish in MPI_Finalize; all ranks of a communicator in its first "
     "collective) before tnbc reports what is missing and calls MPI_Abort.",
     &Settings::timeout_s, 1, 0},
    {"abort_flush_us", OptionType::Microseconds, "100000", "",
     "Pause between printing a timeout report and MPI_Abort, so that the launcher forwards the "
     "report (MPICH's hydra drops what a rank wrote just before aborting).",
     &Settings::abort_flush_us, 0, 10000000},
    // Mode optimize: the cost model of an early return (trace/gain.hh, docs/trace.md). A call
    // site's calls complete in the call when min(Tcomm, T_CURC + T_CRC) from the profile does
    // not exceed TNBC_EARLY_RETURN_COST_US + TNBC_EARLY_RETURN_COST_US_PER_MIB * MiB received.
    {"profile_blocking", OptionType::Choice, "auto", "auto|off",
     "Mode optimize: auto: calls at a site where the profile shows no overlap to gain complete "
     "in the call (tnbc's schedule, waited for in the call, no guard; summary reason "
     "no_overlap_to_gain): the overlap the trace allows, min(Tcomm, T_CURC + T_CRC) (the "
     "blocking duration; time from return to the first access plus time to consume the data), "
     "does not exceed the cost of returning early (TNBC_EARLY_RETURN_COST_US*). Each rank "
     "decides by its own call site; ranks may differ (docs/trace.md). off: the profile's read "
     "order only, every call may return early.",
     &Settings::profile_blocking},
    {"early_return_cost_us", OptionType::Microseconds, "500", "",
     "Mode optimize, cost model: fixed cost of returning early, per call, over completing the "
     "call in it (set-up and guard system calls in the call, wake-ups of the progress thread, "
     "the faults of the first accesses). Read by each rank for its own decisions. Default: "
     "from a 2-core VM (docs/trace.md: set-up ~0.2 ms and a few wake-ups of readers of pages "
     "still held back at ~0.09 ms each).",
     &Settings::early_return_cost_us, 0, 0},
    {"early_return_cost_us_per_mib", OptionType::Integer, "500", "",
     "Mode optimize, cost model: cost of returning early per MiB received on the rank that "
     "receives most at the site (copy to staging, emptying and publishing the pages, none of "
     "which a call completed in the call does: "
     "~0.2 + ~0.3 ms/MiB measured on a 2-core VM, rounded up for the progress thread's CPU "
     "share; docs/trace.md), in microseconds.",
     &Settings::early_return_cost_us_per_mib, 0, 0},
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

// Parses an unsigned decimal with an optional binary suffix (k, m, g; optional "ib"/"b").
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

}  // namespace

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

std::string_view mode_name(Mode m) {
  return split_choices(kOptions[0].choices)[static_cast<std::size_t>(m)];
}

std::string parse_option(const Option& o, std::string_view raw, Settings& s) {
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
      return bad + "one of " + std::string(o.choices) + ".";
    }
    case OptionType::Path:
      s.*std::get<std::string Settings::*>(o.field) = v;
      return {};
    case OptionType::Bytes: {
      auto& f = s.*std::get<std::optional<std::uint64_t> Settings::*>(o.field);
      if (lower(v) == "auto") { f.reset(); return {}; }
      std::uint64_t n = 0;
      if (!parse_bytes(v, n)) return bad + "'auto' or a byte count such as 4096, 64k or 1M.";
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
        return bad + range_text(o) + (*unit ? std::string(" (unit: ") + unit + ")" : "") + ".";
      s.*std::get<std::int64_t Settings::*>(o.field) = n;
      return {};
    }
  }
  return bad + "a known option type.";
}

ConfigResult load_config(Getenv getenv_fn) {
  ConfigResult r;
  for (const auto& o : kOptions) {
    // Defaults go through the same parser, so the table's text is the single source.
    std::string err = parse_option(o, o.default_value, r.settings);
    if (!err.empty()) r.errors.push_back({env_name(o), std::string(o.default_value), "default: " + err});
    const char* v = getenv_fn(env_name(o).c_str());
    if (v == nullptr) continue;
    err = parse_option(o, v, r.settings);
    if (!err.empty()) {
      r.errors.push_back({env_name(o), v, err});
      parse_option(o, o.default_value, r.settings);
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
