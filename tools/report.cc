// `tnbc report`: reads a run's per-rank summaries (tools/report_data.hh) and shows, per call
// site, where it is in the source, what its calls did (early return, completed in the call,
// plain MPI, and why) and what they cost: duration, Tinit, time blocked after the return, what
// was hidden and what Eq. 1 says could be (docs/reports.md). Text on stdout; --json and --html
// write the same content to files; --compare adds other runs (passes) side by side. A run is
// a directory of summaries or a report JSON written earlier with --json.
#include "tools/report.hh"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tools/report_data.hh"
#include "tools/report_render.hh"
#include "tools/report_sections.hh"
#include "tools/report_model.hh"
#include "tools/report_node.hh"
#include "tools/report_trial.hh"
#include "tools/predict_picture.hh"

namespace tnbc::tools {

namespace {

constexpr const char* kUsage =
    "usage: tnbc report DIR [--compare DIR2]... [--labels L1,L2,...] [--profile FILE] [--json FILE] [--html FILE]\n"
    "                   [--no-source] [--machine FILE --what-if-np N,... [--ranks-per-node M] [--platform FILE]\n"
    "                   [--scaling strong|weak|fixed]] [--predicted FILE.json,...]\n"
    "  DIR        TNBC_OUTPUT_DIR of a run (or a harness run directory, or a report JSON of tnbc report --json)\n"
    "  --compare  another run (pass) to compare with, e.g. the trace or nbc pass of the same program\n"
    "  --labels   names of DIR and each --compare run in the comparison (default: their modes)\n"
    "  --profile  the trace profile (tnbc merge) whose T_CURC and R_CRC give the ideal (Eq. 1); default: the\n"
    "             one a mode optimize run used\n"
    "  --json     write the report as JSON (docs/formats.md); --html: a self-contained page with timelines\n"
    "  --no-source  show call sites as module+offset (no file:line from debug information)\n"
    "  --what-if-np  a section \"predicted at other process counts\" (picture and table: hidden share and speedup\n"
    "             against N for nbc, optimize, optimize with node priorities): runs `tnbc predict` with the profile\n"
    "             and --machine (a `tnbc calibrate` file) at each N; --ranks-per-node, --platform, --scaling as there\n"
    "             (docs/predict.md). Inputs that do not fit: one message, the report without the section\n"
    "  --predicted  the same section from `tnbc predict --json` files already made\n";

Result<std::vector<report::Run>> load(const std::string& source, const report::LoadOptions& opt) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(source, ec)) {
    std::ifstream in(source, std::ios::binary);
    std::ostringstream t;
    t << in.rdbuf();
    Result<std::vector<report::Run>> runs = report::parse_report_json(t.str());
    if (!runs.ok()) return Status::error(source + ": " + runs.status().message());
    return runs;
  }
  Result<report::Run> run = report::load_run(source, opt);
  if (!run.ok()) return run.status();
  return std::vector<report::Run>{std::move(run).value()};
}

bool write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "tnbc: report: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

// The largest process or rank count the options take (as `tnbc predict`).
constexpr int kMaxCount = 1 << 20;

