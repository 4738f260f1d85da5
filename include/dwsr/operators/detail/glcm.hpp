#pragma once
/// \file Grey-level co-occurrence matrices of sliding windows (scikit-image's
/// graycomatrix(symmetric=True, normed=True) and graycoprops), computed from
/// integer counts that a window updates as it slides along time: each step
/// removes one column of pixel pairs and adds one, so a pixel costs two columns
/// of pairs (12 for a 7x7 window at offset 1) instead of all 42 pairs.
///
/// Every property is evaluated from integer state only (pair sums, the pair
/// matrix, a level-difference histogram, a fixed-point sum of c ln c), so a
/// window's value depends on its pixels alone, never on where the slide
/// started: blocks and whole cubes agree bit for bit. Notation: n pixel pairs per window, N = 2n co-occurrences in the
/// symmetric matrix, P = counts / N.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace dwsr::operators::detail {

/// The GLCM properties dwsr computes (graycoprops' names; mean, variance, std
/// and entropy as scikit-image >= 0.25 defines them).
enum class glcm_property : std::uint8_t {
  contrast,       ///< sum P (i - j)^2
  dissimilarity,  ///< sum P |i - j|
  homogeneity,    ///< sum P / (1 + (i - j)^2)
  asm_,           ///< angular second moment, sum P^2
  energy,         ///< sqrt(ASM)
  correlation,    ///< sum P (i - mu)(j - mu) / sigma^2; 1 where sigma = 0
  mean,           ///< mu = sum P i
  variance,       ///< sum P (i - mu)^2
  std_,           ///< sqrt(variance)
  entropy,        ///< -sum P ln P over P > 0
};

/// scikit-image's rounding of pair offsets (half away from zero).
inline std::int64_t glcm_round(double v) { return static_cast<std::int64_t>(v > 0 ? v + 0.5 : v - 0.5); }

/// Window and pair geometry of one GLCM configuration. Rows are crosslines and
/// columns time samples of an inline slice; a pair is (r, c) and (r + dr, c + dc)
/// with both pixels inside the window.
struct glcm_geometry {
  std::int64_t kh = 3, kw = 3;  ///< window half sizes (rows, columns)
  std::int64_t dr = 1, dc = 0;  ///< pair offset: round(sin(angle) d), round(cos(angle) d)
  std::int64_t levels = 16;

  std::int64_t window_rows() const { return 2 * kh + 1; }
  std::int64_t window_cols() const { return 2 * kw + 1; }
  /// Rows (relative to the window's first) holding a pair's first pixel: [first_row, last_row].
  std::int64_t first_row() const { return std::max<std::int64_t>(0, -dr); }
  std::int64_t last_row() const { return 2 * kh - std::max<std::int64_t>(0, dr); }
  std::int64_t first_col() const { return std::max<std::int64_t>(0, -dc); }
  std::int64_t last_col() const { return 2 * kw - std::max<std::int64_t>(0, dc); }
  /// n: pixel pairs in every window (the quantised image is zero-padded, so all windows are full).
  std::int64_t pairs() const {
    return std::max<std::int64_t>(0, last_row() - first_row() + 1) *
           std::max<std::int64_t>(0, last_col() - first_col() + 1);
  }
  /// Integers of per-thread scratch: the pair matrix and the level-difference histogram.
  std::uint64_t scratch_ints() const { return std::uint64_t(levels * levels + levels); }
};

/// Maps samples to grey levels exactly as the reference does in float32:
/// int((x - min) / (max - min) * (levels - 1)). Samples the reference could not
/// quantise become levels in range: NaN, -inf and anything below min -> 0, +inf
/// and anything above max -> levels - 1, and a constant cube (0 / 0) -> 0.
struct glcm_quantiser {
  float lo = 0, range = 0, scale = 0;
  float top = 0;

  glcm_quantiser(float min, float max, std::int64_t levels)
      : lo(min), range(max - min), scale(static_cast<float>(levels - 1)), top(static_cast<float>(levels - 1)) {}
  std::uint8_t operator()(float x) const {
    float f = (x - lo) / range * scale;
    f = f >= 0.0f ? f : 0.0f;  // also NaN
    f = f <= top ? f : top;
    return static_cast<std::uint8_t>(static_cast<int>(f));
  }
  /// Quantises n samples (branch-free, so that it vectorises).
  void operator()(const float* x, std::uint64_t n, std::uint8_t* q) const {
    for (std::uint64_t t = 0; t < n; ++t) q[t] = (*this)(x[t]);
  }
};

