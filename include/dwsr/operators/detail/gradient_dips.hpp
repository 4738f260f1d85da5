#pragma once
/// \file The reference's gradient dips, streamed over inline slices: raw dips
/// -gi/gk * f and -gj/gk * f (float32, NaN -> 0) of the last kernel[0] slices in
/// a ring, then scipy.ndimage.median_filter(kernel) (reflect borders; the
/// element of rank size / 2) per crossline row. Shared by gradient_dips and
/// volume_curvature.
///
/// Limit: arithmetic per voxel, not memory: three 3-tap gradient passes and,
/// with the default 3x3x3 window, two exact 27-value medians (median27: a
/// 25-comparator network per time column, 74 min and max per sample);
/// gradient_dips runs at about 320 MiB/s per thread on 64x64x512 with AVX-512
/// (13 MB/s when every window was sorted).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <type_traits>

#include "dwsr/core/cube_view.hpp"
#include "dwsr/operators/detail/gradient_rows.hpp"
#include "dwsr/operators/detail/rank_filter.hpp"
#include "dwsr/operators/detail/window_stream.hpp"

namespace dwsr::operators::detail {

/// One raw dip as the reference computes it in float32: -(g / gk) * factor, NaN -> 0.
inline float raw_dip(float g, float gk, float factor) {
  const float d = -(g / gk) * factor;
  return std::isnan(d) ? 0.0f : d;
}

/// Median-filtered gradient dips, one inline slice at a time. Buffers: kernel[0]
/// slices of raw dips (two floats per voxel) and, per thread, 9 gradient rows,
/// a sorted column of kernel[0] x kernel[1] values per sample and the merge's
/// kernel[2] positions and ends.
template <class Ctx>
class dips_stream {
 public:
  dips_stream(Ctx& ctx, shape3 shape, std::array<std::uint64_t, 3> kernel, double dip_factor)
      : ctx_(&ctx),
        shape_(shape),
        slice_(shape.crosslines * shape.samples),
        w_{window_extent::of(kernel[0]), window_extent::of(kernel[1]), window_extent::of(kernel[2])},
        volume_(kernel[0] * kernel[1] * kernel[2]),
        factor_(static_cast<float>(dip_factor)),
        raw_(ctx, kernel[0], 2 * slice_),
        rows_(ctx, gradient_rows::scratch_rows + 3, shape.samples),
        columns_(ctx, 1, shape.samples * kernel[0] * kernel[1]),
        heads_(ctx, 2, kernel[2]) {}

  /// Writes map(d) of each filtered inline and crossline dip d of slice i
  /// (slices of crosslines x samples floats), mapped row by row while the row
  /// is in cache. Call for i = 0, 1, ... in order.
  template <class Map = std::identity>
  void slice(cube_view<const float> in, std::uint64_t i, float* il_dips, float* xl_dips, Map map = {}) {
    if constexpr (!Ctx::computes) return;
    raw_.produce_to(std::min(i + w_[0].after, shape_.inlines - 1),
                    [&](std::uint64_t s, float* dst) { raw(in, s, dst); });
    ctx_->parallel_for(shape_.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
      for (auto j = b; j < e; ++j) {
        for (std::uint64_t c = 0; c < 2; ++c) {
          float* row = (c == 0 ? il_dips : xl_dips) + j * shape_.samples;
          median_row(i, j, c, slot, row);
          if constexpr (!std::is_same_v<Map, std::identity>)
            for (std::uint64_t t = 0; t < shape_.samples; ++t) row[t] = map(row[t]);
        }
      }
    });
  }

