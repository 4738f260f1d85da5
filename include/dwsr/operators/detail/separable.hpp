#pragma once
/// \file Separable filtering as scipy.ndimage does it, over any execution
/// context: 1-D correlation along one axis of a C-order cube with scipy's
/// "reflect" boundary, 1-D kernels built as scipy builds them, and multi-pass
/// 3-D filters that need no cube-sized temporary.
///
/// Borders, per-thread rows and slice rings come from window_stream.hpp.
///
/// Convention (scipy.ndimage.correlate1d with origin 0): a kernel of `size`
/// weights w reads `size / 2` samples before the centre and the rest after it,
///
///     out[i] = sum_{j = 0}^{size - 1} w[j] * x[reflect(i + j - size / 2)],
///
/// accumulated in double in ascending j and rounded to float once per pass, as
/// scipy does for float32 arrays (whose intermediate passes are float32 too).
/// Every routine here sums in that same order, so a pass along inline computed
/// on the whole cube (correlate_axis) and one computed slice by slice
/// (correlate_inline_slice, slice_stream.hpp) give identical bits.
///
/// Memory: correlate_axis copies `panel_width` adjacent lines with their
/// reflected extensions into a per-thread buffer and writes the result back, so
/// it may run in place. A 3-D filter (separable_filter) therefore holds the
/// source, the destination and T panels: pass 1 reads the source and writes the
/// destination, later passes run in place on the destination.
///
/// Example, a 3x3x3 box mean of the input into the output (scipy uniform_filter):
///
///     kernel_bank<Ctx> k(ctx, {kernel_recipe::uniform(3)});
///     const filter_pass passes[] = {{0, k[0]}, {1, k[0]}, {2, k[0]}};
///     separable_filter(ctx, in.data(), out.data(), in.shape(), passes);
///
/// Speed: each output costs `size` double multiply-adds and a float-to-double
/// conversion per tap. Time lines are correlated in blocks of line_block
/// outputs and strided axes in panels of panel_width columns, so the column
/// loops vectorise: in the lanes of the widest instruction set in use
/// (core/simd_isa.hpp: 2, 4 or 8 doubles; the same bits in each, since every
/// lane sums its own output's taps in ascending order and no multiply-add is
/// fused). A 9-tap pass is compute bound: ~2 GB/s of floats per core in SSE2
/// lanes (~4.5 G multiply-adds/s); the cube's traffic is a few GB/s, well
/// below memory bandwidth.
///
/// To filter something computed rather than the input, see separable_stream
/// (slice_stream.hpp); for one output slice of an inline pass over the input,
/// correlate_inline_slice.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <type_traits>

#include "dwsr/core/shape.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/memory/buffer.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/operators/detail/window_stream.hpp"

namespace dwsr::operators::detail {

/// A 1-D correlation kernel (a view): `size` weights centred at size / 2.
struct line_kernel {
  const double* weights = nullptr;  ///< null under the meta context
  std::uint64_t size = 1;
  /// Taps before the centre (scipy: size / 2).
  constexpr std::uint64_t before() const noexcept { return size / 2; }
  /// Taps after the centre.
  constexpr std::uint64_t after() const noexcept { return size - 1 - size / 2; }
};

/// scipy.ndimage.gaussian_filter1d's radius: int(truncate * sigma + 0.5).
inline std::uint64_t gaussian_radius(double sigma, double truncate) noexcept {
  return static_cast<std::uint64_t>(truncate * sigma + 0.5);
}

/// scipy.ndimage.gaussian_filter skips axes whose sigma is at most this.
inline constexpr double negligible_sigma = 1e-15;

/// How to build a 1-D kernel (weights are computed only when a context computes).
class kernel_recipe {
 public:
  /// Most weights fixed() takes.
  static constexpr std::size_t max_fixed = 9;