/// Read-only tables shared by all windows: c ln c in fixed point (entropy) and
/// graycoprops' homogeneity weights.
struct glcm_tables {
  /// Fixed-point scale of c ln c: 2^40. With windows of at most 255 x 255
  /// (N <= 129540) every sum of N ln N * 2^40 < 2^61 fits int64, and rounding the
  /// table costs at most 2^-41 per matrix cell: entropy to ~1e-12.
  static constexpr double fixed_one = 1099511627776.0;
  const std::int64_t* xlogx;  ///< round(c ln c * 2^40), c in [0, N]
  const double* weights;      ///< 1 / (1 + k^2), k in [0, levels)

  static std::uint64_t xlogx_size(const glcm_geometry& g) { return std::uint64_t(2 * g.pairs() + 1); }
  static std::uint64_t weights_size(const glcm_geometry& g) { return std::uint64_t(g.levels); }
  /// Fills both tables.
  static void fill(const glcm_geometry& g, std::int64_t* xlogx, double* weights) {
    for (std::int64_t c = 0; c <= 2 * g.pairs(); ++c)
      xlogx[c] = c < 2 ? 0 : std::llround(static_cast<double>(c) * std::log(static_cast<double>(c)) * fixed_one);
    for (std::int64_t k = 0; k < g.levels; ++k) weights[k] = 1.0 / (1.0 + static_cast<double>(k * k));
  }
};

/// The co-occurrence state of one window for property Prop: only the counters
/// that Prop reads are kept. Scratch (geometry::scratch_ints) is zeroed by reset().
template <glcm_property Prop>
class glcm_window {
  static constexpr bool needs_matrix =
      Prop == glcm_property::asm_ || Prop == glcm_property::energy || Prop == glcm_property::entropy;
  static constexpr bool needs_moments = Prop == glcm_property::correlation || Prop == glcm_property::mean ||
                                        Prop == glcm_property::variance || Prop == glcm_property::std_;

 public:
  glcm_window(const glcm_geometry& g, std::int32_t* scratch, glcm_tables tables)
      : levels_(g.levels),
        n_(g.pairs()),
        matrix_(scratch),
        diffs_(scratch + g.levels * g.levels),
        tables_(tables),
        scratch_ints_(g.scratch_ints()) {}

  void reset() {
    std::fill(matrix_, matrix_ + scratch_ints_, 0);
    sum_ = sum_sq_ = sum_prod_ = cells_sq_ = xlogx_ = 0;
  }

  /// Adds (Sign = 1) or removes (Sign = -1) `count` pairs: the levels at p,
  /// p + step, ... and their partners `partner` further on.
  template <int Sign>
  void column(const std::uint8_t* p, std::int64_t count, std::int64_t step, std::int64_t partner) {
    // Local sums, folded in once: the members would be a chain through memory.
    std::int64_t sum = 0, sum_sq = 0, sum_prod = 0, cells_sq = 0, xlogx = 0;
    for (std::int64_t k = 0; k < count; ++k, p += step) {
      const std::int64_t a = p[0], b = p[partner];
      const std::int64_t d = a > b ? a - b : b - a;
      if constexpr (Prop == glcm_property::contrast) sum += d * d;
      if constexpr (Prop == glcm_property::dissimilarity) sum += d;
      if constexpr (Prop == glcm_property::homogeneity) diffs_[d] += Sign;
      if constexpr (needs_moments) {
        sum += a + b;
        sum_sq += a * a + b * b;
        sum_prod += 2 * a * b;
      }
      if constexpr (needs_matrix) {
        // u = count of the unordered pair. The symmetric matrix holds it as one
        // diagonal cell of 2u (a == b) or two off-diagonal cells of u: `cells`
        // cells of `scale` u each (branch-free: a == b is unpredictable).
        std::int32_t& u = matrix_[std::min(a, b) * levels_ + std::max(a, b)];
        const std::int64_t before = u;
        const std::int64_t after = before + Sign;
        u = static_cast<std::int32_t>(after);
        const std::int64_t scale = 1 + (d == 0), cells = 3 - scale;
        if constexpr (Prop == glcm_property::entropy)
          xlogx += cells * (tables_.xlogx[scale * after] - tables_.xlogx[scale * before]);
        else
          cells_sq += cells * scale * scale * (after * after - before * before);
      }
    }
    sum_ += Sign * sum;
    sum_sq_ += Sign * sum_sq;
    sum_prod_ += Sign * sum_prod;
    cells_sq_ += cells_sq;
    xlogx_ += xlogx;
  }

