// A strict JSON reader (RFC 8259) for the files tnbc reads back: the profile of `tnbc merge`, the
// machine file of `tnbc calibrate` (runtime/model/machine.hh). Every value remembers where it starts,
// so a reader can say "line 12, column 5: ..." about a field that is wrong, not only about bad syntax. No MPI.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/status.hh"

namespace tnbc::json {

struct Value {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  double number = 0;
  bool integer = false;    // a number written without fraction or exponent that fits int64
  std::int64_t int_value = 0;
  std::string string;
  std::vector<Value> items;                            // Array
  std::vector<std::pair<std::string, Value>> members;  // Object, in file order
  int line = 0, column = 0;                            // where the value starts (1-based)

  // The member named `key` of an object, or nullptr.
  const Value* find(std::string_view key) const;
};

const char* type_name(Value::Type t);  // "null", "a boolean", "a number", ...

// `obj`'s member `key` where it is a number (a boolean, a string), else `otherwise` (""): for readers that
// take what is there and leave the rest out (tnbc report), not for files that must be whole.
double number_or(const Value& obj, std::string_view key, double otherwise);
bool bool_or(const Value& obj, std::string_view key, bool otherwise);
std::string string_or(const Value& obj, std::string_view key);

// Parses one JSON text (a value with optional surrounding white space). Nesting deeper than
// 64 levels, duplicate keys in an object, invalid UTF-8 escapes and trailing data are errors,
// said as "line L, column C: PROBLEM".
Result<Value> parse(std::string_view text);

// `s` as a JSON string literal, quotes included (control characters as \u00XX).
std::string quote(const std::string& s);

}  // namespace tnbc::json