 private:
  // Raw dips of slice s: inline dips, then crossline dips.
  void raw(cube_view<const float> in, std::uint64_t s, float* dst) {
    const gradient_rows gradients{shape_};
    const auto nt = shape_.samples;
    auto slice = [&](std::uint64_t il) { return in.data() + il * slice_; };
    ctx_->parallel_for(shape_.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
      float* scratch[gradient_rows::scratch_rows];
      for (std::uint64_t r = 0; r < gradient_rows::scratch_rows; ++r) scratch[r] = rows_.row(slot, r);
      const auto last = gradient_rows::scratch_rows;
      float *gi = rows_.row(slot, last), *gj = rows_.row(slot, last + 1), *gk = rows_.row(slot, last + 2);
      for (auto j = b; j < e; ++j) {
        gradients(
            slice, [](float v) { return v; }, s, j, j > b, scratch, gi, gj, gk);
        float* il = dst + j * nt;
        float* xl = il + slice_;
        for (std::uint64_t t = 0; t < nt; ++t) {
          il[t] = raw_dip(gi[t], gk[t], factor_);
          xl[t] = raw_dip(gj[t], gk[t], factor_);
        }
      }
    });
  }

  // Row j of the filtered component c: each sample's window is the union of
  // the sorted "columns" (the kernel[0] x kernel[1] values at one time sample)
  // of its kernel[2] samples; the median is picked by merging those columns.
  void median_row(std::uint64_t i, std::uint64_t j, std::uint64_t c, std::size_t slot, float* out) const {
    const auto nt = shape_.samples;
    const auto length = w_[0].size() * w_[1].size();
    float* columns = columns_.row(slot, 0);
#if defined(__SSE2__)
    // The default 3 x 3 x 3 window: raw dips hold no NaN, so noise_reduction's
    // exact median27 applies (its sorted scratch is the 9 x nt columns here).
    if (volume_ == median27::column * 3 && w_[0].size() == 3 && w_[1].size() == 3) {
      const float* traces[median27::column];
      std::uint64_t q = 0;
      for_each_in_window(i, w_[0], shape_.inlines, [&](std::uint64_t, std::uint64_t il) {
        const float* s = raw_.slice(il) + c * slice_;
        for_each_in_window(j, w_[1], shape_.crosslines,
                           [&](std::uint64_t, std::uint64_t x) { traces[q++] = s + x * nt; });
      });
      return median27::trace(traces, nt, columns, out);
    }
#endif
    for_each_in_window(i, w_[0], shape_.inlines, [&](std::uint64_t a, std::uint64_t il) {
      const float* s = raw_.slice(il) + c * slice_;
      for_each_in_window(j, w_[1], shape_.crosslines, [&](std::uint64_t b, std::uint64_t x) {
        const float* row = s + x * nt;
        float* dst = columns + a * w_[1].size() + b;
        for (std::uint64_t t = 0; t < nt; ++t) dst[t * length] = row[t];
      });
    });
    for (std::uint64_t t = 0; t < nt; ++t) {
      float* col = columns + t * length;
      if (length == 9)
        sort9(col);
      else
        std::sort(col, col + length);
    }
    const float** head = heads_.row(slot, 0);
    const float** end = heads_.row(slot, 1);
    const auto lists = w_[2].size();
    const auto rank = volume_ / 2;
    for (std::uint64_t t = 0; t < nt; ++t) {
      for_each_in_window(t, w_[2], nt, [&](std::uint64_t k, std::uint64_t s) {
        head[k] = columns + s * length;
        end[k] = head[k] + length;
      });
      out[t] = lists == 3 ? select3(head, length, rank) : select(head, end, lists, rank);
    }
  }

  // The element of rank `rank` of the union of `lists` sorted columns.
  static float select(const float** head, const float** end, std::uint64_t lists, std::uint64_t rank) {
    float value = 0;
    for (std::uint64_t n = 0; n <= rank; ++n) {
      std::uint64_t best = lists;
      for (std::uint64_t k = 0; k < lists; ++k)
        if (head[k] != end[k] && (best == lists || *head[k] < *head[best])) best = k;
      value = *head[best]++;
    }
    return value;
  }

  // select() for three columns of `length` (the default kernel), in registers.
  static float select3(const float* const* column, std::uint64_t length, std::uint64_t rank) {
    const float *a = column[0], *b = column[1], *c = column[2];
    float va = *a, vb = *b, vc = *c, value = 0;
    std::uint64_t ra = length, rb = length, rc = length;  // values left in each column
    for (std::uint64_t n = 0; n <= rank; ++n) {
      if (ra > 0 && (rb == 0 || va <= vb) && (rc == 0 || va <= vc)) {
        value = va;
        if (--ra) va = *++a;
      } else if (rb > 0 && (rc == 0 || vb <= vc)) {
        value = vb;
        if (--rb) vb = *++b;
      } else {
        value = vc;
        if (--rc) vc = *++c;
      }
    }
    return value;
  }

  // Sorts 9 floats with a 25-exchange sorting network (no NaN here: raw dips map NaN to 0).
  static void sort9(float* v) {
    auto x = [v](int a, int b) {
      const float lo = std::min(v[a], v[b]), hi = std::max(v[a], v[b]);
      v[a] = lo, v[b] = hi;
    };
    x(0, 1), x(3, 4), x(6, 7), x(1, 2), x(4, 5), x(7, 8), x(0, 1), x(3, 4), x(6, 7), x(0, 3), x(3, 6), x(0, 3), x(1, 4),
        x(4, 7), x(1, 4), x(2, 5), x(5, 8), x(2, 5), x(1, 3), x(5, 7), x(2, 6), x(4, 6), x(2, 4), x(2, 3), x(5, 6);
  }

  Ctx* ctx_;
  shape3 shape_;
  std::uint64_t slice_;
  std::array<window_extent, 3> w_;
  std::uint64_t volume_;
  float factor_;
  slice_ring<Ctx> raw_;
  thread_rows<float, Ctx> rows_;
  thread_rows<float, Ctx> columns_;
  thread_rows<const float*, Ctx> heads_;
};

}  // namespace dwsr::operators::detail
