#include "tools/report_node.hh"

#include <cstdio>
#include <string>
#include <vector>

#include "tools/report_render.hh"

namespace tnbc::tools::report {

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string num(double v) { return json_number(v); }
std::string quote(const std::string& s) { return json_string(s); }

// Why arbitration ran or did not at a site, for people (the basis names: runtime/node_choice.hh).
std::string why(const NodeFigures& n) {
  const bool ran = n.calls > 0;
  std::string model;
  if (n.model_on_ns && n.model_off_ns)
    model = "; the model's first read " + fmt("%.2f ms", *n.model_on_ns / 1e6) + " with, " +
            fmt("%.2f ms", *n.model_off_ns / 1e6) + " without";
  if (n.basis == "setting") return ran ? "TNBC_NODE_PRIORITIES=on" : "TNBC_NODE_PRIORITIES=off";
  if (n.basis == "gains") return "auto: the cost model predicts an earlier first read" + model;
  if (n.basis == "no_gain") return "auto: the cost model predicts no gain above the margin" + model;
  if (n.basis == "costs")
    return "auto: the cost model predicts an earlier first read, but a later end by more (one driver at a time "
           "cannot keep the link busy: the node's CPUs are shared, each wake-up waits for one), or the program, "
           "which reads it all soon after the call, would finish no earlier" + model;
  if (n.basis == "one_sender") return "auto: no other rank of the node sends over its link in these calls";
  if (n.basis == "no_profile") return "auto: no profile (no read order worth keeping node-wide)";
  if (n.basis == "no_model") return "auto: no cost model to judge with (mode optimize: on)";
  // Summaries written before broadcasts were modelled (runtime/node_choice.hh).
  if (n.basis == "not_modelled") return "auto: the cost model has no estimate of the link's order for this kind";
  return n.basis.empty() ? std::string("(no decision recorded)") : n.basis;
}

struct Row {
  std::size_t index = 0;
  const Site* site = nullptr;
  NodeFigures total;
  std::vector<int> ran_on, off_on;
  Spread first_read_ns;  // per rank: its mean
};

}  // namespace

