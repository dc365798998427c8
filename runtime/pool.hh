// Staging memory owned by tnbc: page-aligned blocks that MPI receives into and sends from,
// reused across collectives (first touch of a fresh page costs ~10 us on the target VMs, so
// blocks are kept rather than unmapped). Size classes are powers of two. Blocks of whole huge
// pages are mapped on huge-page boundaries and advised to use them (map_staging).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace tnbc {

// Maps `bytes` of fresh anonymous memory for staging (nullptr where it cannot). Where `bytes` is
// a multiple of the huge page (2 MiB on x86-64), the block starts on a huge-page boundary and is
// advised to use huge pages (MADV_HUGEPAGE; transparent huge pages in mode "madvise", Debian's
// default): its first touch then faults once per huge page instead of once per page. On the AMD
// guest of session 81 a fresh 32 MiB send staging took 92-138 ms in NPB FT.A's first MPI_Alltoall
// (~11 us a page), 3.5-6 ms with huge pages (docs/benchmarks.md, "Session 81"). Where the kernel has
// no huge pages for it the advice does nothing: pages as before. Unmap with munmap(p, bytes).
// `huge`: false maps small pages at any size (TNBC_STAGING_HUGE_PAGES=off).
char* map_staging(std::size_t bytes, bool huge = true);
// The huge page map_staging uses (0: the kernel names none), and whether it maps a block of
// `bytes` in them.
std::size_t staging_huge_page_bytes();
bool staging_in_huge_pages(std::size_t bytes);

struct Block {
  char* data = nullptr;
  std::size_t capacity = 0;
};

class Pool {
 public:
  // `huge_pages`: map_staging's `huge` for the blocks it maps.
  explicit Pool(bool huge_pages = true) : huge_pages_(huge_pages) {}
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  Block acquire(std::size_t bytes);  // data == nullptr if memory is exhausted
  // A block the pool holds (data == nullptr: none of this size is free; acquire maps one).
  Block reuse(std::size_t bytes);
  // The size class a block for `bytes` comes from (a power of two, at least a page).
  static std::size_t capacity_for(std::size_t bytes);
  void release(Block b);
  std::size_t cached_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::multimap<std::size_t, char*> free_;  // capacity -> block
  std::size_t cached_ = 0;
  bool huge_pages_ = true;
};

}  // namespace tnbc
