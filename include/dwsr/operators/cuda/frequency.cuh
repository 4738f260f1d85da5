#pragma once
/// \file The frequency family on the GPU. Each operator is the CPU operator's
/// description with a run() for cuda_context and cuda_meta_context.
///
/// The Butterworth filters (lowpass, highpass, bandpass): scipy.signal.filtfilt
/// of every trace with the CPU operator's own design
/// (operators/detail/butterworth.hpp), one thread a trace (the context's
/// parallel_for over a batch), in the CPU's double arithmetic in its order,
/// unfused: bit for bit the CPU's.
/// Memory (device): input, output and the padded traces in double for both
/// passes (the backward pass reads the forward one's doubles), a batch of
/// traces at a time: at most max(input bytes, 16 MiB) of scratch, so a
/// filter holds about 3x the input instead of the 4x one scratch for every
/// trace would take.
/// Limit: the recursion is serial along time, 9 double operations a sample a
/// section a pass; traces in parallel hide its latency.
///
/// The wavelet convolutions (cwt_ricker, cwt_ormsby): the CPU's taps (made
/// on the host by the CPU operator, rounded to float as its transform
/// takes them) summed directly (detail/wavelet_direct.hpp): a block a tile
/// of 256 R outputs of one trace (R = 1, 2 or 4 as the trace's length asks),
/// the taps and the tile's samples in shared memory, each thread R outputs
/// 256 apart, in float; a thread an output in double from global memory
/// where they do not fit 48 KiB (over ~5,600 taps).
/// Within rounding of the CPU's float spectra, and NaN over a trace with a
/// non-finite sample as the CPU's.
/// Memory (device): input, output, the taps (a float each) and a flag per
/// trace (4 bytes): about 2x the input.
/// Limit: shared-memory loads, about 1.25 a multiply-add (m multiply-adds an
/// output: 128 at 4 ms).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

#include <vector>

#include "dwsr/operators/cuda/detail/filtfilt_batch.hpp"
#include "dwsr/operators/cuda/detail/wavelet_direct.hpp"
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

/// finite[k] = 1 for every trace k.
struct all_finite_kernel {
  std::uint32_t* finite;
  __device__ void operator()(std::uint64_t k, std::uint64_t, std::size_t) const { finite[k] = 1; }
};

/// finite[trace] = 0 where a sample is NaN or infinite.
struct find_non_finite_kernel {
  const float* x;
  std::uint32_t* finite;
  std::uint64_t samples;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    if (!isfinite(x[i])) finite[i / samples] = 0;
  }
};

/// One output sample of a wavelet convolution (wavelet_sample).
struct wavelet_kernel {
  const float* x;
  const float* taps;
  const std::uint32_t* finite;
  float* y;
  std::uint64_t samples, m;
  __device__ void operator()(std::uint64_t i, std::uint64_t, std::size_t) const {
    const auto trace = i / samples, t = i - trace * samples;
    y[i] = wavelet_sample(x + trace * samples, samples, taps, m, t, finite[trace] != 0);
  }
};

/// The tile's threads; each makes R outputs (1, 2 or 4: wavelet_outputs), a tile R x 256.
inline constexpr unsigned wavelet_threads = 256;

/// Outputs a thread makes for traces of n samples: enough for a trace in
/// one tile, at most 4 (short traces leave no thread idle).
inline unsigned wavelet_outputs(std::uint64_t n) { return n <= wavelet_threads ? 1 : n <= 2 * wavelet_threads ? 2 : 4; }

/// Shared bytes of a tile of `tile` outputs for m taps: the taps and the tile's m - 1 + tile samples.
inline std::uint64_t wavelet_shared_bytes(std::uint64_t m, std::uint64_t tile) {
  return (2 * m - 1 + tile) * sizeof(float);
}

