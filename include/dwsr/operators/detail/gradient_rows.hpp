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
///
/// Two of a row's intermediates depend on one crossline only: gi's difference
/// along inline and gk's difference along time smoothed along inline. A
/// thread walking a slice's rows in order keeps them for the crosslines of its
/// last window (its 6 scratch rows), so that each row computes them for one
/// new crossline instead of three; the rows gi, gj and gk hold the other
/// intermediates until they receive the gradients. The same bits either way.
struct gradient_rows {
  shape3 shape;

  /// Scratch rows (of `samples` floats) per thread.
  static constexpr std::uint64_t scratch_rows = 6;

  /// Gradients of row j of slice i into gi, gj and gk (rows apart from the
  /// sources and the scratch). `follows`: this thread's previous call, with
  /// the same scratch, slice and load, was row j - 1 of slice i. In the
  /// widest vector lanes in use (core/simd_isa.hpp; the same bits in every
  /// instruction set: the clones fuse no multiply-add).
  template <class Slice, class Load>
  void operator()(Slice&& slice, Load&& load, std::uint64_t i, std::uint64_t j, bool follows, float* const* scratch,
                  float* gi, float* gj, float* gk) const {
    with_simd_isa(simd_isa_in_use(), [&](auto) { of_row(slice, load, i, j, follows, scratch, gi, gj, gk); });
  }

  template <class Slice, class Load>
  void of_row(Slice&& slice, Load&& load, std::uint64_t i, std::uint64_t j, bool follows, float* const* scratch,
              float* gi, float* gj, float* gk) const {
    const auto nt = shape.samples;
    const std::uint64_t il[3] = {reflect_index(std::int64_t(i) - 1, shape.inlines), i,
                                 reflect_index(std::int64_t(i) + 1, shape.inlines)};
    const std::uint64_t xl[3] = {reflect_index(std::int64_t(j) - 1, shape.crosslines), j,
                                 reflect_index(std::int64_t(j) + 1, shape.crosslines)};
    auto row = [&](std::uint64_t a, std::uint64_t x) { return slice(il[a]) + x * nt; };
    auto identity = [](float v) { return v; };
    auto smooth = [](float a, float b, float c) { return smooth3(a, b, c); };
    auto difference = [](float a, float b, float c) { return difference3(a, b, c); };
    // Crossline x's intermediates: gi's difference along inline in scratch row
    // x % 3, gk's difference along time smoothed along inline in row 3 + x % 3.
    auto along_inline = [&](std::uint64_t x) { return scratch[x % 3]; };
    auto along_time_inline = [&](std::uint64_t x) { return scratch[3 + x % 3]; };
    for (std::uint64_t k = 0; k < 3; ++k) {
      const auto x = xl[k];
      // Kept from j - 1's window (crosslines j - 2 .. j, reflected), or earlier in this one.
      if ((follows && x + 2 >= j && x <= j) || (k > 0 && x == xl[k - 1]) || (k == 2 && x == xl[0])) continue;
      smooth_rows(row(0, x), row(1, x), row(2, x), along_inline(x), nt, difference, load);
      along_time(row(0, x), nt, gi, difference, load);
      along_time(row(1, x), nt, gj, difference, load);
      along_time(row(2, x), nt, gk, difference, load);
      smooth_rows(gi, gj, gk, along_time_inline(x), nt, smooth, identity);
    }
    // gi: difference along inline, smoothing along crossline (into gk's row), then time.
    smooth_rows(along_inline(xl[0]), along_inline(xl[1]), along_inline(xl[2]), gk, nt, smooth, identity);
    along_time(gk, nt, gi, smooth, identity);
    // gj: difference along crossline, smoothing along inline (into gk's row), then time.
    crossline_differences_smoothed(row(0, xl[0]), row(0, xl[1]), row(0, xl[2]), row(1, xl[0]), row(1, xl[1]),
                                   row(1, xl[2]), row(2, xl[0]), row(2, xl[1]), row(2, xl[2]), gk, nt, load);
    along_time(gk, nt, gj, smooth, identity);
    // gk: difference along time, smoothing along inline, then crossline.
    smooth_rows(along_time_inline(xl[0]), along_time_inline(xl[1]), along_time_inline(xl[2]), gk, nt, smooth, identity);
  }

 private:
  // out[t] = tap(load(a[t]), load(b[t]), load(c[t])) (restrict: no overlap checks in the vectorised loop).
  template <class Tap, class Load>
  static void smooth_rows(const float* __restrict a, const float* __restrict b, const float* __restrict c,
                          float* __restrict out, std::uint64_t n, Tap&& tap, Load&& load) {
    for (std::uint64_t t = 0; t < n; ++t) out[t] = tap(load(a[t]), load(b[t]), load(c[t]));
  }
  // The smoothing along inline of the differences along crossline of rows
  // (inline k, crossline m), m0..m2 of inline 0, n0.. of inline 1, p0.. of inline 2.
  template <class Load>
  static void crossline_differences_smoothed(const float* __restrict m0, const float* __restrict m1,
                                             const float* __restrict m2, const float* __restrict n0,
                                             const float* __restrict n1, const float* __restrict n2,
                                             const float* __restrict p0, const float* __restrict p1,
                                             const float* __restrict p2, float* __restrict out, std::uint64_t n,
                                             Load&& load) {
    for (std::uint64_t t = 0; t < n; ++t)
      out[t] = smooth3(difference3(load(m0[t]), load(m1[t]), load(m2[t])),
                       difference3(load(n0[t]), load(n1[t]), load(n2[t])),
                       difference3(load(p0[t]), load(p1[t]), load(p2[t])));
  }
};

}  // namespace dwsr::operators::detail
