#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "runtime/config.hh"
#include "runtime/model/estimate.hh"
#include "runtime/schedule.hh"

namespace {
std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
}  // namespace

TEST_CASE("defaults come from the table") {
  g_env.clear();
  auto r = tnbc::load_config(&fake_getenv);
  REQUIRE(r.errors.empty());
  CHECK(r.settings.mode == tnbc::Mode::Nbc);
  CHECK(r.settings.log == tnbc::LogLevel::Warn);
  CHECK_FALSE(r.settings.min_bytes.has_value());
  CHECK(r.settings.send_window == 4);
  CHECK(r.settings.output_dir.empty());
}

// Another valid value than the default, for each kind of option.
std::string other_value(const tnbc::Option& o) {
  const std::string def(o.default_value);
  switch (o.type) {
    case tnbc::OptionType::Choice: {
      std::string_view c = o.choices;
      while (!c.empty()) {
        const auto bar = c.find('|');
        const std::string v(c.substr(0, bar));
        if (v != def) return v;
        c = bar == std::string_view::npos ? std::string_view{} : c.substr(bar + 1);
      }
      return def;
    }
    case tnbc::OptionType::Path: return "/tmp/some-other-path";
    case tnbc::OptionType::Bytes: return def == "8192" ? "4096" : "8192";
    case tnbc::OptionType::AutoMicroseconds: return def == "auto" ? "250" : "auto";
    case tnbc::OptionType::AutoInteger: return def == "auto" ? std::to_string(o.min + 1) : "auto";
    default: {
      const long long d = std::stoll(def);
      return std::to_string(o.max > 0 && d >= o.max ? d - 1 : d + 1);
    }
  }
}

TEST_CASE("every option is read from its own variable, with a valid default and one or two sentences of help") {
  std::set<std::string> names;
  for (const auto& o : tnbc::options()) {
    const std::string env = tnbc::env_name(o);
    INFO(env);
    CHECK(names.insert(env).second);
    tnbc::Settings defaults;
    REQUIRE(tnbc::parse_option(o, o.default_value, defaults).ok());
    // Its variable is the one read, into its own field: another value there changes this option
    // and no other.
    g_env = {{env, other_value(o)}};
    const auto r = tnbc::load_config(&fake_getenv);
    REQUIRE(r.errors.empty());
    CHECK(tnbc::value_string(o, r.settings) != tnbc::value_string(o, tnbc::load_config([](const char*) -> const char* { return nullptr; }).settings));
    for (const auto& q : tnbc::options())
      if (q.name != o.name) CHECK(tnbc::value_string(q, r.settings) == tnbc::value_string(q, defaults));
    // `tnbc --help` stays readable: rationale and measurements belong in docs/settings.md.
    const std::string d(o.description);
    CHECK_FALSE(d.empty());
    CHECK(d.back() == '.');
    CHECK(d.size() <= 260);
    std::size_t sentences = 0;
    for (std::size_t at = d.find(". "); at != std::string::npos; at = d.find(". ", at + 1)) ++sentences;
    CHECK(sentences + 1 <= 2);
  }
  CHECK(tnbc::help_text().find("TNBC_MODE") != std::string::npos);
}

TEST_CASE("valid values are parsed") {
  g_env = {{"TNBC_MODE", "Trace"}, {"TNBC_LOG", "debug"}, {"TNBC_MIN_BYTES", "64k"},
           {"TNBC_OUTPUT_DIR", "/tmp/x"}, {"TNBC_TIMEOUT", "30s"}, {"TNBC_POLL_MIN_US", "5us"}};
  auto r = tnbc::load_config(&fake_getenv);
  REQUIRE(r.errors.empty());
  CHECK(r.settings.mode == tnbc::Mode::Trace);
  CHECK(r.settings.log == tnbc::LogLevel::Debug);
  CHECK(r.settings.min_bytes == std::optional<std::uint64_t>(65536));
  CHECK(r.settings.output_dir == "/tmp/x");
  CHECK(r.settings.timeout_s == 30);
  CHECK(r.settings.poll_min_us == 5);
  CHECK(tnbc::dump(r.settings).find("TNBC_MIN_BYTES=65536\n") != std::string::npos);
}

TEST_CASE("a bad value names the variable and keeps the default") {
  g_env = {{"TNBC_MODE", "fast"}, {"TNBC_SEND_WINDOW", "0"}, {"TNBC_MIN_BYTES", "12q"}};
  auto r = tnbc::load_config(&fake_getenv);
  REQUIRE(r.errors.size() == 3);
  CHECK(r.errors[0].message.find("TNBC_MODE='fast'") != std::string::npos);
  CHECK(r.errors[0].message.find("off|passthrough|nbc|trace|optimize") != std::string::npos);
  CHECK(r.settings.mode == tnbc::Mode::Nbc);
  CHECK(r.settings.send_window == 4);
}

TEST_CASE("poll bounds must be ordered") {
  g_env = {{"TNBC_POLL_MIN_US", "500"}, {"TNBC_POLL_MAX_US", "100"}};
  auto r = tnbc::load_config(&fake_getenv);
  CHECK(r.errors.size() == 1);
}

TEST_CASE("unknown TNBC_ variables are reported") {
  char a[] = "TNBC_MODEE=nbc", b[] = "TNBC_MODE=nbc", c[] = "PATH=/bin";
  char* env[] = {a, b, c, nullptr};
  auto u = tnbc::unknown_variables(env);
  REQUIRE(u.size() == 1);
  CHECK(u[0] == "TNBC_MODEE");
}

