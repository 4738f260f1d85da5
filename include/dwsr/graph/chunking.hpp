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
#include <map>
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
  std::uint64_t extended = 0;                                 ///< extent of the halo-extended window
  std::uint64_t interior = 0;                                 ///< extent of the interior
  std::vector<std::pair<std::uint64_t, std::uint64_t>> runs;  ///< block positions [begin, end), ascending

  /// Number of blocks.
  std::uint64_t count() const noexcept {
    std::uint64_t n = 0;
    for (const auto& [b, e] : runs) n += e - b;
    return n;
  }
  /// Number of blocks at positions below g.
  std::uint64_t below(std::uint64_t g) const noexcept {
    std::uint64_t n = 0;
    for (const auto& [b, e] : runs) n += b < g ? std::min(e, g) - b : 0;
    return n;
  }
  /// Whether the block at position g is one of them.
  bool contains(std::uint64_t g) const noexcept {
    for (const auto& [b, e] : runs)
      if (b <= g && g < e) return true;
    return false;
  }
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

  /// The blocks along `axis` that share an extended and an interior extent,
  /// with the runs of block positions [begin, end) that have them, ascending.
  /// Only the blocks whose halo a face clips, and the last block, differ from
  /// the middle ones, so there are at most about 2 halo / chunk + 3 classes,
  /// found without visiting the middle blocks.
  std::vector<axis_class> axis_classes(int axis) const {
    const auto a = std::size_t(axis);
    const auto n = cube_[a], c = chunk_[a], h = halo_[a], grid = grid_[a];
    // Blocks [0, left) start within the halo of the low face; blocks from
    // `right` on end within it of the high face (the last block always does,
    // or differs in its interior anyway).
    const auto left = h >= n ? grid : std::min(grid, (h + c - 1) / c);
    const auto right = std::max(left, std::min(grid - 1, n >= h ? (n - h) / c : 0));
    std::vector<axis_class> out;
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::size_t> index;  // (extended, interior) -> class
    auto add = [&](std::uint64_t g, std::uint64_t end) {
      const auto s = span(axis, g);
      const std::pair key{s.ext_end - s.ext_begin, s.end - s.begin};
      const auto [it, added] = index.try_emplace(key, out.size());
      if (added) out.push_back({key.first, key.second, {}});
      auto& runs = out[it->second].runs;
      if (!runs.empty() && runs.back().second == g)
        runs.back().second = end;
      else
        runs.emplace_back(g, end);
    };
    for (std::uint64_t g = 0; g < left; ++g) add(g, g + 1);
    if (left < right) add(left, right);
    for (std::uint64_t g = right; g < grid; ++g) add(g, g + 1);
    return out;
  }

  /// Voxels read by all blocks together: their extended windows, halos included.
  double read_voxels() const {
    // Extents along each axis are independent, so sum per axis and multiply.
    double read = 1;
    for (int a = 0; a < 3; ++a) {
      double sum = 0;
      for (const auto& k : axis_classes(a)) sum += double(k.extended) * double(k.count());
      read *= sum;
    }
    return read;
  }
  /// Voxels read by all blocks over the cube's voxels, minus one: the halo's cost.
  double halo_overhead() const { return read_voxels() / double(cube_.voxels()) - 1.0; }

 private:
  shape3 cube_;
  shape3 chunk_;
  std::array<std::uint64_t, 3> halo_;
  std::array<std::uint64_t, 3> grid_{};
};

}  // namespace dwsr
