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
  static constexpr bool fft_based = true;  ///< the analytic signal is an FFT per trace
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

/// relative_amplitude_change, one inline slice at a time: clip(D(env) / env, -1, 1), NaN -> 0.
template <class Ctx>
class rac_stream {
 public:
  /// The stream of the envelopes that `envelope(il, x, slot, kept)` writes to
  /// `kept` (and returns).
  rac_stream(Ctx& ctx, shape3 shape, typename derivative_stream<Ctx>::trace_fn envelope)
      : n_(shape.samples), d_(ctx, shape, time_difference::plain, std::move(envelope)) {}
  /// The stream of the envelopes of `in`'s analytic signals.
  rac_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in)
      : ws_(&ws),
        in_(in),
        n_(in.shape().samples),
        d_(ctx, in.shape(), time_difference::plain, [this](auto il, auto x, auto slot, float* env) {
          modulus(interleaved_samples{ws_->analytic(slot, in_.trace(il, x).data())}, env, in_.shape().samples);
          return static_cast<const float*>(env);
        }) {}
  /// The stream of an attribute without parameters (the envelope, its source, is always kept).
  rac_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, const no_params&, bool = true)
      : rac_stream(ctx, ws, in) {}

  /// Writes slice il to dst, then calls finish(x, y, envelope) per trace.
  template <class Finish = keep_derivative>
  void next(std::uint64_t il, float* dst, Finish&& finish = {}) {
    d_.next(il, dst, [&](std::uint64_t x, float* y, const float* env) {
      for (std::uint64_t t = 0; t < n_; ++t) y[t] = std::clamp(nan_to_zero(y[t] / env[t]), -1.0f, 1.0f);
      finish(x, y, env);
    });
  }

 private:
  const analytic_workspace<Ctx>* ws_ = nullptr;
  cube_view<const float> in_;
  std::uint64_t n_;
  derivative_stream<Ctx> d_;
};

/// instantaneous_frequency, one inline slice at a time: |D(unwrap(phase))| fs / 2 pi.
/// Optionally keeps the envelopes of the slice (source_slice) for attributes
/// that combine the two, from the same analytic signals.
template <class Ctx>
class frequency_stream {
 public:
  frequency_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, double fs,
                   bool keep_envelope = false)
      : ws_(&ws),
        in_(in),
        scale_(fs / (2 * std::numbers::pi)),
        keep_envelope_(keep_envelope),
        d_(ctx, in.shape(), time_difference::unwrapped_phase,
           [this](auto il, auto x, auto slot, float* env) { return phase(il, x, slot, env); }) {}
  /// The stream of an attribute with `sample_rate`.
  frequency_stream(Ctx& ctx, const analytic_workspace<Ctx>& ws, cube_view<const float> in, const sample_rate_param& p,
                   bool keep_envelope = false)
      : frequency_stream(ctx, ws, in, p.fs(), keep_envelope) {}

  /// Writes slice il to dst, then calls finish(x, y, envelope) per trace
  /// (the envelope only when kept).
  template <class Finish = keep_derivative>
  void next(std::uint64_t il, float* dst, Finish&& finish = {}) {
    d_.next(il, dst, [&](std::uint64_t x, float* y, const float* env) {
      for (std::uint64_t t = 0; t < n_; ++t) y[t] = static_cast<float>(std::abs(y[t] * scale_));
      finish(x, y, env);
    });
  }
  /// The envelopes of slice il (when kept), valid after next(il) until next(il + 1) returns.
  const float* envelope_slice(std::uint64_t il) const { return d_.source_slice(il); }

 private:
  // Wrapped phase of trace (il, x) in the slot's real scratch (the stream
  // unwraps its steps), and its envelope in env when kept.
  const float* phase(std::uint64_t il, std::uint64_t x, std::size_t slot, float* env) const {
    const auto* a = ws_->analytic(slot, in_.trace(il, x).data());
    if (keep_envelope_) modulus(interleaved_samples{a}, env, n_);
    float* p = ws_->real_scratch(slot);
    angle(interleaved_samples{a}, p, n_);
    return p;
  }

  const analytic_workspace<Ctx>* ws_;
  cube_view<const float> in_;
  std::uint64_t n_ = in_.shape().samples;
  double scale_;
  bool keep_envelope_;
  derivative_stream<Ctx> d_;
};

