#pragma once
/// \file The data-dependent kernels as catalogue operators (family
/// "interpretation"): what the cube-shaped operator protocol can carry of them.
///
/// geobodies writes its label cube as the operator's output, in int64, the
/// integer type of dwsr's cubes (the labels themselves fit int32: the kernel
/// refuses more bodies). Its per-body statistics table has no place in the
/// protocol, whose outputs are cubes of the input's shape: the operator
/// computes it (the kernel does) and frees it; a program that wants the table
/// calls operators::geobodies directly.
///
/// The labels are global: a body may cross any block face. The operator
/// therefore declares every axis whole, so a chunked execution runs it on the
/// whole cube (chunked_schedule refuses a chunk that splits an axis) and its
/// result equals the whole-cube one. The blocked form of the kernel
/// (operators::geobodies_blocked) merges labels across blocks exactly, for a
/// graph executor with a global post-pass to use later.
///
/// event_picks is not here: its output is a table of a length known only after
/// the run, which an output_spec (a cube of the input's shape) cannot express;
/// it stays a kernel (operators/event_picks.hpp).

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dwsr/operators/geobodies.hpp"
#include "dwsr/ops/operator.hpp"
#include "dwsr/ops/param.hpp"

namespace dwsr::operators {

/// geobodies: labels of the 6-connected bodies of voxels strictly above
/// `threshold`, 0 for the background and 1..N in the order of each body's first
/// voxel in C order (operators/geobodies.hpp). Its memory depends on the data:
/// the meta execution allocates bounds, flagged event::bound.
struct geobody_labels {
  static constexpr std::string_view name = "geobodies";
  static constexpr std::string_view family = "interpretation";
  static constexpr std::string_view summary =
      "labels (int64) of the face-connected bodies of voxels above a threshold; memory depends on the data";
  static std::vector<param_spec> params() {
    return {{"threshold", param_kind::real, 0.0, "body voxels are strictly above this value"}};
  }
  explicit geobody_labels(const param_values& p = param_values::bind(name, params()))
      : threshold(p.real("threshold")) {}
  /// Labels are global: no axis may be split.
  dwsr::halo halo() const {
    return {.whole_traces = true, .whole_inlines = true, .whole_crosslines = true, .whole_cube = true};
  }
  std::vector<output_spec> outputs() const { return {{"", dtype::int64}}; }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    // The statistics table is a temporary here: the protocol cannot return it.
    geobodies(ctx, in, out[0].as<std::int64_t>(), {static_cast<float>(threshold)}, buffer_role::temporary);
  }
  double threshold;
};

}  // namespace dwsr::operators
