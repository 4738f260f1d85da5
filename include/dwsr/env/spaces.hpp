#pragma once
/// \file The spaces of an environment's observations and actions, the two
/// kinds Gymnasium names Box and Discrete: a box of float32 values, each
/// between its own bounds, and n actions numbered 0 to n - 1. The Python
/// bindings turn them into gymnasium.spaces.Box (dtype float32) and
/// gymnasium.spaces.Discrete.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dwsr/error.hpp"

namespace dwsr::env {

/// A box of float32 values, value k in [low[k], high[k]] (Gymnasium's Box).
struct box_space {
  std::vector<float> low, high;  ///< per value, in C order of `shape`
  std::vector<std::size_t> shape;

  /// A box of `shape` with the given bounds (as many as the shape's values).
  /// Throws invalid_input for a bound count that is not the shape's, a NaN
  /// bound or low > high.
  box_space(std::vector<float> lo, std::vector<float> hi, std::vector<std::size_t> shp)
      : low(std::move(lo)), high(std::move(hi)), shape(std::move(shp)) {
    if (low.size() != size() || high.size() != size())
      throw invalid_input("a box of " + std::to_string(size()) + " values with " + std::to_string(low.size()) +
                          " low and " + std::to_string(high.size()) + " high bounds; expected one of each per value");
    for (std::size_t k = 0; k < low.size(); ++k)
      if (!(low[k] <= high[k]))
        throw invalid_input("box bounds [" + std::to_string(low[k]) + ", " + std::to_string(high[k]) + "] of value " +
                            std::to_string(k) + ": expected low <= high, neither NaN");
  }
  /// A one-dimensional box of one value in [lo, hi].
  static box_space scalar(float lo, float hi) { return box_space({lo}, {hi}, {1}); }

  /// Values in the box (the product of the shape).
  std::size_t size() const noexcept {
    std::size_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  /// Whether `x` has size() values, each within its bounds (a NaN never is).
  bool contains(std::span<const float> x) const noexcept {
    if (x.size() != size()) return false;
    for (std::size_t k = 0; k < x.size(); ++k)
      if (!(x[k] >= low[k] && x[k] <= high[k])) return false;
    return true;
  }
  bool operator==(const box_space&) const = default;
};

/// Actions 0 to n - 1 (Gymnasium's Discrete with start 0).
struct discrete_space {
  std::int64_t n = 0;

  /// Whether `a` is one of the actions.
  constexpr bool contains(std::int64_t a) const noexcept { return a >= 0 && a < n; }
  bool operator==(const discrete_space&) const = default;
};

/// How an action of a space is passed to step() and stored in a batch: a
/// box's action is a span of its float32 values, a discrete one an int64.
template <class Space>
struct action_of;

/// A box's action: its values, `dim` float32 per environment in a batch.
template <>
struct action_of<box_space> {
  using element = float;
  using type = std::span<const float>;
  /// Values per action.
  static std::size_t dim(const box_space& s) noexcept { return s.size(); }
  /// Action `i` of a batch of actions of `dim` values each.
  static type at(std::span<const float> batch, std::size_t i, std::size_t dim) noexcept {
    return batch.subspan(i * dim, dim);
  }
};

/// A discrete space's action: one int64 per environment in a batch.
template <>
struct action_of<discrete_space> {
  using element = std::int64_t;
  using type = std::int64_t;
  /// Values per action.
  static std::size_t dim(const discrete_space&) noexcept { return 1; }
  /// Action `i` of a batch.
  static type at(std::span<const std::int64_t> batch, std::size_t i, std::size_t) noexcept { return batch[i]; }
};

}  // namespace dwsr::env
