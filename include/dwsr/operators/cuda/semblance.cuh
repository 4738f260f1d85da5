#pragma once
/// \file The edge-detection family's semblance on the GPU (semblance and
/// semblance2, the reference's two implementations of one formula):
/// sum_t (sum of traces)^2 / sum_t (sum of squares) / traces over the window,
/// with the CPU operator's double arithmetic in its order, unfused, so the two
/// sides agree bit for bit. A block per trace and tile of samples forms each
/// time's sums over the window's traces once, in shared memory, then each
/// output's time window from there (a thread per voxel for other windows).
///
/// Memory (device): input and output, nothing else; the NumPy reference holds
/// a window of traces per voxel. Limit: double arithmetic, about 6 operations
/// per window trace and sample (54 a voxel for the default 3 x 3 x 9).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "dwsr/exec/detail/cuda_check.hpp"
#include "dwsr/operators/cuda/detail/device_math.cuh"
#include "dwsr/operators/edge_detection.hpp"

namespace dwsr::operators::cuda {

namespace detail {

/// Per voxel: detail::semblance's sums (operators/edge_detection.hpp), in its
/// order. The general path, for windows the tile path does not take.
struct semblance_kernel {
  const float* x;
  float* y;
  cube_geometry geo;
  std::int64_t k[3];
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    std::int64_t c[3];
    geo.split(i, c[0], c[1], c[2]);
    double num = 0, den = 0;
    for (std::int64_t t = 0; t < k[2]; ++t) {
      const auto s = reflect(c[2] + t - k[2] / 2, geo.n[2]);
      double sum = 0, squares = 0;
      for (std::int64_t a = 0; a < k[0]; ++a) {
        const auto il = reflect(c[0] + a - k[0] / 2, geo.n[0]);
        for (std::int64_t b = 0; b < k[1]; ++b) {
          const double v = x[geo.at(il, reflect(c[1] + b - k[1] / 2, geo.n[1]), s)];
          sum = add_rn(sum, v);
          squares = add_rn(squares, mul_rn(v, v));
        }
      }
      num = add_rn(num, mul_rn(sum, sum));
      den = add_rn(den, squares);
    }
    y[i] = finish(num, den);
  }
  __device__ float finish(double num, double den) const {
    const double v = num / den / double(k[0] * k[1]);
    return isnan(v) ? 0.0f : static_cast<float>(v);
  }
};

/// The tile path: a block per trace and tile of semblance_tile samples. Its
/// threads first form each time's sum and sum of squares over the window's
/// traces once, into shared memory (over the tile and its window's reach),
/// then each output's window from there: about 6 double operations and one
/// read per window trace and sample instead of 3 x window. Windows of up to
/// semblance_traces traces and semblance_reach + 1 samples.
constexpr unsigned semblance_tile = 256;
constexpr unsigned semblance_reach = 512;
constexpr unsigned semblance_traces = 64;

inline bool semblance_tiles(const std::int64_t (&k)[3]) {
  return k[0] * k[1] <= semblance_traces && k[2] - 1 <= semblance_reach;
}

__global__ void __launch_bounds__(semblance_tile) semblance_tile_kernel(semblance_kernel p, std::uint32_t tiles_t) {
  __shared__ double sums[semblance_tile + semblance_reach];
  __shared__ double squares[semblance_tile + semblance_reach];
  __shared__ std::int64_t rows[semblance_traces];
  const auto& g = p.geo;
  const std::uint32_t trace = blockIdx.x / tiles_t, tile = blockIdx.x - trace * tiles_t;
  const std::int64_t il = trace / std::uint32_t(g.n[1]), xl = trace - il * g.n[1];
  const std::int64_t t0 = std::int64_t(tile) * semblance_tile, before = p.k[2] / 2;
  const auto n = int(p.k[0] * p.k[1]);
  for (int r = int(threadIdx.x); r < n; r += int(blockDim.x)) {
    const auto a = r / int(p.k[1]), b = r - a * int(p.k[1]);
    rows[r] = g.at(reflect(il + a - p.k[0] / 2, g.n[0]), reflect(xl + b - p.k[1] / 2, g.n[1]), 0);
  }
  __syncthreads();
  const auto outputs = std::min<std::int64_t>(semblance_tile, g.n[2] - t0);
  const auto span = int(outputs + p.k[2] - 1);
  for (int u = int(threadIdx.x); u < span; u += int(blockDim.x)) {
    const auto s = reflect(t0 - before + u, g.n[2]);
    double sum = 0, sq = 0;
    for (int r = 0; r < n; ++r) {
      const double v = p.x[rows[r] + s];
      sum = add_rn(sum, v);
      sq = add_rn(sq, mul_rn(v, v));
    }
    sums[u] = sum;
    squares[u] = sq;
  }
  __syncthreads();
  if (std::int64_t(threadIdx.x) >= outputs) return;
  double num = 0, den = 0;
  for (int w = 0; w < int(p.k[2]); ++w) {
    const double m = sums[int(threadIdx.x) + w];
    num = add_rn(num, mul_rn(m, m));
    den = add_rn(den, squares[int(threadIdx.x) + w]);
  }
  p.y[g.at(il, xl, t0 + threadIdx.x)] = p.finish(num, den);
}

}  // namespace detail

/// Semblance over the window of `kernel` (Cpu: semblance or semblance2).
template <class Cpu>
struct semblance_attribute : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto& k = this->kernel;
    const auto shape = in.shape();
    const detail::semblance_kernel p{in.data(),
                                     out[0].as<float>().data(),
                                     detail::cube_geometry::of(shape),
                                     {std::int64_t(k[0]), std::int64_t(k[1]), std::int64_t(k[2])}};
    const auto tiles_t = (shape.samples + detail::semblance_tile - 1) / detail::semblance_tile;
    if (!detail::semblance_tiles(p.k) || shape.traces() * tiles_t > 0x7fffffff)  // block indices fit 31 bits
      return ctx.parallel_for(shape.voxels(), p);
    if constexpr (Ctx::computes) {
      if (shape.voxels() == 0) return;
      ctx.compute([&] {
        detail::semblance_tile_kernel<<<unsigned(shape.traces() * tiles_t), detail::semblance_tile, 0, ctx.stream()>>>(
            p, std::uint32_t(tiles_t));
        dwsr::detail::cuda_check(cudaGetLastError(), "semblance tile launch");
      });
    }
  }
};

using semblance = semblance_attribute<operators::semblance>;
using semblance2 = semblance_attribute<operators::semblance2>;

}  // namespace dwsr::operators::cuda
