#include "tools/predict_profile.hh"

#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "runtime/config.hh"
#include "runtime/json.hh"
#include "runtime/model/estimate.hh"
#include "runtime/policy.hh"
#include "trace/gain.hh"
#include "trace/profile.hh"

namespace tnbc::tools {

const char* scaling_name(Scaling s) {
  switch (s) {
    case Scaling::Strong: return "strong";
    case Scaling::Weak: return "weak";
    case Scaling::Fixed: return "fixed";
  }
  return "?";
}

std::string scaling_rule(Scaling s) {
  switch (s) {
    case Scaling::Strong:
      return "strong scaling: the program's data is fixed; exchanges' blocks shrink as (np/N)^2, T_CURC as np/N, "
             "T_CRC with the bytes received";
    case Scaling::Weak:
      return "weak scaling: each rank's data is fixed; exchanges' blocks shrink as np/N, T_CURC stays, T_CRC with the "
             "bytes received";
    case Scaling::Fixed:
      return "fixed messages: every block keeps its size (a micro-benchmark); T_CURC stays, T_CRC grows with the bytes "
             "received";
  }
  return "";
}

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "tnbc: predict: %s\n", msg.c_str());
  return 2;
}

bool exchange_kind(Kind k) {
  return k == Kind::Alltoall || k == Kind::Alltoallv || k == Kind::Allgather || k == Kind::Allgatherv;
}

// A read order of `n0` sub-messages stretched to `n`: sub-message s at n takes the place of s * n0 / n.
std::vector<int> stretch(const std::vector<int>& order0, int n0, int n) {
  if (order0.empty() || n0 < 1 || n < 1) return {};
  std::vector<double> pos0(static_cast<std::size_t>(n0), static_cast<double>(n0));
  for (std::size_t i = 0; i < order0.size(); ++i)
    if (order0[i] >= 0 && order0[i] < n0) pos0[static_cast<std::size_t>(order0[i])] = static_cast<double>(i);
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return pos0[static_cast<std::size_t>(static_cast<long long>(a) * n0 / n)] <
           pos0[static_cast<std::size_t>(static_cast<long long>(b) * n0 / n)];
  });
  return order;
}

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(v));
  return b;
}

// What a rank receives per call from each peer in the traced run (exchanges).
struct Blocks {
  double mean_total = 0;        // bytes received per call, mean over the ranks that called the site
  std::vector<double> per_peer; // [dst * np + src] from sub_bytes; empty: not in the profile
  double least = 0, most = 0;   // the smallest and largest block between two ranks
  bool uneven = false;          // blocks differ by more than kEvenBlocks
  bool filled = false;          // ranks that did not call the site took the mean of the others' rows
  std::string filled_note;
};

constexpr double kEvenBlocks = 0.01;  // blocks within 1 % of each other are simulated as the mean

Blocks traced_blocks(const trace::ProfileSite& ps, int np) {
  Blocks b;
  int callers = 0;
  for (const auto& r : ps.ranks)
    if (r.bytes_per_call) b.mean_total += static_cast<double>(*r.bytes_per_call), ++callers;
  if (callers > 0) b.mean_total /= callers;
  const auto n = static_cast<std::size_t>(np);
  if (ps.sub_messages != np) return b;
  std::vector<double> m(n * n, -1), mean_row(n, 0);
  int rows = 0;
  for (const auto& r : ps.ranks) {
    if (r.sub_bytes.size() != n) return b;  // an older profile (or a rank without them): the mean
    const auto row = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(r.rank) * n);
    std::copy(r.sub_bytes.begin(), r.sub_bytes.end(), m.begin() + row);
    for (std::size_t k = 0; k < n; ++k) mean_row[k] += r.sub_bytes[k];
    ++rows;
  }
  if (rows == 0) return b;
  for (double& x : mean_row) x /= rows;
  std::string missing;
  for (std::size_t d = 0; d < n; ++d)
    if (m[d * n] < 0) {
      std::copy(mean_row.begin(), mean_row.end(), m.begin() + static_cast<std::ptrdiff_t>(d * n));
      missing += (missing.empty() ? "" : ", ") + std::to_string(d);
    }
  if (!missing.empty()) {
    b.filled = true;
    b.filled_note = "rank(s) " + missing + " did not call it here: their blocks are the mean of the others'";
  }
  b.least = b.most = -1;
  for (std::size_t d = 0; d < n; ++d)
    for (std::size_t s = 0; s < n; ++s) {
      if (s == d) continue;
      const double x = m[d * n + s];
      b.least = b.least < 0 ? x : std::min(b.least, x);
      b.most = std::max(b.most, x);
    }
  b.uneven = b.most > 0 && b.most - std::max(0.0, b.least) > kEvenBlocks * b.most;
  b.per_peer = std::move(m);
  return b;
}

}  // namespace

