#pragma once
/// \file The value types of the operator protocol (see dwsr/concepts.hpp): what
/// an operator reads beyond a voxel (halo), what it writes (output_spec), and
/// what a cube-wide reduction carries between blocks (reduction, box3), and
/// the tables some operators write beside their cubes (table_spec).

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
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

/// Element type of a table column.
enum class column_type : std::uint8_t { uint32, uint64, float32, float64 };

/// Bytes of one value of type t.
constexpr std::uint64_t size_of(column_type t) noexcept {
  return t == column_type::uint32 || t == column_type::float32 ? 4 : 8;
}

/// NumPy's little-endian type string of t ("<u4", ...).
constexpr std::string_view numpy_descr(column_type t) noexcept {
  switch (t) {
    case column_type::uint32: return "<u4";
    case column_type::uint64: return "<u8";
    case column_type::float32: return "<f4";
    case column_type::float64: return "<f8";
  }
  return "?";
}

/// One column of a table: its name and type.
struct table_column {
  std::string name;
  column_type type = column_type::float32;
};

/// A table an operator writes beside its cubes: rows whose number is known
/// only once the data is read (event picks, per-body statistics). Rows are
/// packed structs, columns in order without padding. Every row begins with its
/// position, three uint32 columns (inline, crossline, sample) in the indices of
/// the operator's input cube: a chunked execution keeps the rows of a block
/// whose position is in the block's interior, moves them to the whole cube's
/// indices and orders the table by position (C order), so that it does not
/// depend on the chunking.
struct table_spec {
  std::string suffix;                 ///< file suffix: <node>_<suffix>.npy
  std::vector<table_column> columns;  ///< the first three: the position, uint32
  /// Bytes of one row.
  std::uint64_t row_bytes() const noexcept {
    std::uint64_t n = 0;
    for (const auto& c : columns) n += size_of(c.type);
    return n;
  }
};

/// Where an operator's table rows go (see table_spec); called from the
/// operator's control thread, in computing contexts only, while the rows'
/// buffer is still alive (the receiver copies them).
class table_writer {
 public:
  virtual ~table_writer() = default;
  /// `count` rows of the operator's table `table`, packed as its spec says.
  virtual void write(std::size_t table, const void* rows, std::uint64_t count) = 0;
};

}  // namespace dwsr
