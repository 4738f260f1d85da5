#include <catch2/catch.hpp>

#include "dwsr/sim/torch_cuda_caching.hpp"

using namespace dwsr;
using namespace dwsr::sim;

namespace {
constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// Drives a model with named buffers, checking its invariants after each step.
struct driver {
  torch_cuda_caching_model m;
  std::uint64_t next = 1;
  explicit driver(std::string_view conf = "", std::optional<std::uint64_t> capacity = {}) : m(conf, capacity) {}
  std::uint64_t malloc(std::uint64_t bytes) {
    const auto id = next++;
    REQUIRE(m.alloc(id, bytes));
    m.check();
    return id;
  }
  void free(std::uint64_t id) {
    m.free(id, 0);
    m.check();
  }
  // empty_cache() once every buffer is freed: no segment may stay.
  void empty_cache_releases_everything() {
    m.empty_cache();
    m.check();
    CHECK(m.reserved() == 0);
    CHECK(m.stats().segments == 0);
  }
};
}  // namespace

// ---- The worked examples of notes/allocators.md (defaults, empty start), exact numbers.

TEST_CASE("worked example: malloc(1) then malloc(1 MiB) share one 2 MiB small segment") {
  driver d;
  d.malloc(1);
  CHECK(d.m.allocated() == 512);
  CHECK(d.m.reserved() == 2 * MiB);
  d.malloc(1 * MiB);
  CHECK(d.m.allocated() == 512 + 1 * MiB);
  CHECK(d.m.reserved() == 2 * MiB);
  CHECK(d.m.stats().segments == 1);
}

TEST_CASE("worked example: malloc(1 MiB + 1) is a large request in a 20 MiB segment") {
  driver d;
  d.malloc(1 * MiB + 1);
  CHECK(d.m.allocated() == 1'049'088);
  CHECK(d.m.reserved() == 20 * MiB);
}

TEST_CASE("worked example: malloc(19.5 MiB) takes its whole 20 MiB segment (remainder 0.5 MiB <= 1 MiB)") {
  driver d;
  d.malloc(19 * MiB + 512 * KiB);
  CHECK(d.m.allocated() == 20 * MiB);
  CHECK(d.m.reserved() == 20 * MiB);
}

TEST_CASE("worked example: malloc(10 MiB) gets a segment of exactly 10 MiB") {
  driver d;
  d.malloc(10 * MiB);
  CHECK(d.m.allocated() == 10 * MiB);
  CHECK(d.m.reserved() == 10 * MiB);
}

TEST_CASE("worked example: malloc(10 MiB - 512) still gets a 20 MiB segment") {
  driver d;
  d.malloc(10 * MiB - 512);
  CHECK(d.m.allocated() == 10 * MiB - 512);
  CHECK(d.m.reserved() == 20 * MiB);
}

TEST_CASE("worked example: a 100 MiB block is split for 50 MiB, 60 MiB needs a new segment") {
  driver d;
  const auto a = d.malloc(100 * MiB);
  d.free(a);
  d.malloc(50 * MiB);
  CHECK(d.m.reserved() == 100 * MiB);
  d.malloc(60 * MiB);
  CHECK(d.m.allocated() == 110 * MiB);
  CHECK(d.m.reserved() == 160 * MiB);
  CHECK(d.m.stats().peak_reserved == 160 * MiB);
}

TEST_CASE("worked example: with max_split_size_mb=64 the 100 MiB block is oversize and not split") {
  driver d("max_split_size_mb:64");
  const auto a = d.malloc(100 * MiB);
  d.free(a);
  d.malloc(50 * MiB);
  CHECK(d.m.reserved() == 150 * MiB);  // b could not take the cached oversize block
  // Derived from the same rules (not in the notes' table): c cannot take it either.
  d.malloc(60 * MiB);
  CHECK(d.m.allocated() == 110 * MiB);
  CHECK(d.m.reserved() == 210 * MiB);
}

