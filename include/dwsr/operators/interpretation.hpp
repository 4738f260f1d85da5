#pragma once
/// \file The data-dependent kernels as catalogue operators (family
/// "interpretation"), with their tables (ops/protocol.hpp's table_spec: rows
/// whose number depends on the data, written to <node>_<suffix>.npy as a
/// structured NumPy array).
///
/// event_picks writes no cube, only its table of picks. It reads whole traces
/// (a plateau may run along any length of time), so a chunked execution splits
/// inlines and crosslines only, and its table, merged by position, equals the
/// whole cube's.
///
/// geobodies writes its label cube, in int32 (the kernel refuses more bodies
/// than int32 counts), and the per-body statistics table. The labels are global: a body may cross any
/// block face. The operator therefore declares every axis whole, so a chunked
/// execution runs it on the whole cube (chunked_schedule refuses a chunk that
/// splits an axis) and its result equals the whole-cube one. The blocked form
/// of the kernel (operators::geobodies_blocked) merges labels across blocks
/// exactly, for a graph executor with a global post-pass to use later.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "dwsr/operators/event_picks.hpp"
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
      "labels (int32) of the face-connected bodies of voxels above a threshold; memory depends on the data";
  static std::vector<param_spec> params() {
    return {{"threshold", param_kind::real, 0.0, "body voxels are strictly above this value"}};
  }
  explicit geobody_labels(const param_values& p = param_values::bind(name, params()))
      : threshold(p.real("threshold")) {}
  /// Labels are global: no axis may be split.
  dwsr::halo halo() const {
    return {.whole_traces = true, .whole_inlines = true, .whole_crosslines = true, .whole_cube = true};
  }
  std::vector<output_spec> outputs() const { return {{"", dtype::int32}}; }
  /// One row per body, label order (body_stats, packed).
  std::vector<table_spec> tables() const {
    using enum column_type;
    return {{"bodies",
             {{"inline", uint32},
              {"crossline", uint32},
              {"sample", uint32},
              {"lo_inline", uint32},
              {"lo_crossline", uint32},
              {"lo_sample", uint32},
              {"hi_inline", uint32},
              {"hi_crossline", uint32},
              {"hi_sample", uint32},
              {"peak", float32},
              {"voxels", uint64},
              {"sum", float64}}}};
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out, table_writer& tables) const {
    const auto stats = geobodies(ctx, in, out[0].as<std::int32_t>(), {static_cast<float>(threshold)});
    if constexpr (Ctx::computes) tables.write(0, stats.data(), stats.size());
  }
  double threshold;
};

/// event_picks: the local maxima along each trace strictly above `threshold`,
/// as a table of (inline, crossline, sample, value) rows in C order
/// (operators/event_picks.hpp says what a pick is). No cube output. Its memory
/// depends on the data: the meta execution allocates the bound, flagged
/// event::bound.
struct event_picks_table {
  static constexpr std::string_view name = "event_picks";
  static constexpr std::string_view family = "interpretation";
  static constexpr std::string_view summary =
      "table of the local maxima along each trace above a threshold (inline, crossline, sample, value); memory "
      "depends on the data";
  static std::vector<param_spec> params() {
    return {{"threshold", param_kind::real, 0.0, "a pick's value is strictly above this value"}};
  }
  explicit event_picks_table(const param_values& p = param_values::bind(name, params()))
      : threshold(p.real("threshold")) {}
  /// A plateau may run along any length of a trace: time is read whole.
  dwsr::halo halo() const { return {.whole_traces = true}; }
  std::vector<output_spec> outputs() const { return {}; }
  /// One row per pick (operators::pick, packed).
  std::vector<table_spec> tables() const {
    using enum column_type;
    return {{"picks", {{"inline", uint32}, {"crossline", uint32}, {"sample", uint32}, {"value", float32}}}};
  }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref>, table_writer& tables) const {
    const auto picks = event_picks(ctx, in, {static_cast<float>(threshold)});
    if constexpr (Ctx::computes) tables.write(0, picks.data(), picks.size());
  }
  double threshold;
};

}  // namespace dwsr::operators
