#pragma once
/// \file The texture attribute family (reference: dasf-seismic texture.py):
/// grey-level co-occurrence matrix (GLCM) properties of sliding windows over
/// each inline slice, and local binary patterns in 2-D and 3-D.
///
/// Memory: input + output + per-thread scratch. GLCM keeps, per thread, the
/// quantised rows of one window (uint8) and its integer co-occurrence counts;
/// lbp2d keeps 2R + 1 periodically padded rows (double) and one row of codes;
/// lbp3d reads its neighbours in place and allocates nothing.
///
/// Limit: arithmetic per voxel, far from memory bandwidth. A GLCM voxel costs
/// the slide's count updates (two columns of pairs: 12 for the default 7x7
/// window) and its property from integer state; one thread on 64x64x512 with
/// the defaults: contrast and dissimilarity about 350 MB/s, mean, variance,
/// std and correlation about 210, homogeneity 160, asm and energy 100, entropy
/// 80 (the properties over the whole pair matrix cost the most). lbp2d (8
/// interpolated neighbours) and lbp3d run at about 195 MB/s. The peer computes
/// each window's matrix anew in Python, three to four orders of magnitude slower.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/operators/detail/common.hpp"
#include "dwsr/operators/detail/glcm.hpp"
#include "dwsr/operators/detail/local_binary_pattern.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators {

namespace detail {

/// Elements per thread slot, rounded up so that slots start on their own 64-byte line.
constexpr std::uint64_t slot_stride(std::uint64_t n, std::uint64_t element_bytes) {
  const std::uint64_t per_line = 64 / element_bytes;
  return (n + per_line - 1) / per_line * per_line;
}

/// (i mod n) in [0, n) for any signed i.
constexpr std::uint64_t wrap(std::int64_t i, std::uint64_t n) {
  const auto m = i % static_cast<std::int64_t>(n);
  return static_cast<std::uint64_t>(m < 0 ? m + static_cast<std::int64_t>(n) : m);
}

/// Throws invalid_input for parameter `param` of operator `op`.
[[noreturn]] inline void bad_param(std::string_view op, const std::string& param, double value,
                                   const std::string& expected) {
  throw invalid_input("parameter '" + param + "' of '" + std::string(op) + "' = " + format_value(value) +
                      ": expected " + expected);
}

/// The GLCM operators: parameters (the reference's names and defaults),
/// validation, the cube-wide min/max reduction and the sliding-window run.
/// Derived supplies name and summary.
template <class Derived, detail::glcm_property Prop>
struct glcm_base : float32_output {
  static constexpr std::string_view family = "texture";

  /// The reference's parameters and defaults.
  static std::vector<param_spec> params() {
    return {{"levels", param_kind::integer, 16.0, "grey levels the cube's [min, max] is quantised to (1..256)"},
            {"direction", param_kind::real, std::numbers::pi / 2,
             "pair angle in radians (scikit-image: offset round(sin a d) crosslines, round(cos a d) samples)"},
            {"distance", param_kind::integer, 1.0, "pair distance d in samples"},
            {"window", param_kind::reals, std::vector<double>{7, 7}, "window (crosslines, samples), odd sizes", 2}};
  }

  /// Binds and validates the parameters (invalid_input names the parameter and value).
  explicit glcm_base(const param_values& p = param_values::bind(Derived::name, params())) {
    const double levels = p.real("levels"), distance = p.real("distance");
    const auto& window = p.reals("window");
    if (!(levels >= 1 && levels <= 256)) bad_param(Derived::name, "levels", levels, "a whole number in [1, 256]");
    if (!(distance >= 1 && distance <= 255)) bad_param(Derived::name, "distance", distance, "a positive whole number");
    for (double w : window)
      if (!(w >= 1 && w <= 255 && w == std::floor(w) && std::fmod(w, 2.0) == 1.0))
        bad_param(Derived::name, "window", w, "two odd whole numbers in [1, 255], e.g. window=7,7");
    const double angle = p.real("direction");
    geometry.levels = static_cast<std::int64_t>(levels);
    geometry.kh = static_cast<std::int64_t>(window[0]) / 2;
    geometry.kw = static_cast<std::int64_t>(window[1]) / 2;
    geometry.dr = detail::glcm_round(std::sin(angle) * distance);
    geometry.dc = detail::glcm_round(std::cos(angle) * distance);
    if (geometry.pairs() == 0)
      bad_param(Derived::name, "distance", distance,
                "a pair offset (" + std::to_string(geometry.dr) + ", " + std::to_string(geometry.dc) +
                    ") smaller than the window " + std::to_string(geometry.window_rows()) + "x" +
                    std::to_string(geometry.window_cols()) + ", so that windows hold pixel pairs");
  }

