// fixed_list: a graph run's per-block scratch, on the stack for small graphs.

#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>

#define DWSR_COUNTING_NEW_ELSEWHERE  // io_test counts through window_test.cpp's replacements
#include "counting_new.hpp"
#include "dwsr/core/fixed_list.hpp"

using dwsr::fixed_list;
using dwsr::test::allocations_during;

namespace {

/// Counts live instances, so that a list is seen to construct and destroy
/// exactly the values it holds.
struct tracked {
  static inline int live = 0;
  tracked() { ++live; }
  tracked(const tracked&) { ++live; }
  tracked(tracked&&) noexcept { ++live; }
  tracked& operator=(const tracked&) = default;
  tracked& operator=(tracked&&) noexcept = default;
  ~tracked() { --live; }
  int value = 7;
};

}  // namespace

TEST_CASE("fixed_list: up to N values on the stack, no heap allocation", "[core][fixed_list]") {
  std::uint64_t sum = 0;
  const auto allocations = allocations_during([&] {
    fixed_list<std::uint64_t, 4> list(4);
    for (std::size_t i = 0; i < list.size(); ++i) list[i] = i + 1;
    for (auto v : list.first(3)) sum += v;
    CHECK(list.is_inline());
  });
  CHECK(allocations == 0);
  CHECK(sum == 1 + 2 + 3);
}

TEST_CASE("fixed_list: more than N values take one heap allocation", "[core][fixed_list]") {
  const auto allocations = allocations_during([] {
    fixed_list<std::uint64_t, 4> list(5);
    CHECK_FALSE(list.is_inline());
    list[4] = 9;
    CHECK(list.first(5).back() == 9);
  });
  CHECK(allocations == 1);
}

TEST_CASE("fixed_list: values start value-initialised and are destroyed once each", "[core][fixed_list]") {
  for (std::size_t size : {0, 3, 8, 9}) {
    CAPTURE(size);
    {
      fixed_list<tracked, 8> list(size);
      CHECK(tracked::live == int(size));
      for (std::size_t i = 0; i < size; ++i) CHECK(list[i].value == 7);
      fixed_list<std::uint64_t, 8> zeros(size);
      for (std::size_t i = 0; i < size; ++i) CHECK(zeros[i] == 0);
    }
    CHECK(tracked::live == 0);
  }
}
