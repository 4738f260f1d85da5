#pragma once
/// \file The reference's gradient structure tensor, streamed over inline
/// slices: gradients (gi, gj, gk) of the last `kernel[0]` slices in a ring, and
/// per crossline row the six products gi2, gj2, gk2, gigj, gigk, gjgk smoothed
/// by scipy.ndimage.uniform_filter(kernel) (passes along inline, crossline, time,
/// float32 between passes). Nothing of the cube's size is stored: per-voxel
/// tensors exist only as six rows of per-thread scratch.

#include <algorithm>
#include <array>
#include <cstdint>

#include "dwsr/core/cube_view.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/operators/detail/gradient_rows.hpp"
#include "dwsr/operators/detail/window_stream.hpp"

namespace dwsr::operators::detail {

/// Window extents of a (inline, crossline, time) kernel.
using kernel_extents = std::array<window_extent, 3>;

/// out[t] = float((0.0 + term(r_0, t) + ... + term(r_{count-1}, t)) / size)
/// for t < n, where rows(f) calls f(k, r_k) for the window's k-th row: summed
/// in double in window order, from 0.0 as a running sum (-0 + 0 is +0).
/// Windows of 3 and 9 (the default kernels') are summed in registers in one
/// vectorised pass; other sizes row by row through `sum`, n doubles of scratch.
template <class Rows, class Term>
void window_mean_of_rows(std::uint64_t count, Rows&& rows, Term&& term, std::uint64_t n, double size, float* out,
                         double* sum) {
  auto in_registers = [&]<std::size_t N>() {
    const float* r[N];
    rows([&](std::uint64_t k, const float* row) { r[k] = row; });
    for (std::uint64_t t = 0; t < n; ++t) {
      double s = 0.0;
      for (std::size_t k = 0; k < N; ++k) s += term(r[k], t);
      out[t] = static_cast<float>(s / size);
    }
  };
  if (count == 3) return in_registers.template operator()<3>();
  if (count == 9) return in_registers.template operator()<9>();
  rows([&](std::uint64_t k, const float* row) {
    if (k == 0)
      for (std::uint64_t t = 0; t < n; ++t) sum[t] = 0.0 + term(row, t);
    else
      for (std::uint64_t t = 0; t < n; ++t) sum[t] += term(row, t);
  });
  for (std::uint64_t t = 0; t < n; ++t) out[t] = static_cast<float>(sum[t] / size);
}

/// Mean over a reflected window along time: summed in double from the window's
/// first sample to its last, divided by its size, stored as float. (scipy's
/// uniform_filter1d keeps a running sum along the line instead; a direct sum
/// does not depend on where a block starts, so chunked runs agree bitwise.)
/// Interior samples are window_mean_of_rows's (`sum` is its n doubles of
/// scratch); the few border samples reflect.
inline void window_mean_along_time(const float* x, std::uint64_t n, window_extent w, float* out, double* sum) {
  const auto size = static_cast<double>(w.size());
  const std::uint64_t lo = std::min(w.before, n), hi = n > w.after ? std::max(lo, n - w.after) : lo;
  // The window of interior sample lo + t: row k holds its k-th sample at t.
  auto rows = [&](auto&& f) {
    for (std::uint64_t k = 0; k < w.size(); ++k) f(k, x + lo - w.before + k);
  };
  if (hi > lo)
    window_mean_of_rows(
        w.size(), rows, [](const float* r, std::uint64_t t) { return r[t]; }, hi - lo, size, out + lo, sum);
  auto border = [&](std::uint64_t t) {
    double s = 0.0;
    for_each_in_window(t, w, n, [&](std::uint64_t, std::uint64_t i) { s += x[i]; });
    out[t] = static_cast<float>(s / size);
  };
  for (std::uint64_t t = 0; t < lo; ++t) border(t);
  for (std::uint64_t t = hi; t < n; ++t) border(t);
}

/// Per-thread scratch of uniform_rows for C quantities and a kernel: float
/// rows for the inline and crossline passes, double rows for the sums.
template <class Ctx>
class uniform_scratch {
 public:
  uniform_scratch(Ctx& ctx, std::size_t quantities, std::uint64_t crossline_size, std::uint64_t samples)
      : quantities_(quantities),
        crossline_size_(crossline_size),
        floats_(ctx, (crossline_size + 1) * quantities, samples),
        doubles_(ctx, quantities, samples) {}
  /// Float row r of slot `slot`; rows [k * C, k * C + C) hold the inline pass
  /// of a crossline x with x % crossline_size = k, the last C the crossline pass.
  float* row(std::size_t slot, std::uint64_t r) const { return floats_.row(slot, r); }
  /// The double accumulator of quantity c.
  double* sum(std::size_t slot, std::size_t c) const { return doubles_.row(slot, c); }
  std::size_t quantities() const { return quantities_; }
  /// The kernel's crossline size (the number of cached inline-pass rows per quantity).
  std::uint64_t crossline_size() const { return crossline_size_; }

