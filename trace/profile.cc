#include "trace/profile.hh"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "runtime/fnv1a.hh"
#include "runtime/vocabulary.hh"
#include "runtime/json.hh"

namespace tnbc::trace {

namespace {

// A reading error, thrown inside this file only (to unwind the nested reading) and returned by
// parse_profile() as a Status.
struct ProfileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using json::Value;

// Field access with messages that name the file, the field and its place in the file.
class ProfileReader {
 public:
  explicit ProfileReader(const std::string& name) : name_(name) {}

  [[noreturn]] void fail(const std::string& field, const Value& at, const std::string& problem) const {
    throw ProfileError("profile " + name_ + ": " + (field.empty() ? "" : field + ": ") + problem + " (line " +
                       std::to_string(at.line) + ", column " + std::to_string(at.column) +
                       "); the file is not a valid profile of `tnbc merge`");
  }

  const Value& member(const Value& obj, const std::string& field, const char* key, Value::Type type) const {
    const std::string path = field.empty() ? key : field + "." + key;
    const Value* v = obj.find(key);
    if (!v) fail(field, obj, std::string("required field \"") + key + "\" is missing");
    if (v->type != type) fail(path, *v, std::string("expected ") + json::type_name(type) + ", found " + json::type_name(v->type));
    return *v;
  }

  std::int64_t integer(const Value& obj, const std::string& field, const char* key, std::int64_t lo, std::int64_t hi) const {
    const Value& v = member(obj, field, key, Value::Type::Number);
    return checked_int(v, field.empty() ? key : field + "." + key, lo, hi);
  }

  std::int64_t checked_int(const Value& v, const std::string& path, std::int64_t lo, std::int64_t hi) const {
    if (v.type != Value::Type::Number || !v.integer) fail(path, v, "expected an integer");
    if (v.int_value < lo || v.int_value > hi)
      fail(path, v, std::to_string(v.int_value) + " is out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    return v.int_value;
  }

  std::uint64_t hex(const Value& v, const std::string& path) const {
    if (v.type != Value::Type::String) fail(path, v, std::string("expected a hex string, found ") + json::type_name(v.type));
    const std::string& s = v.string;
    std::uint64_t out = 0;
    if (s.size() < 3 || s.size() > 18 || s[0] != '0' || s[1] != 'x') fail(path, v, "\"" + s + "\" is not a 64-bit hex number");
    auto [p, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), out, 16);
    if (ec != std::errc() || p != s.data() + s.size()) fail(path, v, "\"" + s + "\" is not a 64-bit hex number");
    return out;
  }

  // Optional fields (estimates a newer `tnbc merge` writes): absent or null -> nullopt; any
  // other type than a number (a non-negative integer) is an error.
  std::optional<double> opt_number(const Value& obj, const std::string& field, const char* key) const {
    const Value* v = obj.find(key);
    if (!v || v->type == Value::Type::Null) return std::nullopt;
    if (v->type != Value::Type::Number) fail(field + "." + key, *v, std::string("expected a number or null, found ") + json::type_name(v->type));
    if (!(v->number >= 0)) fail(field + "." + key, *v, "expected a number >= 0");
    return v->number;
  }
  std::optional<std::uint64_t> opt_count(const Value& obj, const std::string& field, const char* key) const {
    const Value* v = obj.find(key);
    if (!v || v->type == Value::Type::Null) return std::nullopt;
    return static_cast<std::uint64_t>(checked_int(*v, field + "." + key, 0, INT64_MAX));
  }
  std::vector<double> opt_numbers(const Value& obj, const std::string& field, const char* key) const {
    std::vector<double> out;
    const Value* v = obj.find(key);
    if (!v || v->type == Value::Type::Null) return out;
    if (v->type != Value::Type::Array) fail(field + "." + key, *v, std::string("expected an array, found ") + json::type_name(v->type));
    for (std::size_t i = 0; i < v->items.size(); ++i) {
      const Value& x = v->items[i];
      if (x.type != Value::Type::Number || !(x.number >= 0))
        fail(field + "." + key + "[" + std::to_string(i) + "]", x, "expected a number >= 0");
      out.push_back(x.number);
    }
    return out;
  }

  // A list of distinct sub-message indices below n.
  std::vector<int> order(const Value& obj, const std::string& field, const char* key, int n) const {
    const Value& a = member(obj, field, key, Value::Type::Array);
    const std::string path = field + "." + key;
    std::vector<int> out;
    std::set<int> seen;
    for (std::size_t i = 0; i < a.items.size(); ++i) {
      const std::string ip = path + "[" + std::to_string(i) + "]";
      const Value& v = a.items[i];
      if (v.type != Value::Type::Number || !v.integer) fail(ip, v, "expected a sub-message index");
      if (v.int_value < 0 || v.int_value >= n)
        fail(ip, v, std::to_string(v.int_value) + " is not a sub-message index (the site has " + std::to_string(n) + ")");
      if (!seen.insert(static_cast<int>(v.int_value)).second)
        fail(ip, v, "sub-message " + std::to_string(v.int_value) + " is listed twice");
      out.push_back(static_cast<int>(v.int_value));
    }
    return out;
  }

