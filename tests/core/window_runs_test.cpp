// Contiguous runs of a window: one per trace, per inline or in all, as the
// window and both arrays allow, and together exactly the window's voxels.

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <vector>

#include "dwsr/core/window_runs.hpp"

using dwsr::cube_layout;
using dwsr::shape3;

namespace {

using point = std::array<std::uint64_t, 3>;

struct run {
  std::uint64_t a, b, n;
  bool operator==(const run&) const = default;
};

std::vector<run> runs(point lo, point hi, const cube_layout& a, const cube_layout& b) {
  std::vector<run> out;
  dwsr::for_each_window_run(lo, hi, a, b, [&](std::uint64_t x, std::uint64_t y, std::uint64_t n) {
    out.push_back({x, y, n});
  });
  return out;
}

/// The window [lo, hi) as layout: the buffer a window is read into.
cube_layout window_layout(point lo, point hi) { return {{hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}, lo}; }

}  // namespace

TEST_CASE("window runs: whole crosslines are one run, whole samples one run per inline, else one per trace",
          "[core][window_runs]") {
  const cube_layout cube{{4, 5, 6}, {}};
  auto read_runs = [&](point lo, point hi) { return runs(lo, hi, cube, window_layout(lo, hi)); };

  CHECK(read_runs({0, 0, 0}, {4, 5, 6}) == std::vector<run>{{0, 0, 120}});
  CHECK(read_runs({1, 0, 0}, {3, 5, 6}) == std::vector<run>{{30, 0, 60}});
  CHECK(read_runs({1, 2, 0}, {3, 4, 6}) == std::vector<run>{{42, 0, 12}, {72, 12, 12}});
  CHECK(read_runs({2, 3, 0}, {3, 4, 6}) == std::vector<run>{{78, 0, 6}});
  CHECK(read_runs({0, 1, 1}, {2, 3, 5}) == std::vector<run>{{7, 0, 4}, {13, 4, 4}, {37, 8, 4}, {43, 12, 4}});
  CHECK(read_runs({3, 4, 5}, {4, 5, 6}) == std::vector<run>{{119, 0, 1}});
  CHECK(read_runs({0, 0, 6}, {4, 5, 6}).empty());
  CHECK(read_runs({2, 0, 0}, {2, 5, 6}).empty());
}

TEST_CASE("window runs: a block's interior in its halo-extended buffer merges only where both arrays allow",
          "[core][window_runs]") {
  const cube_layout cube{{4, 5, 6}, {}};
  SECTION("a time halo: the buffer's traces are longer than the interior's, one run per trace") {
    const cube_layout ext{{1, 1, 6}, {2, 3, 0}};
    CHECK(runs({2, 3, 1}, {3, 4, 5}, cube, ext) == std::vector<run>{{79, 1, 4}});
  }
  SECTION("a crossline halo: one run per inline, at the interior's place in the buffer") {
    const cube_layout ext{{2, 4, 6}, {1, 1, 0}};
    CHECK(runs({1, 2, 0}, {3, 4, 6}, cube, ext) == std::vector<run>{{42, 6, 12}, {72, 30, 12}});
  }
  SECTION("an inline halo only: the interior is one run") {
    const cube_layout ext{{3, 5, 6}, {0, 0, 0}};
    CHECK(runs({1, 0, 0}, {2, 5, 6}, cube, ext) == std::vector<run>{{30, 30, 30}});
  }
}
