#pragma once
/// \file Window filters on the device with scipy.ndimage's semantics (reflect
/// borders, origin 0): separable correlations along any axes (one launch per
/// pass, double accumulation as the CPU's passes), and the exact rank of a
/// box window (the median).
///
/// Memory (device): the weights (a few doubles) and, for two or more passes,
/// one cube-sized temporary (passes ping-pong between it and the output).
/// Limit: each pass reads its source once through the cache and writes once,
/// 8 bytes a voxel a pass of device memory traffic.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dwsr/core/shape.hpp"
#include "dwsr/exec/detail/cuda_check.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/operators/cuda/detail/device_math.cuh"
#include "dwsr/operators/detail/separable.hpp"

namespace dwsr::operators::cuda::detail {

/// How a pass combines its taps.
enum class tap_form : std::uint8_t {
  ascending,       ///< sum of w[j] x[j] in ascending j (the CPU's separable passes)
  symmetric3,      ///< x0 w1 + (x- + x+) w0: scipy's symmetric form (the GST's gradients)
  antisymmetric3,  ///< x0 * 0 + (x- - x+) * -0.5: scipy's antisymmetric form
};

/// What the last pass of a filter applies to its result (fused, saving a pass).
enum class pass_finish : std::uint8_t { none, nan_to_zero, sqrt_nan_to_zero };

/// One correlation pass along `axis` with 2 r + 1 weights, in double without
/// fused multiply-adds (the CPU's arithmetic, so the passes agree bit for
/// bit); `square` squares the source samples first (the rms's x^2).
struct axis_pass_kernel {
  const float* src;
  float* dst;
  cube_geometry g;
  const double* w;
  int axis;
  std::int64_t r;
  bool square;
  tap_form form;
  pass_finish finish;
  /// The pass's value, at(k) giving the source sample k steps along the axis.
  template <class At>
  __device__ float value(At&& at) const {
    auto tap = [&](auto k) -> double {
      const double v = at(k);
      return square ? __dmul_rn(v, v) : v;
    };
    double acc = 0;
    if (form == tap_form::symmetric3)
      acc = __dadd_rn(__dmul_rn(tap(0), w[1]), __dmul_rn(__dadd_rn(tap(-1), tap(1)), w[0]));
    else if (form == tap_form::antisymmetric3)
      acc = __dadd_rn(__dmul_rn(tap(0), 0.0), __dmul_rn(__dsub_rn(tap(-1), tap(1)), -0.5));
    else
      for (std::int64_t k = -r; k <= r; ++k) acc = __dadd_rn(acc, __dmul_rn(w[k + r], tap(k)));
    const auto y = static_cast<float>(acc);
    return finish == pass_finish::none          ? y
           : finish == pass_finish::nan_to_zero ? nan_to_zero(y)
                                                : nan_to_zero(sqrtf(y));
  }
  /// Voxel i of any cube (64-bit indices, its coordinates by division).
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    std::int64_t c[3];
    g.split(i, c[0], c[1], c[2]);
    const std::int64_t stride = axis == 0 ? g.n[1] * g.n[2] : axis == 1 ? g.n[2] : 1;
    const std::int64_t base = std::int64_t(i) - c[axis] * stride;
    dst[i] = value([&](std::int64_t k) { return src[base + reflect(c[axis] + k, g.n[axis]) * stride]; });
  }
};

/// The same pass with the coordinates from the launch grid (x: time, y:
/// crossline, z: inline), the axis a constant and 32-bit indices: no
/// division per voxel and no reflection inside the cube. For cubes of
/// fewer than 2^31 voxels and at most 65535 inlines and crosslines.
template <int Axis>
__global__ void __launch_bounds__(256) axis_pass_grid(axis_pass_kernel p) {
  const int n2 = int(p.g.n[2]);
  const int t = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (t >= n2) return;
  const int c[3] = {int(blockIdx.z), int(blockIdx.y), t};
  const int n = int(p.g.n[Axis]);
  const int stride = Axis == 0 ? int(p.g.n[1]) * n2 : Axis == 1 ? n2 : 1;
  const int i = (c[0] * int(p.g.n[1]) + c[1]) * n2 + t;
  const int base = i - c[Axis] * stride;
  const bool interior = c[Axis] - p.r >= 0 && c[Axis] + p.r < n;
  p.dst[i] = p.value([&](std::int64_t k) {
    const int at = interior ? c[Axis] + int(k) : int(reflect(c[Axis] + k, n));
    return p.src[base + at * stride];
  });
}