  /// scipy.ndimage.gaussian_filter1d's correlation weights: a gaussian of
  /// `sigma` (order 0) or its derivative (order 1), radius int(truncate sigma + 0.5).
  static kernel_recipe gaussian(double sigma, int order, double truncate) {
    kernel_recipe r(kind::gaussian, 2 * gaussian_radius(sigma, truncate) + 1);
    r.sigma_ = sigma;
    r.order_ = order;
    return r;
  }
  /// scipy.ndimage.uniform_filter1d: `size` weights of 1 / size.
  static kernel_recipe uniform(std::uint64_t size) { return kernel_recipe(kind::uniform, size); }
  /// numpy.trapz over `size` samples with dx = 1: 0.5, 1, ..., 1, 0.5 (one sample: 0).
  static kernel_recipe trapezoid(std::uint64_t size) { return kernel_recipe(kind::trapezoid, size); }
  /// Explicit weights (at most max_fixed), e.g. the reference's derivative stencils.
  static kernel_recipe fixed(std::initializer_list<double> weights) {
    if (weights.size() == 0 || weights.size() > max_fixed)
      throw std::length_error("kernel_recipe::fixed: 1 to 9 weights");
    kernel_recipe r(kind::fixed, weights.size());
    std::copy(weights.begin(), weights.end(), r.fixed_.begin());
    return r;
  }

  /// Number of weights.
  std::uint64_t size() const noexcept { return size_; }

  /// Writes the size() weights to dst.
  void fill(double* dst) const {
    switch (kind_) {
      case kind::uniform: std::fill(dst, dst + size_, 1.0 / static_cast<double>(size_)); return;
      case kind::trapezoid:
        std::fill(dst, dst + size_, 1.0);
        dst[0] = dst[size_ - 1] = size_ == 1 ? 0.0 : 0.5;
        return;
      case kind::fixed: std::copy(fixed_.begin(), fixed_.begin() + static_cast<std::ptrdiff_t>(size_), dst); return;
      case kind::gaussian: fill_gaussian(dst); return;
    }
  }

 private:
  enum class kind : std::uint8_t { gaussian, uniform, trapezoid, fixed };
  kernel_recipe(kind k, std::uint64_t size) : kind_(k), size_(size) {}

  // scipy's _gaussian_kernel1d: phi(x) = exp(-x^2 / (2 sigma^2)) normalised to
  // sum 1; order 1 multiplies by -x / sigma^2. gaussian_filter1d correlates
  // with the kernel reversed, so weight j (offset x = j - radius) of the
  // derivative is x / sigma^2 * phi(x).
  void fill_gaussian(double* dst) const {
    const auto radius = static_cast<std::int64_t>(size_ / 2);
    const double sigma2 = sigma_ * sigma_;
    double sum = 0;
    for (std::int64_t j = 0; j < static_cast<std::int64_t>(size_); ++j) {
      const auto x = static_cast<double>(j - radius);
      dst[j] = std::exp(-0.5 / sigma2 * (x * x));
      sum += dst[j];
    }
    for (std::uint64_t j = 0; j < size_; ++j) dst[j] /= sum;
    if (order_ == 1) {
      const double q = 1.0 / -sigma2;
      for (std::int64_t j = 0; j < static_cast<std::int64_t>(size_); ++j) dst[j] *= static_cast<double>(radius - j) * q;
    }
  }

  kind kind_;
  std::uint64_t size_;
  double sigma_ = 0;
  int order_ = 0;
  std::array<double, max_fixed> fixed_{};
};

/// The weights of a few kernels in one workspace buffer, built from recipes
/// when the context computes (sizes only under the meta context).
template <class Ctx>
class kernel_bank {
 public:
  /// Most kernels one bank holds.
  static constexpr std::size_t capacity = 8;

  kernel_bank(Ctx& ctx, std::initializer_list<kernel_recipe> recipes) : count_(recipes.size()) {
    if (count_ > capacity) throw std::length_error("kernel_bank: at most 8 kernels");
    std::uint64_t total = 0;
    std::size_t i = 0;
    for (const auto& r : recipes) offset_[i] = total, size_[i++] = r.size(), total += r.size();
    weights_ = ctx.template allocate<double>(total, buffer_role::workspace);
    if constexpr (Ctx::computes) {
      i = 0;
      for (const auto& r : recipes) r.fill(weights_.data() + offset_[i++]);
    }
  }

  /// Kernel i, in the order of the recipes.
  line_kernel operator[](std::size_t i) const noexcept {
    return {weights_.data() ? weights_.data() + offset_[i] : nullptr, size_[i]};
  }
  std::size_t size() const noexcept { return count_; }

