// The host context's mappings (memory/page_mapping.hpp): whole pages, zeroed
// and resident before they are handed out, huge-page aligned from 2 MiB up,
// and gone when returned. Residency is read for the mapping's own pages
// (mincore), not from the process's RSS, which a sanitizer's shadow memory
// moves by tens of pages.

#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "dwsr/exec/host_context.hpp"
#include "dwsr/memory/event_bus.hpp"
#include "dwsr/memory/page_mapping.hpp"

using namespace dwsr;

TEST_CASE("a mapping is whole zeroed pages, resident at once, huge-page aligned from 2 MiB up") {
  const auto page = std::uint64_t(::sysconf(_SC_PAGESIZE));
  CHECK(detail::mapped_bytes(1) == page);
  CHECK(detail::mapped_bytes(page) == page);
  CHECK(detail::mapped_bytes(page + 1) == 2 * page);

  // Below a huge page, at a huge page, and a size with an unaligned tail.
  for (std::uint64_t bytes : {std::uint64_t{5000}, detail::huge_page_bytes, 3 * detail::huge_page_bytes + 12345}) {
    INFO(bytes << " bytes");
    const auto size = detail::mapped_bytes(bytes);
    std::vector<unsigned char> resident(size / page);
    auto* p = static_cast<unsigned char*>(detail::map_populated(bytes));
    REQUIRE(p != nullptr);
    // Every page resident before the first touch.
    const int listed = ::mincore(p, size, resident.data());
    REQUIRE(listed == 0);
    CHECK(std::all_of(resident.begin(), resident.end(), [](unsigned char r) { return (r & 1) != 0; }));
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    CHECK(at % page == 0);
    if (bytes >= detail::huge_page_bytes) CHECK(at % detail::huge_page_bytes == 0);
    bool zero = true;
    for (std::uint64_t k = 0; k < bytes; k += 997) zero = zero && p[k] == 0;
    CHECK(zero);
    std::memset(p, 0xab, bytes);  // writable to the last byte
    CHECK(p[bytes - 1] == 0xab);
    detail::unmap(p, bytes);
    const int gone = ::mincore(p, size, resident.data());  // ENOMEM: the range is no longer mapped
    CHECK(gone == -1);
  }
  detail::unmap(nullptr, 100);  // nothing to return
}

TEST_CASE("a host context of several threads populates large buffers among them: resident, zeroed, whole") {
  const auto page = std::uint64_t(::sysconf(_SC_PAGESIZE));
  event_bus bus;
  for (std::size_t threads : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
    host_context ctx(bus, {.threads = threads});
    // Below the split, split evenly, and split with a short last piece and an unaligned tail.
    for (std::uint64_t bytes :
         {std::uint64_t{5000}, 4 * detail::huge_page_bytes, 13 * detail::huge_page_bytes + 12345}) {
      INFO(threads << " threads, " << bytes << " bytes");
      auto b = ctx.allocate<unsigned char>(bytes, buffer_role::temporary);
      const auto size = detail::mapped_bytes(bytes);
      std::vector<unsigned char> resident(size / page);
      REQUIRE(::mincore(b.data(), size, resident.data()) == 0);
      CHECK(std::all_of(resident.begin(), resident.end(), [](unsigned char r) { return (r & 1) != 0; }));
      bool zero = true;
      for (std::uint64_t k = 0; k < bytes; k += 997) zero = zero && b.data()[k] == 0;
      CHECK(zero);
      CHECK(b.data()[bytes - 1] == 0);
    }
  }
}

TEST_CASE("a mapping whose population fails is returned, not handed out") {
  std::uint64_t asked = 0;
  void* p = detail::map_populated(3 * detail::huge_page_bytes, [&](char*, std::uint64_t size) {
    asked = size;
    return false;
  });
  CHECK(p == nullptr);
  CHECK(asked == 3 * detail::huge_page_bytes);
}