void mark_cold_calls(std::vector<SimSite>& sites, const std::vector<Staging>& staging,
                     const std::vector<SimSite>& left_out, int np) {
  // The pool's size class of a rank's staging (runtime/pool.hh: powers of two): an exchange
  // stages what it sends to the others, a broadcast's root the message.
  const auto size_class = [np](const SimSite& s) {
    return staging_size_class(exchange_kind(s.kind) ? s.bytes * std::max(0, np - 1) : s.bytes);
  };
  std::set<double> warm;  // classes the calls left out (--skip-first) made already
  for (std::size_t i = 0; i < sites.size(); ++i)
    if (staging[i].skipped) warm.insert(size_class(sites[i]));
  for (const SimSite& s : left_out) warm.insert(size_class(s));
  std::vector<std::size_t> by_first(sites.size());
  std::iota(by_first.begin(), by_first.end(), std::size_t{0});
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](std::size_t a, std::size_t b) { return staging[a].first < staging[b].first; });
  for (std::size_t i : by_first)
    if (warm.insert(size_class(sites[i])).second) sites[i].cold_calls = 1;
}

std::vector<std::vector<double>> leading_calls(const trace::LoadedProfile& p, int k, std::vector<std::string>& notes) {
  if (k < 1) return {};
  std::vector<std::vector<double>> dropped(p.sites.size(), std::vector<double>(static_cast<std::size_t>(p.np), 0));
  for (const trace::ProfileSite& ps : p.sites)
    for (const auto& r : ps.ranks)
      if (r.first_calls.empty() && r.calls.value_or(0) > 0) {
        notes.push_back(p.path + " does not say where each site's calls fall in the program (no first_calls: merged "
                        "by an older tnbc): --skip-first " + std::to_string(k) + " ignored, every call simulated "
                        "(merge the trace again)");
        return {};
      }
  std::vector<std::string> kinds;
  for (const trace::ProfileSite& ps : p.sites)
    if (std::find(kinds.begin(), kinds.end(), ps.kind) == kinds.end()) kinds.push_back(ps.kind);
  for (const std::string& kind : kinds)
    for (int rank = 0; rank < p.np; ++rank) {
      std::vector<std::pair<std::uint64_t, std::size_t>> seen;  // (place in the rank's collectives, site)
      for (std::size_t i = 0; i < p.sites.size(); ++i) {
        if (p.sites[i].kind != kind) continue;
        for (const auto& r : p.sites[i].ranks)
          if (r.rank == rank)
            for (std::uint64_t seq : r.first_calls) seen.emplace_back(seq, i);
      }
      std::sort(seen.begin(), seen.end());
      for (std::size_t j = 0; j < seen.size() && j < static_cast<std::size_t>(k); ++j)
        dropped[seen[j].second][static_cast<std::size_t>(rank)] += 1;
    }
  return dropped;
}

