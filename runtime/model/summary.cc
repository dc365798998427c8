#include "runtime/model/summary.hh"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "runtime/json.hh"
#include "runtime/model/inputs.hh"

namespace tnbc::model {

namespace {
std::string esc(const std::string& s) { return json::quote(s); }

std::string ns(double v) {
  if (v < 0 || !std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}
std::string signed_ns(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f", std::isfinite(v) ? v : 0.0);
  return b;
}
}  // namespace

void Summary::set_start(const Inputs& in, const std::string& problem, double ms) {
  std::ostringstream o;
  o << "\"source\": " << esc(in.source) << ", \"file\": " << esc(in.file) << ", \"file_problem\": "
    << (problem.empty() ? std::string("null") : esc(problem)) << ", \"ms\": " << ms << ",\n   \"topology\": {\"node\": [";
  for (std::size_t i = 0; i < in.world.node.size(); ++i) o << (i ? ", " : "") << in.world.node[i];
  o << "], \"cpus_per_node\": " << in.world.cpus_per_node << ", \"cpus_per_rank\": " << in.world.cpus_per_rank
    << "},\n   \"machine\": " << machine_json(in.machine);
  std::string text = o.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::lock_guard lock(mutex_);
  start_ = std::move(text);
}

void Summary::note(const std::string& key, const std::string& json_value) {
  std::lock_guard lock(mutex_);
  for (auto& [k, v] : notes_)
    if (k == key) {
      v = json_value;
      return;
    }
  notes_.emplace_back(key, json_value);
}

void Summary::record_site(const Site& s) {
  std::lock_guard lock(mutex_);
  for (Entry& e : sites_)
    if (e.s.site == s.site && e.s.decision == s.decision && e.s.basis == s.basis) return;
  sites_.push_back({s});
}

std::string Summary::json() const {
  std::lock_guard lock(mutex_);
  std::ostringstream o;
  o << "{" << (start_.empty() ? std::string("\"source\": \"none\"") : start_);
  for (const auto& [k, v] : notes_) o << ",\n   " << esc(k) << ": " << v;
  o << ",\n   \"sites\": [";
  for (std::size_t i = 0; i < sites_.size(); ++i) {
    const Site& s = sites_[i].s;
    char site[24];
    std::snprintf(site, sizeof site, "0x%016llx", static_cast<unsigned long long>(s.site));
    o << (i ? ",\n    " : "\n    ") << "{\"site\": \"" << site << "\", \"kind\": " << esc(s.kind) << ", \"where\": " << esc(s.where)
      << ", \"decision\": " << esc(s.decision) << ", \"basis\": " << esc(s.basis) << ", \"blocking_ns\": " << ns(s.blocking_ns) << ", \"model_blocking_ns\": " << ns(s.model_blocking_ns)
      << ", \"hidden_ns\": " << ns(s.hidden_ns) << ", \"cost_ns\": " << (s.hidden_ns < 0 ? "null" : signed_ns(s.cost_ns))
      << ", \"saved_ns\": " << (s.hidden_ns < 0 ? "null" : signed_ns(s.saved_ns)) << ", \"in_call_ns\": " << ns(s.in_call_ns);
    if (s.early_at_pct >= 0)
      o << ", \"early_at_pct\": " << s.early_at_pct << ", \"margin_setting\": " << esc(s.margin_setting);
    o << "}";
  }
  o << "]}";
  return o.str();
}

}  // namespace tnbc::model
