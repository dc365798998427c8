// Futex wait/wake on a 32-bit word: async-signal-safe (plain syscalls), used by the SIGSEGV
// handler and fences to sleep until the progress thread publishes data, and to wake the
// progress thread when someone is waiting.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace tnbc::futex {

// A thread waiting for other ranks sleeps at most this long at a time, then checks
// TNBC_TIMEOUT again (the wake-up of a publication ends a wait earlier).
inline constexpr long long kWaitSliceNs = 100 * 1000 * 1000;

// Sleeps while *word == expected, at most timeout_ns (<0: no limit). Spurious returns happen.
inline void wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, long long timeout_ns) {
  struct timespec ts, *tp = nullptr;
  if (timeout_ns >= 0) {
    ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000LL);
    ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000LL);
    tp = &ts;
  }
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, tp, nullptr, 0);
}

inline void wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

inline long long now_ns() {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

}  // namespace tnbc::futex