TEST_CASE("mode optimize decides by the cost model unless a fixed cost is set") {
  g_env.clear();
  auto r = tnbc::load_config(&fake_getenv);
  REQUIRE(r.errors.empty());
  CHECK(r.settings.profile_blocking == tnbc::ProfileBlocking::Auto);
  CHECK_FALSE(r.settings.early_return_cost_us.has_value());  // auto: the model
  CHECK(r.settings.early_return_cost_us_per_mib == 0);
  g_env = {{"TNBC_PROFILE_BLOCKING", "off"}, {"TNBC_EARLY_RETURN_COST_US", "0us"},
           {"TNBC_EARLY_RETURN_COST_US_PER_MIB", "1200"}};
  r = tnbc::load_config(&fake_getenv);
  REQUIRE(r.errors.empty());
  CHECK(r.settings.profile_blocking == tnbc::ProfileBlocking::Off);
  CHECK(r.settings.early_return_cost_us == std::optional<std::uint64_t>(0));
  CHECK(r.settings.early_return_cost_us_per_mib == 1200);
  g_env = {{"TNBC_EARLY_RETURN_COST_US", "AUTO"}};
  CHECK_FALSE(tnbc::load_config(&fake_getenv).settings.early_return_cost_us.has_value());
  g_env = {{"TNBC_EARLY_RETURN_COST_US_PER_MIB", "-1"}, {"TNBC_PROFILE_BLOCKING", "never"},
           {"TNBC_EARLY_RETURN_COST_US", "soon"}};
  r = tnbc::load_config(&fake_getenv);
  CHECK(r.errors.size() == 3);
  CHECK(r.settings.early_return_cost_us_per_mib == 0);
  CHECK_FALSE(r.settings.early_return_cost_us.has_value());
}

TEST_CASE("TNBC_MACHINE and TNBC_SEND_COPY=auto are read from the table") {
  g_env = {{"TNBC_MACHINE", "/tmp/machine.json"}, {"TNBC_SEND_COPY", "auto"}};
  auto r = tnbc::load_config(&fake_getenv);
  REQUIRE(r.errors.empty());
  CHECK(r.settings.machine == "/tmp/machine.json");
  CHECK(r.settings.send_copy == tnbc::SendCopy::Auto);
  g_env.clear();
  CHECK(tnbc::load_config(&fake_getenv).settings.send_copy == tnbc::SendCopy::Auto);  // the default
  g_env = {{"TNBC_SEND_COPY", "lazy-sends"}};
  r = tnbc::load_config(&fake_getenv);
  REQUIRE(r.errors.empty());
  CHECK(r.settings.send_copy == tnbc::SendCopy::LazySends);
  g_env = {{"TNBC_SEND_COPY", "lazy-own"}};  // not a value: one error, the default kept
  r = tnbc::load_config(&fake_getenv);
  CHECK(r.errors.size() == 1);
  CHECK(r.settings.send_copy == tnbc::SendCopy::Auto);
}

TEST_CASE("TNBC_PIECE_BYTES: auto by default, 0 for no cut, a byte count") {
  g_env.clear();
  CHECK_FALSE(tnbc::load_config(&fake_getenv).settings.piece_bytes.has_value());
  g_env = {{"TNBC_PIECE_BYTES", "0"}};
  CHECK(tnbc::load_config(&fake_getenv).settings.piece_bytes == std::optional<std::uint64_t>(0));
  g_env = {{"TNBC_PIECE_BYTES", "128k"}};
  auto r = tnbc::load_config(&fake_getenv);
  REQUIRE(r.errors.empty());
  CHECK(r.settings.piece_bytes == std::optional<std::uint64_t>(131072));
  g_env = {{"TNBC_PIECE_BYTES", "-1"}};
  CHECK(tnbc::load_config(&fake_getenv).errors.size() == 1);
}

TEST_CASE("TNBC_TIMEOUT's default is the named constant") {
  g_env.clear();
  CHECK(tnbc::load_config(&fake_getenv).settings.timeout_s == tnbc::kDefaultTimeoutS);
  CHECK(tnbc::Settings{}.timeout_s == tnbc::kDefaultTimeoutS);
}

TEST_CASE("TNBC_BCAST_MAX_SEGMENTS's default is the named constant, the cost model's too") {
  g_env.clear();
  CHECK(tnbc::load_config(&fake_getenv).settings.bcast_max_segments == tnbc::kDefaultBcastMaxSegments);
  CHECK(tnbc::Settings{}.bcast_max_segments == tnbc::kDefaultBcastMaxSegments);
  CHECK(tnbc::model::Execution{}.bcast_max_segments == tnbc::kDefaultBcastMaxSegments);
}

TEST_CASE("settings that shape the messages are compared between ranks") {
  g_env = {{"TNBC_PIECE_BYTES", "64k"}, {"TNBC_LOG", "debug"}};
  const std::string u = tnbc::uniform_settings(tnbc::load_config(&fake_getenv).settings);
  CHECK(u.find("TNBC_PIECE_BYTES=65536\n") != std::string::npos);
  CHECK(u.find("TNBC_MIN_BYTES=auto\n") != std::string::npos);
  CHECK(u.find("TNBC_BCAST_MAX_SEGMENTS=5\n") != std::string::npos);
  CHECK(u.find("TNBC_MODE=nbc\n") != std::string::npos);
  CHECK(u.find("TNBC_LOG") == std::string::npos);      // rank-local: messages only
  CHECK(u.find("TNBC_GUARD") == std::string::npos);    // rank-local: how pages are held back
  CHECK(tnbc::help_text().find("Must be the same on every rank") != std::string::npos);
}