TEST_CASE("worked example: roundup_power2_divisions=4 rounds 1,258,291 B up to 1,310,720 B") {
  driver d("roundup_power2_divisions:4");
  d.malloc(1'258'291);
  CHECK(d.m.allocated() == 1'310'720);
  CHECK(d.m.reserved() == 20 * MiB);  // a large request below 10 MiB
  CHECK(d.m.settings().round_size(1'258'291) == 1'310'720);
  CHECK(d.m.settings().round_size(1 * MiB) == 1 * MiB);  // powers of two stay
  CHECK(d.m.settings().round_size(2048) == 2048);        // n <= 512 x divisions: plain 512 rounding
  CHECK(d.m.settings().round_size(2049) == 2560);
}

// ---- Rounding and pools.

TEST_CASE("requests round up to 512 B, a zero-byte request makes no block") {
  driver d;
  d.malloc(0);
  CHECK(d.m.allocated() == 0);
  CHECK(d.m.reserved() == 0);
  d.malloc(513);
  CHECK(d.m.allocated() == 1024);
  CHECK(d.m.stats().requested == 513);
}

TEST_CASE("small and large pools never share segments") {
  driver d;
  const auto big = d.malloc(1 * MiB + 1);  // large pool: 20 MiB segment with 19 MiB free
  d.malloc(512);                           // small pool: cannot use the large free block
  CHECK(d.m.reserved() == 22 * MiB);
  CHECK(d.m.stats().segments == 2);
  d.free(big);
}

// ---- Splitting: both sides of 1 MiB.

TEST_CASE("large pool: a remainder of exactly 1 MiB is not split off, 1 MiB + 512 B is") {
  SECTION("remainder 1 MiB") {
    driver d;
    d.malloc(19 * MiB);
    CHECK(d.m.allocated() == 20 * MiB);
    CHECK(d.m.blocks().size() == 1);
  }
  SECTION("remainder 1 MiB + 512") {
    driver d;
    d.malloc(19 * MiB - 512);
    CHECK(d.m.allocated() == 19 * MiB - 512);
    const auto b = d.m.blocks();
    REQUIRE(b.size() == 2);
    CHECK(b[1].size == 1 * MiB + 512);
    CHECK_FALSE(b[1].allocated);
  }
}

TEST_CASE("small pool: any remainder of at least 512 B is split off") {
  driver d;
  d.malloc(1 * MiB);        // [1 MiB][1 MiB free]
  d.malloc(1 * MiB - 512);  // takes the free MiB, leaves 512 B
  auto b = d.m.blocks();
  REQUIRE(b.size() == 3);
  CHECK(b[2].size == 512);
  CHECK_FALSE(b[2].allocated);
  d.malloc(512);  // exactly fits: no split
  CHECK(d.m.blocks().size() == 3);
  CHECK(d.m.allocated() == 2 * MiB);
  CHECK(d.m.reserved() == 2 * MiB);
}

// ---- Merging.

TEST_CASE("a freed block merges with free neighbours on both sides") {
  driver d;
  const auto a = d.malloc(1 * MiB + 1), b = d.malloc(1 * MiB + 1), c = d.malloc(1 * MiB + 1);
  CHECK(d.m.blocks().size() == 4);  // a, b, c and the free tail of one 20 MiB segment
  d.free(a);
  d.free(c);  // merges with the tail
  CHECK(d.m.blocks().size() == 3);
  d.free(b);  // merges with a before and with c + tail after
  const auto blocks = d.m.blocks();
  REQUIRE(blocks.size() == 1);
  CHECK(blocks[0].size == 20 * MiB);
  CHECK(d.m.stats().largest_free == 20 * MiB);
  CHECK(d.m.stats().fragmentation() == 0.0);
}

TEST_CASE("blocks never merge across segments, even adjacent in memory") {
  driver d;
  const auto a = d.malloc(19 * MiB + 512 * KiB), b = d.malloc(19 * MiB + 512 * KiB);
  REQUIRE(*d.m.address_of(b) == *d.m.address_of(a) + 20 * MiB);  // the address model places them side by side
  d.free(a);
  d.free(b);
  const auto blocks = d.m.blocks();
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0].segment_start);
  CHECK(blocks[1].segment_start);
  const auto s = d.m.stats();
  CHECK(s.largest_free == 20 * MiB);
  CHECK(s.total_free == 40 * MiB);
  CHECK(s.fragmentation() == 0.5);
}

