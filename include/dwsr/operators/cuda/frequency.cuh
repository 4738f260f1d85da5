#pragma once
/// \file The frequency family's Butterworth filters on the GPU (lowpass,
/// highpass, bandpass): scipy.signal.filtfilt of every trace with the CPU
/// operator's own design (operators/detail/butterworth.hpp), one thread a
/// trace, in the CPU's double arithmetic in its order, unfused: bit for bit
/// the CPU's. Each is the CPU operator's description with a run() for
/// cuda_context and cuda_meta_context.
///
/// Memory (device): input, output and the padded traces in double for both
/// passes (the backward pass reads the forward one's doubles), a batch of
/// traces at a time: at most max(input bytes, 16 MiB) of scratch, so a
/// filter holds about 3x the input instead of the 4x one scratch for every
/// trace would take.
/// Limit: the recursion is serial along time, 9 double operations a sample a
/// section a pass; traces in parallel hide its latency.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <span>

#include "dwsr/exec/detail/cuda_check.hpp"
#include "dwsr/operators/cuda/detail/filtfilt_batch.hpp"
#include "dwsr/operators/frequency.hpp"

namespace dwsr::operators::cuda {

namespace detail {

/// One thread a trace of the batch's `traces` (a template, so that every
/// translation unit including this header may instantiate it).
template <class Kernel>
__global__ void __launch_bounds__(128) per_trace(Kernel p, std::uint64_t traces) {
  const std::uint64_t j = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  if (j < traces) p(j);
}

/// filtfilt of every trace of `in` (device) into `out` with filter `f`.
template <class Ctx>
void device_filtfilt(Ctx& ctx, const operators::detail::butterworth& f, const float* in, float* out, shape3 s) {
  const auto n = s.samples, traces = s.traces();
  if (n == 0 || traces == 0) return;
  const auto pad = operators::detail::filtfilt_padlen(f, n), len = n + 2 * pad;
  const auto batch = filtfilt_batch(s, len);
  auto ext = ctx.template allocate<double>(batch * len, buffer_role::temporary);
  if constexpr (Ctx::computes) {
    const filtfilt_batch_kernel p{in, out, ext.data(), n, pad, 0, batch, device_sections::of(f)};
    for (std::uint64_t first = 0; first < traces; first += batch) {
      auto q = p;
      q.first = first;
      const auto count = std::min(batch, traces - first);
      per_trace<<<unsigned((count + 127) / 128), 128, 0, ctx.stream()>>>(q, count);
      dwsr::detail::cuda_check(cudaGetLastError(), "filtfilt launch");
    }
  }
}

}  // namespace detail

/// A Butterworth filter operator (Cpu: lowpass_filter, highpass_filter, bandpass_filter).
template <class Cpu>
struct butterworth_filter : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    detail::device_filtfilt(ctx, this->filter, in.data(), out[0].as<float>().data(), in.shape());
  }
};

using lowpass_filter = butterworth_filter<operators::lowpass_filter>;
using highpass_filter = butterworth_filter<operators::highpass_filter>;
using bandpass_filter = butterworth_filter<operators::bandpass_filter>;

}  // namespace dwsr::operators::cuda
