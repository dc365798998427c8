// libc interposers.
// 1. Calls through which the kernel reads or writes user memory: a guarded page would make
//    them fail with EFAULT instead of faulting, so the buffer is fenced first (completed and
//    published). Direct `syscall(2)` uses and libc-internal calls are not seen (docs/limitations).
// 2. free / realloc / munmap / madvise (purging advice): memory must not be unmapped or purged (and perhaps mapped again by someone
//    else) while tnbc may still publish into it. munmap / mmap / mremap / shmat also make tnbc
//    forget which mappings it found private (a shared one may take a private one's place).
// 3. sigaction / signal for SIGSEGV: while tnbc's handler is installed the program's handler is
//    chained behind it instead of replacing it.
// Every fence starts with one atomic load (no guarded range: nothing else happens).
// Both pread and pread64 (etc.) are interposed: define them under their own names.
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdarg>
#include <cstring>

#include "runtime/guard.hh"
#include "runtime/memory_map.hh"

namespace {

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

void fence_bytes(const void* p, std::size_t n) {
  if (tnbc::guards().empty() || p == nullptr || n == 0) return;
  const auto lo = reinterpret_cast<std::uintptr_t>(p);
  tnbc::fence_range(lo, lo + n, tnbc::Access::Syscall, "a system call on a guarded buffer");
}

void fence_iov(const struct iovec* iov, int count) {
  if (tnbc::guards().empty() || iov == nullptr) return;
  for (int i = 0; i < count; ++i) fence_bytes(iov[i].iov_base, iov[i].iov_len);
}

void fence_msg(const struct msghdr* m) {
  if (m) fence_iov(m->msg_iov, static_cast<int>(m->msg_iovlen));
}

using FreeFn = void (*)(void*);
FreeFn g_real_free = nullptr;
[[gnu::constructor]] void resolve_free() { g_real_free = next<FreeFn>("free"); }

}  // namespace

