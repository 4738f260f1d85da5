#pragma once
/// \file Window operators on the GPU: the noise-reduction family (gaussian,
/// median, convolution) and the signal family's windowed operators (rms,
/// first_derivative, second_derivative), each the CPU operator's description
/// (name, parameters, halo, outputs; operators/noise_reduction.hpp,
/// operators/signal.hpp) with a run() for cuda_context and cuda_meta_context.
///
/// Memory (device): input, output and, for two or more separable passes, one
/// cube-sized temporary (detail/window_kernels.cuh); the median none.
/// Limits: separable filters are bound by device memory traffic (8 bytes a
/// voxel a pass, 3 passes for a 3-D filter); the median by its selection
/// (about 27 x 14 comparisons a voxel for 3 x 3 x 3).

#include <array>
#include <cmath>
#include <cstddef>
#include <span>

#include "dwsr/operators/cuda/detail/window_kernels.cuh"
#include "dwsr/operators/noise_reduction.hpp"
#include "dwsr/operators/signal.hpp"

namespace dwsr::operators::cuda {

namespace detail {

/// The passes of a box mean of window k (size-1 axes skipped), time first as the CPU's rms.
inline std::vector<device_pass> box_mean_passes(const std::array<std::uint64_t, 3>& k, bool time_first) {
  std::vector<device_pass> passes;
  for (int step = 0; step < 3; ++step) {
    const int a = time_first ? 2 - step : step;
    if (k[std::size_t(a)] > 1) passes.push_back({a, operators::detail::kernel_recipe::uniform(k[std::size_t(a)])});
  }
  return passes;
}

}  // namespace detail

/// gaussian: scipy.ndimage.gaussian_filter, NaN -> 0.
struct gaussian : operators::gaussian {
  using operators::gaussian::gaussian;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    std::vector<detail::device_pass> passes;
    for (int a = 0; a < 3; ++a)
      if (filters(a))
        passes.push_back({a, operators::detail::kernel_recipe::gaussian(sigmas[std::size_t(a)], 0, truncate)});
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(), passes, false,
                             detail::pass_finish::nan_to_zero);
  }
};

/// convolution: the mean over a box window (scipy uniform_filter), NaN -> 0.
struct convolution : operators::convolution {
  using operators::convolution::convolution;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(),
                             detail::box_mean_passes(kernel, false), false, detail::pass_finish::nan_to_zero);
  }
};

/// median: the upper median of a box window (scipy median_filter), NaN -> 0.
struct median : operators::median {
  using operators::median::median;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::rank_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(), kernel,
                        kernel[0] * kernel[1] * kernel[2] / 2);
  }
};

/// rms: sqrt of the box mean of x^2, NaN -> 0.
struct rms : operators::rms {
  using operators::rms::rms;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(),
                             detail::box_mean_passes(kernel, true), true, detail::pass_finish::sqrt_nan_to_zero);
  }
};

/// A derivative along `axis`, smoothed along the other axes in ascending order.
template <class Cpu, class Stencil>
struct derivative : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    std::vector<detail::device_pass> passes{{this->axis, Stencil::derivative()}};
    for (int a = 0; a < 3; ++a)
      if (a != this->axis) passes.push_back({a, Stencil::smoothing()});
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(), passes);
  }
};

using first_derivative = derivative<operators::first_derivative, operators::detail::first_stencil>;
using second_derivative = derivative<operators::second_derivative, operators::detail::second_stencil>;

}  // namespace dwsr::operators::cuda