/// A block a tile of R x 256 outputs: blockIdx.x = trace x tiles + tile (see wavelet_direct.hpp).
template <unsigned R>
__global__ void __launch_bounds__(wavelet_threads)
    wavelet_tile_kernel(const float* x, const float* taps, const std::uint32_t* finite, float* y, unsigned n,
                        unsigned m, unsigned tiles) {
  constexpr unsigned tile = R * wavelet_threads;
  extern __shared__ float shared[];
  float* w = shared;
  float* row = shared + m;
  const std::uint64_t trace = blockIdx.x / tiles;
  const unsigned t0 = (blockIdx.x % tiles) * tile;
  const float* in = x + trace * n;
  float* out = y + trace * n;
  if (!finite[trace]) {
    for (unsigned u = threadIdx.x; u < tile && t0 + u < n; u += wavelet_threads)
      out[t0 + u] = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  for (unsigned j = threadIdx.x; j < m; j += wavelet_threads) w[j] = taps[j];
  for (unsigned k = threadIdx.x; k < tile + m - 1; k += wavelet_threads) row[k] = tile_sample(in, n, m, t0, k);
  __syncthreads();
  float acc[R];
  tile_outputs(w, row, m, threadIdx.x, wavelet_threads, acc);
  for (unsigned r = 0; r < R; ++r)
    if (const auto t = t0 + threadIdx.x + r * wavelet_threads; t < n) out[t] = acc[r];
}

/// Launches wavelet_tile_kernel<R> over every tile of the cube.
template <unsigned R>
void launch_wavelet_tiles(cudaStream_t stream, const float* x, const float* taps, const std::uint32_t* finite, float* y,
                          shape3 s, unsigned m) {
  const auto tiles = (s.samples + R * wavelet_threads - 1) / (R * wavelet_threads);
  wavelet_tile_kernel<R>
      <<<unsigned(tiles * s.traces()), wavelet_threads, unsigned(wavelet_shared_bytes(m, R * wavelet_threads)),
         stream>>>(x, taps, finite, y, unsigned(s.samples), m, unsigned(tiles));
  dwsr::detail::cuda_check(cudaGetLastError(), "wavelet tile launch");
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

/// A wavelet convolution operator (Cpu: cwt_ricker, cwt_ormsby; its
/// wavelet(t) gives the taps).
template <class Cpu>
struct wavelet_transform : Cpu {
  using Cpu::Cpu;
  template <class Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto s = in.shape();
    const operators::detail::wavelet_axis axis(this->sample_rate);
    auto taps = ctx.template allocate<float>(axis.taps, buffer_role::workspace);
    auto finite = ctx.template allocate<std::uint32_t>(s.traces(), buffer_role::workspace);
    ctx.compute([&] {
      std::vector<float> host(axis.taps);
      for (std::uint64_t i = 0; i < axis.taps; ++i) host[i] = static_cast<float>(this->wavelet(axis[i]));
      ctx.copy(taps.data(), host.data(), axis.taps * sizeof(float));
      ctx.synchronize();  // the host taps go out of scope
    });
    if (s.voxels() == 0) return;
    ctx.parallel_for(s.traces(), detail::all_finite_kernel{finite.data()});
    ctx.parallel_for(s.voxels(), detail::find_non_finite_kernel{in.data(), finite.data(), s.samples});
    float* y = out[0].as<float>().data();
    const auto r = detail::wavelet_outputs(s.samples), tile = r * detail::wavelet_threads;
    const auto tiles = (s.samples + tile - 1) / tile;
    if (detail::wavelet_shared_bytes(axis.taps, tile) <= 48 * 1024 && s.samples < (std::uint64_t{1} << 31) &&
        tiles * s.traces() < (std::uint64_t{1} << 31)) {
      if constexpr (Ctx::computes) {
        const auto m = unsigned(axis.taps);
        if (r == 1) detail::launch_wavelet_tiles<1>(ctx.stream(), in.data(), taps.data(), finite.data(), y, s, m);
        if (r == 2) detail::launch_wavelet_tiles<2>(ctx.stream(), in.data(), taps.data(), finite.data(), y, s, m);
        if (r == 4) detail::launch_wavelet_tiles<4>(ctx.stream(), in.data(), taps.data(), finite.data(), y, s, m);
      }
    } else {
      ctx.parallel_for(s.voxels(),
                       detail::wavelet_kernel{in.data(), taps.data(), finite.data(), y, s.samples, axis.taps});
    }
  }
};

using cwt_ricker = wavelet_transform<operators::cwt_ricker>;
using cwt_ormsby = wavelet_transform<operators::cwt_ormsby>;

}  // namespace dwsr::operators::cuda
