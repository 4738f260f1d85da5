#pragma once
/// \file Building blocks of the complex-trace attributes (operators/complex_trace.hpp):
/// per-trace evaluation of the analytic signal, the two derivative streams
/// (relative amplitude change, instantaneous frequency) that run one inline
/// slice at a time, and the bases the operators derive from, which hold the
/// protocol (parameters, halo, output, run) so that an operator states only
/// its name, its summary and what it computes.

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numbers>
#include <span>
#include <string_view>
#include <vector>

#include "dwsr/operators/detail/analytic_signal.hpp"
#include "dwsr/operators/detail/common.hpp"
#include "dwsr/operators/detail/derivative_stream.hpp"
#include "dwsr/operators/detail/polar.hpp"
#include "dwsr/operators/detail/sample_rate_param.hpp"
#include "dwsr/ops/operator.hpp"

namespace dwsr::operators::detail {

/// Halo of an attribute built on `Derivatives` nested first derivatives: each
/// reads one neighbour per side across inline and crossline; all need whole traces.
template <std::uint64_t Derivatives>
struct complex_trace_halo : float32_output {
  static constexpr std::string_view family = "complex_trace";
  dwsr::halo halo() const { return {.radius = {Derivatives, Derivatives, 0}, .whole_traces = true}; }
};

/// Calls f(trace index, analytic signal, slot, workspace) for every trace, in parallel.
template <class Ctx, class F>
void for_each_analytic(Ctx& ctx, cube_view<const float> in, F&& f) {
  analytic_workspace<Ctx> ws(ctx, in.shape().samples);
  ctx.parallel_for(in.shape().traces(), [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto tr = b; tr < e; ++tr) f(tr, ws.analytic(slot, in.trace(tr).data()), slot, ws);
  });
}

/// Degrees per radian, in float as the phases are scaled.
inline constexpr float degrees_per_radian = static_cast<float>(180.0 / std::numbers::pi);

/// Phase angle(a) in degrees.
inline float degrees(std::complex<float> a) { return angle(a.imag(), a.real()) * degrees_per_radian; }
/// cos(angle(a)) without the angle: Re(a) / |a| (and cos(angle(0)) = 1).
inline float cosine_of_phase(std::complex<float> a) { return cosine(a.real(), a.imag()); }

/// Spreads, over each envelope lobe (troughs of env start new lobes), the value
/// pick(peak) at the lobe's first envelope maximum; NaN becomes 0.
template <class Pick>
void spread_over_lobes(const float* env, std::uint64_t n, float* out, Pick&& pick) {
  std::uint64_t start = 0;
  auto flush = [&](std::uint64_t end) {
    std::uint64_t peak = start;
    for (auto t = start + 1; t < end; ++t)
      if (env[t] > env[peak]) peak = t;
    const float v = nan_to_zero(pick(peak));
    std::fill(out + start, out + end, v);
    start = end;
  };
  for (std::uint64_t t = 1; t + 1 < n; ++t)
    if (env[t] < env[t - 1] && env[t] < env[t + 1]) flush(t);
  flush(n);
}

/// Envelope of the traces of inline slice `il` into `dst`.
template <class Ctx>
void envelope_slice(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, std::uint64_t il,
                    float* dst) {
  const auto nt = in.shape().samples;
  ctx.parallel_for(in.shape().crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto x = b; x < e; ++x) {
      modulus(interleaved_samples{ws.analytic(slot, in.trace(il, x).data())}, dst + x * nt, nt);
    }
  });
}

/// relative_amplitude_change, one inline slice at a time: clip(D(env) / env, -1, 1), NaN -> 0.
template <class Ctx>
class rac_stream {
 public:
  // The source lambda captures only `this`, so std::function stores it inline:
  // no heap allocation outside the context.
  rac_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in)
      : ctx_(&ctx),
        ws_(&ws),
        in_(in),
        slice_(in.shape().crosslines * in.shape().samples),
        d_(ctx, in.shape(), time_difference::plain,
           [this](std::uint64_t il, float* dst) { envelope_slice(*ctx_, *ws_, in_, il, dst); }) {}
  /// The stream of an attribute without parameters.
  rac_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, const no_params&)
      : rac_stream(ctx, ws, in) {}

  void next(std::uint64_t il, float* dst) {
    if constexpr (!Ctx::computes) return;
    d_.next(il, dst);
    const float* env = d_.source_slice(il);
    ctx_->parallel_for(
        slice_,
        [&](std::uint64_t b, std::uint64_t e, std::size_t) {
          for (auto k = b; k < e; ++k) dst[k] = std::clamp(nan_to_zero(dst[k] / env[k]), -1.0f, 1.0f);
        },
        4096);
  }

 private:
  Ctx* ctx_;
  const analytic_workspace<Ctx>* ws_;
  cube_view<const float> in_;
  std::uint64_t slice_;
  derivative_stream<Ctx> d_;
};

