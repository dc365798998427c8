// Start-up messages that every rank would print alike (invalid TNBC_* values, a profile that
// cannot be used): printed once, by rank 0, instead of once per rank. A rank whose messages
// differ from rank 0's (another environment, a file it cannot read) prints its own.
#pragma once

#include <string>
#include <vector>

#include "runtime/config.hh"

namespace tnbc {

struct Message {
  LogLevel level;
  std::string text;
};

// Collective over MPI_COMM_WORLD (one 8-byte broadcast): every rank calls it once, during
// MPI_Init, with what it has to say (possibly nothing).
void report_once(const std::vector<Message>& messages, int rank);

}  // namespace tnbc
