#pragma once
/// \file The gradient-structure-tensor attributes on the GPU: the dip and
/// azimuth family's principal-vector angles (gst_3d_dip, gst_3d_azm,
/// gst_2d_dips) and the edge-detection family's eigenvalue ratios (chaos,
/// coherence, structured_semblance). One thread a voxel: the six gradient
/// products' window means, then the CPU operators' own closed-form 3x3
/// eigen-solve (detail/symmetric_eigen.hpp, compiled for both sides) and
/// their own per-voxel finish.
///
/// Memory (device): input, outputs and the three gradients (each one
/// tiled launch, no temporary on the tile path): 5-6x the input; the NumPy
/// reference holds every gradient product and a 3x3 matrix per voxel (11-59x).
/// Limit: arithmetic per voxel (3 x 6 x window products and sums, ~150
/// double operations of the eigen-solve); the gradients are memory-bound.

#include <array>
#include <cstdint>
#include <span>

#include "dwsr/operators/cuda/detail/window_kernels.cuh"
#include "dwsr/operators/dip_azimuth.hpp"
#include "dwsr/operators/edge_detection.hpp"
#include "dwsr/operators/signal.hpp"

namespace dwsr::operators::cuda {

namespace detail {

/// The reference's FirstDerivative of `in` along each axis, into three device
/// cubes, in scipy's symmetric and antisymmetric forms (as the CPU's
/// gradient rows, bit for bit).
template <class Ctx>
std::array<buffer<float, Ctx>, 3> gradients(Ctx& ctx, cube_view<const float> in) {
  using stencil = operators::detail::first_stencil;
  std::array<buffer<float, Ctx>, 3> g;
  for (int a = 0; a < 3; ++a)
    g[std::size_t(a)] = ctx.template allocate<float>(in.shape().voxels(), buffer_role::temporary);
  for (int a = 0; a < 3; ++a) {
    separable_filter(ctx, in.data(), g[std::size_t(a)].data(), in.shape(),
                     derivative_spec<stencil>(a, tap_form::antisymmetric3, tap_form::symmetric3));
  }
  return g;
}

/// Per voxel: the structure tensor (gi2, gj2, gk2, gigj, gigk, gjgk): each
/// float product's window mean over k (reflect, origin 0) as the CPU's
/// uniform passes make it (inline, crossline, time; each a double sum in
/// ascending order over the window, divided by its size and stored as
/// float), then finish(i, tensor).
template <class Finish>
struct tensor_kernel {
  const float* g0;
  const float* g1;
  const float* g2;
  cube_geometry geo;
  std::int64_t k[3];
  Finish finish;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    std::int64_t c[3];
    geo.split(i, c[0], c[1], c[2]);
    double s3[6] = {0, 0, 0, 0, 0, 0};
    for (std::int64_t t = 0; t < k[2]; ++t) {
      const auto tt = reflect(c[2] + t - k[2] / 2, geo.n[2]);
      double s2[6] = {0, 0, 0, 0, 0, 0};
      for (std::int64_t b = 0; b < k[1]; ++b) {
        const auto x = reflect(c[1] + b - k[1] / 2, geo.n[1]);
        double s1[6] = {0, 0, 0, 0, 0, 0};
        for (std::int64_t a = 0; a < k[0]; ++a) {
          const auto at = geo.at(reflect(c[0] + a - k[0] / 2, geo.n[0]), x, tt);
          const float gi = g0[at], gj = g1[at], gk = g2[at];
          const float p[6] = {__fmul_rn(gi, gi), __fmul_rn(gj, gj), __fmul_rn(gk, gk),
                              __fmul_rn(gi, gj), __fmul_rn(gi, gk), __fmul_rn(gj, gk)};
          for (int q = 0; q < 6; ++q) s1[q] = __dadd_rn(s1[q], p[q]);
        }
        for (int q = 0; q < 6; ++q) s2[q] = __dadd_rn(s2[q], static_cast<float>(s1[q] / double(k[0])));
      }
      for (int q = 0; q < 6; ++q) s3[q] = __dadd_rn(s3[q], static_cast<float>(s2[q] / double(k[1])));
    }
    float tensor[6];
    for (int q = 0; q < 6; ++q) tensor[q] = static_cast<float>(s3[q] / double(k[2]));
    finish(i, tensor);
  }
};

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

/// Writes Op::of(e1, e2, e3) of the eigenvalues e1 >= e2 >= e3, in float.
template <class Op>
struct eigenvalue_finish {
  float* y;
  __device__ void operator()(std::uint64_t i, const float* tensor) const {
    const auto v = operators::detail::tensor_eigenvalues(tensor);
    y[i] = Op::of(static_cast<float>(v[2]), static_cast<float>(v[1]), static_cast<float>(v[0]));
  }
};

/// The gradients of `in`, then the tensor kernel with `finish` over every voxel.
template <class Ctx, class Finish>
void for_each_tensor(Ctx& ctx, cube_view<const float> in, const std::array<std::uint64_t, 3>& k, Finish finish) {
  auto g = gradients(ctx, in);
  ctx.parallel_for(in.shape().voxels(),
                   tensor_kernel<Finish>{g[0].data(),
                                         g[1].data(),
                                         g[2].data(),
                                         cube_geometry::of(in.shape()),
                                         {std::int64_t(k[0]), std::int64_t(k[1]), std::int64_t(k[2])},
                                         finish});
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

using gst_3d_dip = principal_attribute<operators::gst_3d_dip, 1>;
using gst_3d_azm = principal_attribute<operators::gst_3d_azm, 1>;
using gst_2d_dips = principal_attribute<operators::gst_2d_dips, 2>;
using chaos = eigenvalue_attribute<operators::chaos>;
using coherence = eigenvalue_attribute<operators::coherence>;
using structured_semblance = eigenvalue_attribute<operators::structured_semblance>;

}  // namespace dwsr::operators::cuda