 private:
  std::size_t quantities_;
  std::uint64_t crossline_size_;
  thread_rows<float, Ctx> floats_;
  thread_rows<double, Ctx> doubles_;
};

/// scipy.ndimage.uniform_filter(kernel) of C quantities at row j of inline slice
/// i: value(c, ring_slice, offset) reads quantity c at `offset` of a slice held
/// in `ring` (a slice_ring whose last slices cover the inline window of i).
/// Each pass sums in double in window order and stores float (see
/// window_mean_along_time).
/// out(c) is the row (samples floats) receiving quantity c.
///
/// Each pass is window_mean_of_rows's, through quantity c's double row.
/// The inline pass of crossline x is kept in float rows x % kernel[1] of the
/// thread's scratch: when `follows` (this thread's previous call was row j - 1
/// of the same slice), the rows of j - 1's window are still there and only
/// the crosslines new to j's window are summed (a window's reflected
/// crosslines lie in kernel[1] consecutive ones, so they never share a row).
template <std::size_t C, class Ring, class Value, class Ctx, class Out>
void uniform_rows_in(const Ring& ring, shape3 shape, const kernel_extents& w, std::uint64_t i, std::uint64_t j,
                     bool follows, Value&& value, const uniform_scratch<Ctx>& scratch, std::size_t slot, Out&& out) {
  const auto nt = shape.samples;
  const auto size0 = static_cast<double>(w[0].size());
  const auto size1 = static_cast<double>(w[1].size());
  const auto rows = scratch.crossline_size();
  double* sums[C];
  for (std::size_t c = 0; c < C; ++c) sums[c] = scratch.sum(slot, c);
  // Whether crossline x is in the window of row r (r < j), or earlier in j's.
  auto in_window = [&](std::uint64_t r, std::uint64_t x, std::uint64_t count) {
    bool found = false;
    for_each_in_window(r, w[1], shape.crosslines,
                       [&](std::uint64_t k, std::uint64_t y) { found = found || (k < count && y == x); });
    return found;
  };
  // Inline pass of the crosslines not cached yet.
  for_each_in_window(j, w[1], shape.crosslines, [&](std::uint64_t k, std::uint64_t x) {
    if ((follows && in_window(j - 1, x, w[1].size())) || in_window(j, x, k)) return;
    auto rows_of_x = [&](auto&& f) {
      for_each_in_window(i, w[0], shape.inlines,
                         [&](std::uint64_t a, std::uint64_t il) { f(a, ring.slice(il) + x * nt); });
    };
    for (std::size_t c = 0; c < C; ++c)
      window_mean_of_rows(
          w[0].size(), rows_of_x, [&](const float* g, std::uint64_t t) { return value(c, g, t); }, nt, size0,
          scratch.row(slot, (x % rows) * C + c), sums[c]);
  });
  // Crossline pass (window order) into the last C float rows, then the time
  // pass into out(c), reusing quantity c's double row as its scratch.
  for (std::size_t c = 0; c < C; ++c) {
    auto rows_of_j = [&](auto&& f) {
      for_each_in_window(j, w[1], shape.crosslines,
                         [&](std::uint64_t a, std::uint64_t x) { f(a, scratch.row(slot, (x % rows) * C + c)); });
    };
    float* v = scratch.row(slot, rows * C + c);
    window_mean_of_rows(
        w[1].size(), rows_of_j, [](const float* u, std::uint64_t t) { return u[t]; }, nt, size1, v, sums[c]);
    window_mean_along_time(v, nt, w[2], out(c), sums[c]);
  }
}

/// uniform_rows_in in the widest vector lanes in use (core/simd_isa.hpp: its
/// sums are adds in window order, the same bits in every instruction set).
template <std::size_t C, class Ring, class Value, class Ctx, class Out>
void uniform_rows(const Ring& ring, shape3 shape, const kernel_extents& w, std::uint64_t i, std::uint64_t j,
                  bool follows, Value&& value, const uniform_scratch<Ctx>& scratch, std::size_t slot, Out&& out) {
  with_simd_isa(simd_isa_in_use(),
                [&](auto) { uniform_rows_in<C>(ring, shape, w, i, j, follows, value, scratch, slot, out); });
}

/// The parallel_for grain for rows that call uniform_rows: a task's first row
/// sums kernel[1] inline passes, its others one (the cache), so the default
/// tasks of one or two rows would cost up to kernel[1] times the inline pass.
/// Tasks of a quarter to a half of a thread's share keep some balance.
inline std::uint64_t row_run_grain(std::uint64_t rows, std::size_t threads) {
  return std::max<std::uint64_t>(1, rows / (2 * std::max<std::size_t>(1, threads)));
}

/// Gradients of the source's inline slices, the last `slots` of them in a ring
/// (gi, gj, gk one after the other in each ring slice).
template <class Ctx>
class gradient_ring {
 public:
  gradient_ring(Ctx& ctx, shape3 shape, std::uint64_t slots)
      : ctx_(&ctx),
        shape_(shape),
        slice_(shape.crosslines * shape.samples),
        ring_(ctx, slots, 3 * slice_),
        scratch_(ctx, gradient_rows::scratch_rows, shape.samples) {}

