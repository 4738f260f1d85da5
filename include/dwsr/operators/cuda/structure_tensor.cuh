#pragma once
/// \file The gradient-structure-tensor attributes on the GPU: the dip and
/// azimuth family's tensor itself (gradient_structure_tensor) and its
/// principal-vector angles (gst_3d_dip, gst_3d_azm, gst_2d_dips), and the
/// edge-detection family's eigenvalue ratios (chaos, coherence,
/// structured_semblance). The six gradient products' window means, a tile
/// of voxels per block (detail/tensor_tile.hpp), then per voxel the CPU
/// operators' own closed-form 3x3 eigen-solve (detail/symmetric_eigen.hpp,
/// compiled for both sides) and their own finish.
///
/// Memory (device): input, outputs and the three gradients (each one tiled
/// launch, no temporary on the tile path): 5-6x the input (10x for the six
/// outputs of gradient_structure_tensor); the NumPy reference holds every
/// gradient product and a 3x3 matrix per voxel (11-59x). Shared memory is
/// not an event: it is the multiprocessor's, not the device memory's.
/// Limit: arithmetic per voxel (3 x 6 x window products and sums, ~150
/// double operations of the eigen-solve); the gradients are memory-bound.

#include <array>
#include <cstdint>
#include <span>

#include "dwsr/operators/cuda/detail/tensor_tile.hpp"
#include "dwsr/operators/cuda/detail/window_kernels.cuh"
#include "dwsr/operators/dip_azimuth.hpp"
#include "dwsr/operators/edge_detection.hpp"
#include "dwsr/operators/signal.hpp"

namespace dwsr::operators::cuda {

namespace detail {

/// The reference's FirstDerivative of `in` along `axis` into `out` (device),
/// in scipy's symmetric and antisymmetric forms (as the CPU's gradient rows,
/// bit for bit).
template <class Ctx>
void gradient(Ctx& ctx, cube_view<const float> in, int axis, float* out) {
  separable_filter(
      ctx, in.data(), out, in.shape(),
      derivative_spec<operators::detail::first_stencil>(axis, tap_form::antisymmetric3, tap_form::symmetric3));
}

/// The three gradients, into three device cubes.
template <class Ctx>
std::array<buffer<float, Ctx>, 3> gradients(Ctx& ctx, cube_view<const float> in) {
  std::array<buffer<float, Ctx>, 3> g;
  for (int a = 0; a < 3; ++a)
    g[std::size_t(a)] = ctx.template allocate<float>(in.shape().voxels(), buffer_role::temporary);
  for (int a = 0; a < 3; ++a) gradient(ctx, in, a, g[std::size_t(a)].data());
  return g;
}

/// Per voxel: the structure tensor's window means (tensor_tile.hpp), then
/// finish(i, tensor); the path for cubes and windows the tile path does not take.
template <class Finish>
struct tensor_kernel {
  const float* g0;
  const float* g1;
  const float* g2;
  cube_geometry geo;
  int k[3];
  Finish finish;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    std::int64_t c[3];
    geo.split(i, c[0], c[1], c[2]);
    float tensor[6];
    window_means(
        k,
        [&](int a, int b, int t, float* g) {
          const auto at = geo.at(reflect(c[0] + a - k[0] / 2, geo.n[0]), reflect(c[1] + b - k[1] / 2, geo.n[1]),
                                 reflect(c[2] + t - k[2] / 2, geo.n[2]));
          g[0] = g0[at], g[1] = g1[at], g[2] = g2[at];
        },
        tensor);
    finish(i, tensor);
  }
};

/// The tile path: one block a tile (grid x time, y crossline, z inline).
template <class Finish>
__global__ void __launch_bounds__(tile_threads)
    tensor_tile_kernel(const float* __restrict__ g0, const float* __restrict__ g1, const float* __restrict__ g2,
                       tensor_tile f, Finish finish) {
  extern __shared__ float shared[];
  float* a = shared;
  float* b = shared + f.a_floats();
  const int origin[3] = {int(blockIdx.z) * f.tile[0], int(blockIdx.y) * f.tile[1], int(blockIdx.x) * f.tile[2]};
  const int t = int(threadIdx.x), count = f.region_floats();
  f.load_phase(t, tile_threads, origin, [&](int r, std::uint64_t voxel) {
    a[r] = g0[voxel];
    a[count + r] = g1[voxel];
    a[2 * count + r] = g2[voxel];
  });
  __syncthreads();
  f.inline_phase(t, tile_threads, a, b);
  __syncthreads();
  f.crossline_phase(t, tile_threads, b, a);
  __syncthreads();
  f.time_phase(t, tile_threads, origin, a, [&](std::uint64_t voxel, const float* tensor) { finish(voxel, tensor); });
}

/// Writes Op's per-voxel angles of the principal vector (N outputs).
template <class Op, std::size_t N>
struct principal_finish {
  Op op;
  float* y[N];
  __device__ void operator()(std::uint64_t i, const float* tensor) const {
    const auto v = op.of(operators::detail::tensor_eigensystem(tensor));
    for (std::size_t m = 0; m < N; ++m) y[m][i] = v[m];
  }
};

/// Writes the six window means themselves (gradient_structure_tensor).
struct tensor_finish {
  float* y[6];
  __device__ void operator()(std::uint64_t i, const float* tensor) const {
    for (int q = 0; q < 6; ++q) y[q][i] = tensor[q];
  }
};

/// Writes Op::of(e1, e2, e3) of the eigenvalues e1 >= e2 >= e3, in float.
template <class Op>
struct eigenvalue_finish {
  float* y;
  __device__ void operator()(std::uint64_t i, const float* tensor) const {
    const auto v = operators::detail::tensor_eigenvalues(tensor);
    y[i] = Op::of(static_cast<float>(v[2]), static_cast<float>(v[1]), static_cast<float>(v[0]));
  }
};

/// The gradients of `in`, then the window means and `finish` at every voxel
/// (the tile path where it applies; the meta context takes the same path and
/// allocates nothing for either).
template <class Ctx, class Finish>
void for_each_tensor(Ctx& ctx, cube_view<const float> in, const std::array<std::uint64_t, 3>& k, Finish finish) {
  auto g = gradients(ctx, in);
  const auto s = in.shape();
  const auto tile = plan_tensor_tile(s, k.data());
  if (tile.tile[0] > 0) {
    if constexpr (Ctx::computes) {
      const dim3 grid(unsigned(tile.tiles(2)), unsigned(tile.tiles(1)), unsigned(tile.tiles(0)));
      tensor_tile_kernel<<<grid, tile_threads, unsigned(tile.shared_bytes()), ctx.stream()>>>(
          g[0].data(), g[1].data(), g[2].data(), tile, finish);
      dwsr::detail::cuda_check(cudaGetLastError(), "tensor tile launch");
    }
    return;
  }
  ctx.parallel_for(
      s.voxels(),
      tensor_kernel<Finish>{
          g[0].data(), g[1].data(), g[2].data(), cube_geometry::of(s), {int(k[0]), int(k[1]), int(k[2])}, finish});
}

}  // namespace detail

