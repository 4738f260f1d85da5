#pragma once
/// \file The frequency family's wavelet convolutions (cwt_ricker, cwt_ormsby)
/// as the GPU computes them: numpy.convolve(x, w, 'same') of a trace as a
/// direct sum per output sample, where the CPU multiplies spectra in float
/// (detail/wavelet_convolution.hpp). Two forms:
/// - the tile: a block holds the taps and a tile's samples (zero beyond the
///   trace) in shared memory, and each thread sums R outputs `stride` apart
///   in float, tap by tap (tile_sample, tile_outputs);
/// - a thread an output sample, in double, reading global memory
///   (wavelet_sample), where the taps and a tile do not fit shared memory.
/// Plain C++ (DWSR_HOST_DEVICE), so that a host test runs the threads the
/// GPU runs.
///
/// A trace holding a NaN or an infinity gives NaN everywhere, as the CPU's
/// transforms do: a non-finite sample reaches every frequency bin and from
/// there every output sample. The sum itself only reaches the taps' span.

#include <cstdint>
#include <limits>

#include "dwsr/core/host_device.hpp"

namespace dwsr::operators::cuda::detail {

/// Output sample t of numpy.convolve(x, w, 'same') for a trace x of n
/// samples and an m-tap wavelet w (m >= 1): the sum over j of
/// w[j] x[t + (m - 1) / 2 - j], samples outside the trace taken as 0, in
/// double, rounded to float; NaN when the trace is not `finite`.
DWSR_HOST_DEVICE inline float wavelet_sample(const float* x, std::uint64_t n, const float* w, std::uint64_t m,
                                             std::uint64_t t, bool finite) {
  if (!finite) return std::numeric_limits<float>::quiet_NaN();
  const std::uint64_t centre = t + (m - 1) / 2;  // x's index for tap 0
  const std::uint64_t first = centre >= n ? centre - (n - 1) : 0;
  const std::uint64_t last = centre < m - 1 ? centre : m - 1;
  double sum = 0;
  for (std::uint64_t j = first; j <= last; ++j) sum += double(w[j]) * double(x[centre - j]);
  return float(sum);
}

/// Sample k of the shared row of a tile whose outputs start at t0: x[t0 +
/// (m - 1) / 2 - (m - 1) + k], 0 outside the trace of n samples. Output t0 +
/// u then reads row[u + m - 1 - j] for tap j.
DWSR_HOST_DEVICE inline float tile_sample(const float* x, std::uint64_t n, std::uint64_t m, std::uint64_t t0,
                                          std::uint64_t k) {
  const std::uint64_t shifted = t0 + k + (m - 1) / 2;  // the sample's index + m - 1
  return shifted >= m - 1 && shifted - (m - 1) < n ? x[shifted - (m - 1)] : 0.0f;
}

/// Outputs u, u + stride, ..., u + (R - 1) stride of a tile from its shared
/// `row` and the m taps `w`: each the float sum over j of w[j] row[. + m - 1
/// - j], tap by tap (every output's own order, whatever R).
template <unsigned R>
DWSR_HOST_DEVICE inline void tile_outputs(const float* w, const float* row, unsigned m, unsigned u, unsigned stride,
                                          float (&acc)[R]) {
  for (unsigned r = 0; r < R; ++r) acc[r] = 0.0f;
  for (unsigned j = 0; j < m; ++j) {
    const float wj = w[j];
    const float* xj = row + (m - 1 - j) + u;
    for (unsigned r = 0; r < R; ++r) acc[r] = acc[r] + wj * xj[r * stride];
  }
}

}  // namespace dwsr::operators::cuda::detail