/// instantaneous_frequency, one inline slice at a time: |D(unwrap(phase))| fs / 2 pi.
template <class Ctx>
class frequency_stream {
 public:
  frequency_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, double fs)
      : ctx_(&ctx),
        ws_(&ws),
        in_(in),
        slice_(in.shape().crosslines * in.shape().samples),
        scale_(fs / (2 * std::numbers::pi)),
        d_(ctx, in.shape(), time_difference::unwrapped_phase,
           [this](std::uint64_t il, float* dst) { phase(il, dst); }) {}
  /// The stream of an attribute with `sample_rate`.
  frequency_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, const sample_rate_param& p)
      : frequency_stream(ctx, ws, in, p.fs()) {}

  void next(std::uint64_t il, float* dst) {
    if constexpr (!Ctx::computes) return;
    d_.next(il, dst);
    ctx_->parallel_for(
        slice_,
        [&](std::uint64_t b, std::uint64_t e, std::size_t) {
          for (auto k = b; k < e; ++k) dst[k] = static_cast<float>(std::abs(dst[k] * scale_));
        },
        4096);
  }

 private:
  // Wrapped phase of the traces of slice il (the stream unwraps its steps).
  void phase(std::uint64_t il, float* dst) const {
    const auto nt = in_.shape().samples;
    ctx_->parallel_for(in_.shape().crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
      for (auto x = b; x < e; ++x) {
        angle(interleaved_samples{ws_->analytic(slot, in_.trace(il, x).data())}, dst + x * nt, nt);
      }
    });
  }

  Ctx* ctx_;
  const analytic_workspace<Ctx>* ws_;
  cube_view<const float> in_;
  std::uint64_t slice_;
  double scale_;
  derivative_stream<Ctx> d_;
};

/// Runs `stream.next` for every inline slice of `out`, then finish(il, slice).
template <class Ctx, class Stream, class Finish>
void stream_slices(Ctx&, Stream& stream, cube_view<float> out, Finish&& finish) {
  if constexpr (!Ctx::computes) return;
  const auto slice = out.shape().crosslines * out.shape().samples;
  for (std::uint64_t il = 0; il < out.shape().inlines; ++il) {
    float* dst = out.data() + il * slice;
    stream.next(il, dst);
    finish(il, dst);
  }
}

/// One inline slice of a streamed attribute as its finish step sees it: the
/// stream's values `y` (crosslines x samples, rewritten in place) and what
/// computing more of the slice needs.
template <class Ctx>
struct attribute_slice {
  Ctx& ctx;
  const analytic_workspace<Ctx>& ws;
  cube_view<const float> in;
  std::uint64_t il;
  float* y;
  std::uint64_t size() const { return in.shape().crosslines * in.shape().samples; }
};

/// For every trace of the slice: f(env, x, y) with the trace's envelope, samples and values.
template <class Ctx, class F>
void with_envelope(const attribute_slice<Ctx>& s, F&& f) {
  const auto nt = s.in.shape().samples;
  s.ctx.parallel_for(s.in.shape().crosslines, [&](std::uint64_t b, std::uint64_t e, std::size_t slot) {
    for (auto x = b; x < e; ++x) {
      const float* trace = s.in.trace(s.il, x).data();
      float* env = s.ws.real_scratch(slot);
      modulus(interleaved_samples{s.ws.analytic(slot, trace)}, env, nt);
      f(env, trace, s.y + x * nt);
    }
  });
}

/// An attribute that is a pointwise function of the analytic signal, written
/// a trace at a time: Derived::of_trace(a, y, n) writes the n samples of y
/// from the trace's analytic signal a.
template <class Derived>
struct pointwise_attribute : no_params, complex_trace_halo<0> {
  using no_params::no_params;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto n = in.shape().samples;
    const auto y = out[0].as<float>();
    for_each_analytic(ctx, in, [&](std::uint64_t tr, const std::complex<float>* a, std::size_t, const auto&) {
      Derived::of_trace(a, y.trace(tr).data(), n);
    });
  }
};