// ---- Best fit.

TEST_CASE("best fit takes the smallest free block that fits, the lowest address on ties") {
  driver d;
  const auto a = d.malloc(19 * MiB + 512 * KiB), b = d.malloc(19 * MiB + 512 * KiB);
  const auto big = d.malloc(29 * MiB + 512 * KiB);  // a 30 MiB segment
  const auto a_addr = *d.m.address_of(a);
  d.free(big);
  d.free(b);
  d.free(a);
  const auto c = d.malloc(15 * MiB);  // 20 MiB blocks fit better than the 30 MiB one; a's is lowest
  CHECK(*d.m.address_of(c) == a_addr);
  CHECK(d.m.reserved() == 70 * MiB);
}

// ---- max_split_size and max_non_split_rounding.

TEST_CASE("an oversize block serves a large request only within max_non_split_rounding") {
  driver d("max_split_size_mb:64");
  const auto a = d.malloc(100 * MiB);
  d.free(a);
  const auto b = d.malloc(90 * MiB);  // 100 < 90 + 20: reused whole, not split
  CHECK(d.m.reserved() == 100 * MiB);
  CHECK(d.m.allocated() == 100 * MiB);
  d.free(b);
  d.malloc(70 * MiB);  // 100 >= 70 + 20: a new segment
  CHECK(d.m.reserved() == 170 * MiB);
}

// ---- Out of memory: release and retry.

TEST_CASE("a failed cudaMalloc frees the cache and retries, then OOM") {
  driver d("", 100 * MiB);
  const auto a = d.malloc(60 * MiB);
  d.free(a);
  d.malloc(70 * MiB);  // cudaMalloc(70) fails with 60 cached: empty the cache, retry
  CHECK(d.m.reserved() == 70 * MiB);
  CHECK(d.m.stats().retries == 1);
  CHECK_FALSE(d.m.alloc(100, 40 * MiB));  // 70 + 40 > 100 and nothing to release
  CHECK(d.m.oom());
  const auto s = d.m.stats();
  CHECK(s.oom_bytes == 40 * MiB);
  CHECK(s.retries == 2);
  CHECK(s.reserved == 70 * MiB);
  d.m.check();
}

TEST_CASE("with max_split_size, a failed cudaMalloc first frees the oversize block that covers the request") {
  driver d("max_split_size_mb:64", 200 * MiB);
  const auto a = d.malloc(150 * MiB);
  d.free(a);
  d.malloc(100 * MiB);  // 150 >= 100 + 20: miss; cudaMalloc(100) fails; the 150 MiB block goes; no full retry
  CHECK(d.m.reserved() == 100 * MiB);
  CHECK(d.m.stats().retries == 0);
  CHECK(d.m.stats().system_frees == 1);
}

TEST_CASE("with max_split_size and no single block large enough, oversize blocks go from the largest down") {
  driver d("max_split_size_mb:64", 200 * MiB);
  const auto a = d.malloc(70 * MiB), b = d.malloc(80 * MiB);
  d.free(a);
  d.free(b);
  d.malloc(120 * MiB);  // frees 80 then 70 (150 >= 120), then cudaMalloc(120) succeeds
  CHECK(d.m.reserved() == 120 * MiB);
  CHECK(d.m.stats().retries == 0);
  CHECK(d.m.stats().system_frees == 2);
}

TEST_CASE("a memory fraction caps reserved memory below the capacity") {
  driver d("per_process_memory_fraction:0.1", 1000 * MiB);  // 100 MiB allowed
  CHECK_FALSE(d.m.alloc(1, 120 * MiB));
  CHECK(d.m.oom());
  CHECK(d.m.reserved() == 0);
  CHECK_THROWS_WITH(torch_cuda_caching_model("per_process_memory_fraction:0.5"), Catch::Contains("capacity"));
}

