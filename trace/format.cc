#include "trace/format.hh"

#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "runtime/fnv1a.hh"

namespace tnbc::trace {

namespace {
// A reading error, thrown inside this file only and returned by parse() as a Status.
struct TraceError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
}  // namespace

char how_char(How h) {
  switch (h) {
    case How::Read: return 'R';
    case How::Write: return 'W';
    case How::Syscall: return 'S';
    case How::MpiCall: return 'M';
    case How::FenceAll: return 'F';
    case How::None: break;
  }
  return '-';
}

How how_from_char(char c, bool* ok) {
  *ok = true;
  switch (c) {
    case '-': return How::None;
    case 'R': return How::Read;
    case 'W': return How::Write;
    case 'S': return How::Syscall;
    case 'M': return How::MpiCall;
    case 'F': return How::FenceAll;
    default: *ok = false; return How::None;
  }
}

std::string hex64(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016" PRIx64, v);
  return b;
}

std::string trace_file_name(int rank) { return "tnbc-trace." + std::to_string(rank) + ".txt"; }

std::string escape_token(const std::string& s) {
  if (s.empty()) return "-";
  std::string out;
  for (unsigned char c : s) {
    if (c <= ' ' || c == '%' || c == 0x7f || (c == '-' && s.size() == 1)) {
      char b[4];
      std::snprintf(b, sizeof b, "%%%02X", c);
      out += b;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string unescape_token(const std::string& s) {
  if (s == "-") return {};
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

namespace {

std::string opt_i64(std::int64_t v) { return v < 0 ? "-" : std::to_string(v); }

void put_sub(std::ostringstream& o, std::size_t i, const SubRecord& s) {
  o << "sub " << i << " bytes " << s.bytes << " guarded " << s.guarded << " shared " << s.shared << " masked "
    << s.masked << " order " << (s.order < 0 ? std::string("-") : std::to_string(s.order)) << " t_ns "
    << opt_i64(s.t_ns) << " how " << how_char(s.how) << " code " << escape_token(s.code) << "\n";
}

}  // namespace

std::string serialize(const TraceFile& t) {
  std::ostringstream o;
  o << kTraceMagic << " " << t.version << "\n";
  o << "rank " << t.rank << "\n";
  o << "size " << t.size << "\n";
  o << "executable " << escape_token(t.executable) << "\n";
  o << "run_id " << escape_token(t.run_id) << "\n";
  o << "clock " << escape_token(t.clock) << "\n";
  o << "page " << t.page << "\n";
  if (t.version >= 2) o << "page_reopen_ns " << t.page_reopen_ns << "\n";
  o << "ended_by " << escape_token(t.ended_by) << "\n";
  o << "dropped " << t.dropped << "\n";
  for (const SiteInfo& s : t.sites) {
    o << "site " << hex64(s.site) << " kind " << escape_token(s.kind) << " comm_size " << s.comm_size << " frames "
      << s.frames.size() << "\n";
    for (const Frame& f : s.frames)
      o << "frame " << escape_token(f.module) << " " << hex64(f.offset) << " " << escape_token(f.symbol) << "\n";
  }
  for (const CallRecord& c : t.calls) {
    o << "call " << c.seq << " site " << hex64(c.site) << " key " << hex64(c.key) << " occ " << c.occurrence
      << " comm_rank " << c.comm_rank << " root " << c.root << " dur_ns " << c.dur_ns << " traced " << c.traced
      << " reason " << escape_token(c.reason) << " subs " << c.subs.size() << "\n";
    for (std::size_t i = 0; i < c.subs.size(); ++i) put_sub(o, i, c.subs[i]);
    o << "send bytes " << c.send_bytes << " guarded " << c.send_guarded << " t_ns " << opt_i64(c.send_t_ns)
      << " how " << how_char(c.send_how) << " code " << escape_token(c.send_code) << "\n";
  }
  std::string body = o.str();
  const std::uint64_t sum = fnv1a64(body.data(), body.size());
  body += "end calls " + std::to_string(t.calls.size()) + " sites " + std::to_string(t.sites.size()) + " fnv1a64 " +
          hex64(sum) + "\n";
  return body;
}

namespace {

// A strict reader over the lines of one file: every error names file and line.
class Reader {
 public:
  Reader(const std::string& text, const std::string& name) : text_(text), name_(name) {}

  bool next_line() {
    if (pos_ >= text_.size()) return false;
    const std::size_t nl = text_.find('\n', pos_);
    if (nl == std::string::npos) fail("truncated file (last line has no newline)");
    line_start_ = pos_;
    tokens_.clear();
    std::istringstream in(text_.substr(pos_, nl - pos_));
    std::string tok;
    while (in >> tok) tokens_.push_back(tok);
    pos_ = nl + 1;
    ++lineno_;
    tok_ = 0;
    return true;
  }
  std::size_t line_start() const { return line_start_; }
  const std::string& keyword() const {
    static const std::string empty;
    return tokens_.empty() ? empty : tokens_[0];
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(name_ + (lineno_ ? " line " + std::to_string(lineno_) : std::string()) + ": " + what +
                     " (corrupt or truncated trace file)");
  }
  std::string word() {
    if (tok_ >= tokens_.size()) fail("missing field");
    return tokens_[tok_++];
  }
  void expect(const char* w) {
    const std::string got = word();
    if (got != w) fail(std::string("expected '") + w + "', found '" + got + "'");
  }
  void done() const {
    if (tok_ != tokens_.size()) fail("unexpected extra fields");
  }
  std::uint64_t u64(int base = 10) {
    const std::string w = word();
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(w.c_str(), &end, base);
    if (w.empty() || *end != '\0' || errno != 0 || w[0] == '-') fail("bad number '" + w + "'");
    return v;
  }
  std::int64_t i64() {
    const std::string w = word();
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(w.c_str(), &end, 10);
    if (w.empty() || *end != '\0' || errno != 0) fail("bad number '" + w + "'");
    return v;
  }
  std::int64_t opt_i64() {
    if (tok_ < tokens_.size() && tokens_[tok_] == "-") {
      ++tok_;
      return -1;
    }
    return i64();
  }
  bool flag() {
    const std::string w = word();
    if (w != "0" && w != "1") fail("bad flag '" + w + "'");
    return w == "1";
  }
  std::string str() { return unescape_token(word()); }
  How how() {
    const std::string w = word();
    bool ok = false;
    const How h = w.size() == 1 ? how_from_char(w[0], &ok) : How::None;
    if (!ok) fail("bad access kind '" + w + "'");
    return h;
  }
  void keyed(const char* k) {
    if (keyword() != k) fail(std::string("expected a '") + k + "' line, found '" + keyword() + "'");
    tok_ = 1;
  }

 private:
  const std::string& text_;
  std::string name_;
  std::size_t pos_ = 0, line_start_ = 0;
  int lineno_ = 0;
  std::vector<std::string> tokens_;
  std::size_t tok_ = 0;
};

}  // namespace

namespace {

TraceFile parse_or_throw(const std::string& text, const std::string& name) {
  Reader r(text, name);
  TraceFile t;
  if (!r.next_line()) throw TraceError(name + ": empty file (not a tnbc trace)");
  if (r.keyword() != kTraceMagic) throw TraceError(name + ": not a tnbc trace file (no " + kTraceMagic + " header)");
  r.keyed(kTraceMagic);
  t.version = static_cast<int>(r.u64());
  if (t.version < kTraceVersionOldest || t.version > kTraceVersion)
    throw TraceError(name + ": trace format version " + std::to_string(t.version) + " is not supported (this tnbc reads " +
                     std::to_string(kTraceVersionOldest) + "-" + std::to_string(kTraceVersion) + ")");
  r.done();
  auto header = [&](const char* k) {
    if (!r.next_line()) r.fail(std::string("missing '") + k + "' line");
    r.keyed(k);
  };
  header("rank"); t.rank = static_cast<int>(r.u64()); r.done();
  header("size"); t.size = static_cast<int>(r.u64()); r.done();
  header("executable"); t.executable = r.str(); r.done();
  header("run_id"); t.run_id = r.str(); r.done();
  header("clock"); t.clock = r.str(); r.done();
  header("page"); t.page = r.u64(); r.done();
  if (t.version >= 2) {
    header("page_reopen_ns"); t.page_reopen_ns = r.u64(); r.done();
  }
  header("ended_by"); t.ended_by = r.str(); r.done();
  header("dropped"); t.dropped = r.u64(); r.done();
  if (t.size <= 0 || t.rank >= t.size) r.fail("rank " + std::to_string(t.rank) + " outside size " + std::to_string(t.size));
  bool ended = false;
  while (r.next_line()) {
    const std::string kw = r.keyword();
    if (kw == "site") {
      r.keyed("site");
      SiteInfo s;
      s.site = r.u64(16);
      r.expect("kind"); s.kind = r.str();
      r.expect("comm_size"); s.comm_size = static_cast<int>(r.u64());
      r.expect("frames"); const std::uint64_t n = r.u64();
      r.done();
      if (n > 64) r.fail("too many frames");
      for (std::uint64_t i = 0; i < n; ++i) {
        if (!r.next_line()) r.fail("truncated in a site's frames");
        r.keyed("frame");
        Frame f;
        f.module = r.str();
        f.offset = r.u64(16);
        f.symbol = r.str();
        r.done();
        s.frames.push_back(std::move(f));
      }
      t.sites.push_back(std::move(s));
    } else if (kw == "call") {
      r.keyed("call");
      CallRecord c;
      c.seq = r.u64();
      r.expect("site"); c.site = r.u64(16);
      r.expect("key"); c.key = r.u64(16);
      r.expect("occ"); c.occurrence = r.u64();
      r.expect("comm_rank"); c.comm_rank = static_cast<int>(r.i64());
      r.expect("root"); c.root = static_cast<int>(r.i64());
      r.expect("dur_ns"); c.dur_ns = r.i64();
      r.expect("traced"); c.traced = r.flag();
      r.expect("reason"); c.reason = r.str();
      r.expect("subs"); const std::uint64_t n = r.u64();
      r.done();
      if (n > (1u << 24)) r.fail("implausible sub-message count");
      for (std::uint64_t i = 0; i < n; ++i) {
        if (!r.next_line()) r.fail("truncated inside a call's sub-messages");
        r.keyed("sub");
        if (r.u64() != i) r.fail("sub-messages out of sequence");
        SubRecord s;
        r.expect("bytes"); s.bytes = r.u64();
        r.expect("guarded"); s.guarded = r.flag();
        r.expect("shared"); s.shared = r.flag();
        r.expect("masked"); s.masked = r.flag();
        r.expect("order"); s.order = static_cast<int>(r.opt_i64());
        r.expect("t_ns"); s.t_ns = r.opt_i64();
        r.expect("how"); s.how = r.how();
        r.expect("code"); s.code = r.str();
        r.done();
        c.subs.push_back(std::move(s));
      }
      if (!r.next_line()) r.fail("truncated: a call without its 'send' line");
      r.keyed("send");
      r.expect("bytes"); c.send_bytes = r.u64();
      r.expect("guarded"); c.send_guarded = r.flag();
      r.expect("t_ns"); c.send_t_ns = r.opt_i64();
      r.expect("how"); c.send_how = r.how();
      r.expect("code"); c.send_code = r.str();
      r.done();
      t.calls.push_back(std::move(c));
    } else if (kw == "end") {
      const std::uint64_t sum = fnv1a64(text.data(), r.line_start());
      r.keyed("end");
      r.expect("calls");
      if (r.u64() != t.calls.size()) r.fail("call count in the 'end' line does not match");
      r.expect("sites");
      if (r.u64() != t.sites.size()) r.fail("site count in the 'end' line does not match");
      r.expect("fnv1a64");
      if (r.u64(16) != sum) r.fail("checksum mismatch");
      r.done();
      ended = true;
      if (r.next_line()) r.fail("data after the 'end' line");
      break;
    } else {
      r.fail("unknown record '" + kw + "'");
    }
  }
  if (!ended) throw TraceError(name + ": truncated trace file (no 'end' line; was the run killed while writing?)");
  return t;
}

}  // namespace

Result<TraceFile> parse(const std::string& text, const std::string& name) {
  try {
    return parse_or_throw(text, name);
  } catch (const TraceError& e) {  // thrown in this file only, to unwind the nested reading
    return Status::error(e.what());
  }
}

Result<TraceFile> read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse(buf.str(), path);
}

}  // namespace tnbc::trace
