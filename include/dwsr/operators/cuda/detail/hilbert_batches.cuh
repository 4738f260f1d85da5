#pragma once
/// \file The Hilbert transform h = H(x) of every trace on the device, a batch
/// of traces at a time: R2C, the spectrum times -i sign(f) / n (DC and
/// Nyquist zeroed), C2R. The analytic signal is x + i h (scipy.signal.hilbert's
/// definition), so an attribute needs x and h only, and a batch needs one
/// half spectrum and one real trace array: the cube-sized complex signal of
/// the NumPy formulation never exists.
///
/// Memory (device): a work area (cufft_plan.cuh's bound), batch x (n/2 + 1)
/// complex and batch x n floats, with batch = max(1, 2^22 / n) traces (about
/// 32 MiB of spectrum and 16 MiB of h), whatever the cube's size.

#include <cufft.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "dwsr/core/cube_view.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/operators/cuda/detail/cufft_plan.cuh"

namespace dwsr::operators::cuda::detail {

/// Traces per batch for traces of n samples.
inline std::uint64_t hilbert_batch(std::uint64_t n, std::uint64_t traces) {
  return std::max<std::uint64_t>(
      1, std::min<std::uint64_t>(traces, (std::uint64_t{1} << 22) / std::max<std::uint64_t>(n, 1)));
}

/// Multiplies each half spectrum by -i sign(f) / n.
struct quadrature_rotation {
  cufftComplex* spectrum;
  std::uint64_t half;  ///< n / 2 + 1
  std::uint64_t n;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    const auto k = i % half;
    const cufftComplex v = spectrum[i];
    const float scale = 1.0f / static_cast<float>(n);
    const bool zero = k == 0 || (n % 2 == 0 && k == n / 2);
    spectrum[i] = zero ? cufftComplex{0.0f, 0.0f} : cufftComplex{v.y * scale, -v.x * scale};
  }
};

/// Writes zeros.
struct fill_zero {
  float* y;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const { y[i] = 0.0f; }
};

/// Calls finish(first_trace, traces, h) for consecutive batches of traces of
/// `in` (device), h the batch's Hilbert transforms on the device (traces x n
/// floats, valid until finish returns); finish enqueues work on the stream.
/// Under the meta context only the buffers are planned.
template <class Ctx, class Finish>
void for_each_hilbert_batch(Ctx& ctx, cube_view<const float> in, Finish&& finish) {
  const auto n = in.shape().samples;
  const auto traces = in.shape().traces();
  if (traces == 0 || n == 0) return;
  if (n == 1) {  // a single sample is its own DC: H(x) = 0, no transform
    auto h = ctx.template allocate<float>(traces, buffer_role::temporary);
    ctx.parallel_for(traces, fill_zero{h.data()});
    ctx.compute([&] { finish(0, traces, static_cast<const float*>(h.data())); });
    return;
  }
  const auto batch = hilbert_batch(n, traces);
  const auto tail = traces % batch;
  const auto work_bytes = work_area_bound(n, batch);
  auto work = ctx.template allocate<std::byte>(work_bytes, buffer_role::workspace);
  auto spectrum = ctx.template allocate<cufftComplex>(batch * (n / 2 + 1), buffer_role::temporary);
  auto h = ctx.template allocate<float>(batch * n, buffer_role::temporary);
  ctx.compute([&] {
    // One work area serves the plans in turn: they run one after another on one stream.
    real_fft_plan<Ctx> forward(ctx, n, batch, CUFFT_R2C, work.data(), work_bytes);
    real_fft_plan<Ctx> backward(ctx, n, batch, CUFFT_C2R, work.data(), work_bytes);
    std::optional<real_fft_plan<Ctx>> tail_forward, tail_backward;
    if (tail) {
      tail_forward.emplace(ctx, n, tail, CUFFT_R2C, work.data(), work_bytes);
      tail_backward.emplace(ctx, n, tail, CUFFT_C2R, work.data(), work_bytes);
    }
    for (std::uint64_t first = 0; first < traces; first += batch) {
      const auto count = std::min(batch, traces - first);
      const auto& f = count == batch ? forward : *tail_forward;
      const auto& b = count == batch ? backward : *tail_backward;
      f.forward(const_cast<float*>(in.data()) + first * n, spectrum.data());
      ctx.parallel_for(count * (n / 2 + 1), quadrature_rotation{spectrum.data(), n / 2 + 1, n});
      b.backward(spectrum.data(), h.data());
      finish(first, count, static_cast<const float*>(h.data()));
    }
    ctx.synchronize();  // before the plans go
  });
}

}  // namespace dwsr::operators::cuda::detail
