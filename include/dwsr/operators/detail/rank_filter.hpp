#pragma once
/// \file Rank (order-statistic) filters as scipy.ndimage.rank_filter computes
/// them: the value of rank `rank` (0-based, ascending) among the samples of a
/// box window around each voxel, "reflect" borders, origin 0 (the window
/// starts size / 2 samples before the voxel on each axis). The median is rank
/// size / 2 (scipy's median_filter, the upper median for even sizes).
///
/// Selection is exact, so results equal scipy's bit for bit on finite data;
/// NaN sorts after every number. Memory: per thread, a trace's sorted columns
/// (or one window, for long time windows) and the kernel[0] x kernel[1]
/// neighbour-trace pointers (rank_scratch). The 3 x 3 x 3 median of NaN-free
/// traces (the default median) takes median27's branch-free network instead
/// (about 10x faster); there a tie between -0 and +0 may return either sign.

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/separable.hpp"

namespace dwsr::operators::detail {

/// Box window sizes along (inline, crossline, time).
using window3 = std::array<std::uint64_t, 3>;

/// A strict weak order on floats with NaN after every number.
inline bool nan_last_less(float a, float b) noexcept { return a < b || (a == a && b != b); }

/// Windows at most this long along time are ranked by merging sorted columns.
inline constexpr std::uint64_t max_merged_columns = 8;

/// Floats of per-thread sample scratch for a window w on traces of nt samples:
/// the trace's sorted columns (merge path) or one window (selection path).
inline std::uint64_t rank_samples(window3 w, std::uint64_t nt) noexcept {
  return w[2] <= max_merged_columns ? nt * w[0] * w[1] : w[0] * w[1] * w[2];
}

/// Per-thread scratch of rank filters: samples (rank_samples) and neighbour-trace pointers.
template <class Ctx>
class rank_scratch {
 public:
  rank_scratch(Ctx& ctx, window3 w, std::uint64_t nt)
      : samples_(ctx, 1, rank_samples(w, nt)), traces_(ctx, 1, w[0] * w[1]) {}
  /// Thread slot's sample scratch.
  float* samples(std::size_t slot) const noexcept { return samples_.row(slot, 0); }
  /// Thread slot's neighbour-trace pointers.
  const float** traces(std::size_t slot) const noexcept { return traces_.row(slot, 0); }

 private:
  thread_rows<float, Ctx> samples_;
  thread_rows<const float*, Ctx> traces_;
};

/// Median of a 3 x 3 x 3 window over NaN-free traces: each time sample's column
/// of 9 neighbour samples is sorted by a 25-comparator network (vectorised over
/// time) into sorted[m * nt + t]. Of the three sorted columns A, B, C around
/// t, A and B are merged by Batcher's odd-even merge (two lists of 9 padded to
/// 16 with +inf), pruned to the 28 comparators that reach the ranks 4..13 the
/// median can take from them, M; then rank 13 of all 27 is min over l = 0..9
/// of max(C[l-1], M[13-l]) (C[-1] = -inf: C contributes l samples). 74 min and
/// max per sample, branch-free and vectorised over time. Exact: values are
/// only compared, never combined. About 10x faster than sorting each column
/// and merging (the path of other windows): 5 against 53 ns per sample on one
/// AVX-512 core.
#if defined(__SSE2__)
struct median27 {
  static constexpr std::uint64_t column = 9;
  static constexpr std::uint64_t rank = 13;

  // Sorts the columns of traces[0..8] (nt samples each) into `sorted`, four
  // time samples per step (Floyd's 25-comparator network: rows of 3, columns
  // of 3, then the diagonals).
  static void sort_columns(const float* const* traces, std::uint64_t nt, float* sorted) {
    std::uint64_t t = 0;
    for (; t + 4 <= nt; t += 4) {
      __m128 v[column];
      for (std::uint64_t m = 0; m < column; ++m) v[m] = _mm_loadu_ps(traces[m] + t);
      network(v, [](__m128& a, __m128& b) {
        const __m128 lo = _mm_min_ps(a, b);
        b = _mm_max_ps(a, b), a = lo;
      });
      for (std::uint64_t m = 0; m < column; ++m) _mm_storeu_ps(sorted + m * nt + t, v[m]);
    }
    for (; t < nt; ++t) {
      float v[column];
      for (std::uint64_t m = 0; m < column; ++m) v[m] = traces[m][t];
      network(v, [](float& a, float& b) {
        const float lo = std::min(a, b);
        b = std::max(a, b), a = lo;
      });
      for (std::uint64_t m = 0; m < column; ++m) sorted[m * nt + t] = v[m];
    }
  }

