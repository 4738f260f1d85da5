#pragma once
/// \file The reference's FirstDerivative along each axis (a [-0.5, 0, 0.5]
/// correlation along the axis, then [0.178947, 0.642105, 0.178947] along the two
/// others in increasing axis order, scipy.ndimage "reflect" borders, float32
/// between passes), computed for one crossline row of one inline slice from the
/// three source slices around it. Each pass reproduces scipy's correlate1d
/// arithmetic (double accumulation of its symmetric / antisymmetric form, then
/// a float32 store), so the gradients are the reference's bit for bit.

#include <algorithm>
#include <cstdint>

#include "dwsr/core/shape.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/window_stream.hpp"

namespace dwsr::operators::detail {

/// scipy's correlate1d with the symmetric smoothing taps, at one sample.
inline float smooth3(float before, float centre, float after) {
  return static_cast<float>(double(centre) * 0.642105 + (double(before) + double(after)) * 0.178947);
}

/// scipy's correlate1d with the antisymmetric taps [-0.5, 0, 0.5], at one
/// sample (the centre's zero weight is applied, as scipy does: inf or NaN there
/// propagates).
inline float difference3(float before, float centre, float after) {
  return static_cast<float>(double(centre) * 0.0 + (double(before) - double(after)) * -0.5);
}

/// A three-tap pass along time over a row of n samples (reflect at the ends;
/// the interior is one loop without index clamps, which the compiler vectorises).
template <class Tap, class Load>
void along_time(const float* x, std::uint64_t n, float* out, Tap&& tap, Load&& load) {
  if (n == 1) {
    const float v = load(x[0]);
    out[0] = tap(v, v, v);
    return;
  }
  out[0] = tap(load(x[0]), load(x[0]), load(x[1]));
  for (std::uint64_t t = 1; t + 1 < n; ++t) out[t] = tap(load(x[t - 1]), load(x[t]), load(x[t + 1]));
  out[n - 1] = tap(load(x[n - 2]), load(x[n - 1]), load(x[n - 1]));
}

/// Gradients (gi, gj, gk) of one row from source inline slices: slice(il)
/// returns slice il (crosslines x samples floats); load(value) maps each
/// source value before differentiating (identity for the input cube).
/// Scratch: 6 rows of `samples` floats.
struct gradient_rows {
  shape3 shape;

  /// In the widest vector lanes in use (core/simd_isa.hpp; the same bits in
  /// every instruction set: the clones fuse no multiply-add).
  template <class Slice, class Load>
  void operator()(Slice&& slice, Load&& load, std::uint64_t i, std::uint64_t j, float* const* scratch, float* gi,
                  float* gj, float* gk) const {
    with_simd_isa(simd_isa_in_use(), [&](auto) { of_row(slice, load, i, j, scratch, gi, gj, gk); });
  }

  template <class Slice, class Load>
  void of_row(Slice&& slice, Load&& load, std::uint64_t i, std::uint64_t j, float* const* scratch, float* gi, float* gj,
              float* gk) const {
    const auto nt = shape.samples;
    const std::uint64_t il[3] = {reflect_index(std::int64_t(i) - 1, shape.inlines), i,
                                 reflect_index(std::int64_t(i) + 1, shape.inlines)};
    const std::uint64_t xl[3] = {reflect_index(std::int64_t(j) - 1, shape.crosslines), j,
                                 reflect_index(std::int64_t(j) + 1, shape.crosslines)};
    auto row = [&](std::uint64_t a, std::uint64_t b) { return slice(il[a]) + xl[b] * nt; };
    auto identity = [](float v) { return v; };
    auto smooth = [](float a, float b, float c) { return smooth3(a, b, c); };
    auto difference = [](float a, float b, float c) { return difference3(a, b, c); };
    float* const a = scratch[0];
    float* const b = scratch[1];
    float* const c = scratch[2];
    float* const s = scratch[3];

    // gi: difference along inline, smoothing along crossline, then time.
    for (std::uint64_t k = 0; k < 3; ++k) {
      float* d = scratch[k];
      const float *m = row(0, k), *o = row(1, k), *p = row(2, k);
      for (std::uint64_t t = 0; t < nt; ++t) d[t] = difference3(load(m[t]), load(o[t]), load(p[t]));
    }
    for (std::uint64_t t = 0; t < nt; ++t) s[t] = smooth3(a[t], b[t], c[t]);
    along_time(s, nt, gi, smooth, identity);

    // gj: difference along crossline, smoothing along inline, then time.
    for (std::uint64_t k = 0; k < 3; ++k) {
      float* d = scratch[k];
      const float *m = row(k, 0), *o = row(k, 1), *p = row(k, 2);
      for (std::uint64_t t = 0; t < nt; ++t) d[t] = difference3(load(m[t]), load(o[t]), load(p[t]));
    }
    for (std::uint64_t t = 0; t < nt; ++t) s[t] = smooth3(a[t], b[t], c[t]);
    along_time(s, nt, gj, smooth, identity);

    // gk: difference along time, smoothing along inline (rows 3-5, one per
    // crossline neighbour), then crossline.
    for (std::uint64_t x = 0; x < 3; ++x) {
      for (std::uint64_t k = 0; k < 3; ++k) along_time(row(k, x), nt, scratch[k], difference, load);
      float* e = scratch[3 + x];
      for (std::uint64_t t = 0; t < nt; ++t) e[t] = smooth3(a[t], b[t], c[t]);
    }
    const float *e0 = scratch[3], *e1 = scratch[4], *e2 = scratch[5];
    for (std::uint64_t t = 0; t < nt; ++t) gk[t] = smooth3(e0[t], e1[t], e2[t]);
  }
};

}  // namespace dwsr::operators::detail