/// Calls f(il, slice) for every inline slice of `out`, in order.
template <class Ctx, class F>
void for_each_slice(cube_view<float> out, F&& f) {
  if constexpr (!Ctx::computes) return;
  const auto slice = out.shape().crosslines * out.shape().samples;
  for (std::uint64_t il = 0; il < out.shape().inlines; ++il) f(il, out.data() + il * slice);
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
/// post-processed trace by trace in place by Derived::finish(y, env, n) (env:
/// the trace's envelope where the stream keeps it), is the output.
template <class Derived, class Params, template <class> class Stream>
struct streamed_attribute : Params, complex_trace_halo<1> {
  using Params::Params;
  /// Whether finish reads the envelope (a frequency stream then keeps it).
  static constexpr bool reads_envelope = false;
  /// Keeps the stream's values (Derived may hide it).
  static void finish(float*, const float*, std::uint64_t) {}

  /// Calls f(ws, stream) with the analytic workspace of `in` and the stream over it.
  template <class Ctx, class F>
  void with_stream(Ctx& ctx, cube_view<const float> in, F&& f) const {
    analytic_workspace<Ctx> ws(ctx, in.shape().samples);
    Stream<Ctx> stream(ctx, ws, in, static_cast<const Params&>(*this), Derived::reads_envelope);
    f(ws, stream);
  }

  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto n = in.shape().samples;
    with_stream(ctx, in, [&](const analytic_workspace<Ctx>&, auto& stream) {
      for_each_slice<Ctx>(out[0].as<float>(), [&](std::uint64_t il, float* y) {
        stream.next(il, y, [n](std::uint64_t, float* yt, const float* env) { Derived::finish(yt, env, n); });
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
/// samples) from it and the envelope env (kept by the stream from the same
/// analytic signals).
template <class Derived>
struct frequency_envelope_attribute : frequency_attribute<Derived> {
  using frequency_attribute<Derived>::frequency_attribute;
  static constexpr bool reads_envelope = true;
  static void finish(float* y, const float* env, std::uint64_t n) { Derived::of_trace(env, y, n); }
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
      derivative_stream<Ctx> d(
          ctx, in.shape(), time_difference::plain,
          typename derivative_stream<Ctx>::slice_fn([&stream](std::uint64_t il, float* dst) { stream.next(il, dst); }));
      for_each_slice<Ctx>(out[0].as<float>(), [&](std::uint64_t il, float* y) { d.next(il, y); });
    });
  }
};

/// An attribute combining the instantaneous frequency with the relative
/// amplitude change, voxel by voxel: Derived::combine(frequency, rac, count)
/// rewrites `count` frequencies from them, slice by slice (one extra slice).
/// Both streams share one analytic signal per trace: the relative amplitude
/// change differentiates the envelopes the frequency stream keeps.
template <class Derived>
struct frequency_and_rac_attribute : sample_rate_param, complex_trace_halo<1> {
  using sample_rate_param::sample_rate_param;
  template <ExecutionContext Ctx>
  void run(Ctx& ctx, cube_view<const float> in, std::span<const array_ref> out) const {
    const auto n = in.shape().samples;
    analytic_workspace<Ctx> ws(ctx, n);
    frequency_stream<Ctx> freq(ctx, ws, in, fs(), true);
    rac_stream<Ctx> rac(ctx, in.shape(), [&freq, n](std::uint64_t il, std::uint64_t x, std::size_t, float* env) {
      const float* kept = freq.envelope_slice(il) + x * n;
      std::copy(kept, kept + n, env);
      return static_cast<const float*>(env);
    });
    auto rac_slice = ctx.template allocate<float>(in.shape().crosslines * n, buffer_role::workspace);
    // rac.next(il) reads the envelopes of slices il and il + 1, which
    // freq.next(il) has just computed.
    for_each_slice<Ctx>(out[0].as<float>(), [&](std::uint64_t il, float* y) {
      freq.next(il, y);
      rac.next(il, rac_slice.data(),
               [&](std::uint64_t x, float* r, const float*) { Derived::combine(y + x * n, r, n); });
    });
  }
};

}  // namespace dwsr::operators::detail