 private:
  const std::string& name_;
};

std::string describe_frame(const Value& frame) {
  auto text = [&](const char* k) { return json::string_or(frame, k); };
  const std::string sym = text("symbol");
  return (sym.empty() ? std::string("?") : sym) + " (" + text("module") + "+" + text("offset") + ")";
}

}  // namespace

namespace {

LoadedProfile parse_profile_or_throw(const std::string& text, const std::string& name) {
  if (text.empty()) throw ProfileError("profile " + name + ": the file is empty (expected the JSON written by `tnbc merge`)");
  Result<Value> parsed = json::parse(text);
  if (!parsed.ok()) throw ProfileError("profile " + name + ": not valid JSON: " + parsed.status().message());
  const Value root = std::move(parsed).value();
  const ProfileReader r(name);
  if (root.type != Value::Type::Object) r.fail("", root, std::string("expected a JSON object, found ") + json::type_name(root.type));
  const Value* format = root.find("format");
  if (!format || format->type != Value::Type::String || format->string != kProfileFormat)
    r.fail("format", format ? *format : root,
           format && format->type == Value::Type::String ? "this is a \"" + format->string + "\" file, not a \"" + kProfileFormat + "\""
                                                         : std::string("no \"format\": \"") + kProfileFormat + "\" (not a tnbc profile)");
  const Value& version = r.member(root, "", "version", Value::Type::Number);
  if (!version.integer || version.int_value != kProfileVersion)
    throw ProfileError("profile " + name + ": version " + (version.integer ? std::to_string(version.int_value) : std::string("?")) +
                       " is not supported (this tnbc reads version " + std::to_string(kProfileVersion) +
                       "); run `tnbc merge` of this tnbc on the traces again");
  LoadedProfile p;
  p.path = name;
  p.content_hash = fnv1a64(text.data(), text.size());
  p.np = static_cast<int>(r.integer(root, "", "np", 1, 1 << 24));
  p.executable = r.member(root, "", "executable", Value::Type::String).string;
  const Value& sites = r.member(root, "", "sites", Value::Type::Array);
  std::set<std::uint64_t> site_ids;
  for (std::size_t i = 0; i < sites.items.size(); ++i) {
    const std::string sp = "sites[" + std::to_string(i) + "]";
    const Value& s = sites.items[i];
    if (s.type != Value::Type::Object) r.fail(sp, s, std::string("expected an object, found ") + json::type_name(s.type));
    ProfileSite site;
    const Value& id = r.member(s, sp, "site", Value::Type::String);
    site.site = r.hex(id, sp + ".site");
    if (!site_ids.insert(site.site).second) r.fail(sp + ".site", id, "site " + id.string + " is listed twice");
    const Value& kind = r.member(s, sp, "kind", Value::Type::String);
    if (!kind_named(kind.string)) {
      std::string known;
      for (const CollectiveInfo& c : collectives()) known += std::string(known.empty() ? "" : ", ") + c.name;
      r.fail(sp + ".kind", kind, "\"" + kind.string + "\" is not a collective tnbc handles (" + known + ")");
    }
    site.kind = kind.string;
    site.comm_size = static_cast<int>(r.integer(s, sp, "comm_size", 1, p.np));
    site.sub_messages = static_cast<int>(r.integer(s, sp, "sub_messages", 0, 1 << 24));
    const Value& frames = r.member(s, sp, "frames", Value::Type::Array);
    site.where = frames.items.empty() || frames.items[0].type != Value::Type::Object ? "?" : describe_frame(frames.items[0]);
    if (!frames.items.empty() && frames.items[0].type == Value::Type::Object) {
      const Value* m = frames.items[0].find("module");
      const Value* o = frames.items[0].find("offset");
      if (m && m->type == Value::Type::String) site.module = m->string;
      if (o && o->type == Value::Type::String) site.offset = o->string;
    }
    site.consensus = r.order(s, sp, "consensus_order", site.sub_messages);
    const Value& ranks = r.member(s, sp, "ranks", Value::Type::Array);
    std::set<int> rank_ids;
    for (std::size_t k = 0; k < ranks.items.size(); ++k) {
      const std::string rp = sp + ".ranks[" + std::to_string(k) + "]";
      const Value& rv = ranks.items[k];
      if (rv.type != Value::Type::Object) r.fail(rp, rv, std::string("expected an object, found ") + json::type_name(rv.type));
      ProfileSite::Rank rank;
      rank.rank = static_cast<int>(r.integer(rv, rp, "rank", 0, p.np - 1));
      if (!rank_ids.insert(rank.rank).second) r.fail(rp + ".rank", *rv.find("rank"), "rank " + std::to_string(rank.rank) + " is listed twice");
      rank.receives = r.member(rv, rp, "receives", Value::Type::Bool).boolean;
      rank.order = r.order(rv, rp, "order", site.sub_messages);
      const Value& keys = r.member(rv, rp, "keys", Value::Type::Array);
      for (std::size_t j = 0; j < keys.items.size(); ++j)
        rank.keys.push_back(r.hex(keys.items[j], rp + ".keys[" + std::to_string(j) + "]"));
      rank.calls = r.opt_count(rv, rp, "calls");
      rank.traced = r.opt_count(rv, rp, "traced");
      for (double x : r.opt_numbers(rv, rp, "first_calls")) rank.first_calls.push_back(static_cast<std::uint64_t>(x));
      rank.bytes_per_call = r.opt_count(rv, rp, "bytes_per_call");
      rank.sub_bytes = r.opt_numbers(rv, rp, "sub_bytes");
      if (!rank.sub_bytes.empty() && rank.sub_bytes.size() != static_cast<std::size_t>(site.sub_messages))
        r.fail(rp + ".sub_bytes", *rv.find("sub_bytes"),
               std::to_string(rank.sub_bytes.size()) + " entries, the site has " + std::to_string(site.sub_messages) +
                   " sub-messages");
      rank.duration_ns = r.opt_number(rv, rp, "duration_ns");
      rank.root_calls = r.opt_count(rv, rp, "root_calls");
      rank.root_duration_ns = r.opt_number(rv, rp, "root_duration_ns");
      rank.curc_ns = r.opt_number(rv, rp, "curc_ns");
      rank.r_crc = r.opt_number(rv, rp, "r_crc_bytes_per_s");
      rank.gaps_ns = r.opt_numbers(rv, rp, "gaps_ns");
      site.ranks.push_back(std::move(rank));
    }
    p.sites.push_back(std::move(site));
  }
  return p;
}

}  // namespace

Result<LoadedProfile> parse_profile(const std::string& text, const std::string& name) {
  try {
    return parse_profile_or_throw(text, name);
  } catch (const ProfileError& e) {  // thrown in this file only, to unwind the nested reading
    return Status::error(e.what());
  }
}

Result<LoadedProfile> read_profile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::error("cannot read profile " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::error("cannot read profile " + path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) return Status::error("cannot read profile " + path + ": " + std::strerror(errno ? errno : EIO));
  return parse_profile(text.str(), path);
}

Status check_profile_run(const LoadedProfile& p, int np, const std::string& executable) {
  if (p.np != np)
    return Status::error("profile " + p.path + " was recorded with " + std::to_string(p.np) + " processes, this run has " +
                         std::to_string(np) + " (trace the program again at this process count)");
  if (p.executable != executable)
    return Status::error("profile " + p.path + " was recorded for the program " + p.executable + ", this is " +
                         executable + " (use the profile of this program)");
  return {};
}

ProfileIndex::ProfileIndex(LoadedProfile p) : p_(std::move(p)) {
  for (std::size_t i = 0; i < p_.sites.size(); ++i) {
    by_site_[p_.sites[i].site] = i;
    std::vector<std::uint64_t> keys;
    for (const ProfileSite::Rank& rk : p_.sites[i].ranks) keys.insert(keys.end(), rk.keys.begin(), rk.keys.end());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    site_keys_.push_back(std::move(keys));
  }
}

const ProfileSite* ProfileIndex::find_site(std::uint64_t site) const {
  auto it = by_site_.find(site);
  return it == by_site_.end() ? nullptr : &p_.sites[it->second];
}

bool ProfileIndex::key_recorded(const ProfileSite& s, std::uint64_t key) const {
  const auto& keys = site_keys_[static_cast<std::size_t>(&s - p_.sites.data())];
  return std::binary_search(keys.begin(), keys.end(), key);
}

bool blocks_can_differ(std::string_view kind) {
  const std::optional<Kind> k = kind_named(kind);
  return k && (info(*k).unit == SizeUnit::Largest || info(*k).unit == SizeUnit::None);
}

ProfileIndex::Result ProfileIndex::find(std::uint64_t site, std::uint64_t key, int rank, int sub_messages) const {
  Result r;
  auto it = by_site_.find(site);
  if (it == by_site_.end()) return r;
  r.site = &p_.sites[it->second];
  r.status = Status::OtherSizes;
  if (r.site->sub_messages != sub_messages) return r;
  for (const ProfileSite::Rank& rk : r.site->ranks) {
    if (rk.rank != rank) continue;
    for (std::uint64_t k : rk.keys)
      if (k == key) {
        r.status = Status::Found;
        r.rank = &rk;
      }
  }
  return r;
}

}  // namespace tnbc::trace
