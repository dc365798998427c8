#include "runtime/pool.hh"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>

namespace tnbc {

Pool::~Pool() {
  for (auto& [cap, p] : free_) munmap(p, cap);
}

namespace {
std::size_t capacity_for(std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return std::bit_ceil(std::max(bytes, page));
}
}  // namespace

Block Pool::reuse(std::size_t bytes) {
  const std::size_t cap = capacity_for(bytes);
  std::lock_guard lock(mutex_);
  auto it = free_.find(cap);
  if (it == free_.end()) return {};
  Block b{it->second, cap};
  free_.erase(it);
  cached_ -= cap;
  return b;
}

Block Pool::acquire(std::size_t bytes) {
  if (Block b = reuse(bytes); b.data) return b;
  const std::size_t cap = capacity_for(bytes);
  void* p = mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return {};
  return {static_cast<char*>(p), cap};
}

void Pool::release(Block b) {
  if (!b.data) return;
  std::lock_guard lock(mutex_);
  free_.emplace(b.capacity, b.data);
  cached_ += b.capacity;
}

std::size_t Pool::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_;
}

}  // namespace tnbc
