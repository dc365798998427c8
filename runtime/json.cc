#include "runtime/json.hh"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace tnbc::json {

namespace {

// A syntax error, thrown inside this file only and returned by parse() as a Status.
struct ParseError : std::runtime_error {
  ParseError(int line, int column, const std::string& problem)
      : std::runtime_error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + problem) {}
};

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  Value document() {
    skip_ws();
    Value v = value(0);
    skip_ws();
    if (pos_ < t_.size()) fail("unexpected data after the end of the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw ParseError(line_, static_cast<int>(pos_ - line_start_) + 1, problem);
  }
  [[noreturn]] void fail_end(const char* expected) const {
    fail(std::string("the file ends where ") + expected + " was expected (truncated?)");
  }

  void skip_ws() {
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == '\n') {
        ++line_;
        line_start_ = pos_ + 1;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        return;
      }
      ++pos_;
    }
  }

  void expect_literal(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word) {
      if (pos_ + word.size() > t_.size() && word.substr(0, t_.size() - pos_) == t_.substr(pos_)) fail_end("a value");
      fail("invalid literal (expected a value: string, number, object, array, true, false or null)");
    }
    pos_ += word.size();
  }

  Value value(int depth) {
    if (pos_ >= t_.size()) fail_end("a value");
    Value v;
    v.line = line_;
    v.column = static_cast<int>(pos_ - line_start_) + 1;
    switch (t_[pos_]) {
      case '{': object(v, depth); break;
      case '[': array(v, depth); break;
      case '"':
        v.type = Value::Type::String;
        v.string = string();
        break;
      case 't': expect_literal("true"); v.type = Value::Type::Bool; v.boolean = true; break;
      case 'f': expect_literal("false"); v.type = Value::Type::Bool; break;
      case 'n': expect_literal("null"); break;
      default: number(v); break;
    }
    return v;
  }

  void object(Value& v, int depth) {
    if (depth >= kMaxDepth) fail("nested more than 64 levels deep");
    v.type = Value::Type::Object;
    ++pos_;
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == '}') {
      ++pos_;
      return;
    }
    while (true) {
      skip_ws();
      if (pos_ >= t_.size()) fail_end("a member name");
      if (t_[pos_] != '"') fail("expected a member name in double quotes");
      std::string key = string();
      if (v.find(key)) fail("duplicate member \"" + key + "\"");
      skip_ws();
      if (pos_ >= t_.size()) fail_end("':'");
      if (t_[pos_] != ':') fail("expected ':' after the member name");
      ++pos_;
      skip_ws();
      v.members.emplace_back(std::move(key), value(depth + 1));
      skip_ws();
      if (pos_ >= t_.size()) fail_end("',' or '}'");
      if (t_[pos_] == '}') {
        ++pos_;
        return;
      }
      if (t_[pos_] != ',') fail("expected ',' or '}' in an object");
      ++pos_;
    }
  }

  void array(Value& v, int depth) {
    if (depth >= kMaxDepth) fail("nested more than 64 levels deep");
    v.type = Value::Type::Array;
    ++pos_;
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == ']') {
      ++pos_;
      return;
    }
    while (true) {
      skip_ws();
      v.items.push_back(value(depth + 1));
      skip_ws();
      if (pos_ >= t_.size()) fail_end("',' or ']'");
      if (t_[pos_] == ']') {
        ++pos_;
        return;
      }
      if (t_[pos_] != ',') fail("expected ',' or ']' in an array");
      ++pos_;
    }
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::uint32_t hex4() {
    if (pos_ + 4 > t_.size()) fail_end("four hex digits");
    std::uint32_t v = 0;
    auto [p, ec] = std::from_chars(t_.data() + pos_, t_.data() + pos_ + 4, v, 16);
    if (ec != std::errc() || p != t_.data() + pos_ + 4) fail("\\u must be followed by four hex digits");
    pos_ += 4;
    return v;
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= t_.size()) fail_end("the closing '\"' of a string");
      const char c = t_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      if (++pos_ >= t_.size()) fail_end("an escape character");
      const char e = t_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (t_.substr(pos_, 2) != "\\u") fail("a high surrogate must be followed by a low one");
            pos_ += 2;
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("a high surrogate must be followed by a low one");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("a low surrogate without a high one");
          }
          append_utf8(out, cp);
          break;
        }
        default: --pos_; fail(std::string("invalid escape '\\") + e + "'");
      }
    }
  }

  void number(Value& v) {
    const std::size_t start = pos_;
    auto digits = [&] {
      const std::size_t s = pos_;
      while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') ++pos_;
      return pos_ - s;
    };
    if (pos_ < t_.size() && t_[pos_] == '-') ++pos_;
    if (pos_ >= t_.size()) fail_end("a number");
    if (t_[pos_] == '0') {
      ++pos_;
    } else if (digits() == 0) {
      pos_ = start;
      fail("invalid value (expected a string, number, object, array, true, false or null)");
    }
    bool integral = true;
    if (pos_ < t_.size() && t_[pos_] == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) fail(pos_ >= t_.size() ? "the file ends inside a number (truncated?)" : "digits expected after '.'");
    }
    if (pos_ < t_.size() && (t_[pos_] == 'e' || t_[pos_] == 'E')) {
      ++pos_;
      integral = false;
      if (pos_ < t_.size() && (t_[pos_] == '+' || t_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail(pos_ >= t_.size() ? "the file ends inside a number (truncated?)" : "digits expected in the exponent");
    }
    const std::string text(t_.substr(start, pos_ - start));
    v.type = Value::Type::Number;
    // from_chars, not strtod: the same value whatever locale the program has set (a decimal
    // comma would cut "4.5e9" to 4), so every rank reads a profile's numbers alike.
    if (std::from_chars(text.data(), text.data() + text.size(), v.number).ec == std::errc::result_out_of_range) {
      const bool tiny = text.find("e-") != std::string::npos || text.find("E-") != std::string::npos;
      v.number = (text[0] == '-' ? -1.0 : 1.0) * (tiny ? 0.0 : HUGE_VAL);  // as strtod
    }
    if (integral) {
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v.int_value);
      v.integer = ec == std::errc() && p == text.data() + text.size();
    }
  }

  std::string_view t_;
  std::size_t pos_ = 0, line_start_ = 0;
  int line_ = 1;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

double number_or(const Value& obj, std::string_view key, double otherwise) {
  const Value* v = obj.find(key);
  return v && v->type == Value::Type::Number ? v->number : otherwise;
}

bool bool_or(const Value& obj, std::string_view key, bool otherwise) {
  const Value* v = obj.find(key);
  return v && v->type == Value::Type::Bool ? v->boolean : otherwise;
}

std::string string_or(const Value& obj, std::string_view key) {
  const Value* v = obj.find(key);
  return v && v->type == Value::Type::String ? v->string : std::string();
}

const char* type_name(Value::Type t) {
  switch (t) {
    case Value::Type::Null: return "null";
    case Value::Type::Bool: return "a boolean";
    case Value::Type::Number: return "a number";
    case Value::Type::String: return "a string";
    case Value::Type::Array: return "an array";
    case Value::Type::Object: return "an object";
  }
  return "?";
}

Result<Value> parse(std::string_view text) {
  try {
    return Parser(text).document();
  } catch (const ParseError& e) {  // unwinds the nested parse to here (trace/json.cc only)
    return Status::error(e.what());
  }
}

std::string quote(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o + "\"";
}

}  // namespace tnbc::json
