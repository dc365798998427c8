// `tnbc report`: reads a run's per-rank summaries (tools/report_data.hh) and shows, per call
// site, where it is in the source, what its calls did (early return, completed in the call,
// plain MPI, and why) and what they cost: duration, Tinit, time blocked after the return, what
// was hidden and what Eq. 1 says could be (docs/reports.md). Text on stdout; --json and --html
// write the same content to files; --compare adds other runs (passes) side by side. A run is
// a directory of summaries or a report JSON written earlier with --json.
#include "tools/report.hh"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tools/report_data.hh"
#include "tools/report_render.hh"
#include "tools/report_sections.hh"
#include "tools/report_model.hh"
#include "tools/report_node.hh"

namespace tnbc::tools {

namespace {

constexpr const char* kUsage =
    "usage: tnbc report DIR [--compare DIR2]... [--labels L1,L2,...] [--profile FILE] [--json FILE] [--html FILE]\n"
    "                   [--no-source]\n"
    "  DIR        TNBC_OUTPUT_DIR of a run (or a harness run directory, or a report JSON of tnbc report --json)\n"
    "  --compare  another run (pass) to compare with, e.g. the trace or nbc pass of the same program\n"
    "  --labels   names of DIR and each --compare run in the comparison (default: their modes)\n"
    "  --profile  the trace profile (tnbc merge) whose T_CURC and R_CRC give the ideal (Eq. 1); default: the\n"
    "             one a mode optimize run used\n"
    "  --json     write the report as JSON (docs/formats.md); --html: a self-contained page with timelines\n"
    "  --no-source  show call sites as module+offset (no file:line from debug information)\n";

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

}  // namespace

namespace report {

// The other parts of the report, one line each (tools/report_sections.hh), in the order shown.
std::vector<Section> extra_sections(const World& world, const std::map<int, const json::Value*>& summaries) {
  std::vector<Section> sections;
  static_cast<void>(summaries);
  sections.push_back(node_section(world));
  sections.push_back(text_section("model", "cost model", model_section(world.dir)));
  return sections;
}

}  // namespace report

int cmd_report(const std::vector<std::string>& args) {
  std::string main, json, html, labels;
  std::vector<std::string> compare;
  report::LoadOptions opt;
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
                          : false) {
      std::fprintf(stderr, "tnbc: report: %s needs a value\n%s", a.c_str(), kUsage);
      return 2;
    }
    if (a == "--json" || a == "--html" || a == "--profile" || a == "--labels") continue;
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
    std::size_t k = 0, at = 0;
    while (k < runs.size() && at <= labels.size()) {
      const std::size_t comma = std::min(labels.find(',', at), labels.size());
      runs[k++].label = labels.substr(at, comma - at);
      at = comma + 1;
    }
  }
  std::fputs(report::render_text(runs).c_str(), stdout);
  bool ok = true;
  if (!json.empty()) ok = write(json, report::render_json(runs)) && ok;
  if (!html.empty()) ok = write(html, report::render_html(runs)) && ok;
  return ok ? 0 : 2;
}

}  // namespace tnbc::tools