  /// window // 2 across crosslines and samples; the quantisation needs the cube's min and max.
  dwsr::halo halo() const { return {.radius = {0, std::uint64_t(geometry.kh), std::uint64_t(geometry.kw)}}; }
  /// One pass: the cube's min and max.
  std::size_t reduction_passes() const { return 1; }

  /// Folds the block's min and max over finite samples into acc = {min, max}
  /// (empty: no block folded yet; {+inf, -inf} while no finite sample was seen).
  template <ExecutionContext Ctx>
  void reduce(Ctx& ctx, cube_view<const float> block, std::size_t, reduction& acc) const {
    constexpr std::uint64_t per_slot = 16;  // {min, max} on a 64-byte line per thread
    auto partial = ctx.template allocate<float>(per_slot * ctx.threads(), buffer_role::workspace);
    if constexpr (Ctx::computes) {
      constexpr float inf = std::numeric_limits<float>::infinity();
      for (std::size_t s = 0; s < ctx.threads(); ++s) partial[s * per_slot] = inf, partial[s * per_slot + 1] = -inf;
      const auto n = block.shape().samples;
      ctx.parallel_for(block.shape().traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
        float lo = partial[slot * per_slot], hi = partial[slot * per_slot + 1];
        for (auto tr = b; tr < e; ++tr) {
          const float* x = block.trace(tr).data();
          for (std::uint64_t t = 0; t < n; ++t)
            if (std::isfinite(x[t])) lo = std::min(lo, x[t]), hi = std::max(hi, x[t]);
        }
        partial[slot * per_slot] = lo, partial[slot * per_slot + 1] = hi;
      });
      if (acc.values.empty()) acc.values = {double(inf), double(-inf)};
      for (std::size_t s = 0; s < ctx.threads(); ++s) {
        acc.values[0] = std::min(acc.values[0], double(partial[s * per_slot]));
        acc.values[1] = std::max(acc.values[1], double(partial[s * per_slot + 1]));
      }
    }
  }

