#pragma once
/// \file Turning the (inline, crossline) numbers of a SEG-Y file's traces into
/// a regular cube: the line numbers along each axis, where each file trace
/// goes in the cube, and how the file is sorted.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace dwsr::io {

/// The order of a SEG-Y file's traces.
enum class segy_sorting : std::uint8_t {
  inline_sorted,     ///< crossline varies fastest (the usual post-stack order)
  crossline_sorted,  ///< inline varies fastest
  unsorted,          ///< a full grid in some other order
};

/// "inline-sorted", ...
constexpr const char* name_of(segy_sorting s) noexcept {
  switch (s) {
    case segy_sorting::inline_sorted: return "inline-sorted";
    case segy_sorting::crossline_sorted: return "crossline-sorted";
    case segy_sorting::unsorted: return "unsorted";
  }
  return "?";
}

namespace detail {

/// The cube a list of trace (inline, crossline) numbers forms, or why it forms none.
struct segy_grid {
  std::vector<std::int32_t> inlines;          ///< ascending line numbers along axis 0
  std::vector<std::int32_t> crosslines;       ///< ascending line numbers along axis 1
  std::vector<std::uint64_t> trace_position;  ///< cube trace index of each file trace
  segy_sorting sorting = segy_sorting::inline_sorted;
  std::string problem;  ///< empty when the traces form a full grid

  /// Builds the grid from il[k], xl[k] of file trace k (1-based trace numbers in messages).
  static segy_grid from(const std::vector<std::int32_t>& il, const std::vector<std::int32_t>& xl) {
    segy_grid g;
    auto unique_sorted = [](std::vector<std::int32_t> v) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      return v;
    };
    g.inlines = unique_sorted(il);
    g.crosslines = unique_sorted(xl);
    const std::uint64_t n = il.size(), ni = g.inlines.size(), nx = g.crosslines.size();
    auto rank = [](const std::vector<std::int32_t>& lines, std::int32_t v) {
      return static_cast<std::uint64_t>(std::lower_bound(lines.begin(), lines.end(), v) - lines.begin());
    };
    g.trace_position.resize(n);
    for (std::uint64_t k = 0; k < n; ++k) g.trace_position[k] = rank(g.inlines, il[k]) * nx + rank(g.crosslines, xl[k]);
    auto duplicate = [&](std::uint64_t first, std::uint64_t k) {
      g.problem = "traces " + std::to_string(first + 1) + " and " + std::to_string(k + 1) + " both have inline " +
                  std::to_string(il[k]) + ", crossline " + std::to_string(xl[k]) +
                  " (pre-stack files with several offsets per location are not supported)";
      return g;
    };
    auto missing = [&](std::uint64_t hole) {
      g.problem = "irregular geometry: " + std::to_string(n) + " traces cover " + std::to_string(ni) + " inlines x " +
                  std::to_string(nx) + " crosslines = " + std::to_string(ni * nx) +
                  " locations; missing traces, e.g. inline " + std::to_string(g.inlines[hole / nx]) + ", crossline " +
                  std::to_string(g.crosslines[hole % nx]);
      return g;
    };
    constexpr std::uint64_t none = ~std::uint64_t{0};
    if (ni * nx > n) {
      // Not a full grid. Corrupt line numbers can make ni * nx ~ n^2 (no
      // table of every location fits), so find the problem by sorting.
      std::vector<std::uint64_t> order(n);
      for (std::uint64_t k = 0; k < n; ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(),
                       [&](auto a, auto b) { return g.trace_position[a] < g.trace_position[b]; });
      std::uint64_t first = none, second = none;  // the earliest trace whose location an earlier one has
      for (std::uint64_t p = 1; p < n; ++p)
        if (g.trace_position[order[p]] == g.trace_position[order[p - 1]] && order[p] < second)
          first = order[p - 1], second = order[p];
      if (second != none) return duplicate(first, second);
      std::uint64_t hole = 0;
      while (hole < n && g.trace_position[order[hole]] == hole) ++hole;
      return missing(hole);
    }
    std::vector<std::uint64_t> owner(ni * nx, none);  // file trace at each cube position (at most n)
    for (std::uint64_t k = 0; k < n; ++k) {
      const auto pos = g.trace_position[k];
      if (owner[pos] != none) return duplicate(owner[pos], k);
      owner[pos] = k;
    }
    bool by_inline = true, by_crossline = true;
    for (std::uint64_t k = 0; k < n; ++k) {
      by_inline = by_inline && g.trace_position[k] == k;
      by_crossline = by_crossline && g.trace_position[k] == (k % ni) * nx + k / ni;
    }
    g.sorting = by_inline      ? segy_sorting::inline_sorted
                : by_crossline ? segy_sorting::crossline_sorted
                               : segy_sorting::unsorted;
    return g;
  }
};

}  // namespace detail
}  // namespace dwsr::io