Result<std::vector<SimSite>> sites_at(const trace::LoadedProfile& p, int np, Scaling s, std::vector<std::string>& notes,
                                      double data_scale, int skip_first) {
  if (s == Scaling::Strong && np < p.np)
    return Status::error("--np " + std::to_string(np) + " is below the profile's " + std::to_string(p.np) +
                         " processes: under strong scaling each rank would hold more data than in the traced run "
                         "(give N >= " + std::to_string(p.np) + ", or --scaling weak or fixed)");
  const std::vector<std::vector<double>> dropped = leading_calls(p, skip_first, notes);
  std::vector<SimSite> out;
  std::vector<Staging> staging;  // per simulated site: where its first simulated call falls
  std::vector<SimSite> left_out;  // sites whose calls were all left out (--skip-first)
  for (std::size_t psi = 0; psi < p.sites.size(); ++psi) {
    const trace::ProfileSite& ps = p.sites[psi];
    const std::optional<Kind> kind = kind_named(ps.kind);
    if (!kind || !(exchange_kind(*kind) || *kind == Kind::Bcast)) {
      notes.push_back("site " + hex(ps.site) + " (" + ps.kind + ") is not simulated: tnbc does not run that collective");
      continue;
    }
    if (ps.comm_size != p.np) {
      notes.push_back("site " + hex(ps.site) + " is on a communicator of " + std::to_string(ps.comm_size) + " of " +
                      std::to_string(p.np) + " ranks: not simulated (only MPI_COMM_WORLD-sized collectives are)");
      continue;
    }
    const trace::SiteEstimate e = trace::estimate_site(ps);
    if (e.bytes <= 0) {
      notes.push_back("site " + hex(ps.site) + " received no bytes in the trace: not simulated");
      continue;
    }
    SimSite site;
    site.name = ps.where.empty() || ps.where == "?" ? hex(ps.site) : ps.where;
    site.kind = *kind;
    // Calls per rank, averaged over all the profile's ranks: where ranks reach one collective from
    // different sites (IS's rank(): rank 0's call and the others' were compiled apart), each
    // site holds only its ranks' share of the calls; the largest count would count them twice.
    double calls = 0, most = 0, least = -1, skipped = 0;
    for (const auto& r : ps.ranks) {
      const double drop = dropped.empty() ? 0.0 : dropped[psi][static_cast<std::size_t>(r.rank)];
      skipped += drop;
      const double c = std::max(0.0, static_cast<double>(r.calls.value_or(0)) - drop);
      calls += c;
      most = std::max(most, c);
      least = least < 0 ? c : std::min(least, c);
    }
    calls /= p.np;
    if (ps.ranks.size() < static_cast<std::size_t>(p.np)) least = 0;
    if (most != least)
      notes.push_back("site " + (ps.where.empty() || ps.where == "?" ? hex(ps.site) : ps.where) +
                      ": its ranks called it " + fmt(least) + " to " + fmt(most) +
                      " times (the collective is reached from other sites on other ranks): simulated " + fmt(calls) +
                      " times, the mean over the " + std::to_string(p.np) + " ranks");
    // A site whose calls were all left out is not simulated, but it made its staging block.
    const bool all_left_out = skipped > 0 && calls <= 0;
    const std::size_t notes_before = notes.size();
    if (skipped > 0 && !all_left_out)
      notes.push_back("site " + (ps.where.empty() || ps.where == "?" ? hex(ps.site) : ps.where) + ": " +
                      fmt(skipped / p.np) + " call(s) per rank left out (--skip-first " + std::to_string(skip_first) +
                      ")");
    site.calls = calls > 0 ? calls : 1.0;
    Staging st{std::numeric_limits<std::uint64_t>::max(), skipped > 0};
    for (const auto& r : ps.ranks) {
      const auto drop = static_cast<std::size_t>(dropped.empty() ? 0.0 : dropped[psi][static_cast<std::size_t>(r.rank)]);
      if (drop < r.first_calls.size()) st.first = std::min(st.first, r.first_calls[drop]);
    }
    const double n0 = p.np, n = np;
    const double curc_scale = (s == Scaling::Strong ? n0 / n : 1.0) * data_scale;
    double received0 = e.bytes, received = e.bytes * data_scale;
    if (exchange_kind(*kind)) {
      // A block at N is the traced one times this (per peer: the data over np^2 resp. np).
      const double rule = s == Scaling::Strong ? (n0 / n) * (n0 / n) : s == Scaling::Weak ? n0 / n : 1.0;
      const Blocks blocks = traced_blocks(ps, p.np);
      received0 = blocks.mean_total;
      site.bytes = std::max(1.0, std::round(blocks.mean_total / n0 * data_scale * rule));
      received = site.bytes * n;
      const std::string name = ps.where.empty() || ps.where == "?" ? hex(ps.site) : ps.where;
      if (!blocks.per_peer.empty() && blocks.uneven) {
        site.blocks0 = blocks.per_peer;
        for (double& b : site.blocks0) b *= data_scale;
        site.np0 = p.np;
        site.block_scale = rule;
        site.blocks = "per_peer";
        notes.push_back("site " + name + " (" + ps.kind + "): blocks per peer from the profile, " +
                        format_bytes(blocks.least) + " to " + format_bytes(blocks.most) + " in the traced run (mean " +
                        format_bytes(blocks.mean_total / n0) + ")" + (blocks.filled ? "; " + blocks.filled_note : ""));
      } else if (blocks.per_peer.empty() && trace::blocks_can_differ(ps.kind)) {
        site.blocks = "mean";
        notes.push_back("site " + name + " (" + ps.kind + "): the profile has no blocks per peer (sub_bytes: merged "
                        "by an older tnbc): every block simulated as the ranks' mean, " + format_bytes(site.bytes) +
                        "; uneven blocks (a rank receiving more than the others) are not seen (merge the trace again)");
      }
      site.order = stretch(ps.consensus, p.np, np);
    } else {
      site.bytes = e.bytes * data_scale;
      site.order = ps.consensus;  // chunks: the same cut at any N when the segments agree
    }
    site.curc_ns = e.curc_ns.value_or(0) * curc_scale;
    site.crc_ns = e.crc_ns.value_or(0) * (received0 > 0 ? received / received0 : 1.0);
    if (!e.curc_ns)
      notes.push_back("site " + site.name + ": no rank touched the received data in the trace: T_CURC = T_CRC = 0 "
                      "(nothing to overlap)");
    if (all_left_out) {
      notes.resize(notes_before);
      notes.push_back("site " + site.name + " (" + hex(ps.site) + "): all its calls are among the first " +
                      std::to_string(skip_first) + " " + ps.kind + " calls (--skip-first): not simulated");
      left_out.push_back(site);
      continue;
    }
    out.push_back(site);
    staging.push_back(st);
  }
  mark_cold_calls(out, staging, left_out, np);
  if (out.empty()) return Status::error(p.path + " has no call site of MPI_Alltoall(v), MPI_Allgather(v) or MPI_Bcast on "
                                        "MPI_COMM_WORLD with received bytes: nothing to predict");
  return out;
}