  /// Runs on a block (extended by the halo) with the cube's {min, max}.
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out, const reduction& r) const {
    const auto s = in.shape();
    const auto& g = geometry;
    // Per thread: a ring of the window's quantised rows, each row stored twice
    // (slots k and k + rows), so that the window's rows are always contiguous
    // and sliding to the next crossline quantises one row instead of all.
    const auto window_rows = std::uint64_t(g.window_rows());
    const std::uint64_t stride = slot_stride(s.samples + 2 * std::uint64_t(g.kw), 1);
    const std::uint64_t ring_per_slot = 2 * window_rows * stride;
    const std::uint64_t ints_per_slot = slot_stride(g.scratch_ints(), sizeof(std::int32_t));
    auto rings = ctx.template allocate<std::uint8_t>(ring_per_slot * ctx.threads(), buffer_role::workspace);
    auto counts = ctx.template allocate<std::int32_t>(ints_per_slot * ctx.threads(), buffer_role::workspace);
    auto xlogx = ctx.template allocate<std::int64_t>(detail::glcm_tables::xlogx_size(g), buffer_role::workspace);
    auto weights = ctx.template allocate<double>(detail::glcm_tables::weights_size(g), buffer_role::workspace);
    if constexpr (Ctx::computes) {
      if (r.values.size() != 2)
        throw invalid_input(std::string(Derived::name) + ": the reduction holds " + std::to_string(r.values.size()) +
                            " values; expected the cube's {min, max} from reduce()");
      const detail::glcm_quantiser quantise(static_cast<float>(r.values[0]), static_cast<float>(r.values[1]), g.levels);
      detail::glcm_tables::fill(g, xlogx.data(), weights.data());
      auto y = out[0].as<float>();
      const auto nx = s.crosslines, nt = s.samples;
      ctx.parallel_for(s.traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
        std::uint8_t* ring = rings.data() + slot * ring_per_slot;
        std::fill(ring, ring + ring_per_slot, std::uint8_t{0});  // the time padding stays level 0
        detail::glcm_window<Prop> window(g, counts.data() + slot * ints_per_slot, {xlogx.data(), weights.data()});
        // Quantises crossline `row` of slice il into its two ring slots (outside the slice: level 0).
        auto load = [&](std::uint64_t il, std::int64_t row) {
          std::uint8_t* first = ring + wrap(row, window_rows) * stride + std::uint64_t(g.kw);
          std::uint8_t* second = first + window_rows * stride;
          if (row < 0 || row >= static_cast<std::int64_t>(nx)) {
            std::fill(first, first + nt, std::uint8_t{0});
          } else {
            quantise(in.trace(il, std::uint64_t(row)).data(), nt, first);
          }
          std::copy(first, first + nt, second);
        };
        for (auto tr = b; tr < e; ++tr) {
          const auto il = tr / nx;
          const auto x = static_cast<std::int64_t>(tr % nx);
          if (tr > b && x > 0) {
            load(il, x + g.kh);  // the previous window's rows are in the ring
          } else {
            for (auto k = -g.kh; k <= g.kh; ++k) load(il, x + k);
          }
          detail::glcm_row<Prop>(g, ring + wrap(x - g.kh, window_rows) * stride, stride, nt, window,
                                 y.trace(tr).data());
        }
      });
    }
  }

  detail::glcm_geometry geometry;  ///< window, pair offset and levels
};

}  // namespace detail

/// Defines a GLCM property operator.
#define DWSR_GLCM_OPERATOR(op_name, prop, doc)                               \
  struct op_name : detail::glcm_base<op_name, detail::glcm_property::prop> { \
    static constexpr std::string_view name = #op_name;                       \
    static constexpr std::string_view summary = doc;                         \
    using glcm_base::glcm_base;                                              \
  };

// Each GLCM operator: per inline slice, quantise the samples to `levels` grey
// levels over the cube's [min, max] (float32, as the reference), zero-pad the
// slice by window // 2 (padding is level 0, as the reference's), and write for
// every pixel the property of the symmetric, normalised co-occurrence matrix of
// its window. Unlike the reference, non-finite samples do not make the run
// fail: they are left out of min/max, NaN and -inf become level 0, +inf the
// top level; a constant cube is all level 0 (the reference divides by zero).

