// The host context's mappings (memory/page_mapping.hpp): whole pages, zeroed
// and resident before they are handed out, huge-page aligned from 2 MiB up,
// and exactly their pages resident whichever page size the kernel chose.

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>

#include "dwsr/memory/page_mapping.hpp"
#include "dwsr/memory/rss_probe.hpp"

using namespace dwsr;

TEST_CASE("a mapping is whole zeroed pages, resident at once, huge-page aligned from 2 MiB up") {
  const auto page = std::uint64_t(::sysconf(_SC_PAGESIZE));
  CHECK(detail::mapped_bytes(1) == page);
  CHECK(detail::mapped_bytes(page) == page);
  CHECK(detail::mapped_bytes(page + 1) == 2 * page);

  // Below a huge page, at a huge page, and a size with an unaligned tail.
  for (std::uint64_t bytes : {std::uint64_t{5000}, detail::huge_page_bytes, 3 * detail::huge_page_bytes + 12345}) {
    INFO(bytes << " bytes");
    const auto before = resident_bytes();
    auto* p = static_cast<unsigned char*>(detail::map_populated(bytes));
    REQUIRE(p != nullptr);
    // Resident before the first touch: the mapping's pages, no more (the
    // figure is the page tables' sum; the test's own heap is quiet here).
    const auto held = resident_bytes() - before;
    CHECK(held >= detail::mapped_bytes(bytes));
    CHECK(held <= detail::mapped_bytes(bytes) + 16 * page);
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    CHECK(at % page == 0);
    if (bytes >= detail::huge_page_bytes) CHECK(at % detail::huge_page_bytes == 0);
    bool zero = true;
    for (std::uint64_t k = 0; k < bytes; k += 997) zero = zero && p[k] == 0;
    CHECK(zero);
    std::memset(p, 0xab, bytes);  // writable to the last byte
    CHECK(p[bytes - 1] == 0xab);
    detail::unmap(p, bytes);
    CHECK(resident_bytes() <= before + 16 * page);
  }
  detail::unmap(nullptr, 100);  // nothing to return
}
