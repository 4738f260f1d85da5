#pragma once
/// \file Window filters on the device with scipy.ndimage's semantics (reflect
/// borders, origin 0): separable correlations along any axes (double
/// accumulation as the CPU's passes), and the exact rank of a box window
/// (the median).
///
/// Memory (device): the weights (a few doubles); on the tile path (up to
/// three passes on distinct axes, tile_filter.hpp) nothing else. Where that
/// path does not apply, one cube-sized temporary for two or more passes
/// (one launch per pass, ping-ponging between it and the output).
/// Limit: the taps in double without FMA (a conversion, a multiply and an
/// add each), not device memory: the tile path reads and writes the cube
/// once, separate passes once per pass, at the same speed where the tile
/// path makes no more taps (tile_filter.hpp's tile_max_work).

#include <cuda_pipeline.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dwsr/core/shape.hpp"
#include "dwsr/exec/detail/cuda_check.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/operators/cuda/detail/device_math.cuh"
#include "dwsr/operators/cuda/detail/tile_filter.hpp"
#include "dwsr/operators/cuda/detail/window_passes.hpp"
#include "dwsr/operators/detail/separable.hpp"

namespace dwsr::operators::cuda::detail {

/// One correlation pass along `axis` over the whole cube: the separate
/// passes, where the tile path would recompute too many taps (gaussian's),
/// or does not fit (windows too wide, cubes too large for its grid).
struct axis_pass_kernel {
  const float* src;
  float* dst;
  cube_geometry g;
  int axis;
  pass_math m;
  /// Voxel i of any cube (64-bit indices, its coordinates by division).
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    std::int64_t c[3];
    g.split(i, c[0], c[1], c[2]);
    const std::int64_t stride = axis == 0 ? g.n[1] * g.n[2] : axis == 1 ? g.n[2] : 1;
    const std::int64_t base = std::int64_t(i) - c[axis] * stride;
    dst[i] = m.value([&](int k) { return src[base + reflect(c[axis] + k, g.n[axis]) * stride]; });
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
  const bool interior = c[Axis] - p.m.before >= 0 && c[Axis] + p.m.after < n;
  p.dst[i] = p.m.value([&](int k) {
    const int at = interior ? c[Axis] + k : int(reflect(c[Axis] + k, n));
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

/// The tile path (tile_filter.hpp): one block a tile, grid x along time,
/// y crossline, z inline; the load copies global to shared memory
/// asynchronously (cp.async from sm_80). The passes' loop is unrolled so
/// that each reads its pass_math from the parameters directly. (A template,
/// so that every translation unit including this header may instantiate it.)
template <class Filter>
__global__ void __launch_bounds__(tile_threads)
    tile_filter_kernel(const float* __restrict__ src, float* __restrict__ dst, Filter f) {
  extern __shared__ float shared[];
  float* first = shared;
  float* second = shared + f.first_floats();
  const int origin[3] = {int(blockIdx.z) * f.tile[0], int(blockIdx.y) * f.tile[1], int(blockIdx.x) * f.tile[2]};
  const int n1 = f.n[1], n2 = f.n[2];
  const int t = int(threadIdx.x);
  f.load_phase(t, tile_threads, origin, first, [&](float* d, int i, int x, int k) {
    __pipeline_memcpy_async(d, src + (i * n1 + x) * n2 + k, sizeof(float));
  });
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
#pragma unroll
  for (int s = 0; s < 3; ++s)
    if (s < f.passes) {
      f.pass_phase(s, t, tile_threads, origin, first, second,
                   [&](int i, int x, int k, float v) { dst[(i * n1 + x) * n2 + k] = v; });
      __syncthreads();
    }
}

/// Correlates `in` with the filter's passes into `out` (both device, one
/// shape). Up to three passes on distinct axes run as one tiled launch with
/// no temporary (tile_filter.hpp); otherwise, or where that path does not
/// apply (plan_tile), one launch per pass through a cube-sized temporary.
/// The meta context takes the same path from the same shape.
template <class Ctx>
void separable_filter(Ctx& ctx, const float* in, float* out, shape3 shape, const separable_spec& spec) {
  const auto host = spec.weights();
  auto weights = ctx.template allocate<double>(host.size(), buffer_role::workspace);
  auto tile = spec.tile(shape, weights.data());
  decltype(ctx.template allocate<float>(0, buffer_role::temporary)) temp;
  if (tile.passes == 0 && spec.passes.size() >= 2)
    temp = ctx.template allocate<float>(shape.voxels(), buffer_role::temporary);
  ctx.compute([&] {
    ctx.copy(weights.data(), host.data(), host.size() * sizeof(double));
    if constexpr (Ctx::computes) {
      if (tile.passes > 0 && shape.voxels() > 0) {
        const dim3 grid(unsigned(tile.tiles(2)), unsigned(tile.tiles(1)), unsigned(tile.tiles(0)));
        tile_filter_kernel<<<grid, tile_threads, unsigned(tile.shared_bytes()), ctx.stream()>>>(in, out, tile);
        dwsr::detail::cuda_check(cudaGetLastError(), "tile filter launch");
      }
    }
    if (tile.passes == 0) {
      // Ping-pong so that the last pass writes `out`.
      const float* src = in;
      const auto n = spec.passes.size();
      for (std::size_t k = 0; k < n; ++k) {
        float* dst = (n - k) % 2 == 1 ? out : temp.data();
        launch_axis_pass(
            ctx, shape,
            axis_pass_kernel{src, dst, cube_geometry::of(shape), spec.passes[k].axis, spec.math(k, weights.data())});
        src = dst;
      }
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
