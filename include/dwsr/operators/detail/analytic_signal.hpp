#pragma once
/// \file Per-trace analytic signal (scipy.signal.hilbert's definition) with
/// single-precision FFTW, and the per-thread workspace it needs.

#include <fftw3.h>

#include <complex>
#include <cstdint>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include "dwsr/memory/buffer.hpp"

namespace dwsr::operators::detail {

/// FFTW's planner is not thread-safe: plan creation and destruction take this lock.
inline std::mutex& fftw_planner_mutex() {
  static std::mutex m;
  return m;
}

/// Elements per thread slot, rounded so that every slot starts 64-byte aligned
/// (FFTW's new-array execute requires the planning arrays' alignment).
constexpr std::uint64_t aligned_stride(std::uint64_t n, std::uint64_t element_bytes) {
  const std::uint64_t per_line = 64 / element_bytes;
  return (n + per_line - 1) / per_line * per_line;
}

/// A forward and a backward single-precision FFTW plan, created and destroyed
/// under the planner lock. FFTW keeps its own twiddle tables (a few KiB for
/// seismic trace lengths): library memory, not an event.
class fftw_plans {
 public:
  /// make() returns the plans {forward, backward}; it runs under the lock.
  template <class Make>
  explicit fftw_plans(Make&& make) {
    std::lock_guard lock(fftw_planner_mutex());
    std::tie(forward, backward) = make();
  }
  fftw_plans(const fftw_plans&) = delete;
  fftw_plans& operator=(const fftw_plans&) = delete;
  ~fftw_plans() {
    std::lock_guard lock(fftw_planner_mutex());
    fftwf_destroy_plan(forward);
    fftwf_destroy_plan(backward);
  }
  fftwf_plan forward;
  fftwf_plan backward;
};

/// The two FFTW plans of an analytic signal of length n: real-to-complex forward
/// and an in-place complex backward transform.
class analytic_plan {
 public:
  analytic_plan(std::uint64_t n, float* real, std::complex<float>* spectrum)
      : n_(n), plans_([&] {
          auto* c = reinterpret_cast<fftwf_complex*>(spectrum);
          return std::pair(fftwf_plan_dft_r2c_1d(static_cast<int>(n), real, c, FFTW_ESTIMATE),
                           fftwf_plan_dft_1d(static_cast<int>(n), c, c, FFTW_BACKWARD, FFTW_ESTIMATE));
        }) {}

  /// out = analytic signal of `real` (both length n; `real` is preserved).
  void transform(float* real, std::complex<float>* out) const {
    auto* c = reinterpret_cast<fftwf_complex*>(out);
    fftwf_execute_dft_r2c(plans_.forward, real, c);
    // Keep DC (and Nyquist for even n), double positive frequencies, zero the
    // negative ones, and fold in the inverse transform's 1/n.
    const std::uint64_t half = n_ / 2;  // r2c filled bins [0, half]
    const float scale = 1.0f / static_cast<float>(n_);
    out[0] *= scale;
    for (std::uint64_t k = 1; k < (n_ + 1) / 2; ++k) out[k] *= 2.0f * scale;
    if (n_ % 2 == 0 && n_ > 1) out[half] *= scale;
    for (std::uint64_t k = half + 1; k < n_; ++k) out[k] = 0.0f;
    fftwf_execute_dft(plans_.backward, c, c);
  }

 private:
  std::uint64_t n_;
  fftw_plans plans_;
};

/// Scratch for analytic signals of length n on T threads: one real and one
/// complex trace per thread, allocated through the context (role workspace).
template <class Ctx>
class analytic_workspace {
 public:
  analytic_workspace(Ctx& ctx, std::uint64_t n)
      : n_(n),
        real_stride_(aligned_stride(n, sizeof(float))),
        complex_stride_(aligned_stride(n, sizeof(std::complex<float>))),
        real_(ctx.template allocate<float>(real_stride_ * ctx.threads(), buffer_role::workspace)),
        spectrum_(ctx.template allocate<std::complex<float>>(complex_stride_ * ctx.threads(), buffer_role::workspace)) {
    if constexpr (Ctx::computes) plan_.emplace(n, real_.data(), spectrum_.data());
  }

  /// Analytic signal of `trace` in the slot's complex scratch (valid until the
  /// slot's next call).
  const std::complex<float>* analytic(std::size_t slot, const float* trace) const {
    float* r = real_.data() + slot * real_stride_;
    std::complex<float>* a = spectrum_.data() + slot * complex_stride_;
    for (std::uint64_t t = 0; t < n_; ++t) r[t] = trace[t];
    plan_->transform(r, a);
    return a;
  }
  /// The slot's real scratch trace (free for callers once analytic() returned).
  float* real_scratch(std::size_t slot) const { return real_.data() + slot * real_stride_; }

 private:
  std::uint64_t n_;
  std::uint64_t real_stride_;
  std::uint64_t complex_stride_;
  buffer<float, Ctx> real_;
  buffer<std::complex<float>, Ctx> spectrum_;
  std::optional<analytic_plan> plan_;
};

}  // namespace dwsr::operators::detail
