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
///
/// Two functions make every sample, for the whole cube and for input windows
/// (io/source.hpp) alike, so a window holds the same bytes as the same voxels
/// of the cube: synthetic_noise_std() streams the clean cube trace by trace
/// for std(clean), holding no trace, and synthetic_trace() makes any sample
/// range of one trace given that value, straight into the caller's memory.
/// generate_synthetic() is the two in turn (the clean part is made twice, the
/// price of holding nothing but the output).

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "dwsr/core/limits.hpp"
#include "dwsr/core/random.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"
#include "dwsr/exec/detail/tsan_handoff.hpp"

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

/// Draws the next reflectivity sample from `rng`: 0, or with probability 0.05
/// an amplitude U(-1, 1) rounded to float.
inline float draw_reflectivity_sample(xoshiro256ss& rng) noexcept {
  return rng.uniform() < synthetic_recipe::spike_probability ? static_cast<float>(rng.uniform(-1.0, 1.0)) : 0.0f;
}

/// Writes trace `index`'s reflectivity into `out`.
inline void draw_reflectivity(std::uint64_t seed, std::uint64_t index, std::span<float> out) noexcept {
  xoshiro256ss rng(stream_key(seed, index, reflectivity_stream));
  for (auto& r : out) r = draw_reflectivity_sample(rng);
}

/// Convolves a stream of n samples with the Ricker wavelet ('same' size, zero
/// outside the trace): reads input(t) for t = 0, 1, ..., n - 1 and calls
/// output(p, value) for p = 0, 1, ..., n - 1, both in order, value rounded to
/// float. Sparse: each nonzero input scatters the 51 taps into a ring of
/// pending outputs; output t - 25 is final once input t is read, so output may
/// overwrite input (in place) and nothing beyond the ring is held.
template <class Input, class Output>
void convolve_ricker(std::size_t n, Input&& input, Output&& output) {
  constexpr std::size_t taps = synthetic_recipe::wavelet_taps, half = taps / 2;
  const auto& w = ricker_wavelet();
  std::array<double, taps> pending{};
  for (std::size_t t = 0; t < n + half; ++t) {
    if (t < n) {
      const double r = input(t);
      // Tap k lands on output p = t + k - half, kept in slot (p + half) % taps;
      // outputs outside [0, n) are dropped (zero outside the trace).
      const std::size_t k0 = t < half ? half - t : 0;
      const std::size_t k1 = n + half - t < taps ? n + half - t : taps;
      if (r != 0.0)
        for (std::size_t k = k0; k < k1; ++k) pending[(t + k) % taps] += r * w[k];
    }
    if (t >= half) {  // output p = t - half has received every contribution
      auto& slot = pending[t % taps];
      output(t - half, static_cast<float>(slot));
      slot = 0.0;
    }
  }
}

/// Convolves a trace with the Ricker wavelet in place (see convolve_ricker).
inline void convolve_ricker_in_place(std::span<float> trace) noexcept {
  convolve_ricker(
      trace.size(), [&](std::size_t t) { return trace[t]; }, [&](std::size_t p, float v) { trace[p] = v; });
}

/// Streams trace `index`'s clean samples (reflectivity convolved with the
/// wavelet) to clean(p, value), p = 0, 1, ..., samples - 1 in order; holds no
/// trace, only the wavelet's ring.
template <class F>
void stream_clean_trace(std::uint64_t seed, std::uint64_t index, std::uint64_t samples, F&& clean) {
  xoshiro256ss rng(stream_key(seed, index, reflectivity_stream));
  convolve_ricker(
      samples, [&](std::size_t) { return draw_reflectivity_sample(rng); }, clean);
}

/// std(clean) is summed over min(traces, 256) fixed blocks of traces: block b
/// of B holds traces [b traces / B, (b + 1) traces / B), summed trace by trace
/// and sample by sample; the blocks are then added in order. The partition
/// depends on the shape alone, so the sums are the same doubles on any thread
/// count and whether or not the cube is kept.
inline constexpr std::uint64_t max_sum_blocks = 256;

/// Sum and sum of squares of some clean samples.
struct clean_sums {
  double sum = 0;
  double sum_sq = 0;
};

/// The sums of block `block` of `blocks` of the clean cube (shape, seed), streamed trace by trace.
inline clean_sums clean_block_sums(shape3 shape, std::uint64_t seed, std::uint64_t block, std::uint64_t blocks) {
  const std::uint64_t traces = shape.traces();
  clean_sums s;
  for (std::uint64_t i = block * traces / blocks; i < (block + 1) * traces / blocks; ++i)
    stream_clean_trace(seed, i, shape.samples, [&](std::size_t, float x) {
      s.sum += x;
      s.sum_sq += static_cast<double>(x) * x;
    });
  return s;
}

