#pragma once
/// \file Operators of several attribute cubes, for graphs that compute shared
/// attributes once and combine them (sweetness from an envelope and an
/// instantaneous frequency node). Pointwise: no halo, no scratch. They apply
/// the reference's formulas (complex_trace.py) to their inputs.

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>
#include <string_view>
#include <vector>

#include "dwsr/operators/detail/common.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

namespace detail {
/// Writes f(a, b) for every voxel of two input cubes, in parallel.
template <class Ctx, class F>
void combine2(Ctx& ctx, std::span<const cube_view<const float>> in, const array_ref& out, F&& f) {
  const float* a = in[0].data();
  const float* b = in[1].data();
  float* y = out.as<float>().data();
  ctx.parallel_for(
      in[0].size(),
      [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
        for (auto i = lo; i < hi; ++i) y[i] = f(a[i], b[i]);
      },
      1 << 14);
}

/// Protocol shared by the pointwise combinations of two cubes (operator
/// Derived): y = Derived::combine(a, b) at every voxel.
template <class Derived>
struct pointwise2 : no_params, float32_output {
  static constexpr std::string_view family = "combination";
  static constexpr std::size_t arity = 2;
  using no_params::no_params;
  dwsr::halo halo() const { return {}; }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, std::span<const cube_view<const float>> in, std::span<const array_ref> out) const {
    combine2(ctx, in, out[0], Derived::combine);
  }
};
}  // namespace detail

/// sweetness_from(envelope, instantaneous_frequency): envelope / max(frequency, 5).
struct sweetness_from : detail::pointwise2<sweetness_from> {
  static constexpr std::string_view name = "sweetness_from";
  static constexpr std::string_view summary =
      "inputs (envelope, instantaneous_frequency): envelope / max(frequency, 5)";
  using pointwise2::pointwise2;
  static float combine(float env, float f) { return env / (f < 5.0f ? 5.0f : f); }
};

/// dominant_frequency_from(instantaneous_frequency, instantaneous_bandwidth): hypot of the two.
struct dominant_frequency_from : detail::pointwise2<dominant_frequency_from> {
  static constexpr std::string_view name = "dominant_frequency_from";
  static constexpr std::string_view summary = "inputs (instantaneous_frequency, instantaneous_bandwidth): hypot";
  using pointwise2::pointwise2;
  static float combine(float f, float b) { return static_cast<float>(std::hypot(double(f), double(b))); }
};

}  // namespace dwsr::operators