Section node_section(const World& w) {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < w.sites.size(); ++i) {
    Row row;
    row.index = i + 1;
    row.site = &w.sites[i];
    std::vector<double> means;
    bool any = false;
    for (const RankFigures& r : w.sites[i].ranks) {
      if (!r.node) continue;
      any = true;
      add_node_figures(row.total, *r.node);
      if (r.node->calls > 0) row.ran_on.push_back(r.rank);
      if (r.node->off_calls > 0) row.off_on.push_back(r.rank);
      if (r.node->first_read_calls > 0) means.push_back(r.node->first_read_ns_sum / r.node->first_read_calls);
    }
    if (!any) continue;
    row.first_read_ns = spread_of(means);
    rows.push_back(std::move(row));
  }
  const std::string none =
      "did not run at any call site: no call took tnbc's schedule on a communicator with two of its ranks on one "
      "node and node-level priorities enabled (calls run as plain MPI, one rank per node, TNBC_NODE_PRIORITIES=off, "
      "or auto outside mode optimize)\n";
  Section s{"node_priorities", "node-level priorities", "", "", ""};
  if (rows.empty()) {
    s.text = "  " + none;
    s.data = "{\"sites\":[]}";
    s.html = "<p class=\"node-priorities\">" + html_escape(none) + "</p>";
    return s;
  }
  s.text =
      "  per call site (# as above; ranks sharing their node with other ranks of the call's communicator): whether the\n"
      "  node's ranks arbitrated their link, sends held back (at least once) and holds that timed out (a rank of the\n"
      "  node did not move), and the time from the call until the rank had its first-read sub-message\n"
      "  (per rank mean: min/mean/max over the ranks; max: the slowest call)\n";
  s.text += "  #  arbitration                       calls on/off  held back  timed out  first read ms min/mean/max    max\n";
  std::string data = "{\"sites\":[";
  std::string html =
      "<table class=\"node-priorities\"><tr><th>#</th><th>call site</th><th>arbitration</th><th>calls on / off</th>"
      "<th>held back</th><th>hold timed out</th><th>first read (ms, per-rank mean: min / mean / max)</th>"
      "<th>slowest call</th><th>why</th></tr>\n";
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Row& r = rows[k];
    const NodeFigures& n = r.total;
    const std::string ran = n.calls > 0 ? "ran on ranks " + ranks_text(r.ran_on) : "did not run";
    const std::string first =
        r.first_read_ns.n > 0 ? fmt("%.2f", r.first_read_ns.min / 1e6) + "/" + fmt("%.2f", r.first_read_ns.mean / 1e6) + "/" +
                                    fmt("%.2f", r.first_read_ns.max / 1e6)
                              : std::string("-");
    const std::string slowest = n.first_read_calls > 0 ? fmt("%.2f", n.first_read_ns_max / 1e6) : std::string("-");
    char line[512];
    std::snprintf(line, sizeof line, "  %-3zu%-34s%-14s%-11s%-11s%-30s%s\n", r.index, ran.c_str(),
                  (fmt("%.0f", n.calls) + "/" + fmt("%.0f", n.off_calls)).c_str(), fmt("%.0f", n.holds).c_str(),
                  fmt("%.0f", n.hold_timeouts).c_str(), first.c_str(), slowest.c_str());
    s.text += line;
    s.text += "     " + r.site->kind + " at " + r.site->where() + ": " + why(n) + "\n";
    data += std::string(k ? "," : "") + "{\"site\":" + std::to_string(r.index) + ",\"kind\":" + quote(r.site->kind) +
            ",\"where\":" + quote(r.site->where()) + ",\"ran\":" + (n.calls > 0 ? "true" : "false") +
            ",\"ranks_ran\":" + quote(ranks_text(r.ran_on)) + ",\"ranks_off\":" + quote(ranks_text(r.off_on)) +
            ",\"calls\":" + num(n.calls) + ",\"off_calls\":" + num(n.off_calls) + ",\"holds\":" + num(n.holds) +
            ",\"hold_timeouts\":" + num(n.hold_timeouts) + ",\"first_read_calls\":" + num(n.first_read_calls) +
            ",\"first_read_ns\":{\"min\":" + num(r.first_read_ns.min) + ",\"mean\":" + num(r.first_read_ns.mean) +
            ",\"max\":" + num(r.first_read_ns.max) + ",\"n\":" + std::to_string(r.first_read_ns.n) + "}" +
            ",\"first_read_ns_max\":" + num(n.first_read_ns_max) + ",\"basis\":" + quote(n.basis) +
            ",\"model_first_read_on_ns\":" + (n.model_on_ns ? num(*n.model_on_ns) : "null") +
            ",\"model_first_read_off_ns\":" + (n.model_off_ns ? num(*n.model_off_ns) : "null") + "}";
    html += "<tr class=\"node-site\" data-site=\"" + std::to_string(r.index) + "\" data-ran=\"" +
            (n.calls > 0 ? "yes" : "no") + "\"><td>" + std::to_string(r.index) + "</td><td>" +
            html_escape(r.site->kind + " at " + r.site->where()) + "</td><td>" + html_escape(ran) + "</td><td>" +
            fmt("%.0f", n.calls) + " / " + fmt("%.0f", n.off_calls) + "</td><td>" + fmt("%.0f", n.holds) + "</td><td>" +
            fmt("%.0f", n.hold_timeouts) + "</td><td>" +
            html_escape(first) +
            "</td><td>" + slowest + "</td><td style=\"text-align: left\">" + html_escape(why(n)) + "</td></tr>\n";
  }
  s.data = data + "]}";
  s.html = html + "</table>";
  return s;
}

}  // namespace tnbc::tools::report