  template <class T, class Sort2>
  static void network(T* v, Sort2&& s) {
    s(v[0], v[1]), s(v[3], v[4]), s(v[6], v[7]), s(v[1], v[2]), s(v[4], v[5]), s(v[7], v[8]), s(v[0], v[1]);
    s(v[3], v[4]), s(v[6], v[7]), s(v[0], v[3]), s(v[3], v[6]), s(v[0], v[3]), s(v[1], v[4]), s(v[4], v[7]);
    s(v[1], v[4]), s(v[2], v[5]), s(v[5], v[8]), s(v[2], v[5]), s(v[1], v[3]), s(v[5], v[7]), s(v[2], v[6]);
    s(v[4], v[6]), s(v[2], v[4]), s(v[2], v[3]), s(v[5], v[6]);
  }

  // out[t] for t in [first, last): columns a = t + da, b = t, c = t + dc
  // (da, dc in {-1, 0, 1}: the reflected neighbours at the trace ends). The
  // loop over t is left to the compiler, which vectorises it in the lanes of
  // each instruction set's clone (4, 8 or 16 floats), the 18 merged values in
  // registers. Its conditionals are MINPS's and MAXPS's own definitions (the
  // second operand on ties), so every width, the tail included, returns the
  // same bits.
  template <simd_isa Isa>
  static void select(const float* sorted, std::uint64_t nt, std::uint64_t first, std::uint64_t last, std::int64_t da,
                     std::int64_t dc, float* out, simd_lanes<Isa>) {
    for (std::uint64_t t = first; t < last; ++t) {
      float w[2 * column];  // a's column, then b's
      for (std::uint64_t m = 0; m < column; ++m) {
        w[m] = sorted[m * nt + std::int64_t(t) + da];
        w[column + m] = sorted[m * nt + t];
      }
      auto exchange = [&w](int p, int q) {  // the smaller to w[p]
        const float lo = w[p] < w[q] ? w[p] : w[q];
        w[q] = w[p] < w[q] ? w[q] : w[p];
        w[p] = lo;
      };
      exchange(0, 9), exchange(8, 17), exchange(8, 9), exchange(4, 13), exchange(4, 8), exchange(13, 9);
      exchange(2, 11), exchange(6, 15), exchange(6, 11), exchange(2, 4), exchange(6, 8), exchange(11, 13);
      exchange(15, 9), exchange(1, 10), exchange(5, 14), exchange(5, 10), exchange(3, 12), exchange(7, 16);
      exchange(7, 12), exchange(3, 5), exchange(7, 10), exchange(12, 14), exchange(3, 4), exchange(5, 6);
      exchange(7, 8), exchange(10, 11), exchange(12, 13), exchange(14, 15);
      // Ranks 4..13 of a and b merged, then rank 13 of all: c contributes l samples.
      const float merged[10] = {w[4], w[5], w[6], w[7], w[8], w[10], w[11], w[12], w[13], w[14]};
      float best = merged[9];
      for (std::uint64_t l = 1; l <= column; ++l) {
        const float c = sorted[(l - 1) * nt + std::int64_t(t) + dc];
        const float m = c > merged[9 - l] ? c : merged[9 - l];
        best = best < m ? best : m;
      }
      out[t] = best;
    }
  }

