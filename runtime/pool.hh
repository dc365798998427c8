// Staging memory owned by tnbc: page-aligned blocks that MPI receives into and sends from,
// reused across collectives (first touch of a fresh page costs ~10 us on the target VMs, so
// blocks are kept rather than unmapped). Size classes are powers of two.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace tnbc {

struct Block {
  char* data = nullptr;
  std::size_t capacity = 0;
};

class Pool {
 public:
  ~Pool();
  Block acquire(std::size_t bytes);  // data == nullptr if memory is exhausted
  // A block the pool holds (data == nullptr: none of this size is free; acquire maps one).
  Block reuse(std::size_t bytes);
  void release(Block b);
  std::size_t cached_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::multimap<std::size_t, char*> free_;  // capacity -> block
  std::size_t cached_ = 0;
};

}  // namespace tnbc
