#pragma once
/// \file Gradient attributes on the GPU: the dip and azimuth family's
/// gradient_dips (the reference's FirstDerivative along each axis, the raw
/// dips -g/gk * dip_factor per voxel, each median-filtered) and the signal
/// family's gradient_magnitude (three gaussian-derivative filters, then the
/// norm per voxel). Each is the CPU operator's description with a run() for
/// cuda_context and cuda_meta_context, in the CPU's arithmetic (bit for bit).
///
/// Memory (device): gradient_dips holds input, both outputs, the time
/// gradient and one other at a time, made its raw dip in place (5x the
/// input); gradient_magnitude input, output (the first gradient, then the
/// sum of squares) and one gradient at a time (3x), plus a cube-sized
/// temporary where a filter cannot take the tile path (gaussian's, 4x).
/// Limit: gradient_dips the two medians (window_kernels.cuh's selection),
/// gradient_magnitude its three filters' taps.

#include <cstdint>
#include <span>
#include <vector>

#include "dwsr/operators/cuda/detail/window_kernels.cuh"
#include "dwsr/operators/cuda/structure_tensor.cuh"
#include "dwsr/operators/dip_azimuth.hpp"
#include "dwsr/operators/signal.hpp"

namespace dwsr::operators::cuda {

namespace detail {

/// A raw dip, in place: g <- -(g / gk) f, NaN -> 0 (the CPU's raw_dip, in float, unfused).
struct raw_dip_kernel {
  float* g;
  const float* gk;
  float factor;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    g[i] = nan_to_zero(__fmul_rn(-__fdiv_rn(g[i], gk[i]), factor));
  }
};

/// The CPU's float sum of squares in its order, a gradient at a time:
/// a <- a^2 + b^2 (first), then a <- sqrt(a + b^2), NaN -> 0 (last).
struct squares_kernel {
  float* a;
  const float* b;
  bool last;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    const float x = a[i], y = b[i];
    a[i] = last ? nan_to_zero(sqrtf(__fadd_rn(x, __fmul_rn(y, y)))) : __fadd_rn(__fmul_rn(x, x), __fmul_rn(y, y));
  }
};

/// The gaussian derivative along `axis` (order 1 there, smoothing elsewhere),
/// inline, crossline, then time, as the CPU's gradient_magnitude passes.
inline separable_spec gaussian_gradient_spec(const operators::gradient_magnitude& op, int axis) {
  std::vector<device_pass> passes;
  for (int a = 0; a < 3; ++a)
    passes.push_back({a, operators::detail::kernel_recipe::gaussian(op.sigmas[std::size_t(a)], a == axis ? 1 : 0,
                                                                    operators::gradient_magnitude::truncate)});
  return {std::move(passes), false, pass_finish::none};
}

}  // namespace detail

/// gradient_dips: the median-filtered raw dips -gi/gk * dip_factor and -gj/gk * dip_factor.
struct gradient_dips : operators::gradient_dips {
  using operators::gradient_dips::gradient_dips;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto n = in.shape().voxels();
    auto gk = ctx.template allocate<float>(n, buffer_role::temporary);
    auto g = ctx.template allocate<float>(n, buffer_role::temporary);
    detail::gradient(ctx, in, 2, gk.data());
    const auto rank = kernel[0] * kernel[1] * kernel[2] / 2;
    for (int c = 0; c < 2; ++c) {
      detail::gradient(ctx, in, c, g.data());
      ctx.parallel_for(n, detail::raw_dip_kernel{g.data(), gk.data(), static_cast<float>(dip_factor)});
      detail::rank_filter(ctx, g.data(), out[std::size_t(c)].as<float>().data(), in.shape(), kernel, rank);
    }
  }
};

/// gradient_magnitude: the norm of the gaussian-smoothed gradient, NaN -> 0.
struct gradient_magnitude : operators::gradient_magnitude {
  using operators::gradient_magnitude::gradient_magnitude;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto s = in.shape();
    float* y = out[0].as<float>().data();
    auto g = ctx.template allocate<float>(s.voxels(), buffer_role::temporary);
    detail::separable_filter(ctx, in.data(), y, s, detail::gaussian_gradient_spec(*this, 0));
    for (int a = 1; a < 3; ++a) {
      detail::separable_filter(ctx, in.data(), g.data(), s, detail::gaussian_gradient_spec(*this, a));
      ctx.parallel_for(s.voxels(), detail::squares_kernel{y, g.data(), a == 2});
    }
  }
};

}  // namespace dwsr::operators::cuda