/// 0.05 times the population standard deviation of `voxels` clean samples
/// whose per-block sums are `blocks`, added in block order.
inline double noise_std_from_sums(std::span<const clean_sums> blocks, std::uint64_t voxels) noexcept {
  double s = 0, q = 0;
  for (const auto& b : blocks) s += b.sum, q += b.sum_sq;
  const double n = static_cast<double>(voxels);
  const double mean = s / n;
  const double variance = q / n - mean * mean;
  return synthetic_recipe::noise_ratio * std::sqrt(variance > 0 ? variance : 0.0);
}

/// Runs f(begin, end) over [0, n) on `threads` threads (serially for 1).
template <class F>
void for_ranges(std::uint64_t n, std::size_t threads, F&& f) {
  if (n == 0) return;
  if (threads == 1) return f(std::uint64_t{0}, n);
  // Honour a thread count above the core count, as host_context does (TBB caps
  // workers at cores - 1 and prints a warning of its own otherwise).
  std::unique_ptr<tbb::global_control> oversubscribe;
  if (threads > std::size_t(tbb::this_task_arena::max_concurrency()))
    oversubscribe = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);
  tbb::task_arena arena(static_cast<int>(threads));
  dwsr::detail::tsan_handoff handoff;
  handoff.fork();
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, n), [&](const tbb::blocked_range<std::uint64_t>& r) {
      handoff.enter();
      f(r.begin(), r.end());
      handoff.leave();
    });
  });
  handoff.join();
}

/// Throws invalid_input for 0 threads or more than max_threads.
inline void check_threads(std::size_t threads) {
  if (threads == 0 || threads > max_threads)
    throw invalid_input("thread count " + std::to_string(threads) + "; expected 1 to " + std::to_string(max_threads) +
                        " threads");
}

}  // namespace detail

/// The noise standard deviation of the synthetic cube (shape, seed): 0.05
/// std(clean), the recipe's one global quantity, the value generate_synthetic
/// uses. Streams the clean cube trace by trace on `threads` threads without
/// holding it: memory is one 51-double ring per thread and 256 pairs of sums.
/// Throws invalid_input for 0 threads.
inline double synthetic_noise_std(shape3 shape, std::uint64_t seed, std::size_t threads = 1) {
  detail::check_threads(threads);
  if (shape.voxels() == 0) return 0.0;
  const std::uint64_t traces = shape.traces();
  const std::uint64_t blocks = traces < detail::max_sum_blocks ? traces : detail::max_sum_blocks;
  std::array<detail::clean_sums, detail::max_sum_blocks> sums{};
  detail::for_ranges(blocks, threads, [&](std::uint64_t b0, std::uint64_t b1) {
    for (std::uint64_t b = b0; b < b1; ++b) sums[b] = detail::clean_block_sums(shape, seed, b, blocks);
  });
  return detail::noise_std_from_sums(std::span(sums.data(), blocks), shape.voxels());
}

/// Writes samples [t0, t0 + out.size()) of trace `index` of a synthetic cube
/// (`seed`, `samples` per trace, noise_std from synthetic_noise_std) into out:
/// the clean trace plus noise_std times the trace's standard normal stream,
/// rounded to float, the same bytes as generate_synthetic's. Holds no trace
/// (the wavelet's ring only); t0 + out.size() <= samples.
inline void synthetic_trace(std::uint64_t seed, std::uint64_t samples, double noise_std, std::uint64_t index,
                            std::uint64_t t0, std::span<float> out) noexcept {
  xoshiro256ss rng(stream_key(seed, index, detail::noise_stream));
  normal_source normal;
  const std::uint64_t t1 = t0 + out.size();
  detail::stream_clean_trace(seed, index, samples, [&](std::size_t p, float clean) {
    const double z = normal(rng);  // drawn for every sample: the stream stays in step
    if (p >= t0 && p < t1) out[p - t0] = static_cast<float>(clean + noise_std * z);
  });
}

/// Fills dst (shape.voxels() floats, C order) with the synthetic cube of `seed`
/// on `threads` threads; the bytes do not depend on the thread count. Throws
/// invalid_input for 0 threads or a null dst with a non-empty shape.
inline void generate_synthetic(shape3 shape, std::uint64_t seed, float* dst, std::size_t threads = 1) {
  detail::check_threads(threads);
  if (shape.voxels() == 0) return;
  if (dst == nullptr)
    throw invalid_input("synthetic cube " + to_string(shape) + ": no destination memory (a meta execution has none)");
  const double noise_std = synthetic_noise_std(shape, seed, threads);
  const std::uint64_t samples = shape.samples;
  detail::for_ranges(shape.traces(), threads, [&](std::uint64_t t0, std::uint64_t t1) {
    for (std::uint64_t i = t0; i < t1; ++i)
      synthetic_trace(seed, samples, noise_std, i, 0, std::span<float>(dst + i * samples, samples));
  });
}

}  // namespace dwsr::io
