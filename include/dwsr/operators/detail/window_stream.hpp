#pragma once
/// \file Streaming over inline slices for window operators: scipy.ndimage's
/// "reflect" borders and window extents, a ring of the last few slices of a
/// stage, and per-thread rows of scratch. Operators built on these hold a few
/// slices and rows instead of cube-sized temporaries.

#include <algorithm>
#include <cassert>
#include <cstdint>

#include "dwsr/memory/buffer.hpp"

namespace dwsr::operators::detail {

/// scipy.ndimage's "reflect" (half-sample symmetric, d c b a | a b c d | d c b a)
/// index of position i on an axis of n samples, for any distance past the ends.
constexpr std::uint64_t reflect_index(std::int64_t i, std::uint64_t n) {
  const auto period = static_cast<std::int64_t>(2 * n);
  std::int64_t m = i % period;
  if (m < 0) m += period;
  return m < static_cast<std::int64_t>(n) ? static_cast<std::uint64_t>(m) : static_cast<std::uint64_t>(period - 1 - m);
}

/// The samples a centred window of `size` reads on each side, as scipy.ndimage
/// places it: size / 2 before, the rest after (equal for odd sizes).
struct window_extent {
  std::uint64_t before = 0;
  std::uint64_t after = 0;
  static constexpr window_extent of(std::uint64_t size) { return {size / 2, size - size / 2 - 1}; }
  constexpr std::uint64_t size() const { return before + after + 1; }
};

/// Elements per per-thread row, rounded up so that every row starts 64-byte aligned.
constexpr std::uint64_t padded_row(std::uint64_t n, std::uint64_t element_bytes) {
  const std::uint64_t per_line = 64 / element_bytes;
  return (n + per_line - 1) / per_line * per_line;
}

/// `rows` scratch rows of `length` elements for each of the context's threads
/// (one workspace buffer), indexed by parallel_for's slot.
template <class T, class Ctx>
class thread_rows {
 public:
  thread_rows(Ctx& ctx, std::uint64_t rows, std::uint64_t length)
      : rows_(rows),
        stride_(padded_row(length, sizeof(T))),
        data_(ctx.template allocate<T>(rows_ * stride_ * ctx.threads(), buffer_role::workspace)) {}
  /// Row `r` of thread slot `slot`.
  T* row(std::size_t slot, std::uint64_t r) const { return data_.data() + (slot * rows_ + r) * stride_; }

 private:
  std::uint64_t rows_;
  std::uint64_t stride_;
  buffer<T, Ctx> data_;
};

/// The last `slots` slices of a stage that produces inline slices 0, 1, ... in
/// order (each slice `width` floats), in one workspace buffer.
template <class Ctx>
class slice_ring {
 public:
  slice_ring(Ctx& ctx, std::uint64_t slots, std::uint64_t width)
      : slots_(slots), width_(width), data_(ctx.template allocate<float>(slots * width, buffer_role::workspace)) {}

  /// Produces slices up to `last` (inclusive) not produced yet with
  /// produce(index, float* dst), in increasing order.
  template <class Produce>
  void produce_to(std::uint64_t last, Produce&& produce) {
    for (; produced_ <= last; ++produced_) produce(produced_, data_.data() + (produced_ % slots_) * width_);
  }
  /// Slice `i`, which must be among the last `slots` produced.
  const float* slice(std::uint64_t i) const {
    assert(i < produced_ && i + slots_ >= produced_);
    return data_.data() + (i % slots_) * width_;
  }
  std::uint64_t width() const { return width_; }

 private:
  std::uint64_t slots_;
  std::uint64_t width_;
  std::uint64_t produced_ = 0;
  buffer<float, Ctx> data_;
};

/// Slices [i - before, i + after] of an axis of n, reflected, for window
/// extent `w`: calls f(k, index) for k = 0 .. w.size() - 1.
template <class F>
void for_each_in_window(std::uint64_t i, window_extent w, std::uint64_t n, F&& f) {
  for (std::uint64_t k = 0; k < w.size(); ++k)
    f(k, reflect_index(static_cast<std::int64_t>(i + k) - static_cast<std::int64_t>(w.before), n));
}

}  // namespace dwsr::operators::detail
