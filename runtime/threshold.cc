#include "runtime/threshold.hh"

#include "runtime/config.hh"

namespace tnbc {

std::string bytes_text(std::size_t bytes) {
  return bytes == kNeverPays ? "never" : format_bytes(static_cast<double>(bytes));
}

}  // namespace tnbc
