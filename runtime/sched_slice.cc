#include "runtime/sched_slice.hh"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace tnbc {

void request_short_slice(long long slice_ns) {
  struct {
    std::uint32_t size, policy;
    std::uint64_t flags;
    std::int32_t nice;
    std::uint32_t priority;
    std::uint64_t runtime, deadline, period;
  } attr{};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0 || attr.policy != 0 /* SCHED_OTHER */) return;
  attr.size = sizeof attr;
  attr.flags = 0;
  attr.runtime = static_cast<std::uint64_t>(slice_ns);
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

}  // namespace tnbc
