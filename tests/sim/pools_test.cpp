#include <catch2/catch.hpp>

#include "dwsr/sim/cupy_pool.hpp"
#include "dwsr/sim/rmm_pool.hpp"

using namespace dwsr;
using namespace dwsr::sim;

static_assert(AllocatorModel<cupy_pool_model>);
static_assert(AllocatorModel<rmm_pool_model>);

namespace {
constexpr std::uint64_t MiB = 1 << 20;
}

TEST_CASE("cupy_pool: cudaMalloc of the 512-rounded size, no segment padding") {
  cupy_pool_model m;
  REQUIRE(m.alloc(1, 1000));
  CHECK(m.allocated() == 1024);
  CHECK(m.reserved() == 1024);
  REQUIRE(m.alloc(2, 10 * MiB + 1));
  CHECK(m.reserved() == 1024 + 10 * MiB + 512);
}

TEST_CASE("cupy_pool: a free chunk is split for a smaller request, frees merge with both neighbours") {
  cupy_pool_model m;
  REQUIRE(m.alloc(1, 3072));
  m.free(1, 0);
  REQUIRE(m.alloc(2, 1024));
  REQUIRE(m.alloc(3, 1024));
  REQUIRE(m.alloc(4, 1024));
  CHECK(m.reserved() == 3072);
  CHECK(m.allocated() == 3072);
  m.free(2, 0);
  m.free(4, 0);
  CHECK(m.stats().largest_free == 1024);
  CHECK(m.stats().fragmentation() == 0.5);
  m.free(3, 0);
  CHECK(m.stats().largest_free == 3072);
}

TEST_CASE("cupy_pool: a failed cudaMalloc frees unsplit cached chunks and retries, then OOM") {
  cupy_pool_model m(0, 4096);
  REQUIRE(m.alloc(1, 3072));
  m.free(1, 0);
  REQUIRE(m.alloc(2, 4096));  // 3072 + 4096 > 4096: free_all_blocks, retry
  CHECK(m.reserved() == 4096);
  CHECK(m.stats().retries == 1);
  CHECK_FALSE(m.alloc(3, 512));
  CHECK(m.oom());
}

TEST_CASE("cupy_pool: free_all_blocks keeps split chunks, a limit fails without retrying") {
  cupy_pool_model m;
  REQUIRE(m.alloc(1, 2048));
  m.free(1, 0);
  REQUIRE(m.alloc(2, 1024));  // [1024 used][1024 free] of one cudaMalloc
  m.free_all_blocks();
  CHECK(m.reserved() == 2048);
  m.free(2, 0);
  m.free_all_blocks();
  CHECK(m.reserved() == 0);

  cupy_pool_model limited("limit:1MiB");
  CHECK(limited.limit() == MiB);
  CHECK_FALSE(limited.alloc(1, 2 * MiB));
  CHECK(limited.stats().retries == 0);
  cupy_pool_model percent("limit:50%", 8 * MiB);
  CHECK(percent.limit() == 4 * MiB);
}

TEST_CASE("rmm_pool: 256-byte alignment, the pool grows by max(request, pool size)") {
  rmm_pool_model m;
  REQUIRE(m.alloc(1, 1000));
  CHECK(m.allocated() == 1024);
  CHECK(m.reserved() == 1024);
  REQUIRE(m.alloc(2, 1000));
  CHECK(m.reserved() == 2048);
  REQUIRE(m.alloc(3, 1000));
  CHECK(m.reserved() == 4096);  // grew by 2048, 1024 left free
  CHECK(m.stats().largest_free == 1024);
  REQUIRE(m.alloc(4, 100));  // 256 B from the free remainder
  CHECK(m.reserved() == 4096);
  CHECK(m.allocated() == 3 * 1024 + 256);
  for (std::uint64_t id : {1, 2, 3, 4}) m.free(id, 0);
  CHECK(m.reserved() == 4096);  // never returned upstream
  CHECK(m.free_blocks() == 3);  // merged within, never across, upstream allocations
  CHECK(m.stats().segments == 3);
}

TEST_CASE("rmm_pool: initial and maximum pool sizes") {
  rmm_pool_model m("initial_pool_size:1MiB");
  CHECK(m.reserved() == MiB);
  REQUIRE(m.alloc(1, 300 * 1024));
  CHECK(m.reserved() == MiB);

  rmm_pool_model capped("maximum_pool_size:1MiB");
  REQUIRE(capped.alloc(1, 1000));
  CHECK(capped.reserved() == 512 * 1024);  // max(request, half of what is left)
  CHECK_FALSE(capped.alloc(2, 600 * 1024));
  CHECK(capped.oom());
}

TEST_CASE("rmm_pool: a failed upstream allocation is retried at half the size, down to the request") {
  rmm_pool_model m(rmm_settings{}, 1'000'000);
  REQUIRE(m.alloc(1, 600'064));
  REQUIRE(m.alloc(2, 1024));  // 600064 does not fit; 300032 does
  CHECK(m.reserved() == 900'096);
  CHECK(m.stats().retries == 1);
  CHECK_FALSE(m.alloc(3, 400'000));
}
