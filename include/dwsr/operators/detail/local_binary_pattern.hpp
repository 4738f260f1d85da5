#pragma once
/// \file Local binary patterns: scikit-image's local_binary_pattern (method
/// 'default') on the rows of a periodically padded slice, and the reference's
/// 3-D "diagonal" pattern of the eight cube-corner neighbours.

#include <array>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace dwsr::operators::detail {

/// The P sample points of a circle of radius R, as scikit-image places them:
/// (r, c) = round((-R sin(2 pi p / P), R cos(2 pi p / P)), 5 decimals), each
/// read by bilinear interpolation of its four surrounding pixels.
struct lbp_circle {
  static constexpr int max_points = 31;  ///< scikit-image's int32 weights 2^p hold 31 points
  int points = 0;
  std::array<std::int64_t, max_points> row{}, col{};    ///< floor of the point's offsets
  std::array<std::int64_t, max_points> row1{}, col1{};  ///< ceil of the offsets (= floor when integral)
  std::array<double, max_points> dr{}, dc{};            ///< fractional parts

  lbp_circle(int p, double radius) : points(p) {
    // numpy.round(x, 5) = rint(x * 1e5) / 1e5.
    auto round5 = [](double x) { return std::nearbyint(x * 100000.0) / 100000.0; };
    for (int i = 0; i < p; ++i) {
      const double angle = 2 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(p);
      const double rp = round5(-radius * std::sin(angle));
      const double cp = round5(radius * std::cos(angle));
      row[i] = static_cast<std::int64_t>(std::floor(rp));
      col[i] = static_cast<std::int64_t>(std::floor(cp));
      row1[i] = static_cast<std::int64_t>(std::ceil(rp));
      col1[i] = static_cast<std::int64_t>(std::ceil(cp));
      dr[i] = rp - std::floor(rp);
      dc[i] = cp - std::floor(cp);
    }
  }
};

/// LBP codes of one row of a slice. `rows` holds the slice's rows centre - R ..
/// centre + R (row k at rows + k * stride), each periodically padded by R
/// samples on both sides (sample t at column t + R). `codes` is scratch of
/// `samples` doubles. scikit-image interpolates at (r + rp, c + cp) in absolute
/// coordinates, whose rounding depends on r and c; dwsr uses the offsets'
/// exact fractional parts instead, so that a pixel's code never depends on
/// where its block starts (the two differ only where an interpolated value
/// ties with the centre to ~1e-16).
inline void lbp_row(const lbp_circle& circle, std::int64_t radius, const double* rows, std::int64_t stride,
                    std::int64_t samples, double* codes, float* out) {
  const double* centre = rows + radius * stride + radius;
  for (std::int64_t t = 0; t < samples; ++t) codes[t] = 0;
  for (int i = 0; i < circle.points; ++i) {
    const double dr = circle.dr[i], dc = circle.dc[i];
    const double* top = rows + (radius + circle.row[i]) * stride + radius;
    const double* bottom = rows + (radius + circle.row1[i]) * stride + radius;
    const std::int64_t c0 = circle.col[i], c1 = circle.col1[i];
    const double weight = static_cast<double>(std::uint32_t{1} << i);
    for (std::int64_t t = 0; t < samples; ++t) {
      // scikit-image's bilinear_interpolation, operation for operation; the
      // code accumulates in double as scikit-image's does (exact: distinct powers of 2).
      const double upper = (1 - dc) * top[t + c0] + dc * top[t + c1];
      const double lower = (1 - dc) * bottom[t + c0] + dc * bottom[t + c1];
      const double texture = (1 - dr) * upper + dr * lower;
      codes[t] += texture - centre[t] >= 0 ? weight : 0.0;
    }
  }
  for (std::int64_t t = 0; t < samples; ++t) out[t] = static_cast<float>(codes[t]);
}

/// The reference's 3-D "diagonal" LBP of one voxel from its centre and its
/// eight corner neighbours v[4a + 2b + c] (a, b, c: 0 for the previous, 1 for
/// the next inline, crossline, sample). Bit k of the code is set for the
/// first largest corner if it exceeds the centre and for the first smallest
/// if it is below the centre (numpy argmax / argmin). A NaN corner is what
/// argmax and argmin pick, and it compares false: the code is then 0.
inline float lbp3d_code(float centre, const std::array<float, 8>& v) {
  int hi = 0, lo = 0;
  bool nan = std::isnan(v[0]);
  for (int k = 1; k < 8; ++k) {
    if (v[k] > v[hi]) hi = k;
    if (v[k] < v[lo]) lo = k;
    nan = nan || std::isnan(v[k]);
  }
  if (nan) return 0.0f;
  unsigned code = 0;
  if (v[hi] > centre) code |= 1u << hi;
  if (v[lo] < centre) code |= 1u << lo;
  return static_cast<float>(code);
}

}  // namespace dwsr::operators::detail
