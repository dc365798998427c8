#include "runtime/log.hh"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace tnbc {

namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::Warn)};
std::atomic<int> g_rank{-1};
const char* const kLevelName[] = {"error", "warning", "info", "debug"};

void write_all(const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void vlog(LogLevel level, const char* fmt, va_list ap) {
  char buf[2048];
  int rank = g_rank.load(std::memory_order_relaxed);
  int n = rank >= 0 ? std::snprintf(buf, sizeof buf, "tnbc[%d]: %s: ", rank, kLevelName[int(level)])
                    : std::snprintf(buf, sizeof buf, "tnbc: %s: ", kLevelName[int(level)]);
  if (n < 0) return;
  int m = std::vsnprintf(buf + n, sizeof buf - static_cast<std::size_t>(n) - 1, fmt, ap);
  if (m < 0) return;
  std::size_t len = std::strlen(buf);
  buf[len++] = '\n';
  write_all(buf, len);
}
}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
void set_log_rank(int rank) { g_rank.store(rank); }
bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }

void log(LogLevel level, const char* fmt, ...) {
  if (!log_enabled(level)) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

void log_once(bool& once_flag, LogLevel level, const char* fmt, ...) {
  if (once_flag || !log_enabled(level)) return;
  once_flag = true;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

char* format_u64(char* out, unsigned long long v, int base) {
  char tmp[32];
  int n = 0;
  do {
    int d = static_cast<int>(v % static_cast<unsigned>(base));
    tmp[n++] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
    v /= static_cast<unsigned>(base);
  } while (v != 0);
  while (n > 0) *out++ = tmp[--n];
  *out = '\0';
  return out;
}

void log_raw(const char* text) {
  char buf[512];
  char* p = buf;
  const char* prefix = "tnbc[";
  while (*prefix) *p++ = *prefix++;
  int rank = g_rank.load(std::memory_order_relaxed);
  if (rank >= 0) p = format_u64(p, static_cast<unsigned long long>(rank), 10);
  *p++ = ']';
  *p++ = ':';
  *p++ = ' ';
  while (*text && p < buf + sizeof buf - 2) *p++ = *text++;
  *p++ = '\n';
  write_all(buf, static_cast<std::size_t>(p - buf));
}

}  // namespace tnbc