/// Launches one pass over a cube of shape s on the context's stream.
template <class Ctx>
void launch_axis_pass(Ctx& ctx, shape3 s, const axis_pass_kernel& pass) {
  constexpr std::uint64_t max_grid_yz = 65535;
  if (s.voxels() >= (std::uint64_t{1} << 31) || s.crosslines > max_grid_yz || s.inlines > max_grid_yz) {
    ctx.parallel_for(s.voxels(), pass);
    return;
  }
  if constexpr (Ctx::computes) {
    if (s.voxels() == 0) return;
    const unsigned threads = s.samples >= 256 ? 256u : unsigned((s.samples + 31) / 32 * 32);
    const dim3 grid(unsigned((s.samples + threads - 1) / threads), unsigned(s.crosslines), unsigned(s.inlines));
    if (pass.axis == 0) axis_pass_grid<0><<<grid, threads, 0, ctx.stream()>>>(pass);
    if (pass.axis == 1) axis_pass_grid<1><<<grid, threads, 0, ctx.stream()>>>(pass);
    if (pass.axis == 2) axis_pass_grid<2><<<grid, threads, 0, ctx.stream()>>>(pass);
    dwsr::detail::cuda_check(cudaGetLastError(), "axis pass launch");
  }
}

/// A pass of a separable filter: its axis and weights.
struct device_pass {
  int axis;
  operators::detail::kernel_recipe recipe;
  tap_form form = tap_form::ascending;
};

/// Correlates `in` with the passes in order into `out` (both device, one
/// shape), then applies `finish`. With no pass (no axis filtered), one pass
/// of the identity still applies the squaring and the finish. `square_first`
/// squares the input samples.
template <class Ctx>
void separable_filter(Ctx& ctx, const float* in, float* out, shape3 shape, std::span<const device_pass> passes,
                      bool square_first = false, pass_finish finish = pass_finish::none) {
  const device_pass identity{2, operators::detail::kernel_recipe::uniform(1)};
  if (passes.empty()) passes = std::span(&identity, 1);
  std::vector<double> host;
  for (const auto& p : passes) {
    const auto at = host.size();
    host.resize(at + p.recipe.size());
    p.recipe.fill(host.data() + at);
  }
  auto weights = ctx.template allocate<double>(host.size(), buffer_role::workspace);
  decltype(ctx.template allocate<float>(0, buffer_role::temporary)) temp;
  if (passes.size() >= 2) temp = ctx.template allocate<float>(shape.voxels(), buffer_role::temporary);
  ctx.compute([&] {
    ctx.copy(weights.data(), host.data(), host.size() * sizeof(double));
    // Ping-pong so that the last pass writes `out`.
    const float* src = in;
    std::uint64_t offset = 0;
    for (std::size_t k = 0; k < passes.size(); ++k) {
      float* dst = (passes.size() - k) % 2 == 1 ? out : temp.data();
      const auto size = passes[k].recipe.size();
      launch_axis_pass(ctx, shape,
                       axis_pass_kernel{src, dst, cube_geometry::of(shape), weights.data() + offset, passes[k].axis,
                                        std::int64_t(size / 2), square_first && k == 0, passes[k].form,
                                        k + 1 == passes.size() ? finish : pass_finish::none});
      offset += size;
      src = dst;
    }
    ctx.synchronize();  // the host weights go out of scope
  });
}