// A comma-separated option value. Positional lists (--labels) keep empty entries; lists of
// values (--what-if-np, --predicted) drop them.
std::vector<std::string> split_list(const std::string& list, bool keep_empty) {
  std::vector<std::string> out;
  for (std::size_t at = 0; !list.empty() && at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    if (keep_empty || comma > at) out.push_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

// A count from 1 to kMaxCount, or -1 when the text is not one.
int parse_count(const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  return text.empty() || *end || v < 1 || v > kMaxCount ? -1 : static_cast<int>(v);
}

}  // namespace

namespace report {

// The other parts of the report, one line each (tools/report_sections.hh), in the order shown.
std::vector<Section> extra_sections(const World& world, const std::map<int, const json::Value*>& summaries,
                                    FunctionRef<std::string(const std::string&)> locate) {
  std::vector<Section> sections;
  static_cast<void>(summaries);
  sections.push_back(node_section(world));
  sections.push_back(text_section("trial", "the site trial", trial_text(world)));
  sections.push_back(text_section("model", "cost model", model_section(world.dir, locate)));
  return sections;
}

}  // namespace report

int cmd_report(const std::vector<std::string>& args) {
  std::string main, json, html, labels;
  std::vector<std::string> compare;
  report::LoadOptions opt;
  WhatIfRequest what_if;
  std::string nps, per_node, predicted;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= args.size()) return false;
      into = args[++i];
      return true;
    };
    std::string c;
    if (a == "--json" ? !value(json)
        : a == "--html" ? !value(html)
        : a == "--profile" ? !value(opt.profile)
        : a == "--labels" ? !value(labels)
        : a == "--machine" ? !value(what_if.machine)
        : a == "--what-if-np" ? !value(nps)
        : a == "--ranks-per-node" ? !value(per_node)
        : a == "--platform" ? !value(what_if.platform)
        : a == "--scaling" ? !value(what_if.scaling)
        : a == "--predicted" ? !value(predicted)
                          : false) {
      std::fprintf(stderr, "tnbc: report: %s needs a value\n%s", a.c_str(), kUsage);
      return 2;
    }
    if (a == "--json" || a == "--html" || a == "--profile" || a == "--labels" || a == "--machine" ||
        a == "--what-if-np" || a == "--ranks-per-node" || a == "--platform" || a == "--scaling" || a == "--predicted")
      continue;
    if (a == "--compare") {
      if (!value(c)) {
        std::fprintf(stderr, "tnbc: report: --compare needs a directory\n%s", kUsage);
        return 2;
      }
      compare.push_back(c);
    } else if (a == "--no-source") {
      opt.resolve = false;
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "tnbc: report: unknown option %s\n%s", a.c_str(), kUsage);
      return 2;
    } else if (main.empty()) {
      main = a;
    } else {
      std::fprintf(stderr, "tnbc: report: one run directory (and --compare for others)\n%s", kUsage);
      return 2;
    }
  }
  if (main.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  // --what-if-np N,...: process counts; --predicted: files (comma-separated lists).
  for (const std::string& n : split_list(nps, false)) {
    const int v = parse_count(n);
    if (v < 0) {
      std::fprintf(stderr, "tnbc: report: --what-if-np wants process counts from 1 to %d, not '%s'\n%s", kMaxCount,
                   n.c_str(), kUsage);
      return 2;
    }
    what_if.nps.push_back(v);
  }
  if (!per_node.empty()) {
    what_if.per_node = parse_count(per_node);
    if (what_if.per_node < 0) {
      std::fprintf(stderr, "tnbc: report: --ranks-per-node wants a number from 1 to %d, not '%s'\n%s", kMaxCount,
                   per_node.c_str(), kUsage);
      return 2;
    }
  }
  what_if.predicted = split_list(predicted, false);
  std::vector<report::Run> runs;
  for (const std::string& source : [&] {
         std::vector<std::string> all{main};
         all.insert(all.end(), compare.begin(), compare.end());
         return all;
       }()) {
    // The profile given applies to the compared runs too (one program, several passes).
    Result<std::vector<report::Run>> r = load(source, opt);
    if (!r.ok()) {
      std::fprintf(stderr, "tnbc: report: %s\n", r.status().message().c_str());
      return 2;
    }
    for (report::Run& x : r.value()) runs.push_back(std::move(x));
  }
  if (!labels.empty()) {
    const std::vector<std::string> names = split_list(labels, true);  // positional: empty ones kept
    for (std::size_t k = 0; k < runs.size() && k < names.size(); ++k) runs[k].label = names[k];
  }
  if (what_if.wanted() && !runs.empty() && !runs.front().worlds.empty()) {
    // The profile: the one given, else the one the reported run's optimize pass used.
    what_if.profile = opt.profile.empty() ? runs.front().worlds.front().profile_file : opt.profile;
    std::string missing;
    if (!what_if.nps.empty() && what_if.profile.empty()) missing = "--profile (a `tnbc merge` profile)";
    if (!what_if.nps.empty() && what_if.machine.empty())
      missing += (missing.empty() ? "" : " and ") + std::string("--machine (a `tnbc calibrate` file)");
    std::error_code ec;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (!missing.empty()) what_if.nps.clear();
    WhatIf got = gather_what_if(what_if, ec ? std::string("tnbc") : self);
    if (!missing.empty()) got.failures.insert(got.failures.begin(), "--what-if-np needs " + missing);
    if (got.points.empty()) {
      std::fprintf(stderr, "tnbc: report: no predicted section: %s\n",
                   got.failures.empty() ? "nothing predicted" : got.failures.front().c_str());
      for (std::size_t k = 1; k < got.failures.size(); ++k)
        std::fprintf(stderr, "tnbc: report:   also %s\n", got.failures[k].c_str());
    } else {
      for (const std::string& f : got.failures) std::fprintf(stderr, "tnbc: report: not predicted: %s\n", f.c_str());
      runs.front().worlds.front().sections.push_back(what_if_section(got));
    }
  }
  std::fputs(report::render_text(runs).c_str(), stdout);
  bool ok = true;
  if (!json.empty()) ok = write(json, report::render_json(runs)) && ok;
  if (!html.empty()) ok = write(html, report::render_html(runs)) && ok;
  return ok ? 0 : 2;
}

}  // namespace tnbc::tools
