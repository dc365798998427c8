// Writes a whole file into a directory, atomically (temporary file + rename), creating the
// directory and its parents if needed: readers never see a half-written summary or trace, and
// a failed write (full disk, read-only or unwritable directory) leaves no temporary file.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/status.hh"

namespace tnbc {

// An error says what failed (with errno's text).
Status write_output_file(const std::string& dir, const std::string& name, const std::string& text);

// Where one MPI world writes its per-rank files (summaries, traces) in TNBC_OUTPUT_DIR `dir`:
// `dir` itself for the job's MPI_COMM_WORLD; `dir/spawned-<world id>` for a world started by
// MPI_Comm_spawn, whose ranks 0..n-1 would otherwise overwrite the first world's files.
std::string world_output_dir(const std::string& dir, std::uint64_t world_id, bool spawned);

}  // namespace tnbc