std::string mpi_family(const std::string& version) {
  std::string v = version.substr(0, version.find('\n'));
  auto major_minor = [&](std::size_t from) {
    std::size_t i = v.find_first_of("0123456789", from);
    if (i == std::string::npos) return std::string("?");
    std::size_t j = v.find_first_not_of("0123456789", i);
    if (j != std::string::npos && v[j] == '.') j = v.find_first_not_of("0123456789", j + 1);
    return v.substr(i, j == std::string::npos ? std::string::npos : j - i);
  };
  if (v.rfind("Open MPI", 0) == 0) return "Open MPI " + major_minor(8);
  if (v.rfind("MPICH", 0) == 0) return "MPICH " + major_minor(5);
  return v.substr(0, 40);
}

std::string mpi_misfit(const model::Machine& m, const std::string& built_with) {
  if (m.mpi_library.empty()) return "";
  const std::string a = mpi_family(m.mpi_library), b = mpi_family(built_with);
  if (a == b) return "";
  return "the machine file was calibrated with " + a + ", this tnbc runs " + b +
         ": its costs describe another MPI library (run `tnbc calibrate` with this build's MPI)";
}

std::string program_misfit(const trace::LoadedProfile& p, const std::string& profile_path, const std::string& program) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!program.empty()) {
    const fs::path want = fs::weakly_canonical(program, ec);
    if (ec || want.string() != p.executable)
      return profile_path + " was traced from " + p.executable + ", not " + program + ": trace this program first";
  }
  struct stat exe{}, prof{};
  if (stat(p.executable.c_str(), &exe) == 0 && stat(profile_path.c_str(), &prof) == 0 &&
      (exe.st_mtim.tv_sec > prof.st_mtim.tv_sec ||
       (exe.st_mtim.tv_sec == prof.st_mtim.tv_sec && exe.st_mtim.tv_nsec > prof.st_mtim.tv_nsec)))
    return p.executable + " was rebuilt after " + profile_path +
           " was written: the profile describes another version of the program (trace it again)";
  return "";
}

namespace {

std::string built_mpi() {
#if defined(OMPI_MAJOR_VERSION)
  return "Open MPI v" + std::to_string(OMPI_MAJOR_VERSION) + "." + std::to_string(OMPI_MINOR_VERSION) + "." +
         std::to_string(OMPI_RELEASE_VERSION);
#elif defined(MPICH_VERSION)
  return std::string("MPICH Version: ") + MPICH_VERSION;
#else
  return "";
#endif
}

struct Figures {
  double blocking_ns = 0, call_ns[kVariants] = {}, total_ns[kVariants] = {};
};

double share(double saved, double tcomm) { return tcomm > 0 ? saved / tcomm : 0; }

}  // namespace

