#include <catch2/catch.hpp>

#include "dwsr/sim/host_malloc.hpp"

using namespace dwsr;
using namespace dwsr::sim;

static_assert(AllocatorModel<host_malloc_model>);

TEST_CASE("host_malloc: a small request grows the heap by request + top_pad, only written pages count") {
  host_malloc_model m;
  REQUIRE(m.alloc(1, 100));  // chunk of 112 B
  CHECK(m.allocated() == 112);
  CHECK(m.heap_size() == 135168);  // round_page(112 + 128 KiB + 32)
  CHECK(m.reserved() == 4096);     // one page written
  CHECK(m.stats().segments == 1);
}

TEST_CASE("host_malloc: requests above the mmap threshold are mmapped and unmapped on free") {
  host_malloc_model m;
  REQUIRE(m.alloc(1, 200 * 1024));
  CHECK(m.mmapped() == 208896);  // round_page(204816 + 8)
  CHECK(m.reserved() == 208896);
  CHECK(m.heap_size() == 0);
  m.free(1, 0);
  CHECK(m.reserved() == 0);  // RSS drops at once
  SECTION("the free raises the mmap threshold to the chunk size: the next one comes from the heap") {
    CHECK(m.settings().mmap_threshold == 208896);
    CHECK(m.settings().trim_threshold == 2 * 208896);
    REQUIRE(m.alloc(2, 200 * 1024));
    CHECK(m.mmapped() == 0);
    CHECK(m.heap_size() == 339968);  // round_page(204816 + 128 KiB + 32)
    CHECK(m.reserved() == 208896);   // round_page(204816 + 16) written
    m.free(2, 0);
    CHECK(m.reserved() == 208896);  // the top (332 KiB) is below the trim threshold (408 KiB): RSS stays
    CHECK(m.allocated() == 0);
  }
  SECTION("a set threshold does not move") {
    host_malloc_model fixed("mmap_threshold:128KiB");
    REQUIRE(fixed.alloc(1, 200 * 1024));
    fixed.free(1, 0);
    CHECK(fixed.settings().mmap_threshold == 128 * 1024);
    REQUIRE(fixed.alloc(2, 200 * 1024));
    CHECK(fixed.mmapped() == 208896);
  }
}

TEST_CASE("host_malloc: freeing into a large top trims the heap down to top_pad") {
  host_malloc_model m;
  REQUIRE(m.alloc(1, 102400));  // 102416 B chunk; the heap grows to 237568
  REQUIRE(m.alloc(2, 102400));  // carved from the top
  CHECK(m.heap_size() == 237568);
  CHECK(m.reserved() == 208896);  // round_page(2 x 102416 + 16)
  m.free(2, 0);                   // top 135152 B: trimming would free less than a page
  CHECK(m.heap_size() == 237568);
  m.free(1, 0);  // top 237568 B >= 128 KiB: keep 128 KiB + 32 + 1 and whole pages above
  CHECK(m.heap_size() == 135168);
  CHECK(m.reserved() == 135168);
  CHECK(m.stats().system_frees == 1);
  const auto s = m.stats();
  CHECK(s.largest_free == s.total_free);  // the whole heap is the top chunk again
}

TEST_CASE("host_malloc: freed chunks are reused best fit and merged with neighbours") {
  host_malloc_model m;
  REQUIRE(m.alloc(1, 1000));
  REQUIRE(m.alloc(2, 5000));
  REQUIRE(m.alloc(3, 1000));
  const auto reserved = m.reserved();
  m.free(2, 0);
  CHECK(m.stats().largest_free > 5000);
  REQUIRE(m.alloc(4, 3000));  // inside the hole of buffer 2
  CHECK(m.reserved() == reserved);
  m.free(4, 0);
  m.free(1, 0);  // merges with the hole
  m.free(3, 0);  // merges with both sides and the top
  CHECK(m.allocated() == 0);
  const auto s = m.stats();
  CHECK(s.largest_free == s.total_free);
  CHECK(s.total_free == m.heap_size());
}

TEST_CASE("host_malloc: resident memory beyond the capacity is OOM") {
  host_malloc_model m(host_malloc_settings{}, 100 * 1024);
  CHECK_FALSE(m.alloc(1, 200 * 1024));
  CHECK(m.oom());
  CHECK(m.stats().oom_bytes == 200 * 1024);
  host_malloc_model h(host_malloc_settings{}, 64 * 1024);
  REQUIRE(h.alloc(1, 50000));      // heap: 12 pages written
  CHECK_FALSE(h.alloc(2, 50000));  // would write past 64 KiB
}