 private:
  std::size_t count_;
  std::array<std::uint64_t, capacity> offset_{};
  std::array<std::uint64_t, capacity> size_{};
  buffer<double, Ctx> weights_;
};

/// Adjacent lines correlated together when lines are strided (a cache line of floats).
inline constexpr std::uint64_t panel_width = 16;

/// The lines along one axis of a C-order cube: `outer` groups of `inner`
/// interleaved lines of `length` samples, consecutive samples `inner` floats apart.
struct line_layout {
  std::uint64_t outer = 0;
  std::uint64_t length = 0;
  std::uint64_t inner = 0;
};

/// The lines along axis 0 (inline), 1 (crossline) or 2 (time) of a cube of shape s.
inline line_layout lines_along(shape3 s, int axis) noexcept {
  switch (axis) {
    case 0: return {1, s.inlines, s.crosslines * s.samples};
    case 1: return {s.inlines, s.crosslines, s.samples};
    default: return {s.traces(), s.samples, 1};
  }
}

/// Floats of per-thread scratch correlate_axis needs along `axis` with a kernel of `taps` weights.
inline std::uint64_t panel_floats(shape3 s, int axis, std::uint64_t taps) noexcept {
  const auto l = lines_along(s, axis);
  return (l.length + taps - 1) * (l.inner == 1 ? 1 : panel_width);
}

/// Per-thread panels for correlate_axis: one row per thread (row(slot, 0)).
template <class Ctx>
using line_scratch = thread_rows<float, Ctx>;

// Output samples of a time line computed together: their double sums stay in
// registers while each weight is applied to the whole block (vectorised over
// the block, taps in ascending order per sample).
inline constexpr std::uint64_t line_block = 16;

/// Fills the reflected extensions of a line already in buf[before, before +
/// length): buf[r] = buf[before + reflect(r - before)] for the ends.
inline void reflect_ends(float* buf, std::uint64_t length, line_kernel k) {
  const auto before = k.before(), after = k.after();
  const float* line = buf + before;
  for (std::uint64_t r = 0; r < before; ++r)
    buf[r] = line[reflect_index(static_cast<std::int64_t>(r) - static_cast<std::int64_t>(before), length)];
  for (std::uint64_t r = 0; r < after; ++r)
    buf[before + length + r] = line[reflect_index(static_cast<std::int64_t>(length + r), length)];
}

/// Copies a line of `length` samples into buf with k's reflected extensions:
/// buf[r] = src[reflect(r - before)], length + size - 1 floats.
inline void extend_line(const float* src, std::uint64_t length, line_kernel k, float* buf) {
  std::copy(src, src + length, buf + k.before());
  reflect_ends(buf, length, k);
}

/// correlate_extended's outputs from `from` on, Block at a time while a whole
/// block fits; returns the first output not written. Copy: each tap's Block
/// inputs are read through a local copy, so the compiler does not shuffle
/// loads across taps.
template <std::uint64_t Block, bool Copy>
std::uint64_t correlate_blocks(const float* buf, float* dst, std::uint64_t from, std::uint64_t length, line_kernel k) {
  auto i = from;
  for (; i + Block <= length; i += Block) {
    double acc[Block] = {};
    for (std::uint64_t j = 0; j < k.size; ++j) {
      const double wj = k.weights[j];
      if constexpr (Copy) {
        float x[Block];
        std::memcpy(x, buf + i + j, sizeof x);
        for (std::uint64_t c = 0; c < Block; ++c) acc[c] += wj * x[c];
      } else {
        const float* x = buf + i + j;
        for (std::uint64_t c = 0; c < Block; ++c) acc[c] += wj * x[c];
      }
    }
    for (std::uint64_t c = 0; c < Block; ++c) dst[i + c] = static_cast<float>(acc[c]);
  }
  return i;
}

/// Correlates an extended line (extend_line) into dst, a block of outputs at
/// a time, in the lanes of Isa when inlined into its clone (the same bits in
/// each). dst may be buf itself: output i reads buf[i ..] only, after the
/// block before it is written.
template <simd_isa Isa = simd_isa::baseline>
void correlate_extended(const float* buf, float* dst, std::uint64_t length, line_kernel k) {
  // Measured (9 taps, 512 samples): SSE2 and AVX-512 run fastest from a copy
  // of 16 inputs a tap; the AVX2 clone's generic tuning stores that copy in
  // 128-bit halves that its 256-bit loads cannot forward (3x slower), so it
  // reads the taps in place, 64 outputs at a time (2x faster than 16).
  std::uint64_t i = 0;
  if constexpr (Isa == simd_isa::avx2) {
    i = correlate_blocks<4 * line_block, false>(buf, dst, i, length, k);
    i = correlate_blocks<line_block, false>(buf, dst, i, length, k);
  } else {
    i = correlate_blocks<line_block, true>(buf, dst, i, length, k);
  }
  for (; i < length; ++i) {
    double acc = 0;
    for (std::uint64_t j = 0; j < k.size; ++j) acc += k.weights[j] * buf[i + j];
    dst[i] = static_cast<float>(acc);
  }
}

/// Correlates one contiguous line (inner == 1) through buf (length + size - 1
/// floats); dst may be src. Isa: as correlate_extended.
template <simd_isa Isa = simd_isa::baseline>
void correlate_line(const float* src, float* dst, std::uint64_t length, line_kernel k, float* buf) {
  extend_line(src, length, k, buf);
  correlate_extended<Isa>(buf, dst, length, k);
}

// Correlates W interleaved lines starting at src/dst (lines `inner` apart):
// gathers them with their reflected extensions into buf (row r = sample
// r - before, Width floats a row), then writes each output sample. W is a
// compile-time width for full panels (the column loops vectorise) or the
// runtime remainder.
template <std::uint64_t Width, class W>
void correlate_panel(const float* src, float* dst, std::uint64_t length, std::uint64_t inner, W w, line_kernel k,
                     float* buf) {
  const auto rows = length + k.size - 1;
  const auto before = static_cast<std::int64_t>(k.before());
  for (std::uint64_t r = 0; r < rows; ++r) {
    const float* line = src + reflect_index(static_cast<std::int64_t>(r) - before, length) * inner;
    float* row = buf + r * Width;
    for (std::uint64_t c = 0; c < w; ++c) row[c] = line[c];
  }
  for (std::uint64_t i = 0; i < length; ++i) {
    double acc[Width] = {};
    for (std::uint64_t j = 0; j < k.size; ++j) {
      const double wj = k.weights[j];
      const float* row = buf + (i + j) * Width;
      for (std::uint64_t c = 0; c < w; ++c) acc[c] += wj * row[c];
    }
    float* out = dst + i * inner;
    for (std::uint64_t c = 0; c < w; ++c) out[c] = static_cast<float>(acc[c]);
  }
}

/// Panels of up to panel_width lines in each group of `inner` interleaved lines (inner > 0).
inline std::uint64_t panels_per_group(line_layout l) noexcept {
  const auto width = std::min(panel_width, l.inner);
  return (l.inner + width - 1) / width;
}

/// Correlates panels [b, e) of the lines along one axis (correlate_axis's
/// work for one thread), `panels` (panels_per_group) per group of `inner`
/// interleaved lines.
template <simd_isa Isa>
void correlate_panels(const float* src, float* dst, line_layout l, std::uint64_t panels, std::uint64_t b,
                      std::uint64_t e, line_kernel k, float* buf) {
  const auto width = std::min(panel_width, l.inner);
  for (auto p = b; p < e; ++p) {
    const auto c0 = (p % panels) * width;
    const auto base = (p / panels) * l.length * l.inner + c0;
    const auto w = std::min(width, l.inner - c0);
    if (width == 1)
      correlate_line<Isa>(src + base, dst + base, l.length, k, buf);
    else if (w == panel_width)
      correlate_panel<panel_width>(src + base, dst + base, l.length, l.inner,
                                   std::integral_constant<std::uint64_t, panel_width>{}, k, buf);
    else
      correlate_panel<panel_width>(src + base, dst + base, l.length, l.inner, w, k, buf);
  }
}

/// Correlates every line of `src` along `axis` with k (scipy.ndimage.correlate1d,
/// mode "reflect"), writing `dst`; dst may be src (in place). Parallel over
/// panels, each thread's in the lanes of `isa` (the same bits in each).
template <class Ctx>
void correlate_axis(Ctx& ctx, const float* src, float* dst, shape3 s, int axis, line_kernel k,
                    const line_scratch<Ctx>& scratch, simd_isa isa = simd_isa_in_use()) {
  if constexpr (!Ctx::computes) return;
  const auto l = lines_along(s, axis);
  if (l.outer == 0 || l.length == 0 || l.inner == 0) return;
  const auto panels = panels_per_group(l);
  ctx.parallel_for(l.outer * panels, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    float* buf = scratch.row(slot, 0);
    with_simd_isa(isa, [&](auto lanes) { correlate_panels<lanes()>(src, dst, l, panels, b, e, k, buf); });
  });
}