extern "C" {

ssize_t read(int fd, void* buf, size_t n) {
  static const auto real = next<ssize_t (*)(int, void*, size_t)>("read");
  fence_bytes(buf, n);
  return real(fd, buf, n);
}
ssize_t write(int fd, const void* buf, size_t n) {
  static const auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
  fence_bytes(buf, n);
  return real(fd, buf, n);
}
ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  static const auto real = next<ssize_t (*)(int, void*, size_t, off_t)>("pread");
  fence_bytes(buf, n);
  return real(fd, buf, n, off);
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  static const auto real = next<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  fence_bytes(buf, n);
  return real(fd, buf, n, off);
}
ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  static const auto real = next<ssize_t (*)(int, void*, size_t, off64_t)>("pread64");
  fence_bytes(buf, n);
  return real(fd, buf, n, off);
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  static const auto real = next<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64");
  fence_bytes(buf, n);
  return real(fd, buf, n, off);
}
ssize_t readv(int fd, const struct iovec* iov, int count) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int)>("readv");
  fence_iov(iov, count);
  return real(fd, iov, count);
}
ssize_t writev(int fd, const struct iovec* iov, int count) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int)>("writev");
  fence_iov(iov, count);
  return real(fd, iov, count);
}
ssize_t preadv(int fd, const struct iovec* iov, int count, off_t off) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int, off_t)>("preadv");
  fence_iov(iov, count);
  return real(fd, iov, count, off);
}
ssize_t pwritev(int fd, const struct iovec* iov, int count, off_t off) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int, off_t)>("pwritev");
  fence_iov(iov, count);
  return real(fd, iov, count, off);
}
// Programs built with _FILE_OFFSET_BITS=64 (meson's default, autoconf's AC_SYS_LARGEFILE) call
// the *64 names of the vectored calls; preadv2/pwritev2 are further symbols of their own.
ssize_t preadv64(int fd, const struct iovec* iov, int count, off64_t off) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int, off64_t)>("preadv64");
  fence_iov(iov, count);
  return real(fd, iov, count, off);
}
ssize_t pwritev64(int fd, const struct iovec* iov, int count, off64_t off) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int, off64_t)>("pwritev64");
  fence_iov(iov, count);
  return real(fd, iov, count, off);
}
ssize_t preadv2(int fd, const struct iovec* iov, int count, off_t off, int flags) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int, off_t, int)>("preadv2");
  fence_iov(iov, count);
  return real(fd, iov, count, off, flags);
}
ssize_t pwritev2(int fd, const struct iovec* iov, int count, off_t off, int flags) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int, off_t, int)>("pwritev2");
  fence_iov(iov, count);
  return real(fd, iov, count, off, flags);
}
ssize_t preadv64v2(int fd, const struct iovec* iov, int count, off64_t off, int flags) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int, off64_t, int)>("preadv64v2");
  fence_iov(iov, count);
  return real(fd, iov, count, off, flags);
}
ssize_t pwritev64v2(int fd, const struct iovec* iov, int count, off64_t off, int flags) {
  static const auto real = next<ssize_t (*)(int, const struct iovec*, int, off64_t, int)>("pwritev64v2");
  fence_iov(iov, count);
  return real(fd, iov, count, off, flags);
}
ssize_t recv(int fd, void* buf, size_t n, int flags) {
  static const auto real = next<ssize_t (*)(int, void*, size_t, int)>("recv");
  fence_bytes(buf, n);
  return real(fd, buf, n, flags);
}
ssize_t recvfrom(int fd, void* buf, size_t n, int flags, struct sockaddr* from, socklen_t* len) {
  static const auto real = next<ssize_t (*)(int, void*, size_t, int, struct sockaddr*, socklen_t*)>("recvfrom");
  fence_bytes(buf, n);
  return real(fd, buf, n, flags, from, len);
}
ssize_t recvmsg(int fd, struct msghdr* m, int flags) {
  static const auto real = next<ssize_t (*)(int, struct msghdr*, int)>("recvmsg");
  fence_msg(m);
  return real(fd, m, flags);
}
ssize_t send(int fd, const void* buf, size_t n, int flags) {
  static const auto real = next<ssize_t (*)(int, const void*, size_t, int)>("send");
  fence_bytes(buf, n);
  return real(fd, buf, n, flags);
}
ssize_t sendto(int fd, const void* buf, size_t n, int flags, const struct sockaddr* to, socklen_t len) {
  static const auto real = next<ssize_t (*)(int, const void*, size_t, int, const struct sockaddr*, socklen_t)>("sendto");
  fence_bytes(buf, n);
  return real(fd, buf, n, flags, to, len);
}
ssize_t sendmsg(int fd, const struct msghdr* m, int flags) {
  static const auto real = next<ssize_t (*)(int, const struct msghdr*, int)>("sendmsg");
  fence_msg(m);
  return real(fd, m, flags);
}
size_t fread(void* p, size_t size, size_t n, FILE* f) {
  static const auto real = next<size_t (*)(void*, size_t, size_t, FILE*)>("fread");
  fence_bytes(p, size * n);
  return real(p, size, n, f);
}
size_t fwrite(const void* p, size_t size, size_t n, FILE* f) {
  static const auto real = next<size_t (*)(const void*, size_t, size_t, FILE*)>("fwrite");
  fence_bytes(p, size * n);
  return real(p, size, n, f);
}

// Programs built with -D_FORTIFY_SOURCE call the checked (_chk) names wherever the compiler
// knows the buffer's size; glibc runs them without going through the names above.
ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  static const auto real = next<ssize_t (*)(int, void*, size_t, size_t)>("__read_chk");
  fence_bytes(buf, n);
  return real(fd, buf, n, buflen);
}
ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen) {
  static const auto real = next<ssize_t (*)(int, void*, size_t, off_t, size_t)>("__pread_chk");
  fence_bytes(buf, n);
  return real(fd, buf, n, off, buflen);
}
ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen) {
  static const auto real = next<ssize_t (*)(int, void*, size_t, off64_t, size_t)>("__pread64_chk");
  fence_bytes(buf, n);
  return real(fd, buf, n, off, buflen);
}
ssize_t __recv_chk(int fd, void* buf, size_t n, size_t buflen, int flags) {
  static const auto real = next<ssize_t (*)(int, void*, size_t, size_t, int)>("__recv_chk");
  fence_bytes(buf, n);
  return real(fd, buf, n, buflen, flags);
}
ssize_t __recvfrom_chk(int fd, void* buf, size_t n, size_t buflen, int flags, struct sockaddr* from, socklen_t* len) {
  static const auto real =
      next<ssize_t (*)(int, void*, size_t, size_t, int, struct sockaddr*, socklen_t*)>("__recvfrom_chk");
  fence_bytes(buf, n);
  return real(fd, buf, n, buflen, flags, from, len);
}
size_t __fread_chk(void* p, size_t plen, size_t size, size_t n, FILE* f) {
  static const auto real = next<size_t (*)(void*, size_t, size_t, size_t, FILE*)>("__fread_chk");
  fence_bytes(p, size * n);
  return real(p, plen, size, n, f);
}
size_t __fread_unlocked_chk(void* p, size_t plen, size_t size, size_t n, FILE* f) {
  static const auto real = next<size_t (*)(void*, size_t, size_t, size_t, FILE*)>("__fread_unlocked_chk");
  fence_bytes(p, size * n);
  return real(p, plen, size, n, f);
}
size_t fread_unlocked(void* p, size_t size, size_t n, FILE* f) {
  static const auto real = next<size_t (*)(void*, size_t, size_t, FILE*)>("fread_unlocked");
  fence_bytes(p, size * n);
  return real(p, size, n, f);
}
size_t fwrite_unlocked(const void* p, size_t size, size_t n, FILE* f) {
  static const auto real = next<size_t (*)(const void*, size_t, size_t, FILE*)>("fwrite_unlocked");
  fence_bytes(p, size * n);
  return real(p, size, n, f);
}

