#pragma once
/// \file The value types of the operator protocol (see dwsr/concepts.hpp): what
/// an operator reads beyond a voxel (halo), what it writes (output_spec), and
/// what a cube-wide reduction carries between blocks (reduction, box3).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dwsr/core/dtype.hpp"
#include "dwsr/core/shape.hpp"

namespace dwsr {

/// What an operator reads beyond the voxel it writes: chunked execution extends
/// each block by `radius` per axis and never splits an axis marked whole.
/// Built by name: `halo{.radius = {1, 1, 0}, .whole_traces = true}`.
struct halo {
  std::array<std::uint64_t, 3> radius{};  ///< samples per side along (inline, crossline, time)
  bool whole_traces = false;              ///< reads whole traces (FFT, unwrap): time may not be split
  /// Inline / crossline may not be split either: the operator wraps around the
  /// cube's faces (periodic borders, as the reference's LBP), so a block cut
  /// there would see the wrong neighbours.
  bool whole_inlines = false;
  bool whole_crosslines = false;
  /// The result depends on the whole cube, not on a window (geobodies' labels
  /// of bodies that may cross any face). Set with every whole_* flag; it only
  /// says why no axis may be split.
  bool whole_cube = false;

  /// Axes that must not be split, as (inline, crossline, time).
  std::array<bool, 3> whole_axes() const { return {whole_inlines, whole_crosslines, whole_traces}; }
  friend bool operator==(const halo&, const halo&) = default;
};

/// Cube-wide statistics accumulated by a ReducingOperator (meaning is the
/// operator's own; empty before the first block).
struct reduction {
  std::vector<double> values;
  friend bool operator==(const reduction&, const reduction&) = default;
};

/// A box inside a block, [begin, end) per axis (the interior a reduction folds).
struct box3 {
  std::array<std::uint64_t, 3> begin{}, end{};
  shape3 shape() const { return {end[0] - begin[0], end[1] - begin[1], end[2] - begin[2]}; }
  /// The whole of a block of shape s.
  static box3 whole(shape3 s) { return {{0, 0, 0}, s.as_array()}; }
  friend bool operator==(const box3&, const box3&) = default;
};

/// One output cube: the file suffix the reference uses ("" for the main output) and its type.
struct output_spec {
  std::string suffix;
  dtype type = dtype::float32;
};

}  // namespace dwsr
