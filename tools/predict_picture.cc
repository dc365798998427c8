#include "tools/predict_picture.hh"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/json.hh"
#include "tools/report_render.hh"

extern char** environ;

namespace tnbc::tools {

const char* const kPictureVariantNames[kPictureVariants] = {"nbc", "optimize", "optimize+node"};

namespace {

namespace fs = std::filesystem;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream t;
  t << in.rdbuf();
  return t.str();
}

// The last non-empty line of a command's output (where tnbc's one message is), without the
// command's "tnbc: predict: " prefix.
std::string last_line(const std::string& out) {
  std::string last;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  const std::string prefix = "tnbc: predict: ";
  if (last.rfind(prefix, 0) == 0) last = last.substr(prefix.size());
  return last;
}

// Runs argv with stdout and stderr into `log`; the exit status (-1: could not run it).
int run(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

Result<WhatIfPoint> read_predict_json(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::error(path + ": no such file (a `tnbc predict --json` output)");
  Result<json::Value> v = json::parse(slurp(path));
  if (!v.ok()) return Status::error(path + ": " + v.status().message());
  const json::Value& j = v.value();
  const json::Value* format = j.find("format");
  if (!format || format->type != json::Value::Type::String || format->string != "tnbc-predict")
    return Status::error(path + ": not a `tnbc predict --json` output (format tnbc-predict)");
  const json::Value* version = j.find("version");
  if (!version || version->type != json::Value::Type::Number || version->number != 1)
    return Status::error(path + ": tnbc-predict version 1 expected (written by another tnbc)");
  auto number = [&](const json::Value* o, const char* key, double& out) {
    const json::Value* x = o ? o->find(key) : nullptr;
    if (!x || x->type != json::Value::Type::Number || !std::isfinite(x->number)) return false;
    out = x->number;
    return true;
  };
  WhatIfPoint p;
  p.source = path;
  double np = 0, per_node = 0;
  const json::Value* program = j.find("program");
  if (!number(&j, "np", np) || !number(&j, "ranks_per_node", per_node) || !program ||
      !number(program, "blocking_s", p.blocking_s))
    return Status::error(path + ": np, ranks_per_node or program.blocking_s missing");
  p.np = static_cast<int>(np);
  p.per_node = static_cast<int>(per_node);
  if (const json::Value* s = j.find("scaling"); s && s->type == json::Value::Type::String) p.scaling = s->string;
  for (int k = 0; k < kPictureVariants; ++k) {
    const json::Value* v = program->find(kPictureVariantNames[k]);
    if (!number(v, "hidden_share", p.hidden[k]) || !number(v, "speedup", p.speedup[k]))
      return Status::error(path + ": program." + kPictureVariantNames[k] + " lacks hidden_share or speedup");
  }
  return p;
}

WhatIf gather_what_if(const WhatIfRequest& r, const std::string& tnbc_exe) {
  WhatIf w;
  if (!r.nps.empty()) {
    std::string dir = (fs::temp_directory_path() / "tnbc-what-if-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) {
      w.failures.push_back("cannot make a temporary directory for the predictions");
    } else {
      std::vector<std::pair<std::string, std::vector<int>>> why_ns;  // one sentence for the Ns that failed alike
      for (int n : r.nps) {
        const std::string at = dir + "/at" + std::to_string(n);
        std::vector<std::string> argv{tnbc_exe, "predict", "--profile", r.profile, "--machine", r.machine,
                                      "--np", std::to_string(n), "--json", at + ".json"};
        if (r.per_node > 0) argv.insert(argv.end(), {"--ranks-per-node", std::to_string(r.per_node)});
        if (!r.platform.empty()) argv.insert(argv.end(), {"--platform", r.platform});
        if (!r.scaling.empty()) argv.insert(argv.end(), {"--scaling", r.scaling});
        const int rc = run(argv, at + ".txt");
        Result<WhatIfPoint> p = Status::error("tnbc predict failed");
        if (rc == 0) p = read_predict_json(at + ".json");
        if (p.ok()) {
          p.value().source = "tnbc predict --np " + std::to_string(n);
          w.points.push_back(p.value());
        } else {
          const std::string why = rc < 0    ? "could not run " + tnbc_exe
                                  : rc == 0 ? p.status().message()
                                            : last_line(slurp(at + ".txt"));
          const std::string said = why.empty() ? "tnbc predict exited with " + std::to_string(rc) : why;
          auto same = std::find_if(why_ns.begin(), why_ns.end(), [&](const auto& x) { return x.first == said; });
          if (same == why_ns.end()) why_ns.push_back({said, {n}});
          else same->second.push_back(n);
        }
      }
      for (const auto& [why, ns] : why_ns) {
        std::string list;
        for (int n : ns) list += (list.empty() ? "" : ", ") + std::to_string(n);
        w.failures.push_back("N = " + list + ": " + why);
      }
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  }
  for (const std::string& f : r.predicted) {
    Result<WhatIfPoint> p = read_predict_json(f);
    if (p.ok()) w.points.push_back(p.value());
    else w.failures.push_back(p.status().message());
  }
  std::stable_sort(w.points.begin(), w.points.end(),
                   [](const WhatIfPoint& a, const WhatIfPoint& b) { return a.np < b.np; });
  return w;
}

std::string what_if_svg(const std::string& title, const std::vector<WhatIfPoint>& points) {
  if (points.empty()) return "";
  constexpr double kW = 640, kPanel = 250, kPad = 56, kTop = 40;
  const char* colors[kPictureVariants] = {"#1f77b4", "#2ca02c", "#d62728"};
  const double lo_n = std::log2(points.front().np), hi_n = std::log2(points.back().np);
  auto xs = [&](int n) {
    if (hi_n <= lo_n) return kPad + (kW - 2 * kPad) / 2;
    return kPad + (kW - 2 * kPad) * (std::log2(n) - lo_n) / (hi_n - lo_n);
  };
  std::string o = "<svg class=\"what-if\" width=\"" + fmt("%.0f", kW) + "\" height=\"" +
                  fmt("%.0f", kTop + 2 * kPanel) + "\" role=\"img\">\n<text x=\"" + fmt("%.0f", kPad) +
                  "\" y=\"18\" style=\"font-size:13px\">" + report::html_escape(title) + "</text>\n";
  for (int panel = 0; panel < 2; ++panel) {
    const bool hidden = panel == 0;
    auto value = [&](const WhatIfPoint& p, int k) { return hidden ? p.hidden[k] : p.speedup[k]; };
    double lo = hidden ? 0.0 : 1.0, hi = hidden ? 1.0 : 1.0;
    for (const WhatIfPoint& p : points)
      for (int k = 0; k < kPictureVariants; ++k) lo = std::min(lo, value(p, k)), hi = std::max(hi, value(p, k));
    if (!hidden) lo *= 0.95, hi *= 1.05;
    const double y0 = kTop + panel * kPanel + 14, height = kPanel - 2 * 30;
    auto ys = [&](double v) { return y0 + height * (1 - (v - lo) / (hi > lo ? hi - lo : 1)); };
    o += "<g class=\"what-if-panel\" data-figure=\"" + std::string(hidden ? "hidden_share" : "speedup") + "\">\n";
    o += "<text x=\"" + fmt("%.0f", kPad) + "\" y=\"" + fmt("%.1f", y0 - 6) + "\">" +
         (hidden ? "hidden share of the blocking collectives' time" : "speedup of the collective sections") +
         "</text>\n";
    o += "<line class=\"axis\" x1=\"" + fmt("%.0f", kPad) + "\" x2=\"" + fmt("%.0f", kW - kPad) + "\" y1=\"" +
         fmt("%.1f", ys(lo)) + "\" y2=\"" + fmt("%.1f", ys(lo)) + "\" stroke=\"#888\"/>\n";
    o += "<line class=\"axis\" x1=\"" + fmt("%.0f", kPad) + "\" x2=\"" + fmt("%.0f", kPad) + "\" y1=\"" +
         fmt("%.1f", ys(lo)) + "\" y2=\"" + fmt("%.1f", ys(hi)) + "\" stroke=\"#888\"/>\n";
    const double marks[3] = {lo, hidden ? 0.0 : 1.0, hi};
    for (double v : marks) {
      if (v < lo || v > hi) continue;
      o += "<line class=\"grid\" x1=\"" + fmt("%.0f", kPad) + "\" x2=\"" + fmt("%.0f", kW - kPad) + "\" y1=\"" +
           fmt("%.1f", ys(v)) + "\" y2=\"" + fmt("%.1f", ys(v)) + "\"/>\n<text x=\"4\" y=\"" +
           fmt("%.1f", ys(v) + 4) + "\">" + (hidden ? fmt("%.0f%%", 100 * v) : fmt("%.2fx", v)) + "</text>\n";
    }
    for (const WhatIfPoint& p : points)
      o += "<text x=\"" + fmt("%.1f", xs(p.np) - 8) + "\" y=\"" + fmt("%.1f", ys(lo) + 15) + "\">" +
           std::to_string(p.np) + "</text>\n";
    o += "<text x=\"" + fmt("%.0f", kW - kPad + 8) + "\" y=\"" + fmt("%.1f", ys(lo) + 4) + "\">N</text>\n";
    for (int k = 0; k < kPictureVariants; ++k) {
      std::string pts;
      for (const WhatIfPoint& p : points) pts += fmt("%.1f,", xs(p.np)) + fmt("%.1f ", ys(value(p, k)));
      if (!pts.empty()) pts.pop_back();
      o += "<polyline class=\"what-if-line\" data-variant=\"" + std::string(kPictureVariantNames[k]) +
           "\" fill=\"none\" stroke=\"" + colors[k] + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
      for (const WhatIfPoint& p : points)
        o += "<circle cx=\"" + fmt("%.1f", xs(p.np)) + "\" cy=\"" + fmt("%.1f", ys(value(p, k))) + "\" r=\"3\" fill=\"" +
             colors[k] + "\"/>\n";
      o += "<text x=\"" + fmt("%.0f", kW - kPad - 96) + "\" y=\"" + fmt("%.1f", y0 + 14 * k + 8) +
           "\" style=\"fill:" + colors[k] + "\">" + report::html_escape(kPictureVariantNames[k]) + "</text>\n";
    }
    o += "</g>\n";
  }
  return o + "</svg>\n";
}

report::Section what_if_section(const WhatIf& w) {
  report::Section s;
  s.key = "what_if";
  s.title = "predicted at other process counts (tnbc predict)";
  if (w.points.empty()) return s;
  const WhatIfPoint& first = w.points.front();
  const std::string scaling = first.scaling.empty() ? std::string("strong") : first.scaling;
  const std::string how = "simulated with SimGrid from the trace profile and the machine file (docs/predict.md), " +
                          scaling + " scaling; the collective sections only (call + CURC + CRC, x calls): hidden = "
                          "share of the blocking collectives' time no longer spent; speedup of those sections";
  // Text: the table.
  std::string t = "  " + how + "\n";
  char b[256];
  std::snprintf(b, sizeof b, "  %6s %9s %10s | %-20s | %-20s | %-20s |\n  %6s %9s %10s |", "N", "per node",
                "Tcomm s", kPictureVariantNames[0], kPictureVariantNames[1], kPictureVariantNames[2], "", "", "");
  t += b;
  for (int k = 0; k < kPictureVariants; ++k) t += "    hidden    speedup |";
  t += "\n";
  for (const WhatIfPoint& p : w.points) {
    std::snprintf(b, sizeof b, "  %6d %9d %10.3f |", p.np, p.per_node, p.blocking_s);
    t += b;
    for (int k = 0; k < kPictureVariants; ++k) {
      std::snprintf(b, sizeof b, " %8.0f%% %9.3fx |", 100 * p.hidden[k], p.speedup[k]);
      t += b;
    }
    t += "\n";
  }
  for (const std::string& f : w.failures) t += "  not predicted: " + f + "\n";
  s.text = t;
  // JSON data.
  std::string d = "{\"points\": [";
  for (std::size_t i = 0; i < w.points.size(); ++i) {
    const WhatIfPoint& p = w.points[i];
    d += std::string(i ? ", " : "") + "{\"np\": " + std::to_string(p.np) + ", \"ranks_per_node\": " +
         std::to_string(p.per_node) + ", \"blocking_s\": " + report::json_number(p.blocking_s);
    for (int k = 0; k < kPictureVariants; ++k)
      d += ", " + report::json_string(kPictureVariantNames[k]) + ": {\"hidden_share\": " +
           report::json_number(p.hidden[k]) + ", \"speedup\": " + report::json_number(p.speedup[k]) + "}";
    d += ", \"source\": " + report::json_string(p.source) + "}";
  }
  d += "], \"failures\": [";
  for (std::size_t i = 0; i < w.failures.size(); ++i) d += (i ? ", " : "") + report::json_string(w.failures[i]);
  s.data = d + "]}";
  // HTML: the picture, then the table.
  std::string h = "<section id=\"what-if\"><p>" + report::html_escape(how) + ".</p>\n";
  h += what_if_svg("predicted against N (" + scaling + " scaling)", w.points);
  h += "<table class=\"what-if\"><tr><th>N</th><th>per node</th><th>Tcomm</th>";
  for (const char* v : kPictureVariantNames)
    h += "<th>" + report::html_escape(v) + " hidden</th><th>" + report::html_escape(v) + " speedup</th>";
  h += "</tr>\n";
  for (const WhatIfPoint& p : w.points) {
    h += "<tr class=\"what-if-row\"><td>" + std::to_string(p.np) + "</td><td>" + std::to_string(p.per_node) +
         "</td><td>" + fmt("%.3f s", p.blocking_s) + "</td>";
    for (int k = 0; k < kPictureVariants; ++k)
      h += "<td>" + fmt("%.0f%%", 100 * p.hidden[k]) + "</td><td>" + fmt("%.3fx", p.speedup[k]) + "</td>";
    h += "</tr>\n";
  }
  h += "</table>\n";
  if (!w.failures.empty()) {
    h += "<ul class=\"notes\">";
    for (const std::string& f : w.failures) h += "<li>not predicted: " + report::html_escape(f) + "</li>";
    h += "</ul>\n";
  }
  s.html = h + "</section>";
  return s;
}

}  // namespace tnbc::tools
