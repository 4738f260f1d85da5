#pragma once
/// \file Deterministic synthetic seismic cubes, following the reference input's
/// recipe: sparse reflectivity (a spike with probability 0.05 per sample,
/// amplitude U(-1, 1)), convolved along time with a 51-tap 25 Hz Ricker wavelet
/// sampled at 4 ms (zero outside the trace), plus gaussian noise of 0.05 times
/// the standard deviation of the clean cube; float32.
///
/// Same shape and seed give the same bytes with any standard library and any
/// thread count: the random numbers come from dwsr's own generator and
/// transforms (core/random.hpp); each trace draws from streams that depend
/// only on (seed, trace index), so traces are generated in parallel and any
/// subset of them alone; the one global quantity, std(clean), is summed in a
/// fixed order (fixed blocks of traces, blocks added in order). The arithmetic
/// is IEEE double with one rounding to float per sample; a compiler that fuses
/// a*b+c into FMA on its own (e.g. -ffp-contract=fast with FMA enabled) could
/// change the last bit of some samples.

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>

#include "dwsr/core/random.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"

namespace dwsr::io {

/// Parameters of the recipe (those of the reference input).
struct synthetic_recipe {
  static constexpr double spike_probability = 0.05;   ///< per sample
  static constexpr double peak_frequency_hz = 25.0;   ///< Ricker peak frequency
  static constexpr double sample_interval_s = 0.004;  ///< 4 ms
  static constexpr std::size_t wavelet_taps = 51;     ///< t = (k - 25) * 4 ms
  static constexpr double noise_ratio = 0.05;         ///< noise std / clean std
};

/// The 51 Ricker taps w[k] = (1 - 2a) e^-a, a = (pi f t)^2, t = (k - 25) dt.
inline const std::array<double, synthetic_recipe::wavelet_taps>& ricker_wavelet() {
  static const auto taps = [] {
    std::array<double, synthetic_recipe::wavelet_taps> w{};
    constexpr double pi = 3.141592653589793;
    constexpr int half = static_cast<int>(synthetic_recipe::wavelet_taps / 2);
    for (int k = 0; k < static_cast<int>(w.size()); ++k) {
      const double t = (k - half) * synthetic_recipe::sample_interval_s;
      const double x = pi * synthetic_recipe::peak_frequency_hz * t;
      const double a = x * x;
      w[static_cast<std::size_t>(k)] = (1.0 - 2.0 * a) * portable_exp(-a);
    }
    return w;
  }();
  return taps;
}

namespace detail {

/// Streams of one trace: reflectivity and noise are independent of each other.
enum synthetic_stream : std::uint64_t { reflectivity_stream = 0, noise_stream = 1 };

/// Writes trace `index`'s reflectivity into `out`: 0, or with probability
/// 0.05 an amplitude U(-1, 1) rounded to float.
inline void draw_reflectivity(std::uint64_t seed, std::uint64_t index, std::span<float> out) noexcept {
  xoshiro256ss rng(stream_key(seed, index, reflectivity_stream));
  for (auto& r : out)
    r = rng.uniform() < synthetic_recipe::spike_probability ? static_cast<float>(rng.uniform(-1.0, 1.0)) : 0.0f;
}

/// Convolves a trace with the Ricker wavelet in place ('same' size, zero
/// outside the trace). Sparse: each nonzero sample scatters the 51 taps into
/// a ring of pending outputs; sample t - 25 is final once sample t is read.
inline void convolve_ricker_in_place(std::span<float> trace) noexcept {
  constexpr std::size_t taps = synthetic_recipe::wavelet_taps, half = taps / 2;
  const auto& w = ricker_wavelet();
  std::array<double, taps> pending{};
  const std::size_t n = trace.size();
  for (std::size_t t = 0; t < n + half; ++t) {
    if (t < n) {
      const double r = trace[t];
      // Tap k lands on output p = t + k - half, kept in slot (p + half) % taps;
      // outputs outside [0, n) are dropped (zero outside the trace).
      const std::size_t k0 = t < half ? half - t : 0;
      const std::size_t k1 = n + half - t < taps ? n + half - t : taps;
      if (r != 0.0)
        for (std::size_t k = k0; k < k1; ++k) pending[(t + k) % taps] += r * w[k];
    }
    if (t >= half) {  // output p = t - half has received every contribution
      auto& slot = pending[t % taps];
      trace[t - half] = static_cast<float>(slot);
      slot = 0.0;
    }
  }
}

/// Adds noise_std times trace `index`'s standard normal stream to `trace`.
inline void add_noise(std::uint64_t seed, std::uint64_t index, double noise_std, std::span<float> trace) noexcept {
  xoshiro256ss rng(stream_key(seed, index, noise_stream));
  normal_source normal;
  for (auto& x : trace) x = static_cast<float>(x + noise_std * normal(rng));
}

/// Runs f(begin, end) over [0, n) on `threads` threads (serially for 1).
template <class F>
void for_ranges(std::uint64_t n, std::size_t threads, F&& f) {
  if (n == 0) return;
  if (threads == 1) return f(std::uint64_t{0}, n);
  tbb::task_arena arena(static_cast<int>(threads));
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, n),
                      [&](const tbb::blocked_range<std::uint64_t>& r) { f(r.begin(), r.end()); });
  });
}

}  // namespace detail

/// Fills dst (shape.voxels() floats, C order) with the synthetic cube of `seed`
/// on `threads` threads; the bytes do not depend on the thread count. Throws
/// invalid_input for 0 threads or a null dst with a non-empty shape.
inline void generate_synthetic(shape3 shape, std::uint64_t seed, float* dst, std::size_t threads = 1) {
  if (threads == 0) throw invalid_input("thread count 0; expected at least 1 thread");
  if (shape.voxels() == 0) return;
  if (dst == nullptr)
    throw invalid_input("synthetic cube " + to_string(shape) + ": no destination memory (a meta execution has none)");
  const std::uint64_t traces = shape.traces(), samples = shape.samples;
  auto trace = [&](std::uint64_t i) { return std::span<float>(dst + i * samples, samples); };

  // Pass 1: clean traces, and sum / sum of squares per fixed block of traces.
  constexpr std::uint64_t max_blocks = 256;
  const std::uint64_t blocks = traces < max_blocks ? traces : max_blocks;
  std::array<double, max_blocks> sum{}, sum_sq{};
  detail::for_ranges(blocks, threads, [&](std::uint64_t b0, std::uint64_t b1) {
    for (std::uint64_t b = b0; b < b1; ++b) {
      double s = 0, q = 0;
      for (std::uint64_t i = b * traces / blocks; i < (b + 1) * traces / blocks; ++i) {
        const auto tr = trace(i);
        detail::draw_reflectivity(seed, i, tr);
        detail::convolve_ricker_in_place(tr);
        for (const float x : tr) s += x, q += static_cast<double>(x) * x;
      }
      sum[b] = s;
      sum_sq[b] = q;
    }
  });
  double s = 0, q = 0;
  for (std::uint64_t b = 0; b < blocks; ++b) s += sum[b], q += sum_sq[b];
  const double n = static_cast<double>(shape.voxels());
  const double mean = s / n;
  const double variance = q / n - mean * mean;
  const double noise_std = synthetic_recipe::noise_ratio * std::sqrt(variance > 0 ? variance : 0.0);

  // Pass 2: noise, from each trace's own stream.
  detail::for_ranges(traces, threads, [&](std::uint64_t t0, std::uint64_t t1) {
    for (std::uint64_t i = t0; i < t1; ++i) detail::add_noise(seed, i, noise_std, trace(i));
  });
}

}  // namespace dwsr::io
