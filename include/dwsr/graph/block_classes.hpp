#pragma once
/// \file The blocks of a chunking grouped by shape: a class is a combination of
/// one class of blocks per axis (chunking::axis_classes), so its blocks all
/// have the same extended and interior shapes and hence, in any phase, the same
/// events. A plan evaluates each class once and counts, per worker, how many of
/// its blocks the worker runs, from the runs of block positions along each
/// axis: O(runs x classes) per worker, whatever the number of blocks.
///
/// The number of classes is the product of the per-axis counts, about
/// (2 halo / chunk + 3) per axis: a handful when the chunk is at least the
/// halo, but it grows as the chunk shrinks below the halo. Past
/// block_classes::limit, building them is an invalid_input that names the
/// chunk, the halo and the fix, instead of a plan that runs for hours.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/graph/chunking.hpp"

namespace dwsr {

/// One class of blocks: their shapes, and one of them to run.
struct block_class {
  shape3 extended;                    ///< the blocks' halo-extended shape
  shape3 interior;                    ///< the blocks' interior shape
  std::array<std::size_t, 3> axis{};  ///< its class along each axis (index into block_classes::along(a).classes)
  std::uint64_t count = 0;            ///< blocks of the class in the whole chunking
  block example;                      ///< its first block in C order
};

/// The classes of a chunking's blocks (see the file comment).
class block_classes {
 public:
  /// Most classes a plan evaluates; chunks far below the halo exceed it.
  static constexpr std::uint64_t limit = 1u << 16;

  /// Throws invalid_input when there would be more than `limit` classes.
  explicit block_classes(const chunking& c) : chunking_(&c) {
    std::uint64_t total = 1;
    for (int a = 0; a < 3; ++a) {
      along_[a] = c.axis_classes(a);
      total *= along_[a].classes.size();  // each factor is at most the blocks along its axis, so this cannot overflow
      if (total > limit) too_many(c);
    }
    const auto& g = c.grid();
    classes_.reserve(total);
    const auto &along0 = along_[0].classes, &along1 = along_[1].classes, &along2 = along_[2].classes;
    for (std::size_t i = 0; i < along0.size(); ++i)
      for (std::size_t j = 0; j < along1.size(); ++j)
        for (std::size_t k = 0; k < along2.size(); ++k) {
          const auto &x = along0[i], &y = along1[j], &z = along2[k];
          classes_.push_back({{x.extended, y.extended, z.extended},
                              {x.interior, y.interior, z.interior},
                              {i, j, k},
                              x.count * y.count * z.count,
                              c.at((x.first * g[1] + y.first) * g[2] + z.first)});
        }
  }

  /// The classes, in C order of their per-axis indices.
  const std::vector<block_class>& classes() const noexcept { return classes_; }
  /// The classes along one axis, and their runs of positions.
  const axis_partition& along(int axis) const noexcept { return along_[std::size_t(axis)]; }

  /// For each class, how many of its blocks have C-order numbers below x
  /// (x at most the number of blocks). With x at grid position (x0, x1, x2):
  /// the blocks in planes below x0, then in rows of plane x0 below x1, then in
  /// row (x0, x1) below x2.
  std::vector<std::uint64_t> counts_below(std::uint64_t x) const {
    std::vector<std::uint64_t> out;
    counts_below(x, out);
    return out;
  }
  /// counts_below into `out` (resized to the classes), allocating nothing
  /// once `out` has room: plans call it once per worker. It visits the runs
  /// below x along each axis, not the blocks: O(runs x classes) whatever
  /// the number of blocks.
  void counts_below(std::uint64_t x, std::vector<std::uint64_t>& out) const {
    const auto& g = chunking_->grid();
    const std::uint64_t plane = g[1] * g[2];
    const std::array<std::uint64_t, 3> p{x / plane, x % plane / g[2], x % g[2]};
    const auto &along1 = along_[1].classes, &along2 = along_[2].classes;
    const auto n1 = along1.size(), n2 = along2.size();
    out.assign(classes_.size(), 0);  // C order: class (i, j, l) at (i n1 + j) n2 + l
    // Whole planes below x0: a run of them adds its planes times each class's blocks in a plane.
    for (const auto& r : along_[0].runs) {
      if (r.first >= p[0]) break;
      const auto planes = std::min(r.last, p[0]) - r.first;
      auto* o = &out[r.k * n1 * n2];
      for (std::size_t j = 0; j < n1; ++j)
        for (std::size_t l = 0; l < n2; ++l) *o++ += planes * along1[j].count * along2[l].count;
    }
    const auto i = class_at(0, p[0]);
    if (i == npos) return;  // x is the number of blocks
    // Rows of plane x0 below x1, then blocks of row (x0, x1) below x2.
    for (const auto& r : along_[1].runs) {
      if (r.first >= p[1]) break;
      const auto rows = std::min(r.last, p[1]) - r.first;
      auto* o = &out[(i * n1 + r.k) * n2];
      for (std::size_t l = 0; l < n2; ++l) o[l] += rows * along2[l].count;
    }
    auto* o = &out[(i * n1 + class_at(1, p[1])) * n2];
    for (const auto& r : along_[2].runs) {
      if (r.first >= p[2]) break;
      o[r.k] += std::min(r.last, p[2]) - r.first;
    }
  }

 private:
  [[noreturn]] static void too_many(const chunking& c) {
    std::string halo, fix;
    for (int a = 0; a < 3; ++a) {
      if (a) {
        halo += 'x';
        fix += 'x';
      }
      halo += std::to_string(c.halo()[a]);
      fix += std::to_string(std::max(c.chunk()[a], std::min(c.halo()[a], c.cube()[a])));
    }
    std::uint64_t classes = 1;
    for (int a = 0; a < 3; ++a) classes *= c.axis_classes(a).classes.size();
    throw invalid_input("chunk " + to_string(c.chunk()) + " with halo " + halo + " gives " + std::to_string(classes) +
                        " distinct block shapes, more than the " + std::to_string(limit) +
                        " a plan evaluates; use a chunk at least as large as the halo, e.g. " + fix);
  }

  static constexpr std::size_t npos = std::size_t(-1);
  /// The class of block position `g` along `axis`; npos past the last block.
  std::size_t class_at(int axis, std::uint64_t g) const noexcept {
    for (const auto& r : along_[std::size_t(axis)].runs)
      if (g < r.last) return r.k;
    return npos;
  }

  const chunking* chunking_;
  std::array<axis_partition, 3> along_;
  std::vector<block_class> classes_;
};

}  // namespace dwsr
