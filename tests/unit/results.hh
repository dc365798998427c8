// Unit tests and tnbc's error convention (runtime/status.hh).
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "runtime/status.hh"

// The value of a Result the test expects to succeed; the test fails with its message otherwise.
template <class T>
T must(tnbc::Result<T> r) {
  INFO((r.ok() ? std::string() : r.status().message()));
  REQUIRE(r.ok());
  return std::move(r).value();
}

// The message of an error ("" when there is none).
template <class T>
std::string error_of(const tnbc::Result<T>& r) {
  return r.ok() ? std::string() : r.status().message();
}
inline std::string error_of(const tnbc::Status& s) { return s.message(); }
