#pragma once
/// \file Splitting a cube into blocks of a chunk shape, each extended by a halo.
///
/// Halos are clipped at the cube's faces rather than padded: there the
/// operators apply their own reflect boundary, exactly as they do in a
/// whole-cube run. (Padding by reflection and then letting the operator reflect
/// again would differ from the whole-cube run for antisymmetric stencils such
/// as a derivative across a padded face.) So a block's interior is bit-identical
/// to the same voxels of the whole-cube run.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"

namespace dwsr {

/// One block: its interior and its halo-extended window, in cube coordinates.
struct block {
  std::uint64_t index = 0;
  std::array<std::uint64_t, 3> begin{}, end{};          ///< interior [begin, end)
  std::array<std::uint64_t, 3> ext_begin{}, ext_end{};  ///< extended window, clipped to the cube

  shape3 interior() const { return {end[0] - begin[0], end[1] - begin[1], end[2] - begin[2]}; }
  shape3 extended() const { return {ext_end[0] - ext_begin[0], ext_end[1] - ext_begin[1], ext_end[2] - ext_begin[2]}; }
  /// Offset of the interior inside the extended window.
  std::array<std::uint64_t, 3> offset() const {
    return {begin[0] - ext_begin[0], begin[1] - ext_begin[1], begin[2] - ext_begin[2]};
  }
};

/// Blocks along one axis with equal extended and interior extents.
struct axis_class {
  std::uint64_t extended = 0;  ///< extent of the halo-extended window
  std::uint64_t interior = 0;  ///< extent of the interior
  std::uint64_t count = 0;     ///< number of blocks
  std::uint64_t first = 0;     ///< position of its first block
};

/// Consecutive block positions [first, last) along an axis, all of one class.
struct axis_run {
  std::uint64_t first = 0, last = 0;
  std::size_t k = 0;  ///< index of their class
};

/// The classes of the blocks along one axis, and the runs of positions that
/// have them: ascending, covering every position once. Two vectors, however
/// many classes, as plans build one per axis for every chunking they try.
struct axis_partition {
  std::vector<axis_class> classes;
  std::vector<axis_run> runs;
};

/// The blocks of a cube for a chunk shape and a halo, in C order of the block grid.
class chunking {
 public:
  chunking(shape3 cube, shape3 chunk, std::array<std::uint64_t, 3> halo) : cube_(cube), halo_(halo) {
    if (chunk.voxels() == 0) throw invalid_input("chunk " + to_string(chunk) + ": every extent must be positive");
    chunk_ = {std::min(chunk.inlines, cube.inlines), std::min(chunk.crosslines, cube.crosslines),
              std::min(chunk.samples, cube.samples)};
    for (int a = 0; a < 3; ++a) grid_[a] = (cube[a] + chunk_[a] - 1) / chunk_[a];
  }

  const shape3& cube() const { return cube_; }
  const shape3& chunk() const { return chunk_; }
  const std::array<std::uint64_t, 3>& halo() const { return halo_; }
  /// Blocks along each axis.
  const std::array<std::uint64_t, 3>& grid() const { return grid_; }
  std::uint64_t count() const { return grid_[0] * grid_[1] * grid_[2]; }

  /// Block number `index` (C order over the grid).
  block at(std::uint64_t index) const {
    block b;
    b.index = index;
    const auto g = grid_position(index);
    for (int a = 0; a < 3; ++a) {
      const auto s = span(a, g[a]);
      b.begin[a] = s.begin, b.end[a] = s.end, b.ext_begin[a] = s.ext_begin, b.ext_end[a] = s.ext_end;
    }
    return b;
  }

  /// Position of block `index` in the grid.
  std::array<std::uint64_t, 3> grid_position(std::uint64_t index) const {
    return {index / (grid_[1] * grid_[2]), index / grid_[2] % grid_[1], index % grid_[2]};
  }

  /// One block's interval along one axis: interior and halo-extended window.
  struct axis_span {
    std::uint64_t begin, end, ext_begin, ext_end;
  };
  /// The interval of the g-th block along `axis`.
  axis_span span(int axis, std::uint64_t g) const {
    const auto a = std::size_t(axis);
    const auto begin = g * chunk_[a], end = std::min(begin + chunk_[a], cube_[a]);
    // Clipped without forming end + halo, which a huge halo would overflow.
    return {begin, end, begin - std::min(begin, halo_[a]), halo_[a] >= cube_[a] - end ? cube_[a] : end + halo_[a]};
  }