/// Floats of an inline slice that correlate_inline_block handles at once.
inline constexpr std::uint64_t inline_block = 256;

/// Floats [c0, c0 + w) (w <= inline_block) of one inline slice of a correlation
/// along inline: dst[c] = sum_j w[j] * slice_at(reflect(il + j - before))[c]
/// (see correlate_inline_slice).
template <class SliceAt>
void correlate_inline_block(SliceAt&& slice_at, std::uint64_t il, std::uint64_t inlines, std::uint64_t c0,
                            std::uint64_t w, line_kernel k, float* dst) {
  const auto first = static_cast<std::int64_t>(il) - static_cast<std::int64_t>(k.before());
  double acc[inline_block] = {};
  for (std::uint64_t j = 0; j < k.size; ++j) {
    const double wj = k.weights[j];
    const float* src = slice_at(reflect_index(first + static_cast<std::int64_t>(j), inlines)) + c0;
    for (std::uint64_t c = 0; c < w; ++c) acc[c] += wj * src[c];
  }
  for (std::uint64_t c = 0; c < w; ++c) dst[c0 + c] = static_cast<float>(acc[c]);
}

/// One inline slice of a correlation along inline: dst = sum_j w[j] *
/// slice_at(reflect(il + j - before)), where slice_at(i) returns source slice i
/// (0 <= i < inlines) of `slice_floats` floats. Same bits as correlate_axis(axis 0).
template <class Ctx, class SliceAt>
void correlate_inline_slice(Ctx& ctx, SliceAt&& slice_at, std::uint64_t il, std::uint64_t inlines,
                            std::uint64_t slice_floats, line_kernel k, float* dst) {
  if constexpr (!Ctx::computes) return;
  const auto isa = simd_isa_in_use();
  ctx.parallel_for(
      (slice_floats + inline_block - 1) / inline_block, [&](std::uint64_t b, std::uint64_t e, std::size_t) {
        with_simd_isa(isa, [&](auto) {
          for (auto blk = b; blk < e; ++blk) {
            const auto c0 = blk * inline_block;
            correlate_inline_block(slice_at, il, inlines, c0, std::min(inline_block, slice_floats - c0), k, dst);
          }
        });
      });
}

