#include "runtime/pool.hh"

#include <sys/mman.h>
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <fstream>

namespace tnbc {

Pool::~Pool() {
  for (auto& [cap, p] : free_) munmap(p, cap);
}

// The kernel's huge page for anonymous memory, read once.
std::size_t staging_huge_page_bytes() {
  static const std::size_t bytes = [] {
    std::size_t b = 0;
    std::ifstream("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") >> b;
    return b;
  }();
  return bytes;
}

bool staging_in_huge_pages(std::size_t bytes) {
  const std::size_t huge = staging_huge_page_bytes();
  return huge > 0 && bytes >= huge && bytes % huge == 0;
}

char* map_staging(std::size_t bytes, bool huge_pages) {
  const std::size_t huge = staging_huge_page_bytes();
  const bool whole_huge = huge_pages && staging_in_huge_pages(bytes);
  // Over by one huge page less a page, then the ends trimmed: the block starts on a boundary.
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t slack = whole_huge ? huge - page : 0;
  void* p = mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* at = static_cast<char*>(p);
  if (!whole_huge) return at;
  const std::size_t head = (huge - reinterpret_cast<std::uintptr_t>(at) % huge) % huge;
  if (head > 0) munmap(at, head);
  if (slack > head) munmap(at + head + bytes, slack - head);
  madvise(at + head, bytes, MADV_HUGEPAGE);  // advice: where it fails, pages as before
  return at + head;
}

std::size_t Pool::capacity_for(std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return std::bit_ceil(std::max(bytes, page));
}

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
  char* p = map_staging(cap, huge_pages_);
  if (!p) return {};
  return {p, cap};
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
