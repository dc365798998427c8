// Messages to stderr, prefixed "tnbc[rank]:". Formatting happens into a stack buffer and
// leaves through one write(2), so messages from several ranks and threads do not interleave.
// `log_raw` is async-signal-safe and is what the SIGSEGV handler uses.
#pragma once

#include "runtime/config.hh"

namespace tnbc {

void set_log_level(LogLevel level);
void set_log_rank(int rank);
bool log_enabled(LogLevel level);

[[gnu::format(printf, 2, 3)]] void log(LogLevel level, const char* fmt, ...);

// Prints the message only the first time `once_flag` is seen false (sets it).
[[gnu::format(printf, 3, 4)]] void log_once(bool& once_flag, LogLevel level, const char* fmt, ...);

// Async-signal-safe: no allocation, no locks, no stdio. Appends a newline.
void log_raw(const char* text);
// Async-signal-safe decimal/hex formatting helpers for handler messages.
char* format_u64(char* out, unsigned long long v, int base);

}  // namespace tnbc