/// An attribute of the structure tensor's principal vector (Cpu: the CPU
/// operator, whose of() the kernel calls), N outputs.
template <class Cpu, std::size_t N>
struct principal_attribute : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::principal_finish<Cpu, N> f{static_cast<const Cpu&>(*this), {}};
    for (std::size_t m = 0; m < N; ++m) f.y[m] = out[m].as<float>().data();
    detail::for_each_tensor(ctx, in, this->kernel, f);
  }
};

/// An attribute of the structure tensor's eigenvalues (Cpu::of(e1, e2, e3)).
template <class Cpu>
struct eigenvalue_attribute : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::for_each_tensor(ctx, in, this->kernel, detail::eigenvalue_finish<Cpu>{out[0].as<float>().data()});
  }
};

/// gradient_structure_tensor: the six window means (gi2, gj2, gk2, gigj, gigk, gjgk).
struct gradient_structure_tensor : operators::gradient_structure_tensor {
  using operators::gradient_structure_tensor::gradient_structure_tensor;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::tensor_finish f{};
    for (std::size_t q = 0; q < 6; ++q) f.y[q] = out[q].as<float>().data();
    detail::for_each_tensor(ctx, in, kernel, f);
  }
};

using gst_3d_dip = principal_attribute<operators::gst_3d_dip, 1>;
using gst_3d_azm = principal_attribute<operators::gst_3d_azm, 1>;
using gst_2d_dips = principal_attribute<operators::gst_2d_dips, 2>;
using chaos = eigenvalue_attribute<operators::chaos>;
using coherence = eigenvalue_attribute<operators::coherence>;
using structured_semblance = eigenvalue_attribute<operators::structured_semblance>;

}  // namespace dwsr::operators::cuda
