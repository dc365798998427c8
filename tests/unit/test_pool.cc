// The staging pool (runtime/pool.hh): blocks come back by size class; reuse() hands out only
// what the pool holds (the engine's staging() waits for the progress thread's round before it
// lets acquire() map fresh pages).
#include <catch2/catch.hpp>

#include <unistd.h>

#include "runtime/pool.hh"

using namespace tnbc;

TEST_CASE("pool: reuse hands out only released blocks of the size class, acquire maps when none is free") {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  Pool pool;
  CHECK(pool.reuse(3 * page).data == nullptr);  // nothing released yet: no block, nothing mapped
  CHECK(pool.cached_bytes() == 0);
  Block a = pool.acquire(3 * page);
  REQUIRE(a.data != nullptr);
  CHECK(a.capacity == 4 * page);  // a power of two
  a.data[a.capacity - 1] = 1;     // writable to its end
  pool.release(a);
  CHECK(pool.cached_bytes() == 4 * page);
  CHECK(pool.reuse(5 * page).data == nullptr);  // another class: not this block
  const Block b = pool.reuse(4 * page);
  CHECK(b.data == a.data);
  CHECK(b.capacity == a.capacity);
  CHECK(pool.cached_bytes() == 0);
  CHECK(pool.reuse(3 * page).data == nullptr);  // handed out once
  const Block c = pool.acquire(3 * page);       // none free: a fresh one
  REQUIRE(c.data != nullptr);
  CHECK(c.data != b.data);
  pool.release(b);
  pool.release(c);
  CHECK(pool.cached_bytes() == 8 * page);
}