  /// Calls f(first, last, span of block first) for runs of blocks [first,
  /// last) along `axis` that share their extended and interior extents, in
  /// order: each block whose halo the low face clips alone, the middle
  /// blocks as one run, then each block whose halo the high face clips (the
  /// last block always, which may differ in its interior anyway). So it
  /// makes at most about 2 halo / chunk + 3 calls, whatever the grid.
  template <class F>
  void for_each_axis_run(int axis, F&& f) const {
    const auto [left, right] = middle_run(axis);
    const auto grid = grid_[std::size_t(axis)];
    for (std::uint64_t g = 0; g < left; ++g) f(g, g + 1, span(axis, g));
    if (left < right) f(left, right, span(axis, left));
    for (std::uint64_t g = right; g < grid; ++g) f(g, g + 1, span(axis, g));
  }
  /// How many calls for_each_axis_run makes along `axis`.
  std::uint64_t axis_runs(int axis) const {
    const auto [left, right] = middle_run(axis);
    return left + (left < right) + grid_[std::size_t(axis)] - right;
  }

  /// The blocks along `axis` that share an extended and an interior extent,
  /// and the runs of positions that have them (from for_each_axis_run's runs,
  /// so found without visiting the middle blocks).
  axis_partition axis_classes(int axis) const {
    axis_partition out;
    auto& classes = out.classes;
    const auto runs = axis_runs(axis);  // one allocation each: plans build these for every chunking
    out.runs.reserve(runs);
    classes.reserve(runs);
    for_each_axis_run(axis, [&](std::uint64_t g, std::uint64_t end, const axis_span& s) {
      const auto extended = s.ext_end - s.ext_begin, interior = s.end - s.begin;
      // A linear search: the classes are few (see above), and this runs per plan.
      auto k = std::size_t(
          std::find_if(classes.begin(), classes.end(),
                       [&](const axis_class& c) { return c.extended == extended && c.interior == interior; }) -
          classes.begin());
      if (k == classes.size()) classes.push_back(axis_class{extended, interior, 0, g});
      classes[k].count += end - g;
      if (!out.runs.empty() && out.runs.back().k == k)
        out.runs.back().last = end;
      else
        out.runs.push_back({g, end, k});
    });
    return out;
  }

  /// The largest extended extent of a block along `axis`.
  std::uint64_t largest_extended(int axis) const {
    std::uint64_t most = 0;
    for_each_axis_run(axis, [&](std::uint64_t, std::uint64_t, const axis_span& s) {
      most = std::max(most, s.ext_end - s.ext_begin);
    });
    return most;
  }

  /// Voxels read by all blocks together: their extended windows, halos included.
  double read_voxels() const {
    // Extents along each axis are independent, so sum per axis and multiply.
    double read = 1;
    for (int a = 0; a < 3; ++a) {
      double sum = 0;
      for_each_axis_run(a, [&](std::uint64_t g, std::uint64_t end, const axis_span& s) {
        sum += double(s.ext_end - s.ext_begin) * double(end - g);
      });
      read *= sum;
    }
    return read;
  }
  /// Voxels read by all blocks over the cube's voxels, minus one: the halo's cost.
  double halo_overhead() const { return read_voxels() / double(cube_.voxels()) - 1.0; }

 private:
  /// for_each_axis_run's middle run along `axis`, [left, right): the blocks
  /// between those the low face's and the high face's clipping sets apart.
  std::pair<std::uint64_t, std::uint64_t> middle_run(int axis) const {
    const auto a = std::size_t(axis);
    const auto n = cube_[a], c = chunk_[a], h = halo_[a], grid = grid_[a];
    const auto left = h >= n ? grid : std::min(grid, (h + c - 1) / c);
    return {left, std::max(left, std::min(grid - 1, n >= h ? (n - h) / c : 0))};
  }

  shape3 cube_;
  shape3 chunk_;
  std::array<std::uint64_t, 3> halo_;
  std::array<std::uint64_t, 3> grid_{};
};

}  // namespace dwsr