int cmd_predict_profile(const std::vector<std::string>& args) {
  std::string profile_path, machine_path, platform_path, json_path, program;
  int np = 0, per_node = 0, traced_per_node = 0;
  double data_scale = 1;
  int skip_first = 0;
  bool any_version = false;
  Scaling scaling = Scaling::Strong;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string { return i + 1 < args.size() ? args[++i] : std::string(); };
    auto count = [&](const std::string& v, int& out) {
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 1 << 20) return false;
      out = static_cast<int>(n);
      return true;
    };
    if (a == "--profile") profile_path = value();
    else if (a == "--machine") machine_path = value();
    else if (a == "--platform") platform_path = value();
    else if (a == "--json") json_path = value();
    else if (a == "--program") program = value();
    else if (a == "--any-version") any_version = true;
    else if (a == "--skip-first") {
      const std::string v = value();
      char* end = nullptr;
      const long k = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || k < 0 || k > static_cast<long>(trace::kFirstCalls))
        return fail("--skip-first wants a number of calls from 0 to " + std::to_string(trace::kFirstCalls) +
                    " (the profile places a site's first " + std::to_string(trace::kFirstCalls) + "), not '" + v + "'");
      skip_first = static_cast<int>(k);
    } else if (a == "--data-scale") {
      const std::string v = value();
      char* end = nullptr;
      data_scale = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(data_scale > 0) || !std::isfinite(data_scale))
        return fail("--data-scale wants a positive number (the traced data times it), not '" + v + "'");
    }
    else if (a == "--np") {
      const std::string v = value();
      if (!count(v, np)) return fail("--np wants a number of processes from 1 to 1048576, not '" + v + "'");
    } else if (a == "--ranks-per-node") {
      const std::string v = value();
      if (!count(v, per_node)) return fail("--ranks-per-node wants a number from 1, not '" + v + "'");
    } else if (a == "--traced-ranks-per-node") {
      const std::string v = value();
      if (!count(v, traced_per_node)) return fail("--traced-ranks-per-node wants a number from 1, not '" + v + "'");
    } else if (a == "--scaling") {
      const std::string v = value();
      if (v == "strong") scaling = Scaling::Strong;
      else if (v == "weak") scaling = Scaling::Weak;
      else if (v == "fixed") scaling = Scaling::Fixed;
      else return fail("--scaling is strong, weak or fixed, not '" + v + "'");
    } else return fail("unknown option '" + a + "'");
  }
  if (profile_path.empty() || machine_path.empty() || np < 1)
    return fail("usage: tnbc predict --profile APP.profile --machine MACHINE.json --np N [--ranks-per-node M] "
                "[--platform FILE] [--scaling strong|weak|fixed] [--data-scale X] [--skip-first K] [--traced-ranks-per-node M] [--program EXE] [--any-version] [--json FILE]");
  Result<trace::LoadedProfile> prof = trace::read_profile(profile_path);
  if (!prof.ok()) return fail(prof.status().message());
  if (std::string why = program_misfit(prof.value(), profile_path, program); !why.empty() && !any_version)
    return fail(why + " (--any-version: predict anyway)");
  Result<model::Machine> mach = model::read_machine(machine_path);
  if (!mach.ok()) return fail(mach.status().message());
  if (std::string why = mpi_misfit(mach.value(), built_mpi()); !why.empty()) return fail(machine_path + ": " + why);
  Platform platform;
  if (platform_path.empty()) {
    platform = from_machine(mach.value(), machine_path);
  } else {
    Result<Platform> p = read_platform(platform_path);
    if (!p.ok()) return fail(p.status().message());
    platform = p.value();
  }
  if (per_node < 1) per_node = std::min(np, platform.xml.empty() ? platform.cores : 1);
  if (std::string why = platform_misfit(platform, np, per_node); !why.empty()) return fail(why);
  std::vector<std::string> notes;
  Result<std::vector<SimSite>> sites = sites_at(prof.value(), np, scaling, notes, data_scale, skip_first);
  if (!sites.ok()) return fail(sites.status().message());

  // CPU: the profile's T_CURC and T_CRC are wall times of the traced run; on a node with more
  // ranks than cores (the machine file's CPUs) they hold the sharing already. The simulation
  // shares its platform's cores itself, so it takes them as CPU work: divided by the traced
  // node's oversubscription.
  // Default: the machine file's placement (the trace run's own machine, or `tnbc calibrate` in
  // the traced placement), not the prediction's --ranks-per-node.
  if (traced_per_node < 1)
    traced_per_node = mach.value().ranks_per_node > 0 ? std::min(mach.value().ranks_per_node, prof.value().np)
                                                      : std::min(per_node, prof.value().np);
  const double traced_load =
      std::max(1.0, static_cast<double>(traced_per_node) / std::max(1, mach.value().cpus_per_node));
  if (traced_load > 1) {
    for (SimSite& s : sites.value()) s.curc_ns /= traced_load, s.crc_ns /= traced_load;
    notes.push_back("the trace ran " + std::to_string(traced_per_node) + " ranks per node on " +
                    std::to_string(mach.value().cpus_per_node) + " CPUs (the machine file): T_CURC and T_CRC are "
                    "taken as CPU work / " + fmt(traced_load) + " (--traced-ranks-per-node)");
  }
  if (platform.xml.empty() && per_node > platform.cores)
    notes.push_back(std::to_string(per_node) + " ranks per node on " + std::to_string(platform.cores) +
                    " cores: the ranks' computation and tnbc's publication share the cores (SimGrid's CPU model); " +
                    (platform.slice_s > 0
                         ? "a rank waiting in a call busy-polls, holding a core for slices of " +
                               fmt(platform.slice_s * 1e3) + " ms, and shared memory between two ranks of a node "
                               "moves " + fmt(platform.shm_fragment_B / 1024) + " KiB per handoff (platform slice)"
                         : std::string("a rank waiting in a call yields its core (platform slice 0)")));

  SimConfig cfg;
  cfg.platform = platform;
  cfg.machine = mach.value();
  cfg.np = np;
  cfg.per_node = per_node;
  const Settings settings{};
  cfg.bcast_max_segments = static_cast<int>(settings.bcast_max_segments);
  const model::PricedGuards guard = model::priced_guards(cfg.machine);
  cfg.x = execution(settings, cfg.machine);
  // A platform whose node's ranks spin in slices on fewer cores: the margin of busy polling, as a
  // machine file showing it gives the run (model::margin_of_tcomm; busy_poll.hh).
  if (platform.slice_s > 0 && platform.cores < per_node) cfg.x.margin_shared_node = cfg.x.margin_busy_poll;
  // The global route (Policy::route): blocks outside the cost model's early-return sizes run as
  // MPI's; a kind whose sizes differ between ranks (Alltoallv) runs as MPI's where no size returns
  // early on the communicator, else takes tnbc's schedule at every call. Where tnbc's schedule
  // completed in the call beats the library's call (model::own_call_bands) a call that does not
  // return early completes that way instead. Both on the run's placement, the platform's cores per
  // node, as the runtime's topology has them (until session 44 the early-return sizes took
  // max(cores, ranks per node), the simulation's world, and so left out the share of a core).
  const model::Topology run = model::Topology::block(np, per_node, std::max(1, platform.cores), 1);
  std::vector<bool> own_faster;  // per site: own_call because it beats the library's call (else the route)
  for (SimSite& s : sites.value()) {
    const model::SizeBands sizes = model::call_bands(cfg.machine, run, s.kind, cfg.x, cfg.machine.page);
    const model::SizeBands own =
        model::own_call_bands(cfg.machine, run, model::band_kind(s.kind), cfg.x, cfg.machine.page);
    const bool varying = model::band_kind(s.kind) != s.kind;
    s.own_call = own.contains(static_cast<std::size_t>(s.bytes));
    own_faster.push_back(s.own_call);
    if (!model::runs_as_mpi(sizes, varying ? std::nullopt : std::optional<std::size_t>(s.bytes))) {
      // Sizes that differ between ranks, taking tnbc's schedule: a rank whose blocks do not
      // return early completes its call through it (Policy::early_return_pays, the engine's
      // below_threshold), whether or not that beats the library's call. Matched by the mean block.
      if (varying && !sizes.contains(static_cast<std::size_t>(s.bytes))) {
        s.own_call = s.in_call = true;
        notes.push_back("site " + s.name + ": " + std::to_string(static_cast<long long>(s.bytes)) +
                        " bytes per peer (the mean block) does not return early here (" + sizes.text() +
                        "), while other sizes do: the site takes tnbc's schedule and every variant but blocking "
                        "completes in the call through it");
      }
      continue;
    }
    if (s.own_call) {
      s.in_call = true;
      notes.push_back("site " + s.name + ": " + std::to_string(static_cast<long long>(s.bytes)) +
                      " bytes per peer does not return early here (" + sizes.text() + "), and tnbc's schedule "
                      "completed in the call beats the library's call at it (" + own.text() +
                      "): every variant but blocking completes in the call so");
      continue;
    }
    s.mpi = true;
    if (varying) {
      notes.push_back("site " + s.name + ": no size returns early here (sizes differ between ranks; the model's "
                      "sizes: " + sizes.text() + "): every variant runs the MPI library's call");
    } else {
      notes.push_back("site " + s.name + ": " + std::to_string(static_cast<long long>(s.bytes)) +
                      " bytes is outside the sizes tnbc returns early at here (" + sizes.text() +
                      "): every variant runs the MPI library's call");
    }
  }
  int cold_sites = 0;
  for (const SimSite& s : sites.value()) cold_sites += s.cold_calls > 0 && !s.mpi && !s.in_call;
  if (cold_sites > 0)
    notes.push_back(
        std::to_string(cold_sites) + " site(s) make tnbc's first staging block of their size: that call copies into "
        "pages never touched (" +
        (mach.value().memcpy_cold_measured()
             ? "the machine file's memcpy_cold line, " + fmt(mach.value().memcpy_cold.ns_per_byte) + " ns/B against " +
                   fmt(mach.value().memcpy_cost.ns_per_byte) + ")"
             : std::string("the machine file has no memcpy_cold line, calibrated before it existed: priced at its "
                           "memcpy line; `tnbc calibrate` again to have it)")));
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::vector<SimResult>> res = simulate(cfg, sites.value());
  if (!res.ok()) return fail(res.status().message());
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (std::size_t i = 0; i < sites.value().size(); ++i)
    if (const SimSite& s = sites.value()[i]; s.own_call)
      notes.push_back("site " + s.name + ": tnbc's schedule completed in the call takes " +
                      fmt(res.value()[i].own.call_ns / 1e6) + " ms per call against the library's " +
                      fmt(res.value()[i].v[0].call_ns / 1e6) + " ms (" +
                      (own_faster[i] ? "the cost model finds it faster at " +
                                           std::to_string(static_cast<long long>(s.bytes)) + " bytes here"
                                     : std::string("the site's route, not the cost model's choice")) +
                      "): a call that does not return early completes so");

  // ---- text ----
  const auto& S = sites.value();
  const auto& R = res.value();
  std::printf("tnbc predict: %s (traced at np %d, %s) at N = %d, %d per node\n", profile_path.c_str(),
              prof.value().np, prof.value().executable.c_str(), np, per_node);
  if (data_scale != 1) std::printf("  data: the traced problem's x %g (blocks, T_CURC, T_CRC)\n", data_scale);
  if (skip_first > 0)
    std::printf("  left out: each rank's first %d call(s) of each collective kind (--skip-first: before the timed part)\n",
                skip_first);
  std::string guard_text = guard.runs < 0 ? "none measured" : std::string(model::kGuardNames[guard.runs]);
  if (guard.runs >= 0 && guard.by_size >= 0)
    guard_text += ", " + std::string(model::kGuardNames[guard.by_size]) + " per call where cheaper at its size";
  std::printf("  scaling: %s\n  platform: %s\n  machine: %s (%s), send window %d, guard %s\n",
              scaling_rule(scaling).c_str(), describe(platform).c_str(), machine_path.c_str(),
              mpi_family(cfg.machine.mpi_library).c_str(), cfg.x.window, guard_text.c_str());
  std::printf("  per call (ms): Tcomm = the blocking call; call = time in tnbc's call (Tinit); hidden = "
              "(blocking - tnbc) / Tcomm of call + CURC + CRC\n");
  std::printf("  %-28s %-9s %6s %10s %9s %9s |", "site", "kind", "calls", "bytes", "Tcomm", "CURC+CRC");
  for (int v = 1; v < kVariants; ++v) std::printf(" %-24s|", variant_name(static_cast<Variant>(v)));
  std::printf("\n  %-28s %-9s %6s %10s %9s %9s |", "", "", "", "", "", "");
  for (int v = 1; v < kVariants; ++v) std::printf(" %7s %7s %8s|", "call", "hidden", "speedup");
  std::printf("\n");
  Figures whole;
  for (std::size_t s = 0; s < S.size(); ++s) {
    const SimResult& r = R[s];
    const double tcomm = r.v[0].call_ns;
    // Too long for the column: its end, which tells sites apart (the offset or the line number).
    std::string name = S[s].name.size() <= 28 ? S[s].name : "..." + S[s].name.substr(S[s].name.size() - 25);
    std::printf("  %-28s %-9s %6.0f %10.0f %9.3f %9.3f |", name.c_str(), kind_name(S[s].kind), S[s].calls, S[s].bytes,
                tcomm / 1e6, (S[s].curc_ns + S[s].crc_ns) / 1e6);
    whole.blocking_ns += tcomm * S[s].calls;
    whole.total_ns[0] += r.v[0].total_ns * S[s].calls;
    for (int v = 1; v < kVariants; ++v) {
      const double saved = r.v[0].total_ns - r.v[v].total_ns;
      std::printf(" %7.3f %6.0f%% %7.3fx%s|", r.v[v].call_ns / 1e6, 100 * share(saved, tcomm),
                  r.v[v].total_ns > 0 ? r.v[0].total_ns / r.v[v].total_ns : 0.0,
                  r.v[v].own_call ? "o" : r.v[v].plain ? "p" : " ");
      whole.call_ns[v] += r.v[v].call_ns * S[s].calls;
      whole.total_ns[v] += r.v[v].total_ns * S[s].calls;
    }
    std::printf("\n");
  }
  std::printf("  %-28s %-9s %6s %10s %9.3f %9s |", "whole program (x calls)", "", "", "", whole.blocking_ns / 1e6, "");
  for (int v = 1; v < kVariants; ++v)
    std::printf(" %7.3f %6.0f%% %7.3fx |", whole.call_ns[v] / 1e6,
                100 * share(whole.total_ns[0] - whole.total_ns[v], whole.blocking_ns),
                whole.total_ns[v] > 0 ? whole.total_ns[0] / whole.total_ns[v] : 0.0);
  std::printf("\n  (p: optimize completes the site in the call as the MPI library's: its early return does not pay; "
              "o: in the call through tnbc's schedule, where it beats the library's call or an Alltoallv's block "
              "returns early nowhere while other sizes do)\n"
              "  whole program: the collective sections only (call + CURC + CRC per call, x calls); the rest of the "
              "program is not in the profile\n");
  for (const std::string& n : notes) std::printf("  note: %s\n", n.c_str());
  std::printf("  simulated %lld messages in %.1f s\n", R.empty() ? 0LL : R.front().messages, wall_s);

  if (!json_path.empty()) {
    std::ofstream o(json_path);
    if (!o) return fail("cannot write " + json_path);
    using json::quote;
    o.precision(12);
    o << "{\"format\": \"tnbc-predict\", \"version\": 1, \"profile\": " << quote(profile_path) << ", \"np\": " << np
      << ", \"ranks_per_node\": " << per_node << ", \"skip_first\": " << skip_first << ", \"traced_ranks_per_node\": " << traced_per_node << ", \"scaling\": \"" << scaling_name(scaling)
      << "\", \"platform\": " << quote(describe(platform)) << ", \"sites\": [";
    for (std::size_t s = 0; s < S.size(); ++s) {
      const SimResult& r = R[s];
      o << (s ? ",\n" : "\n") << " {\"site\": " << quote(S[s].name) << ", \"kind\": \"" << kind_name(S[s].kind)
        << "\", \"calls\": " << S[s].calls << ", \"bytes\": " << S[s].bytes
        << ", \"blocks\": \"" << S[s].blocks << "\", \"curc_s\": " << S[s].curc_ns / 1e9
        << ", \"crc_s\": " << S[s].crc_ns / 1e9 << ", \"blocking_s\": " << r.v[0].call_ns / 1e9
        << ", \"blocking_total_s\": " << r.v[0].total_ns / 1e9;
      if (S[s].own_call)
        o << ", \"own_call\": {\"call_s\": " << r.own.call_ns / 1e9 << ", \"total_s\": " << r.own.total_ns / 1e9 << "}";
      for (int v = 1; v < kVariants; ++v)
        o << ", \"" << variant_name(static_cast<Variant>(v)) << "\": {\"call_s\": " << r.v[v].call_ns / 1e9
          << ", \"total_s\": " << r.v[v].total_ns / 1e9
          << ", \"hidden_share\": " << share(r.v[0].total_ns - r.v[v].total_ns, r.v[0].call_ns)
          << ", \"speedup\": " << (r.v[v].total_ns > 0 ? r.v[0].total_ns / r.v[v].total_ns : 0)
          << ", \"plain\": " << (r.v[v].plain ? "true" : "false")
          << ", \"own_call\": " << (r.v[v].own_call ? "true" : "false") << "}";
      o << "}";
    }
    o << "],\n \"program\": {\"blocking_s\": " << whole.blocking_ns / 1e9
      << ", \"blocking_total_s\": " << whole.total_ns[0] / 1e9;
    for (int v = 1; v < kVariants; ++v)
      o << ", \"" << variant_name(static_cast<Variant>(v)) << "\": {\"call_s\": " << whole.call_ns[v] / 1e9
        << ", \"total_s\": " << whole.total_ns[v] / 1e9
        << ", \"hidden_share\": " << share(whole.total_ns[0] - whole.total_ns[v], whole.blocking_ns)
        << ", \"speedup\": " << (whole.total_ns[v] > 0 ? whole.total_ns[0] / whole.total_ns[v] : 0) << "}";
    o << "},\n \"notes\": [";
    for (std::size_t i = 0; i < notes.size(); ++i) o << (i ? ", " : "") << quote(notes[i]);
    o << "], \"messages\": " << (R.empty() ? 0 : R.front().messages) << ", \"wall_s\": " << wall_s << "}\n";
  }
  return 0;
}

}  // namespace tnbc::tools
