#pragma once
/// \file Window operators on the GPU: the noise-reduction family (gaussian,
/// median, convolution) and the signal family's windowed operators (rms,
/// first_derivative, second_derivative), each the CPU operator's description
/// (name, parameters, halo, outputs; operators/noise_reduction.hpp,
/// operators/signal.hpp) with a run() for cuda_context and cuda_meta_context;
/// and the signal family's reflection_intensity (one time pass) and pointwise
/// rescale_amplitude_range and time_gain.
///
/// Memory (device): input and output; a cube-sized temporary only where a
/// separable filter cannot take the tile path (detail/window_kernels.cuh);
/// time_gain's gains (a float per sample).
/// Limits: the separable filters' taps in double (one read and one write of
/// the cube on the tile path); the median by its selection (about 27 x 14
/// comparisons a voxel for 3 x 3 x 3).

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dwsr/operators/cuda/detail/window_kernels.cuh"
#include "dwsr/operators/noise_reduction.hpp"
#include "dwsr/operators/signal.hpp"

namespace dwsr::operators::cuda {

/// gaussian: scipy.ndimage.gaussian_filter, NaN -> 0.
struct gaussian : operators::gaussian {
  using operators::gaussian::gaussian;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(), detail::gaussian_spec(*this));
  }
};

/// convolution: the mean over a box window (scipy uniform_filter), NaN -> 0.
struct convolution : operators::convolution {
  using operators::convolution::convolution;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(), detail::convolution_spec(kernel));
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

/// sqrt of the box mean of x^2, NaN -> 0 (Cpu: rms, or rms2, the reference's second copy of it).
template <class Cpu>
struct root_mean_square : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(), detail::rms_spec(this->kernel));
  }
};

using rms = root_mean_square<operators::rms>;
using rms2 = root_mean_square<operators::rms2>;

/// reflection_intensity: the trapezoid integral of the samples around each along time, NaN -> 0.
struct reflection_intensity : operators::reflection_intensity {
  using operators::reflection_intensity::reflection_intensity;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(),
                             detail::reflection_intensity_spec(kernel));
  }
};

/// rescale_amplitude_range: x clipped to [min_val, max_val] (NaN kept), one thread a voxel.
struct rescale_amplitude_range : operators::rescale_amplitude_range {
  using operators::rescale_amplitude_range::rescale_amplitude_range;
  struct clip {
    const float* x;
    float* y;
    float lo, hi;
    __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
      y[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
    }
  };
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    ctx.parallel_for(in.size(), clip{in.data(), out[0].as<float>().data(), static_cast<float>(min_val),
                                     static_cast<float>(max_val)});
  }
};

/// time_gain: x (t + 2)^gain_val, the gains made on the host by the CPU
/// operator (so the same bits) and multiplied one thread a voxel.
struct time_gain : operators::time_gain {
  using operators::time_gain::time_gain;
  struct scale {
    const float* x;
    const float* gain;
    float* y;
    std::uint64_t samples;
    __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
      y[i] = __fmul_rn(x[i], gain[i % samples]);
    }
  };
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto nt = in.shape().samples;
    auto gain = ctx.template allocate<float>(nt, buffer_role::workspace);
    ctx.compute([&] {
      std::vector<float> host(nt);
      gains(host.data(), nt);
      ctx.copy(gain.data(), host.data(), nt * sizeof(float));
      ctx.synchronize();  // the host gains go out of scope
    });
    if (nt > 0) ctx.parallel_for(in.size(), scale{in.data(), gain.data(), out[0].as<float>().data(), nt});
  }
};

/// A derivative along `axis`, smoothed along the other axes in ascending order.
template <class Cpu, class Stencil>
struct derivative : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::separable_filter(ctx, in.data(), out[0].as<float>().data(), in.shape(),
                             detail::derivative_spec<Stencil>(this->axis));
  }
};

using first_derivative = derivative<operators::first_derivative, operators::detail::first_stencil>;
using second_derivative = derivative<operators::second_derivative, operators::detail::second_stencil>;

}  // namespace dwsr::operators::cuda
