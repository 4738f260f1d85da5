#pragma once
/// \file The frequency family's Butterworth filters on the GPU (lowpass,
/// highpass, bandpass): scipy.signal.filtfilt of every trace with the CPU
/// operator's own design (operators/detail/butterworth.hpp), one thread a
/// trace (the context's parallel_for over a batch), in the CPU's double
/// arithmetic in its order, unfused: bit for bit the CPU's. Each is the CPU
/// operator's description with a run() for cuda_context and cuda_meta_context.
///
/// Memory (device): input, output and the padded traces in double for both
/// passes (the backward pass reads the forward one's doubles), a batch of
/// traces at a time: at most max(input bytes, 16 MiB) of scratch, so a
/// filter holds about 3x the input instead of the 4x one scratch for every
/// trace would take.
/// Limit: the recursion is serial along time, 9 double operations a sample a
/// section a pass; traces in parallel hide its latency.

#include <algorithm>
#include <cstdint>
#include <span>

#include "dwsr/operators/cuda/detail/filtfilt_batch.hpp"
#include "dwsr/operators/frequency.hpp"

namespace dwsr::operators::cuda {

namespace detail {

/// filtfilt of every trace of `in` (device) into `out` with filter `f`.
template <class Ctx>
void device_filtfilt(Ctx& ctx, const operators::detail::butterworth& f, const float* in, float* out, shape3 s) {
  const auto n = s.samples, traces = s.traces();
  if (n == 0 || traces == 0) return;
  const auto pad = operators::detail::filtfilt_padlen(f, n), len = n + 2 * pad;
  const auto batch = filtfilt_batch(s, len);
  auto ext = ctx.template allocate<double>(batch * len, buffer_role::temporary);
  const auto sections = device_sections::of(f);
  for (std::uint64_t first = 0; first < traces; first += batch)
    ctx.parallel_for(std::min(batch, traces - first),
                     filtfilt_batch_kernel{in, out, ext.data(), n, pad, first, batch, sections});
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
