// `tnbc report --html FILE`: one self-contained page (inline CSS and SVG, no network: clusters are
// offline). Per call site a timeline like the T-NBC paper's Figure 7: for each sub-message (x),
// when its data arrived and when the program first touched it (y, ms after the call; mean over
// the observed calls of all ranks, the bar from the earliest to the latest), with the return
// (Tinit) and the end of the collective as lines. With comparisons, bars of hidden and exposed
// (Tinit, blocked) time per pass, over all call sites and per site. A short script counts the
// timelines the browser laid out (the test reads it back from the rendered DOM).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "runtime/config.hh"
#include "tools/report_render.hh"

namespace tnbc::tools::report {

namespace {

std::string esc(const std::string& s) { return html_escape(s); }

std::string f(const char* format, double v) {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

// A round step for an axis from 0 to `top` with about 5 ticks.
double tick_step(double top) {
  if (top <= 0) return 1;
  const double raw = top / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

constexpr double kW = 680, kH = 280, kLeft = 62, kRight = 16, kTop = 26, kBottom = 44;

std::string timeline_svg(const Site& s, std::size_t index) {
  const Timeline& t = s.timeline;
  const bool empty = t.calls == 0 || t.subs.empty();
  const double height = empty ? 40 : kH;  // an empty timeline: one line saying why
  std::string o = "<svg class=\"timeline\" data-site=\"" + std::to_string(index + 1) + "\" width=\"" + f("%.0f", kW) +
                  "\" height=\"" + f("%.0f", height) + "\" viewBox=\"0 0 " + f("%.0f", kW) + " " + f("%.0f", height) +
                  "\" role=\"img\" aria-label=\"timeline of call site " + std::to_string(index + 1) + "\">\n";
  if (empty) {
    const RankFigures r = s.total();
    const std::string why = r.early > 0 ? "no observed call here (TNBC_TIMELINE_CALLS=0, or none had data to guard)"
                                        : "no call returned early here: nothing arrived after the return";
    o += "<text x=\"" + f("%.0f", kW / 2) + "\" y=\"" + f("%.0f", height / 2) + "\" text-anchor=\"middle\" class=\"empty\">" +
         esc(why) + "</text>\n</svg>\n";
    return o;
  }
  double top = std::max(t.duration_ns.max, t.tinit_ns.max);
  for (const SubTiming& x : t.subs) top = std::max({top, x.arrival_ns.n ? x.arrival_ns.max : 0, x.access_ns.n ? x.access_ns.max : 0});
  top = std::max(top, 1000.0) / 1e6;  // ms
  const double step = tick_step(top);
  top = std::ceil(top / step) * step;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  const std::size_t n = t.subs.size();
  auto x_of = [&](std::size_t k) { return kLeft + pw * (static_cast<double>(k) + 0.5) / static_cast<double>(n); };
  auto y_of = [&](double ns) { return kTop + ph * (1 - (ns / 1e6) / top); };
  // Axes and grid.
  for (double v = 0; v <= top + step / 2; v += step) {
    const double y = kTop + ph * (1 - v / top);
    o += "<line class=\"grid\" x1=\"" + f("%.1f", kLeft) + "\" x2=\"" + f("%.1f", kLeft + pw) + "\" y1=\"" + f("%.1f", y) +
         "\" y2=\"" + f("%.1f", y) + "\"/><text class=\"tick\" x=\"" + f("%.1f", kLeft - 6) + "\" y=\"" + f("%.1f", y + 4) +
         "\" text-anchor=\"end\">" + f(step < 0.1 ? "%.2f" : step < 1 ? "%.1f" : "%.0f", v) + "</text>\n";
  }
  o += "<text class=\"axis\" x=\"14\" y=\"" + f("%.1f", kTop + ph / 2) + "\" transform=\"rotate(-90 14 " +
       f("%.1f", kTop + ph / 2) + ")\" text-anchor=\"middle\">ms after the call</text>\n";
  o += "<text class=\"axis\" x=\"" + f("%.1f", kLeft + pw / 2) + "\" y=\"" + f("%.1f", kH - 6) +
       "\" text-anchor=\"middle\">sub-message (" + (s.kind == "bcast" ? "chunk" : "peer") + ")</text>\n";
  const std::size_t label_every = std::max<std::size_t>(1, n / 16);
  for (std::size_t k = 0; k < n; k += label_every)
    o += "<text class=\"tick\" x=\"" + f("%.1f", x_of(k)) + "\" y=\"" + f("%.1f", kTop + ph + 16) +
         "\" text-anchor=\"middle\">" + std::to_string(k) + "</text>\n";
  // The return and the end of the collective (means over the observed calls).
  auto hline = [&](double ns, const char* cls, const std::string& label) {
    const double y = y_of(ns);
    o += "<line class=\"" + std::string(cls) + "\" x1=\"" + f("%.1f", kLeft) + "\" x2=\"" + f("%.1f", kLeft + pw) +
         "\" y1=\"" + f("%.1f", y) + "\" y2=\"" + f("%.1f", y) + "\"/><text class=\"mark\" x=\"" + f("%.1f", kLeft + pw - 4) +
         "\" y=\"" + f("%.1f", y - 4) + "\" text-anchor=\"end\">" + esc(label) + "</text>\n";
  };
  hline(t.tinit_ns.mean, "return", "return (Tinit " + f("%.3f ms", t.tinit_ns.mean / 1e6) + ")");
  hline(t.duration_ns.mean, "end", "last piece in (" + f("%.3f ms", t.duration_ns.mean / 1e6) + ")");
  // Per sub-message: arrival (circle) and first access (diamond), each with its range.
  const double dx = std::min(6.0, pw / static_cast<double>(n) / 4);
  for (std::size_t k = 0; k < n; ++k) {
    const SubTiming& x = t.subs[k];
    const double cx = x_of(k);
    if (x.arrival_ns.n > 0) {
      const double ax = cx - dx;
      o += "<g class=\"arrival\"><title>sub-message " + std::to_string(k) + ": " + format_bytes(x.bytes) + ", arrived " +
           f("%.3f", x.arrival_ns.mean / 1e6) + " ms (" + f("%.3f", x.arrival_ns.min / 1e6) + " to " +
           f("%.3f", x.arrival_ns.max / 1e6) + ")</title><line x1=\"" + f("%.1f", ax) + "\" x2=\"" + f("%.1f", ax) +
           "\" y1=\"" + f("%.1f", y_of(x.arrival_ns.min)) + "\" y2=\"" + f("%.1f", y_of(x.arrival_ns.max)) +
           "\"/><circle cx=\"" + f("%.1f", ax) + "\" cy=\"" + f("%.1f", y_of(x.arrival_ns.mean)) + "\" r=\"3.5\"/></g>\n";
    }
    if (x.access_ns.n > 0) {
      const double bx = cx + dx, by = y_of(x.access_ns.mean);
      o += "<g class=\"access\"><title>sub-message " + std::to_string(k) + ": first touched " +
           f("%.3f", x.access_ns.mean / 1e6) + " ms (" + f("%.3f", x.access_ns.min / 1e6) + " to " +
           f("%.3f", x.access_ns.max / 1e6) + "; " + std::to_string(x.access_ns.n) + " calls)</title><line x1=\"" +
           f("%.1f", bx) + "\" x2=\"" + f("%.1f", bx) + "\" y1=\"" + f("%.1f", y_of(x.access_ns.min)) + "\" y2=\"" +
           f("%.1f", y_of(x.access_ns.max)) + "\"/><path d=\"M" + f("%.1f", bx) + " " + f("%.1f", by - 4.5) + " l4.5 4.5 l-4.5 4.5 l-4.5 -4.5 z\"/></g>\n";
    }
  }
  o += "<g class=\"legend\" transform=\"translate(" + f("%.0f", kLeft + 6) + " 14)\"><circle class=\"arrival\" cx=\"0\" cy=\"0\" r=\"3.5\"/>"
       "<text x=\"8\" y=\"4\">arrival</text><path class=\"access\" d=\"M80 -4.5 l4.5 4.5 l-4.5 4.5 l-4.5 -4.5 z\"/>"
       "<text x=\"90\" y=\"4\">first access</text><text x=\"190\" y=\"4\">mean over " +
       std::to_string(t.calls) + " observed calls (all ranks); bars: earliest to latest</text></g>\n</svg>\n";
  return o;
}

// Horizontal stacked bars: per pass, hidden | Tinit | blocked (seconds, one scale), ideal marked.
struct Bar {
  std::string label;
  double hidden = 0, tinit = 0, blocked = 0, other = 0;  // ns; other: exposed beyond Tinit + blocked (rounding)
  std::optional<double> ideal;
};

std::string bars_svg(const std::vector<Bar>& bars, const std::string& cls) {
  double top = 0;
  for (const Bar& b : bars) top = std::max({top, b.hidden + b.tinit + b.blocked + b.other, b.ideal.value_or(0)});
  if (top <= 0) top = 1;
  const double left = 150, width = 640, row = 26, h = 30 + row * static_cast<double>(bars.size());
  std::string o = "<svg class=\"" + cls + "\" width=\"" + f("%.0f", left + width + 90) + "\" height=\"" + f("%.0f", h) +
                  "\" role=\"img\">\n";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = 8 + row * static_cast<double>(i);
    o += "<text class=\"tick\" x=\"" + f("%.0f", left - 8) + "\" y=\"" + f("%.1f", y + 14) + "\" text-anchor=\"end\">" +
         esc(b.label) + "</text>\n";
    double x = left;
    const double total = b.hidden + b.tinit + b.blocked + b.other;
    for (const auto& [v, c, name] : {std::tuple{b.hidden, "hidden", "hidden"}, std::tuple{b.tinit, "tinit", "Tinit"},
                                     std::tuple{b.blocked, "blocked", "blocked"}, std::tuple{b.other, "blocked", "exposed"}}) {
      if (v <= 0) continue;
      const double w = width * v / top;
      o += "<rect class=\"" + std::string(c) + "\" x=\"" + f("%.1f", x) + "\" y=\"" + f("%.1f", y) + "\" width=\"" +
           f("%.1f", w) + "\" height=\"18\"><title>" + esc(b.label) + ": " + name + " " + f("%.3f ms", v / 1e6) + " (" +
           percent(share(v, total)) + ")</title></rect>\n";
      x += w;
    }
    o += "<text class=\"tick\" x=\"" + f("%.1f", x + 6) + "\" y=\"" + f("%.1f", y + 14) + "\">" +
         percent(share(b.hidden, total)) + " hidden</text>\n";
    if (b.ideal) {
      const double ix = left + width * *b.ideal / top;
      o += "<line class=\"ideal\" x1=\"" + f("%.1f", ix) + "\" x2=\"" + f("%.1f", ix) + "\" y1=\"" + f("%.1f", y - 3) +
           "\" y2=\"" + f("%.1f", y + 21) + "\"><title>ideal (Eq. 1): " + f("%.3f ms", *b.ideal / 1e6) + "</title></line>\n";
    }
  }
  o += "<g class=\"legend\" transform=\"translate(" + f("%.0f", left) + " " + f("%.0f", h - 8) +
       ")\"><rect class=\"hidden\" width=\"10\" height=\"10\" y=\"-9\"/><text x=\"14\">hidden</text>"
       "<rect class=\"tinit\" x=\"80\" width=\"10\" height=\"10\" y=\"-9\"/><text x=\"94\">exposed: Tinit</text>"
       "<rect class=\"blocked\" x=\"200\" width=\"10\" height=\"10\" y=\"-9\"/><text x=\"214\">exposed: blocked</text>"
       "<line class=\"ideal\" x1=\"340\" x2=\"340\" y1=\"-10\" y2=\"2\"/><text x=\"346\">ideal (Eq. 1)</text></g>\n</svg>\n";
  return o;
}

Bar bar_of(const std::string& label, const RankFigures& t) {
  Bar b;
  b.label = label;
  b.hidden = t.hidden_ns;
  b.tinit = std::min(t.tinit_ns, t.duration_ns - t.hidden_ns);
  b.blocked = std::min(t.blocked_ns, std::max(0.0, t.duration_ns - t.hidden_ns - b.tinit));
  b.other = std::max(0.0, t.duration_ns - t.hidden_ns - b.tinit - b.blocked);
  b.ideal = t.ideal_ns;
  return b;
}

const char* kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 20px; } h2 { font-size: 17px; margin-top: 28px; } h3 { font-size: 15px; margin-bottom: 4px; }
table { border-collapse: collapse; margin: 6px 0; } td, th { padding: 2px 10px; text-align: right; border-bottom: 1px solid #ddd; }
td:first-child, th:first-child { text-align: left; }
.notes li { color: #8a4b00; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
svg .grid { stroke: #e4e4e4; } svg .axis { font-size: 12px; }
svg .return { stroke: #b06000; stroke-dasharray: 5 3; } svg .end { stroke: #555; stroke-dasharray: 2 3; }
svg .arrival line, svg line.arrival { stroke: #1f62b4; stroke-width: 1.5; } svg .arrival circle, svg circle.arrival { fill: #1f62b4; }
svg .access line { stroke: #c2185b; stroke-width: 1.5; } svg .access path, svg path.access { fill: #c2185b; }
svg .empty { fill: #777; font-size: 13px; }
svg rect.hidden { fill: #2e8b57; } svg rect.tinit { fill: #f0a030; } svg rect.blocked { fill: #d0453c; }
svg line.ideal { stroke: #000; stroke-width: 2; }
.site { border-top: 1px solid #ccc; margin-top: 18px; }
code { background: #f4f4f4; padding: 0 3px; }
pre.section { white-space: pre-wrap; font-size: 12.5px; }
)";

}  // namespace

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string render_html(const std::vector<Run>& runs) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>tnbc report</title><style>";
  o += kStyle;
  o += "</style></head><body>\n";
  if (runs.empty() || runs.front().worlds.empty()) return o + "<p>nothing to report</p></body></html>\n";
  const Run& run = runs.front();
  o += "<h1>tnbc report: " + esc(run.source) + "</h1>\n";
  o += "<p>Definitions of every figure: docs/reports.md. Shares are of the collective's duration (call to its last "
       "piece), summed over calls and ranks; the run is MPI_Init to MPI_Finalize.</p>\n";
  if (runs.size() > 1) {
    o += "<h2>Hidden and exposed communication per pass</h2>\n";
    std::vector<Bar> bars;
    for (const Run& r : runs)
      if (!r.worlds.empty() && r.worlds.front().summary_version >= 2) bars.push_back(bar_of(r.label, r.worlds.front().total()));
    o += bars_svg(bars, "compare");
    o += "<table><tr><th>pass</th><th>collectives</th><th>hidden</th><th>Tinit</th><th>blocked</th><th>ideal</th>"
         "<th>of the run</th><th>source</th></tr>\n";
    for (const Run& r : runs) {
      if (r.worlds.empty()) continue;
      const World& w = r.worlds.front();
      const RankFigures t = w.total();
      o += "<tr><td>" + esc(r.label) + "</td><td>" + f("%.3f s", t.duration_ns / 1e9) + "</td><td>" +
           percent(share(t.hidden_ns, t.duration_ns)) + "</td><td>" + percent(share(t.tinit_ns, t.duration_ns)) +
           "</td><td>" + percent(share(t.blocked_ns, t.duration_ns)) + "</td><td>" +
           (t.ideal_ns ? percent(share(*t.ideal_ns, w.ideal_duration_ns())) : "n/a") + "</td><td>" +
           percent(share(t.duration_ns, w.wall_total_ns())) + "</td><td><code>" + esc(r.source) + "</code></td></tr>\n";
    }
    o += "</table>\n";
    for (const Site& s : run.worlds.front().sites) {
      std::vector<Bar> site_bars;
      for (const Run& r : runs)
        if (!r.worlds.empty())
          for (const Site& x : r.worlds.front().sites)
            if (same_site(s, x)) site_bars.push_back(bar_of(r.label, x.total()));
      o += "<h3>" + esc(s.kind + " at " + s.where()) + "</h3>\n" + bars_svg(site_bars, "compare-site");
    }
  }
  for (const World& w : run.worlds) {
    const RankFigures t = w.total();
    const double wall = w.wall_total_ns();
    o += "<h2>" + std::string(w.spawned ? "Spawned world" : "Run") + ": " + std::to_string(w.ranks.size()) + " of " +
         std::to_string(w.size) + " ranks, mode " + esc(w.mode) + "</h2>\n<p><code>" + esc(w.dir) + "</code>" +
         (w.run_id.empty() ? "" : ", run " + esc(w.run_id)) + "</p>\n";
    if (w.summary_version >= 2)
      o += "<table><tr><th></th><th>time</th><th>of the collectives</th><th>of the run</th></tr>"
           "<tr><td>collectives (duration)</td><td>" + f("%.3f s", t.duration_ns / 1e9) + "</td><td>100%</td><td>" +
           percent(share(t.duration_ns, wall)) + "</td></tr><tr><td>hidden</td><td>" + f("%.3f s", t.hidden_ns / 1e9) +
           "</td><td>" + percent(share(t.hidden_ns, t.duration_ns)) + "</td><td>" + percent(share(t.hidden_ns, wall)) +
           "</td></tr><tr><td>Tinit (in the calls)</td><td>" + f("%.3f s", t.tinit_ns / 1e9) + "</td><td>" +
           percent(share(t.tinit_ns, t.duration_ns)) + "</td><td>" + percent(share(t.tinit_ns, wall)) +
           "</td></tr><tr><td>blocked after the return</td><td>" + f("%.3f s", t.blocked_ns / 1e9) + "</td><td>" +
           percent(share(t.blocked_ns, t.duration_ns)) + "</td><td>" + percent(share(t.blocked_ns, wall)) +
           "</td></tr><tr><td>ideal (Eq. 1)</td><td>" + (t.ideal_ns ? f("%.3f s", *t.ideal_ns / 1e9) : "n/a") +
           "</td><td>" + (t.ideal_ns ? percent(share(*t.ideal_ns, w.ideal_duration_ns())) : "n/a") + "</td><td>" +
           (t.ideal_ns ? percent(share(*t.ideal_ns, wall)) : "n/a") + "</td></tr></table>\n";
    if (!w.notes.empty()) {
      o += "<ul class=\"notes\">";
      for (const std::string& n : w.notes) o += "<li>" + esc(n) + "</li>";
      o += "</ul>\n";
    }
    // Where the ranks ran and how each kind's calls ended (the text's lines).
    const std::string placement = placement_text(w);
    o += "<pre class=\"section\" id=\"collectives\">" + esc(placement + (placement.empty() ? "" : "\n") + collectives_text(w)) +
         "</pre>\n";
    for (std::size_t i = 0; i < w.sites.size(); ++i) {
      const Site& s = w.sites[i];
      const RankFigures r = s.total();
      o += "<div class=\"site\"><h3>" + std::to_string(i + 1) + ". " + esc(s.kind) + " at " + esc(s.where()) + "</h3>\n";
      o += "<table><tr><th>calls</th><th>bytes/call</th><th>duration/call</th><th>Tinit</th><th>blocked</th>"
           "<th>hidden</th><th>ideal</th><th>early / in the call / plain MPI</th></tr><tr><td>" +
           f("%.0f", r.calls) + "</td><td>" + (r.calls > 0 ? format_bytes(r.bytes / r.calls) : "-") + "</td><td>" +
           (r.calls > 0 ? milliseconds(r.duration_ns / r.calls) : "-") + "</td><td>" +
           percent(share(r.tinit_ns, r.duration_ns)) + "</td><td>" + percent(share(r.blocked_ns, r.duration_ns)) +
           "</td><td>" + percent(share(r.hidden_ns, r.duration_ns)) + "</td><td>" +
           (r.ideal_ns ? percent(share(*r.ideal_ns, r.duration_ns)) : "n/a") + "</td><td>" + f("%.0f", r.early) + " / " +
           f("%.0f", r.in_call) + " / " + f("%.0f", r.plain) + "</td></tr></table>\n";
      o += timeline_svg(s, i) + "</div>\n";
    }
    for (const Section& s : w.sections) o += "<h2>" + esc(s.title) + "</h2>\n" + s.html + "\n";
  }
  o += "<p id=\"rendered\"></p>\n<script>\n"
       "// How many timelines the browser laid out (read back by tests/report/browser_test.py).\n"
       "const shown = [...document.querySelectorAll('svg.timeline')].filter(s => s.getBoundingClientRect().width > 0);\n"
       "document.getElementById('rendered').dataset.timelines = shown.length;\n"
       "// And how many rows of the node-level priorities table (tools/report_node.cc).\n"
       "document.getElementById('rendered').dataset.nodeRows = [...document.querySelectorAll('table.node-priorities "
       "tr.node-site')].filter(r => r.getBoundingClientRect().height > 0).length;\n"
       "// And the predicted section's picture (tools/predict_picture.cc): its lines and points laid out.\n"
       "const drawn = (sel) => [...document.querySelectorAll(sel)].filter(e => { const b = e.getBoundingClientRect(); "
       "return b.width > 0 || b.height > 0; }).length;\n"
       "document.getElementById('rendered').dataset.whatIfLines = drawn('svg.what-if polyline.what-if-line');\n"
       "document.getElementById('rendered').dataset.whatIfPoints = drawn('svg.what-if circle');\n"
       "</script>\n</body></html>\n";
  return o;
}

}  // namespace tnbc::tools::report