  // Median of every sample of the trace whose 9 neighbour traces are `traces`,
  // selected in the lanes of `isa` (which the CPU must run).
  static void trace(const float* const* traces, std::uint64_t nt, float* sorted, float* out,
                    simd_isa isa = simd_isa_in_use()) {
    sort_columns(traces, nt, sorted);
    with_simd_isa(isa, [&](auto lanes) {
      if (nt == 1) return select(sorted, 1, 0, 1, 0, 0, out, lanes);
      select(sorted, nt, 0, 1, 0, 1, out, lanes);  // reflect(-1) = 0
      select(sorted, nt, 1, nt - 1, -1, 1, out, lanes);
      select(sorted, nt, nt - 1, nt, -1, 0, out, lanes);  // reflect(nt) = nt - 1
    });
  }
};

#endif

/// Whether any of the q traces of nt samples holds a NaN. Written so that the
/// compiler vectorises the scan (one trace's pointer held, an int or-ed into):
/// the 3x3x3 median checks its 9 traces for every output trace.
inline bool any_nan(const float* const* traces, std::uint64_t q, std::uint64_t nt) {
  for (std::uint64_t k = 0; k < q; ++k) {
    const float* x = traces[k];
    int nan = 0;
    for (std::uint64_t t = 0; t < nt; ++t) nan |= x[t] != x[t];
    if (nan) return true;
  }
  return false;
}

/// Rank filter of trace (il, x) of a cube of shape s: slice_at(i) returns inline
/// slice i; writes `s.samples` values to out. `traces` and `samples` are
/// scratch (rank_scratch). Short time windows sort each time sample's
/// w[0] x w[1] column once and merge the w[2] sorted columns up to `rank`
/// (about 3x faster than selecting from the gathered window); longer ones select.
template <class SliceAt>
void rank_filter_trace(SliceAt&& slice_at, shape3 s, std::uint64_t il, std::uint64_t x, window3 w, std::uint64_t rank,
                       const float** traces, float* samples, float* out) {
  const auto nt = s.samples;
  std::uint64_t q = 0;
  for (std::uint64_t a = 0; a < w[0]; ++a) {
    const float* slice = slice_at(reflect_index(std::int64_t(il + a) - std::int64_t(w[0] / 2), s.inlines));
    for (std::uint64_t b = 0; b < w[1]; ++b)
      traces[q++] = slice + reflect_index(std::int64_t(x + b) - std::int64_t(w[1] / 2), s.crosslines) * nt;
  }
#if defined(__SSE2__)
  if (w == window3{3, 3, 3} && rank == median27::rank && !any_nan(traces, q, nt))
    return median27::trace(traces, nt, samples, out);
#endif
  const auto before = static_cast<std::int64_t>(w[2] / 2);
  if (w[2] <= max_merged_columns) {
    for (std::uint64_t t = 0; t < nt; ++t) {
      float* column = samples + t * q;
      for (std::uint64_t k = 0; k < q; ++k) column[k] = traces[k][t];
      std::sort(column, column + q, nan_last_less);
    }
    for (std::uint64_t t = 0; t < nt; ++t) {
      std::array<const float*, max_merged_columns> head{}, end{};
      for (std::uint64_t c = 0; c < w[2]; ++c) {
        head[c] = samples + reflect_index(std::int64_t(t + c) - before, nt) * q;
        end[c] = head[c] + q;
      }
      float value = 0;
      for (std::uint64_t r = 0; r <= rank; ++r) {
        std::uint64_t best = w[2];
        for (std::uint64_t c = 0; c < w[2]; ++c)
          if (head[c] != end[c] && (best == w[2] || nan_last_less(*head[c], *head[best]))) best = c;
        value = *head[best]++;
      }
      out[t] = value;
    }
    return;
  }
  const auto size = q * w[2];
  for (std::uint64_t t = 0; t < nt; ++t) {
    float* v = samples;
    for (std::uint64_t k = 0; k < q; ++k)
      for (std::uint64_t c = 0; c < w[2]; ++c) *v++ = traces[k][reflect_index(std::int64_t(t + c) - before, nt)];
    std::nth_element(samples, samples + rank, samples + size, nan_last_less);
    out[t] = samples[rank];
  }
}

/// Rank filter of a whole cube, src to dst (distinct), parallel over traces.
template <class Ctx>
void rank_filter(Ctx& ctx, const float* src, float* dst, shape3 s, window3 w, std::uint64_t rank) {
  rank_scratch<Ctx> scratch(ctx, w, s.samples);
  if constexpr (!Ctx::computes) return;
  const auto slice = s.crosslines * s.samples;
  ctx.parallel_for(s.traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto tr = b; tr < e; ++tr)
      rank_filter_trace([&](std::uint64_t i) { return src + i * slice; }, s, tr / s.crosslines, tr % s.crosslines, w,
                        rank, scratch.traces(slot), scratch.samples(slot), dst + tr * s.samples);
  });
}

/// Rank filter of inline slice il of a streamed cube (slice_at(i): source slice
/// i, e.g. from a slice_ring), parallel over the slice's traces.
template <class Ctx, class SliceAt>
void rank_filter_slice(Ctx& ctx, const rank_scratch<Ctx>& scratch, SliceAt&& slice_at, shape3 s, std::uint64_t il,
                       window3 w, std::uint64_t rank, float* dst) {
  if constexpr (!Ctx::computes) return;
  ctx.parallel_for(s.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto x = b; x < e; ++x)
      rank_filter_trace(slice_at, s, il, x, w, rank, scratch.traces(slot), scratch.samples(slot), dst + x * s.samples);
  });
}

}  // namespace dwsr::operators::detail