/// glcm_contrast: sum P (i - j)^2.
DWSR_GLCM_OPERATOR(glcm_contrast, contrast, "GLCM contrast sum P (i - j)^2 of sliding windows")
/// glcm_dissimilarity: sum P |i - j|.
DWSR_GLCM_OPERATOR(glcm_dissimilarity, dissimilarity, "GLCM dissimilarity sum P |i - j| of sliding windows")
/// glcm_asm: angular second moment sum P^2.
DWSR_GLCM_OPERATOR(glcm_asm, asm_, "GLCM angular second moment sum P^2 of sliding windows")
/// glcm_energy: sqrt(ASM).
DWSR_GLCM_OPERATOR(glcm_energy, energy, "GLCM energy sqrt(sum P^2) of sliding windows")
/// glcm_homogeneity: sum P / (1 + (i - j)^2).
DWSR_GLCM_OPERATOR(glcm_homogeneity, homogeneity, "GLCM homogeneity sum P / (1 + (i - j)^2) of sliding windows")
/// glcm_correlation: sum P (i - mu)(j - mu) / sigma^2, 1 where sigma = 0.
DWSR_GLCM_OPERATOR(glcm_correlation, correlation, "GLCM correlation of 7x7 windows (1 where constant)")
/// glcm_mean: sum P i (scikit-image >= 0.25).
DWSR_GLCM_OPERATOR(glcm_mean, mean, "GLCM mean sum P i of sliding windows")
/// glcm_variance: sum P (i - mean)^2 (scikit-image >= 0.25).
DWSR_GLCM_OPERATOR(glcm_variance, variance, "GLCM variance sum P (i - mean)^2 of sliding windows")
/// glcm_std: sqrt(variance) (scikit-image >= 0.25).
DWSR_GLCM_OPERATOR(glcm_std, std_, "GLCM standard deviation sqrt(variance) of sliding windows")
/// glcm_entropy: -sum P ln P over P > 0 (scikit-image >= 0.25).
DWSR_GLCM_OPERATOR(glcm_entropy, entropy, "GLCM entropy -sum P ln P of sliding windows")
#undef DWSR_GLCM_OPERATOR

/// lbp2d: scikit-image's local_binary_pattern (method 'default') of every
/// inline slice, with P = neighboors * radius points on a circle of `radius`
/// and, as the reference pads, periodic boundaries across crosslines and time.
/// Codes are read at the offsets' exact fractional parts (see detail::lbp_row).
struct lbp2d {
  static constexpr std::string_view name = "lbp2d";
  static constexpr std::string_view family = "texture";
  static constexpr std::string_view summary = "2-D local binary pattern of each inline slice (periodic borders)";

  /// The reference's parameters and defaults (its spelling of neighbours).
  static std::vector<param_spec> params() {
    return {{"radius", param_kind::integer, 3.0, "circle radius R in samples"},
            {"neighboors", param_kind::integer, 8.0, "points per unit of radius: P = neighboors * R (at most 31)"},
            {"method", param_kind::text, std::string("default"), "pattern (scikit-image's 'default')", 0, {"default"}}};
  }

  /// Binds and validates the parameters.
  explicit lbp2d(const param_values& p = param_values::bind(name, params()))
      : circle(points_of(p), p.real("radius")), radius(p.integer("radius")) {}

  /// R across crosslines and samples (the reference wraps at the cube's faces).
  /// Borders wrap periodically within each inline slice: crossline and time stay whole.
  dwsr::halo halo() const {
    return {
        .radius = {0, std::uint64_t(radius), std::uint64_t(radius)}, .whole_traces = true, .whole_crosslines = true};
  }
  /// One float32 output: codes in [0, 2^P).
  std::vector<output_spec> outputs() const { return {{"", dtype::float32}}; }

  /// Per thread: the 2R + 1 rows around one crossline, periodically padded, and its codes.
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto s = in.shape();
    const auto r = static_cast<std::uint64_t>(radius);
    const std::uint64_t stride = s.samples + 2 * r;
    const std::uint64_t rows_per_slot = detail::slot_stride((2 * r + 1) * stride, sizeof(double));
    const std::uint64_t codes_per_slot = detail::slot_stride(s.samples, sizeof(double));
    auto rows = ctx.template allocate<double>(rows_per_slot * ctx.threads(), buffer_role::workspace);
    auto codes = ctx.template allocate<double>(codes_per_slot * ctx.threads(), buffer_role::workspace);
    if constexpr (Ctx::computes) {
      auto y = out[0].as<float>();
      const auto nx = s.crosslines, nt = s.samples;
      ctx.parallel_for(s.traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
        double* buf = rows.data() + slot * rows_per_slot;
        for (auto tr = b; tr < e; ++tr) {
          const auto il = tr / nx, x = tr % nx;
          for (std::uint64_t k = 0; k <= 2 * r; ++k) {
            const float* src = in.trace(il, detail::wrap(std::int64_t(x + k) - radius, nx)).data();
            double* dst = buf + k * stride;
            for (std::uint64_t c = 0; c < r; ++c) dst[c] = src[detail::wrap(std::int64_t(c) - radius, nt)];
            for (std::uint64_t t = 0; t < nt; ++t) dst[r + t] = src[t];
            for (std::uint64_t c = r + nt; c < stride; ++c) dst[c] = src[(c - r) % nt];
          }
          detail::lbp_row(circle, radius, buf, std::int64_t(stride), std::int64_t(nt),
                          codes.data() + slot * codes_per_slot, y.trace(tr).data());
        }
      });
    }
  }

  detail::lbp_circle circle;  ///< the sample points (validates the parameters, so it is initialised first)
  std::int64_t radius;        ///< R in samples

 private:
  static int points_of(const param_values& p) {
    const double radius = p.real("radius"), per_unit = p.real("neighboors");
    if (!(radius >= 1 && radius <= 1000)) detail::bad_param(name, "radius", radius, "a positive whole number");
    if (!(per_unit >= 1 && radius * per_unit <= detail::lbp_circle::max_points))
      detail::bad_param(name, "neighboors", per_unit,
                        "a positive whole number with neighboors * radius <= 31 (scikit-image's int32 codes)");
    return static_cast<int>(radius * per_unit);
  }
};

