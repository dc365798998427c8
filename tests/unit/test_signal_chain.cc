// tnbc's SIGSEGV handler replaced behind the interposers' back (runtime/guard.hh,
// ensure_fault_handler): found, installed again, and genuine faults chained to the replacement
// and, when that one passes them back, further down to the handler installed before tnbc.
// Each case runs in a forked child (it installs handlers and faults); the exit status says
// which handlers ran. x86_64 Linux (raw rt_sigaction).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "lock_sigsegv.h"
#include "runtime/guard.hh"

namespace {

struct KernelAction {
  void* handler;
  unsigned long flags;
  void* restorer;
  std::uint64_t mask;
};

KernelAction g_replaced;        // what the foreign handler replaced (tnbc's)
volatile int g_foreign_ran = 0;

void bottom(int) { _exit(10 + g_foreign_ran); }  // installed before tnbc

// Like UCX's: takes nothing itself, passes every fault to the handler it replaced.
void foreign(int sig, siginfo_t* info, void* ctx) {
  g_foreign_ran = 1;
  reinterpret_cast<void (*)(int, siginfo_t*, void*)>(g_replaced.handler)(sig, info, ctx);
}

void install_raw_foreign() {
  KernelAction k{};
  k.handler = reinterpret_cast<void*>(&foreign);
  k.flags = SA_SIGINFO;
  if (syscall(SYS_rt_sigaction, SIGSEGV, &k, &g_replaced, sizeof k.mask) != 0) _exit(2);
}

void genuine_fault() {
  static volatile std::uintptr_t nowhere = 16;
  *reinterpret_cast<volatile int*>(nowhere) = 1;
}

template <class Fn>
int in_child(Fn fn) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    fn();
    _exit(3);  // the fault should have ended the child
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("signal chain: a raw replacement is found, tnbc first again, faults chained down") {
  const int status = in_child([] {
    signal(SIGSEGV, bottom);
    tnbc::install_fault_handler(1000000000LL);
    if (tnbc::ensure_fault_handler() != tnbc::HandlerState::Ours) _exit(4);
    install_raw_foreign();
    if (tnbc::ensure_fault_handler() != tnbc::HandlerState::Reinstalled) _exit(5);
    if (tnbc::ensure_fault_handler() != tnbc::HandlerState::Ours) _exit(6);
    // The program asking through sigaction() sees the handler on top of the chain.
    struct sigaction seen;
    if (!tnbc::intercept_sigaction(SIGSEGV, nullptr, &seen) || seen.sa_sigaction != foreign) _exit(7);
    genuine_fault();  // tnbc -> foreign -> back to tnbc -> bottom
  });
  CHECK(status == 11);  // bottom reached, after the foreign handler
}

TEST_CASE("signal chain: a replacement that cannot be undone is reported as lost") {
  const int status = in_child([] {
    tnbc::install_fault_handler(1000000000LL);
    install_raw_foreign();
    if (lock_sigsegv_action() != 0) _exit(77);  // SIGSEGV's action cannot be changed from now on
    _exit(tnbc::ensure_fault_handler() == tnbc::HandlerState::Lost ? 20 : 21);
  });
  if (status == 77) WARN("seccomp filters are not available here: not tested");
  else CHECK(status == 20);
}