/// One pass of a separable filter: correlate along `axis` with `kernel`.
struct filter_pass {
  int axis = 2;
  line_kernel kernel;
};

/// Floats of per-thread scratch that the passes need on a cube of shape s.
inline std::uint64_t panel_floats(shape3 s, std::span<const filter_pass> passes) noexcept {
  std::uint64_t most = 0;
  for (const auto& p : passes) most = std::max(most, panel_floats(s, p.axis, p.kernel.size));
  return most;
}

/// Copies n floats in parallel.
template <class Ctx>
void parallel_copy(Ctx& ctx, const float* src, float* dst, std::uint64_t n) {
  ctx.parallel_for(
      n, [&](std::uint64_t b, std::uint64_t e, std::size_t) { std::copy(src + b, src + e, dst + b); }, 1 << 16);
}

/// A separable filter: the passes in order, the first reading `src` and writing
/// `dst`, the others in place on dst (no passes: a copy). Memory: T panels.
template <class Ctx>
void separable_filter(Ctx& ctx, const float* src, float* dst, shape3 s, std::span<const filter_pass> passes) {
  line_scratch<Ctx> scratch(ctx, 1, panel_floats(s, passes));
  if (passes.empty()) {
    if constexpr (Ctx::computes) parallel_copy(ctx, src, dst, s.voxels());
    return;
  }
  for (std::size_t i = 0; i < passes.size(); ++i)
    correlate_axis(ctx, i == 0 ? src : dst, dst, s, passes[i].axis, passes[i].kernel, scratch);
}

/// Applies f(value) to every one of n floats in place, in parallel. Pass a
/// lambda, not a function name: a function pointer is called, not inlined.
template <class Ctx, class F>
void transform_in_place(Ctx& ctx, float* data, std::uint64_t n, F&& f) {
  if constexpr (!Ctx::computes) return;
  ctx.parallel_for(
      n,
      [&](std::uint64_t b, std::uint64_t e, std::size_t) {
        for (auto i = b; i < e; ++i) data[i] = f(data[i]);
      },
      1 << 14);
}

}  // namespace dwsr::operators::detail
