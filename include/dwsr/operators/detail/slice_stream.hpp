#pragma once
/// \file Streaming a computed cube through inline slices: when an operator
/// filters something it computes (gradient products, squared samples, dips)
/// rather than its input, it produces that source one inline slice at a time
/// and keeps only the slices an inline window needs in a ring, never a
/// cube-sized temporary.
///
/// - separable_stream: a 3-D separable filter (separable.hpp conventions) of a
///   computed source, slice by slice: each source slice is correlated along
///   time and crossline as it arrives, then along inline from a slice_ring
///   (window_stream.hpp) of the last min(inlines, inline kernel size) slices. Its
///   output bits equal separable_filter's with passes time, crossline, inline.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>

#include "dwsr/operators/detail/separable.hpp"
#include "dwsr/operators/detail/window_stream.hpp"

namespace dwsr::operators::detail {

/// Writes inline slice `il` (crosslines x samples floats) of a computed source.
using slice_source = std::function<void(std::uint64_t il, float* slice)>;

/// Kernels of a 3-D separable filter, per axis (inline, crossline, time); an
/// absent kernel skips that axis (as scipy skips size-1 or zero-sigma axes).
struct separable_kernels {
  std::optional<line_kernel> inline_axis;
  std::optional<line_kernel> crossline;
  std::optional<line_kernel> time;
};

/// A 3-D separable filter of a computed source, slice by slice. Workspace: a
/// ring of min(inlines, inline kernel size) slices (none without an inline
/// kernel: slices are then filtered straight into the caller's dst) and T panels.
template <class Ctx>
class separable_stream {
 public:
  separable_stream(Ctx& ctx, shape3 s, separable_kernels k, slice_source source)
      : ctx_(&ctx),
        inlines_(s.inlines),
        slice_shape_{1, s.crosslines, s.samples},
        il_(k.inline_axis),
        xl_(k.crossline),
        t_(k.time),
        scratch_(ctx, 1,
                 std::max(xl_ ? panel_floats(slice_shape_, 1, xl_->size) : 0,
                          t_ ? panel_floats(slice_shape_, 2, t_->size) : 0)),
        source_(std::move(source)) {
    if (il_) ring_.emplace(ctx, std::min(s.inlines, il_->size), s.crosslines * s.samples);
  }
  separable_stream(const separable_stream&) = delete;
  separable_stream& operator=(const separable_stream&) = delete;

  /// Writes filtered inline slice il to dst; call with il = 0, 1, ... in order.
  void next(std::uint64_t il, float* dst) {
    if constexpr (!Ctx::computes) return;
    if (!ring_) {
      produce(il, dst);
      return;
    }
    // every slice the window reads (reflected) lies in [il - before, il + after]
    ring_->produce_to(std::min(inlines_ - 1, il + il_->after()),
                      [this](std::uint64_t i, float* slice) { produce(i, slice); });
    correlate_inline_slice(
        *ctx_, [this](std::uint64_t i) { return ring_->slice(i); }, il, inlines_, ring_->width(), *il_, dst);
  }

 private:
  // Source slice il, correlated along time then crossline, in place in dst.
  void produce(std::uint64_t il, float* dst) {
    source_(il, dst);
    if (t_) correlate_axis(*ctx_, dst, dst, slice_shape_, 2, *t_, scratch_);
    if (xl_) correlate_axis(*ctx_, dst, dst, slice_shape_, 1, *xl_, scratch_);
  }

  Ctx* ctx_;
  std::uint64_t inlines_;
  shape3 slice_shape_;
  std::optional<line_kernel> il_, xl_, t_;
  line_scratch<Ctx> scratch_;
  slice_source source_;
  std::optional<slice_ring<Ctx>> ring_;
};

}  // namespace dwsr::operators::detail
