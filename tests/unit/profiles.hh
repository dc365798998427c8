// Profiles as `tnbc merge` writes them (format "tnbc-profile"), from per-rank values, for the
// unit tests of mode optimize's decisions (trace/gain.hh, trace/plain_run.hh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace tnbc::test {

constexpr double kMs = 1e6;  // ns per ms
constexpr std::uint64_t kMiB = 1024 * 1024;

// One rank's values at a site, as `tnbc merge` writes them (nullopt: null in the file).
struct RankValues {
  int calls = 10;
  int traced = 10;
  bool receives = true;
  std::uint64_t bytes = 4 * kMiB;
  std::optional<double> dur_ns = 20 * kMs;
  std::optional<double> curc_ns = 0.05 * kMs;
  std::optional<double> r_crc = 4.0 * 1024 * kMiB;  // 4 GiB/s: 4 MiB in ~1 ms
  std::vector<double> gaps_ns = {0.3 * kMs, 0.3 * kMs, 0.3 * kMs};
  std::vector<std::string> keys = {"0x00000000000000a1"};
};

inline std::string num(const std::optional<double>& v) {
  if (!v) return "null";
  std::ostringstream o;
  o.precision(17);
  o << *v;
  return o.str();
}

// One alltoall site of a profile over `comm_size` ranks, listing the ranks `ids` (default
// 0..ranks.size()-1) with `ranks`' values. `estimates` false: the fields an older `tnbc merge`
// did not write are left out.
inline std::string site_text(const std::vector<RankValues>& ranks, bool estimates, const std::string& site, std::size_t comm_size,
                      std::vector<int> ids = {}) {
  std::ostringstream o;
  if (ids.empty())
    for (std::size_t r = 0; r < ranks.size(); ++r) ids.push_back(static_cast<int>(r));
  o << " {\"site\": \"" << site << "\", \"kind\": \"alltoall\", \"comm_size\": " << comm_size
    << ", \"frames\": [{\"module\": \"app\", \"offset\": \"0x10\", \"symbol\": \"main\"}], \"sub_messages\": 4,"
    << " \"consensus_order\": [0, 1, 2, 3], \"ranks\": [";
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankValues& v = ranks[r];
    o << (r ? ",\n" : "\n") << "  {\"rank\": " << ids[r] << ", \"receives\": " << (v.receives ? "true" : "false")
      << ", \"order\": [0, 1, 2, 3], \"keys\": [";
    for (std::size_t k = 0; k < v.keys.size(); ++k) o << (k ? ", " : "") << "\"" << v.keys[k] << "\"";
    o << "]";
    if (estimates) {
      o << ", \"calls\": " << v.calls << ", \"traced\": " << v.traced << ", \"bytes_per_call\": " << v.bytes
        << ", \"duration_ns\": " << num(v.dur_ns) << ", \"curc_ns\": " << num(v.curc_ns)
        << ", \"r_crc_bytes_per_s\": " << num(v.r_crc) << ", \"gaps_ns\": [";
      for (std::size_t k = 0; k < v.gaps_ns.size(); ++k) o << (k ? ", " : "") << num(v.gaps_ns[k]);
      o << "]";
    }
    o << "}";
  }
  o << "]}";
  return o.str();
}

inline std::string profile_of(std::size_t np, const std::vector<std::string>& sites) {
  std::string o = "{\"format\": \"tnbc-profile\", \"version\": 1, \"np\": " + std::to_string(np) +
                  ", \"executable\": \"/x/app\", \"sites\": [\n";
  for (std::size_t k = 0; k < sites.size(); ++k) o += (k ? ",\n" : "") + sites[k];
  return o + "]}\n";
}

}  // namespace tnbc::test
