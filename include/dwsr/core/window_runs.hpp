#pragma once
/// \file The contiguous runs of a window of a cube held, in C order, by two
/// arrays (a file's cube and a block's buffer, say): copying the window between
/// them takes one call per run rather than one per trace. A window that spans
/// the samples of both arrays is one run per row of crosslines; one that also
/// spans their crosslines is a single run.

#include <array>
#include <cstdint>

#include "dwsr/core/shape.hpp"

namespace dwsr {

/// A C-order array holding the part of a cube that starts at `origin`.
struct cube_layout {
  shape3 shape{};
  std::array<std::uint64_t, 3> origin{};

  /// Element offset of cube position (i, x, t), which must lie inside the array.
  constexpr std::uint64_t offset(std::uint64_t i, std::uint64_t x, std::uint64_t t) const noexcept {
    return ((i - origin[0]) * shape.crosslines + (x - origin[1])) * shape.samples + (t - origin[2]);
  }
};

/// Calls run(a_offset, b_offset, count) for each maximal run of the window
/// [lo, hi) that is contiguous in both `a` and `b` (element offsets in each,
/// element count), in C order. The window must lie inside both arrays; an
/// empty window has no runs.
template <class Run>
void for_each_window_run(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi,
                         const cube_layout& a, const cube_layout& b, Run&& run) {
  const std::uint64_t inlines = hi[0] - lo[0], crosslines = hi[1] - lo[1], samples = hi[2] - lo[2];
  if (inlines == 0 || crosslines == 0 || samples == 0) return;
  const bool whole_traces = samples == a.shape.samples && samples == b.shape.samples;
  const bool whole_rows = whole_traces && crosslines == a.shape.crosslines && crosslines == b.shape.crosslines;
  if (whole_rows) {
    run(a.offset(lo[0], lo[1], lo[2]), b.offset(lo[0], lo[1], lo[2]), inlines * crosslines * samples);
    return;
  }
  for (auto i = lo[0]; i < hi[0]; ++i) {
    if (whole_traces) {
      run(a.offset(i, lo[1], lo[2]), b.offset(i, lo[1], lo[2]), crosslines * samples);
      continue;
    }
    for (auto x = lo[1]; x < hi[1]; ++x) run(a.offset(i, x, lo[2]), b.offset(i, x, lo[2]), samples);
  }
}

}  // namespace dwsr