TEST_CASE("garbage collection frees whole free large segments of at least the average age") {
  // 1000 MiB device, fraction 0.5: 500 MiB allowed; threshold 0.5: collect above 250 MiB.
  driver d("per_process_memory_fraction:0.5,garbage_collection_threshold:0.5", 1000 * MiB);
  const auto a = d.malloc(100 * MiB), b = d.malloc(100 * MiB);  // pool searches: 2
  d.free(a);                                                    // a becomes free at age 0 (clock 2)
  const auto c = d.malloc(150 * MiB);                           // search 3: miss; 200 <= 250, no GC
  d.free(b);                                                    // clock 3
  d.free(c);                                                    // clock 3
  CHECK(d.m.reserved() == 350 * MiB);
  d.malloc(160 * MiB);  // search 4: ages a=2, b=1, c=1, mean 4/3: only a goes, 100 >= 350 - 250
  CHECK(d.m.reserved() == 250 * MiB + 160 * MiB);
  std::uint64_t cached = 0;
  for (const auto& blk : d.m.blocks())
    if (!blk.allocated) cached += blk.size;
  CHECK(cached == 250 * MiB);  // b and c are still cached
}

TEST_CASE("empty_cache releases fully free segments only") {
  driver d;
  const auto a = d.malloc(1 * MiB + 1);
  const auto b = d.malloc(50 * MiB);
  d.free(b);
  d.m.empty_cache();
  d.m.check();
  CHECK(d.m.reserved() == 20 * MiB);  // a's segment is partly in use
  d.free(a);
  d.empty_cache_releases_everything();
}

// ---- Expandable segments.

TEST_CASE("expandable segments map 20 MiB pages for the large pool as the request needs them") {
  driver d("expandable_segments:True", 80 * GiB);
  const auto a = d.malloc(1 * MiB + 1);
  CHECK(d.m.allocated() == 1'049'088);
  CHECK(d.m.reserved() == 20 * MiB);
  const auto b = d.malloc(30 * MiB);  // grows the same segment by one page, merging with the free tail
  CHECK(d.m.allocated() == 1'049'088 + 30 * MiB);
  CHECK(d.m.reserved() == 40 * MiB);
  CHECK(*d.m.address_of(b) == *d.m.address_of(a) + 1'049'088);
  CHECK(d.m.stats().segments == 1);
  d.free(b);
  d.m.empty_cache();  // the second page is wholly free: unmapped; the first holds a
  d.m.check();
  CHECK(d.m.reserved() == 20 * MiB);
  d.free(a);
  d.empty_cache_releases_everything();
}

TEST_CASE("expandable segments map 2 MiB pages for the small pool and split any 512 B remainder") {
  driver d("expandable_segments:True", 80 * GiB);
  d.malloc(512);
  CHECK(d.m.reserved() == 2 * MiB);
  d.malloc(3 * MiB);  // large pool: one 20 MiB page
  CHECK(d.m.reserved() == 22 * MiB);
  d.malloc(20 * MiB - 3 * MiB + 512);  // large remainder 17 MiB is split off, so this needs one more page
  CHECK(d.m.reserved() == 42 * MiB);
  CHECK(d.m.allocated() == 512 + 3 * MiB + 17 * MiB + 512);
}

TEST_CASE("expandable segments: a page that cannot be mapped is OOM after unmapping the cache") {
  driver d("expandable_segments:True", 50 * MiB);
  const auto a = d.malloc(30 * MiB);  // 2 pages
  CHECK(d.m.reserved() == 40 * MiB);
  d.free(a);
  // Growing needs a third page (60 MiB > 50); the retry unmaps the two cached
  // pages, but three fresh pages are still too many.
  CHECK_FALSE(d.m.alloc(99, 45 * MiB));
  CHECK(d.m.oom());
  CHECK(d.m.reserved() == 0);
  CHECK(d.m.stats().retries == 1);
  d.m.check();
}
