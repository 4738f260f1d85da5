#pragma once
/// \file scipy.signal.filtfilt of a batch of traces, one trace per GPU
/// thread, with the CPU operators' Butterworth design
/// (operators/detail/butterworth.hpp) and the CPU cascade's double
/// arithmetic in its order, unfused: bit for bit the CPU's. Plain C++
/// (DWSR_HOST_DEVICE), so that a host test runs the threads the GPU runs.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "dwsr/core/host_device.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/operators/cuda/detail/device_math.cuh"
#include "dwsr/operators/detail/butterworth.hpp"

namespace dwsr::operators::cuda::detail {

inline constexpr int max_sections = int(operators::detail::butterworth::max_sections);

/// A Butterworth filter's sections as a kernel receives them, with the
/// sections' steady states (biquad::steady_state, before the input level).
struct device_sections {
  int count = 0;
  double b0[max_sections] = {}, b1[max_sections] = {}, b2[max_sections] = {};
  double a1[max_sections] = {}, a2[max_sections] = {};
  double zi0[max_sections] = {}, zi1[max_sections] = {}, gain[max_sections] = {};

  static device_sections of(const operators::detail::butterworth& f) {
    device_sections d;
    d.count = int(f.sections());
    for (std::size_t s = 0; s < f.sections(); ++s) {
      const auto& q = f.section(s);
      const auto zi = q.steady_state();
      d.b0[s] = q.b0, d.b1[s] = q.b1, d.b2[s] = q.b2, d.a1[s] = q.a1, d.a2[s] = q.a2;
      d.gain[s] = q.dc_gain(), d.zi0[s] = zi[0], d.zi1[s] = zi[1];
    }
    return d;
  }
};

/// filtfilt of one trace per thread: `ext` holds the batch's padded traces
/// sample-major (sample k of trace j at k * batch + j), so that a warp's
/// accesses coalesce.
struct filtfilt_batch_kernel {
  const float* x;
  float* y;
  double* ext;
  std::uint64_t n, pad, first, batch;
  device_sections f;

  /// The cascade over trace j's len samples in place, forwards or backwards,
  /// each section from the steady state of a constant input (the CPU's cascade).
  DWSR_HOST_DEVICE void cascade(std::uint64_t j, std::uint64_t len, bool backwards) const {
    double z0[max_sections], z1[max_sections];
    double level = ext[(backwards ? len - 1 : 0) * batch + j];
    DWSR_UNROLL
    for (int s = 0; s < max_sections; ++s)
      if (s < f.count) {
        z0[s] = mul_rn(f.zi0[s], level);
        z1[s] = mul_rn(f.zi1[s], level);
        level = mul_rn(level, f.gain[s]);
      }
    for (std::uint64_t k = 0; k < len; ++k) {
      double* v = ext + (backwards ? len - 1 - k : k) * batch + j;
      double in = *v;
      DWSR_UNROLL
      for (int s = 0; s < max_sections; ++s)
        if (s < f.count) {
          const double out = add_rn(mul_rn(f.b0[s], in), z0[s]);
          z0[s] = add_rn(sub_rn(mul_rn(f.b1[s], in), mul_rn(f.a1[s], out)), z1[s]);
          z1[s] = sub_rn(mul_rn(f.b2[s], in), mul_rn(f.a2[s], out));
          in = out;
        }
      *v = in;
    }
  }

  /// Trace first + j: the odd extension, both passes, the middle rounded to
  /// float (a parallel_for body: j of the batch, one trace a call).
  DWSR_HOST_DEVICE void operator()(std::uint64_t j, std::uint64_t, std::size_t) const {
    const float* xt = x + (first + j) * n;
    const double head = xt[0], tail = xt[n - 1];
    for (std::uint64_t k = 0; k < pad; ++k) {
      ext[k * batch + j] = sub_rn(2 * head, double(xt[pad - k]));
      ext[(pad + n + k) * batch + j] = sub_rn(2 * tail, double(xt[n - 2 - k]));
    }
    for (std::uint64_t i = 0; i < n; ++i) ext[(pad + i) * batch + j] = xt[i];
    cascade(j, n + 2 * pad, false);
    cascade(j, n + 2 * pad, true);
    float* yt = y + (first + j) * n;
    for (std::uint64_t i = 0; i < n; ++i) yt[i] = static_cast<float>(ext[(pad + i) * batch + j]);
  }
};

/// Traces filtered per launch: as many as max(input bytes, 16 MiB) of padded
/// double traces hold, at least one.
inline std::uint64_t filtfilt_batch(shape3 s, std::uint64_t len) {
  const std::uint64_t budget = std::max<std::uint64_t>(s.voxels() * sizeof(float), std::uint64_t{16} << 20);
  return std::clamp<std::uint64_t>(budget / (len * sizeof(double)), 1, std::max<std::uint64_t>(s.traces(), 1));
}

}  // namespace dwsr::operators::cuda::detail
