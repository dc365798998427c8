// Writes a whole file into a directory, atomically (temporary file + rename), creating the
// directory and its parents if needed: readers never see a half-written summary or trace, and
// a failed write (full disk, read-only or unwritable directory) leaves no temporary file.
#pragma once

#include <string>

#include "runtime/status.hh"

namespace tnbc {

// An error says what failed (with errno's text).
Status write_output_file(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace tnbc