void free(void* p) {
  if (p && !tnbc::guards().empty()) fence_bytes(p, malloc_usable_size(p));
  if (g_real_free) g_real_free(p);  // null only while dlsym itself runs at load: leak that block
}
void* realloc(void* p, size_t n) {
  static const auto real = next<void* (*)(void*, size_t)>("realloc");
  if (p && !tnbc::guards().empty()) fence_bytes(p, malloc_usable_size(p));
  return real(p, n);
}
int munmap(void* p, size_t n) {
  static const auto real = next<int (*)(void*, size_t)>("munmap");
  fence_bytes(p, n);
  const int rc = real(p, n);
  tnbc::mappings_changed();
  return rc;
}
// An allocator that frees memory by purging its pages (jemalloc, tcmalloc, glibc's arena trim;
// also one linked into the program, whose free() tnbc does not see) expects them to read as
// zeros afterwards: published data arriving later would break that.
int madvise(void* p, size_t n, int advice) {
  static const auto real = next<int (*)(void*, size_t, int)>("madvise");
  if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE) fence_bytes(p, n);
  return real(p, n, advice);
}
void* mmap(void* p, size_t n, int prot, int flags, int fd, off_t off) {
  static const auto real = next<void* (*)(void*, size_t, int, int, int, off_t)>("mmap");
  void* q = real(p, n, prot, flags, fd, off);
  tnbc::mappings_changed();
  return q;
}
void* mmap64(void* p, size_t n, int prot, int flags, int fd, off64_t off) {
  static const auto real = next<void* (*)(void*, size_t, int, int, int, off64_t)>("mmap64");
  void* q = real(p, n, prot, flags, fd, off);
  tnbc::mappings_changed();
  return q;
}
void* mremap(void* p, size_t old_n, size_t n, int flags, ...) {
  static const auto real = next<void* (*)(void*, size_t, size_t, int, ...)>("mremap");
  void* target = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    target = va_arg(ap, void*);
    va_end(ap);
  }
  fence_bytes(p, old_n);
  void* q = (flags & MREMAP_FIXED) ? real(p, old_n, n, flags, target) : real(p, old_n, n, flags);
  tnbc::mappings_changed();
  return q;
}
void* shmat(int id, const void* p, int flags) {
  static const auto real = next<void* (*)(int, const void*, int)>("shmat");
  void* q = real(id, p, flags);
  tnbc::mappings_changed();
  return q;
}

int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  static const auto real = next<int (*)(int, const struct sigaction*, struct sigaction*)>("sigaction");
  if (tnbc::intercept_sigaction(sig, act, old)) return 0;
  return real(sig, act, old);
}
sighandler_t signal(int sig, sighandler_t handler) {
  static const auto real = next<sighandler_t (*)(int, sighandler_t)>("signal");
  struct sigaction act, old;
  std::memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  if (tnbc::intercept_sigaction(sig, &act, &old)) return (old.sa_flags & SA_SIGINFO) ? SIG_DFL : old.sa_handler;
  return real(sig, handler);
}

}  // extern "C"