  /// Computes gradients up to slice `last` (in order). slice(il) and load as in gradient_rows.
  template <class Slice, class Load>
  void produce_to(std::uint64_t last, Slice&& slice, Load&& load) {
    ring_.produce_to(last, [&](std::uint64_t i, float* dst) {
      const gradient_rows rows{shape_};
      ctx_->parallel_for(shape_.crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
        float* s[gradient_rows::scratch_rows];
        for (std::uint64_t r = 0; r < gradient_rows::scratch_rows; ++r) s[r] = scratch_.row(slot, r);
        for (auto j = b; j < e; ++j) {
          float* g = dst + j * shape_.samples;
          rows(slice, load, i, j, j > b, s, g, g + slice_, g + 2 * slice_);
        }
      });
    });
  }
  const slice_ring<Ctx>& ring() const { return ring_; }
  std::uint64_t slice_size() const { return slice_; }

 private:
  Ctx* ctx_;
  shape3 shape_;
  std::uint64_t slice_;
  slice_ring<Ctx> ring_;
  thread_rows<float, Ctx> scratch_;
};

/// The six tensor components in the reference's output order.
inline constexpr std::size_t tensor_components = 6;
inline constexpr std::uint64_t tensor_factors[tensor_components][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};

/// The gradient structure tensor of a cube, one inline slice at a time.
/// Buffers: kernel[0] gradient slices (3 floats per voxel) and, per thread,
/// 6 gradient rows, the uniform filter's scratch and 6 tensor rows.
template <class Ctx>
class structure_tensor_stream {
 public:
  structure_tensor_stream(Ctx& ctx, shape3 shape, std::array<std::uint64_t, 3> kernel)
      : ctx_(&ctx),
        shape_(shape),
        w_{window_extent::of(kernel[0]), window_extent::of(kernel[1]), window_extent::of(kernel[2])},
        gradients_(ctx, shape, kernel[0]),
        scratch_(ctx, tensor_components, kernel[1], shape.samples),
        rows_(ctx, tensor_components, shape.samples) {}

  /// Calls f(j, components, slot) for every crossline row j of inline slice i
  /// (in parallel); components[c] is row j of component c (gi2, gj2, gk2, gigj,
  /// gigk, gjgk), valid during the call. Call for i = 0, 1, ... in order.
  template <class F>
  void slice(cube_view<const float> in, std::uint64_t i, F&& f) {
    if constexpr (!Ctx::computes) return;
    const auto slice_size = gradients_.slice_size();
    const auto last = std::min(i + w_[0].after, shape_.inlines - 1);
    gradients_.produce_to(
        last, [&](std::uint64_t il) { return in.data() + il * slice_size; }, [](float v) { return v; });
    auto product = [slice_size](std::size_t c, const float* g, std::uint64_t t) {
      return g[tensor_factors[c][0] * slice_size + t] * g[tensor_factors[c][1] * slice_size + t];
    };
    ctx_->parallel_for(
        shape_.crosslines,
        [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
          const float* components[tensor_components];
          for (std::size_t c = 0; c < tensor_components; ++c) components[c] = rows_.row(slot, c);
          for (auto j = b; j < e; ++j) {
            uniform_rows<tensor_components>(gradients_.ring(), shape_, w_, i, j, j > b, product, scratch_, slot,
                                            [&](std::size_t c) { return rows_.row(slot, c); });
            f(j, static_cast<const float* const*>(components), slot);
          }
        },
        row_run_grain(shape_.crosslines, ctx_->threads()));
  }

 private:
  Ctx* ctx_;
  shape3 shape_;
  kernel_extents w_;
  gradient_ring<Ctx> gradients_;
  uniform_scratch<Ctx> scratch_;
  thread_rows<float, Ctx> rows_;
};

/// Runs f(i, j, components, slot) for every crossline row j of every inline
/// slice i of the structure tensor of `in` (rows of a slice in parallel).
template <class Ctx, class F>
void for_each_tensor_row(Ctx& ctx, cube_view<const float> in, const std::array<std::uint64_t, 3>& kernel, F&& f) {
  structure_tensor_stream<Ctx> stream(ctx, in.shape(), kernel);
  if constexpr (!Ctx::computes) return;
  for (std::uint64_t i = 0; i < in.shape().inlines; ++i)
    stream.slice(in, i, [&](std::uint64_t j, const float* const* c, std::size_t slot) { f(i, j, c, slot); });
}

}  // namespace dwsr::operators::detail