  /// The property of the current window.
  double value() const {
    const double n = static_cast<double>(n_);
    const std::int64_t big_n = 2 * n_;
    const double N = static_cast<double>(big_n);
    // N^2 var(i) of the symmetric matrix, an exact integer.
    [[maybe_unused]] auto spread = [&] { return big_n * sum_sq_ - sum_ * sum_; };
    if constexpr (Prop == glcm_property::contrast || Prop == glcm_property::dissimilarity) {
      return static_cast<double>(sum_) / n;
    } else if constexpr (Prop == glcm_property::homogeneity) {
      double h = 0;
      for (std::int64_t k = 0; k < levels_; ++k) h += static_cast<double>(diffs_[k]) * tables_.weights[k];
      return h / n;
    } else if constexpr (Prop == glcm_property::asm_) {
      return static_cast<double>(cells_sq_) / (N * N);
    } else if constexpr (Prop == glcm_property::energy) {
      return std::sqrt(static_cast<double>(cells_sq_) / (N * N));
    } else if constexpr (Prop == glcm_property::correlation) {
      // N^2 cov(i, j) / N^2 var(i), both exact integers.
      const std::int64_t var = spread();
      if (var == 0) return 1.0;  // graycoprops: a zero standard deviation gives 1
      return static_cast<double>(big_n * sum_prod_ - sum_ * sum_) / static_cast<double>(var);
    } else if constexpr (Prop == glcm_property::mean) {
      return static_cast<double>(sum_) / N;
    } else if constexpr (Prop == glcm_property::variance) {
      return static_cast<double>(spread()) / (N * N);
    } else if constexpr (Prop == glcm_property::std_) {
      return std::sqrt(static_cast<double>(spread()) / (N * N));
    } else {
      // -sum (c/N) ln(c/N) = (N ln N - sum c ln c) / N: exactly 0 for a single cell.
      return static_cast<double>(tables_.xlogx[big_n] - xlogx_) / glcm_tables::fixed_one / N;
    }
  }

 private:
  std::int64_t levels_;
  std::int64_t n_;
  std::int32_t* matrix_;  ///< levels x levels, upper triangle used
  std::int32_t* diffs_;   ///< pairs per |a - b|
  glcm_tables tables_;
  std::uint64_t scratch_ints_;
  std::int64_t sum_ = 0, sum_sq_ = 0, sum_prod_ = 0, cells_sq_ = 0, xlogx_ = 0;
};

/// Writes the property of every window centred on one row of an inline slice.
/// `q` holds the window's rows of quantised levels, zero-padded: row k is slice
/// row (centre - kh + k), column c is sample (c - kw); `stride` columns per row
/// (at least samples + 2 kw).
template <glcm_property Prop>
void glcm_row(const glcm_geometry& g, const std::uint8_t* q, std::uint64_t stride, std::uint64_t samples,
              glcm_window<Prop>& w, float* out) {
  const auto r0 = g.first_row(), r1 = g.last_row(), c0 = g.first_col(), c1 = g.last_col();
  const auto s = static_cast<std::int64_t>(stride);
  const std::int64_t partner = g.dr * s + g.dc;
  if (samples == 0) return;
  const std::uint8_t* first = q + r0 * s;
  const std::int64_t count = r1 - r0 + 1;
  w.reset();
  for (auto c = c0; c <= c1; ++c) w.template column<1>(first + c, count, s, partner);
  out[0] = static_cast<float>(w.value());
  for (std::int64_t t = 1; t < static_cast<std::int64_t>(samples); ++t) {
    w.template column<-1>(first + t - 1 + c0, count, s, partner);
    w.template column<1>(first + t + c1, count, s, partner);
    out[t] = static_cast<float>(w.value());
  }
}

}  // namespace dwsr::operators::detail