/// A per-lobe response: Derived::at_peak(a, x, env, p), the value at each
/// envelope lobe's peak p, spread over the lobe (a, x, env: the trace's
/// analytic signal, samples and envelope).
template <class Derived>
struct lobe_response : no_params, complex_trace_halo<0> {
  using no_params::no_params;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto n = in.shape().samples;
    auto y = out[0].as<float>();
    for_each_analytic(ctx, in, [&](std::uint64_t tr, const std::complex<float>* a, std::size_t slot, const auto& ws) {
      const float* x = in.trace(tr).data();
      float* env = ws.real_scratch(slot);
      modulus(interleaved_samples{a}, env, n);
      spread_over_lobes(env, n, y.trace(tr).data(), [&](std::uint64_t p) { return Derived::at_peak(a, x, env, p); });
    });
  }
};

/// An attribute streamed slice by slice from Stream (rac_stream or
/// frequency_stream, configured by Params): each slice of the stream,
/// post-processed in place by Derived::finish(attribute_slice), is the output.
template <class Derived, class Params, template <class> class Stream>
struct streamed_attribute : Params, complex_trace_halo<1> {
  using Params::Params;
  /// Keeps the stream's values (Derived may hide it).
  static void finish(const auto&) {}

  /// Calls f(ws, stream) with the analytic workspace of `in` and the stream over it.
  template <class Ctx, class F>
  void with_stream(Ctx& ctx, cube_view<const float> in, F&& f) const {
    analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    Stream<Ctx> stream(ctx, ws, in, static_cast<const Params&>(*this));
    f(ws, stream);
  }

  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    with_stream(ctx, in, [&](const analytic_workspace<Ctx>& ws, auto& stream) {
      stream_slices(ctx, stream, out[0].as<float>(), [&](std::uint64_t il, float* y) {
        Derived::finish(attribute_slice<Ctx>{ctx, ws, in, il, y});
      });
    });
  }
};

/// Attributes of the relative amplitude change of the envelope.
template <class Derived>
using rac_attribute = streamed_attribute<Derived, no_params, rac_stream>;
/// Attributes of the instantaneous frequency.
template <class Derived>
using frequency_attribute = streamed_attribute<Derived, sample_rate_param, frequency_stream>;

/// An attribute of the instantaneous frequency and the envelope, trace by
/// trace: Derived::of_trace(env, y, n) rewrites the frequency trace y (n
/// samples) from it and the envelope env.
template <class Derived>
struct frequency_envelope_attribute : frequency_attribute<Derived> {
  using frequency_attribute<Derived>::frequency_attribute;
  static void finish(const auto& slice) {
    const auto n = slice.in.shape().samples;
    with_envelope(slice, [&](const float* env, const float*, float* y) { Derived::of_trace(env, y, n); });
  }
};

/// D(Of) of a streamed attribute Of: its stream differentiated once more along
/// time (the reference's FirstDerivative), one more neighbour across inline and crossline.
template <class Of>
struct derivative_attribute : Of {
  using Of::Of;
  dwsr::halo halo() const { return complex_trace_halo<2>{}.halo(); }
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    this->with_stream(ctx, in, [&](const auto&, auto& stream) {
      derivative_stream<Ctx> d(ctx, in.shape(), time_difference::plain,
                               [&stream](std::uint64_t il, float* dst) { stream.next(il, dst); });
      stream_slices(ctx, d, out[0].as<float>(), [](std::uint64_t, float*) {});
    });
  }
};

/// An attribute combining the instantaneous frequency with the relative
/// amplitude change, voxel by voxel: Derived::combine(frequency, rac, count)
/// rewrites `count` frequencies from them, slice by slice (one extra slice).
template <class Derived>
struct frequency_and_rac_attribute : sample_rate_param, complex_trace_halo<1> {
  using sample_rate_param::sample_rate_param;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    frequency_stream<Ctx> freq(ctx, ws, in, fs());
    rac_stream<Ctx> rac(ctx, ws, in);
    const auto slice = in.shape().crosslines * in.shape().samples;
    auto rac_slice = ctx.template allocate<float>(slice, buffer_role::workspace);
    stream_slices(ctx, freq, out[0].as<float>(), [&](std::uint64_t il, float* y) {
      rac.next(il, rac_slice.data());
      const float* r = rac_slice.data();
      ctx.parallel_for(
          slice, [&](std::uint64_t b, std::uint64_t e, std::size_t) { Derived::combine(y + b, r + b, e - b); }, 4096);
    });
  }
};

}  // namespace dwsr::operators::detail