/// The element of rank `rank` (from 0, ascending) of the k0 x k1 x k2 window
/// around each voxel (reflect), NaN -> 0: scipy.ndimage.rank_filter. Windows of
/// up to 27 voxels select in registers, larger ones (up to max_window) in
/// local memory.
template <int MaxWindow>
struct rank_kernel {
  const float* src;
  float* dst;
  cube_geometry g;
  std::int64_t k[3];
  int rank;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    std::int64_t c[3];
    g.split(i, c[0], c[1], c[2]);
    float v[MaxWindow];
    int m = 0;
    for (std::int64_t a = 0; a < k[0]; ++a) {
      const auto il = reflect(c[0] + a - k[0] / 2, g.n[0]);
      for (std::int64_t b = 0; b < k[1]; ++b) {
        const auto x = reflect(c[1] + b - k[1] / 2, g.n[1]);
        const float* trace = src + g.at(il, x, 0);
        for (std::int64_t t = 0; t < k[2]; ++t) v[m++] = trace[reflect(c[2] + t - k[2] / 2, g.n[2])];
      }
    }
    // Selection: after step j, v[j] is the j-th smallest.
    for (int j = 0; j <= rank; ++j) {
      int best = j;
      for (int q = j + 1; q < m; ++q)
        if (v[q] < v[best]) best = q;
      const float s = v[j];
      v[j] = v[best];
      v[best] = s;
    }
    dst[i] = nan_to_zero(v[rank]);
  }
};

/// The median of the 3 x 3 x 3 window (rank 13), everything unrolled so that
/// the 27 values stay in registers: the common case of rank_kernel.
struct median27_kernel {
  const float* src;
  float* dst;
  cube_geometry g;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    std::int64_t c[3];
    g.split(i, c[0], c[1], c[2]);
    std::int64_t t[3];
#pragma unroll
    for (int d = 0; d < 3; ++d) t[d] = reflect(c[2] + d - 1, g.n[2]);
    float v[27];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      const auto il = reflect(c[0] + a - 1, g.n[0]);
#pragma unroll
      for (int b = 0; b < 3; ++b) {
        const float* trace = src + g.at(il, reflect(c[1] + b - 1, g.n[1]), 0);
#pragma unroll
        for (int d = 0; d < 3; ++d) v[(a * 3 + b) * 3 + d] = trace[t[d]];
      }
    }
    // Selection: after step j, v[j] is the j-th smallest.
#pragma unroll
    for (int j = 0; j <= 13; ++j)
#pragma unroll
      for (int q = j + 1; q < 27; ++q) {
        const float a = v[j], b = v[q];
        const bool swap = b < a;
        v[j] = swap ? b : a;
        v[q] = swap ? a : b;
      }
    dst[i] = nan_to_zero(v[13]);
  }
};

/// Largest window rank_filter accepts.
inline constexpr std::uint64_t max_window = 343;

/// The rank-`rank` filter of a box window `k` from `in` to `out` (device).
template <class Ctx>
void rank_filter(Ctx& ctx, const float* in, float* out, shape3 shape, const std::array<std::uint64_t, 3>& k,
                 std::uint64_t rank) {
  const auto size = k[0] * k[1] * k[2];
  if (size > max_window)
    throw invalid_input("a window of " + std::to_string(k[0]) + "x" + std::to_string(k[1]) + "x" +
                        std::to_string(k[2]) + " = " + std::to_string(size) + " voxels on the GPU; expected at most " +
                        std::to_string(max_window) + " (7x7x7)");
  const std::int64_t kk[3] = {std::int64_t(k[0]), std::int64_t(k[1]), std::int64_t(k[2])};
  const auto g = cube_geometry::of(shape);
  if (k[0] == 3 && k[1] == 3 && k[2] == 3 && rank == 13)
    ctx.parallel_for(shape.voxels(), median27_kernel{in, out, g});
  else if (size <= 27)
    ctx.parallel_for(shape.voxels(), rank_kernel<27>{in, out, g, {kk[0], kk[1], kk[2]}, int(rank)});
  else
    ctx.parallel_for(shape.voxels(), rank_kernel<int(max_window)>{in, out, g, {kk[0], kk[1], kk[2]}, int(rank)});
}

}  // namespace dwsr::operators::cuda::detail