/// lbp3d: the reference's 'diagonal' 3-D local binary pattern: from the eight
/// cube-corner neighbours of each voxel, the bit of the first largest (if above
/// the centre) and of the first smallest (if below); periodic boundaries on all
/// three axes, as the reference pads. Codes are in [0, 255].
struct lbp3d {
  static constexpr std::string_view name = "lbp3d";
  static constexpr std::string_view family = "texture";
  static constexpr std::string_view summary = "3-D diagonal local binary pattern (periodic borders)";

  /// The reference's parameter (its only method).
  static std::vector<param_spec> params() {
    return {
        {"method", param_kind::text, std::string("diagonal"), "pattern (the reference's 'diagonal')", 0, {"diagonal"}}};
  }
  /// Binds the parameters (the text choice is checked when binding).
  explicit lbp3d(const param_values& = param_values::bind(name, params())) {}

  /// One voxel per side on every axis (the reference wraps at the cube's faces).
  /// Borders wrap periodically on every axis: the cube is never split.
  dwsr::halo halo() const {
    return {.radius = {1, 1, 1}, .whole_traces = true, .whole_inlines = true, .whole_crosslines = true};
  }
  /// One float32 output: codes in [0, 255].
  std::vector<output_spec> outputs() const { return {{"", dtype::float32}}; }

  /// Reads the eight corners in place: no scratch.
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    if constexpr (Ctx::computes) {
      auto y = out[0].as<float>();
      const auto s = in.shape();
      const auto ni = s.inlines, nx = s.crosslines, nt = s.samples;
      ctx.parallel_for(s.traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t) {
        for (auto tr = b; tr < e; ++tr) {
          const auto il = std::int64_t(tr / nx), x = std::int64_t(tr % nx);
          const float* corner[4];  // (inline, crossline) = (-,-), (-,+), (+,-), (+,+)
          for (int a = 0; a < 2; ++a)
            for (int c = 0; c < 2; ++c)
              corner[2 * a + c] = in.trace(detail::wrap(il + 2 * a - 1, ni), detail::wrap(x + 2 * c - 1, nx)).data();
          const float* centre = in.trace(tr).data();
          float* dst = y.trace(tr).data();
          auto code = [&](std::uint64_t t, std::uint64_t before, std::uint64_t after) {
            std::array<float, 8> v;
            for (int k = 0; k < 4; ++k) v[2 * k] = corner[k][before], v[2 * k + 1] = corner[k][after];
            dst[t] = detail::lbp3d_code(centre[t], v);
          };
          code(0, nt - 1, 1 % nt);
          for (std::uint64_t t = 1; t + 1 < nt; ++t) code(t, t - 1, t + 1);
          if (nt > 1) code(nt - 1, nt - 2, 0);
        }
      });
    }
  }
};

}  // namespace dwsr::operators
