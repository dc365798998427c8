#include "tools/report_model.hh"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "runtime/config.hh"
#include "runtime/json.hh"
#include "runtime/model/machine.hh"

namespace tnbc::tools {

namespace {

namespace fs = std::filesystem;
using json::Value;

double num(const Value& v, const char* key, double otherwise = -1) { return json::number_or(v, key, otherwise); }
std::string text(const Value& v, const char* key) { return json::string_or(v, key); }

std::string ms(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", ns / 1e6);
  return b;
}

std::string us(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f us", ns / 1e3);
  return b;
}

constexpr double kMiB = 1024.0 * 1024.0;

// A machine file's cost (runtime/model/machine.hh, Line) as the model prices it (model::cost_text):
// its points where they are well-formed, else its line.
model::Line line_of(const Value& v) {
  model::Line l(num(v, "ns", 0), num(v, "ns_per_byte", 0));
  if (const Value* points = v.find("points"); points && points->type == Value::Type::Array)
    for (const Value& p : points->items)
      if (p.type == Value::Type::Array && p.items.size() == 2 && p.items[0].type == Value::Type::Number &&
          p.items[1].type == Value::Type::Number)
        l.points.push_back({p.items[0].number, p.items[1].number});
  return l;
}
std::string cost(const Value& line) { return model::cost_text(line_of(line)); }

// `parent`'s member `key` where both are JSON objects, else null.
const Value* object(const Value* parent, const char* key) {
  const Value* v = parent && parent->type == Value::Type::Object ? parent->find(key) : nullptr;
  return v && v->type == Value::Type::Object ? v : nullptr;
}

struct Summary {
  int rank = 0;
  Value model;
};

std::vector<Summary> read_models(const std::string& dir) {
  std::vector<Summary> out;
  for (const fs::path& d : {fs::path(dir), fs::path(dir) / "tnbc"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      const std::string f = e.path().filename().string();
      if (f.rfind("tnbc-summary.", 0) != 0 || f.size() < 19 || f.substr(f.size() - 5) != ".json") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::ostringstream t;
      t << in.rdbuf();
      Result<Value> v = json::parse(t.str());
      if (!v.ok()) continue;
      const Value* m = v.value().find("model");
      if (!m || m->type != Value::Type::Object) continue;
      out.push_back({static_cast<int>(num(v.value(), "rank", 0)), *m});
    }
    if (!out.empty()) break;
  }
  std::sort(out.begin(), out.end(), [](const Summary& a, const Summary& b) { return a.rank < b.rank; });
  return out;
}

std::string ranks_text(const std::set<int>& ranks, int size) {
  if (static_cast<int>(ranks.size()) >= size) return "on all ranks";
  std::string s = ranks.size() == 1 ? "on rank " : "on ranks ";
  for (int r : ranks) s += (r == *ranks.begin() ? "" : ",") + std::to_string(r);
  return s;
}

}  // namespace

std::string model_section(const std::string& dir, FunctionRef<std::string(const std::string&)> locate) {
  const std::vector<Summary> sums = read_models(dir);
  if (sums.empty()) return {};
  const Value& m0 = sums[0].model;
  std::ostringstream o;
  const std::string source = text(m0, "source");
  // Under the section's own heading ("cost model:", tools/report.cc).
  o << "  machine from " << (source == "file" ? "the machine file " + text(m0, "file") : "the start-up probe") << " (rank "
    << sums[0].rank << "'s view; every rank decides from the same machine)\n";
  if (const Value* p = m0.find("file_problem"); p && p->type == Value::Type::String)
    o << "  the machine file was not used: " << p->string << "\n";
  if (const Value* mach = m0.find("machine"); mach && mach->type == Value::Type::Object) {
    if (const Value* load = mach->find("load"); load && load->type == Value::Type::Object) {
      const double others = num(*load, "others_cpu_share"), steal = num(*load, "steal_share");
      if (model::load_disturbed(others, steal))
        o << "  " << model::load_note(others, steal) << "\n";
    }
    if (const Value* levels = mach->find("levels"))
      for (const auto& [name, l] : levels->members) {
        if (l.type != Value::Type::Object) continue;
        const double G = num(l, "G_ns_per_byte", 0);
        char b[256];
        std::snprintf(b, sizeof b, "  %s: L %s, G %.3f ns/B (%.0f MB/s), o_s %s, o_r %s, node %.3f ns/B out, %.3f in+out\n",
                      name.c_str(), us(num(l, "L_ns", 0)).c_str(), G, G > 0 ? 1e3 / G : 0.0, us(num(l, "o_s_ns", 0)).c_str(),
                      us(num(l, "o_r_ns", 0)).c_str(), num(l, "node_out_ns_per_byte", 0), num(l, "node_bi_ns_per_byte", 0));
        o << b;
        if (const double buffered = num(l, "buffered_send_bytes", 0); buffered > 0)
          o << "    a blocking send returns with up to " << format_bytes(buffered) << " still buffered for its receiver\n";
        if (const Value* shared = object(&l, "shared_cpu"))
          o << "    a computation on the CPU of a transfer loses " << cost(*shared) << " exchanged each way\n";
      }
    const Value* progress = object(mach, "progress");
    const Value* guard = object(mach, "guard");
    if (progress)
      for (const auto& [key, what] : {std::pair{"cpu_taken", "MPI_Alltoall"}, std::pair{"cpu_taken_bcast", "MPI_Bcast"}})
        if (const Value* taken = object(progress, key))
          o << "  tnbc's own " << what << ", returned early, takes " << cost(*taken)
            << " received from a computation on the CPU its rank computes on\n";
    if (const Value* cold = object(guard, "memcpy_cold")) {
      const Value* warm = object(guard, "memcpy");
      o << "  memcpy " << us(warm ? num(*warm, "ns_per_byte", 0) * kMiB : 0) << "/MiB, into pages never touched "
        << cost(*cold);
      if (const Value* huge = object(guard, "memcpy_cold_huge"))
        o << "; into tnbc's fresh staging of whole huge pages " << cost(*huge);
      o << "\n";
    }
    if (const Value* in_call = object(guard, "memcpy_in_call")) {
      o << "  tnbc's copies in a call (outside the caches, every rank at once) " << cost(*in_call);
      if (const Value* alone = object(guard, "memcpy_in_call_alone"))
        o << "; one rank alone (a broadcast's root) " << cost(*alone);
      o << "\n";
    }
    // The warm figures price a call only where tnbc's own call was measured warm too (Machine::warm):
    // one touching less than warm_below_bytes. Where they do not, they are not shown.
    model::Machine rule;
    rule.warm_below_bytes = guard ? num(*guard, "warm_below_bytes", 0) : 0;
    if (const Value* rest_warm = object(guard, "in_call_rest_warm")) rule.in_call_rest_warm = line_of(*rest_warm);
    const bool warm = rule.prices_warm();
    const double warm_below = rule.warm_below_bytes;
    auto warm_cost = [&](const Value* v) {  // "" where no warm figure prices the call (at_warm_or_cold)
      const model::Line l = warm && v ? line_of(*v) : model::Line{};
      return l.points.empty() ? std::string() : model::cost_text(l);
    };
    if (warm)
      o << "  a call touching less than " << format_bytes(warm_below)
        << " (what a rank sends and receives; a broadcast's message) is priced with the caches warm\n";
    else if (warm_below > 0)
      o << "  every call is priced with the caches emptied (tnbc's own call was not measured with the caches warm)\n";
    // Tinit's parts no other line prices: tnbc's own early return as calibrate measured it, less
    // the parts the model prices (Machine::in_call_rest, in_call_rest_bcast, in_call_rest_bcast_root),
    // and the hand-over.
    for (const auto& [key, what, by] : {std::tuple{"in_call_rest", "MPI_Alltoall", "received"},
                                        std::tuple{"in_call_rest_bcast", "MPI_Bcast (a receiver)", "received"},
                                        std::tuple{"in_call_rest_bcast_root", "MPI_Bcast (its root)", "sent"}}) {
      const Value* rest = object(guard, key);
      const bool cold = rest && line_of(*rest).measured();
      const std::string warm_rest = warm_cost(object(guard, (std::string(key) + "_warm").c_str()));
      if (!cold && warm_rest.empty()) continue;
      // Ranks sharing a node: measured warm only (tools/calibrate_own_call.hh).
      const std::string which = !cold             ? "caches warm; not measured with them emptied"
                                : warm_rest.empty() ? "caches emptied"
                                                    : "caches emptied; caches warm: " + warm_rest;
      o << "  tnbc's own " << what << ", returned early, spends " << (cold ? cost(*rest) : warm_rest) << " " << by
        << " in the call beyond the parts priced (" << which << ")\n";
    }
    if (const double handover = progress ? num(*progress, "handover_ns") : -1; handover > 0) {
      o << "  the hand-over to the progress thread at the end of a call " << us(handover);
      if (const double handover_warm = num(*progress, "handover_warm_ns"); warm && handover_warm >= 0)
        o << " (caches warm: " << us(handover_warm) << ")";
      o << "\n";
    }
    if (guard)
      for (const auto& [name, b] : guard->members) {
        if (b.type != Value::Type::Object || name == "memcpy") continue;
        const Value *hold = b.find("hold"), *pub = b.find("publish");
        if (!hold || !pub) continue;
        const std::string hold_warm = warm_cost(object(&b, "hold_warm"));
        o << "  guard " << name << ": hold " << cost(*hold) << (hold_warm.empty() ? "" : " (caches warm: " + hold_warm + ")")
          << ", publish " << cost(*pub);
        if (const Value* first_read = b.find("first_read")) o << ", the reader's first reads " << cost(*first_read);
        o << ", fault " << us(num(b, "fault_ns", 0)) << "\n";
      }
  }
  if (const Value* t = m0.find("thresholds"); t && t->type == Value::Type::Object) {
    o << "  size thresholds (MPI_COMM_WORLD):";
    for (const auto& [kind, v] : t->members)
      o << " " << kind << " " << (v.type == Value::Type::Number ? format_bytes(v.number) : std::string("never"));
    o << "\n";
  }
  // Per site and decision, over the ranks.
  struct Entry {
    Value first;
    std::set<int> ranks;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Entry> entries;
  std::vector<std::tuple<std::string, std::string, std::string>> order;
  for (const Summary& s : sums) {
    const Value* sites = s.model.find("sites");
    if (!sites || sites->type != Value::Type::Array) continue;
    for (const Value& x : sites->items) {
      auto key = std::make_tuple(text(x, "site"), text(x, "decision"), text(x, "basis"));
      Entry& e = entries[key];
      if (e.ranks.empty()) {
        e.first = x;
        order.push_back(key);
      }
      e.ranks.insert(s.rank);
    }
  }
  if (!order.empty())
    o << "  per site (the model's predicted blocking time, time in the call, hidden time and cost of an early return; the decision):\n";
  const int size = static_cast<int>(sums.size());
  for (const auto& key : order) {
    const Entry& e = entries[key];
    const Value& x = e.first;
    const std::string decision = text(x, "decision");
    // A site within the model's margins: the site trial decides its calls (runtime/site_trial.hh).
    o << "    " << text(x, "kind") << " at " << locate(text(x, "where")) << ": "
      << (decision == "plain"                   ? "PLAIN MPI"
          : decision == "in_call"               ? "COMPLETED IN THE CALL"
          : text(x, "basis") == "within_margin" ? "on trial"
                                                : "returned early")
      << " (" << text(x, "basis") << ") " << ranks_text(e.ranks, size);
    if (num(x, "hidden_ns") >= 0) {
      o << "; blocking " << ms(num(x, "blocking_ns", 0));
      // The model's own blocking time; none when TNBC_EARLY_RETURN_COST_US judged (the fixed rule).
      if (num(x, "model_blocking_ns") > 0) o << " (model " << ms(num(x, "model_blocking_ns")) << ")";
      // An early return's time in the call (Tinit), the run's own beside it in the collectives lines.
      if (num(x, "in_call_ns") > 0) o << ", in the call " << ms(num(x, "in_call_ns"));
      o << ", hidden " << ms(num(x, "hidden_ns", 0)) << ", cost " << ms(num(x, "cost_ns", 0)) << ", saved "
        << ms(num(x, "saved_ns", 0));
      // Held back by the margin alone: the margin at which it would return early (docs/settings.md).
      if (const double pct = num(x, "early_at_pct", -1); pct >= 0)
        o << "; it would return early at " << text(x, "margin_setting") << "=" << static_cast<int>(pct);
    }
    o << "\n";
  }
  return o.str();
}

}  // namespace tnbc::tools
