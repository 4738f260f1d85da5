#pragma once
/// \file Per-trace convolution with a fixed wavelet, cropped like
/// scipy.signal.fftconvolve(trace, wavelet, mode='same'), through single-
/// precision FFTW: the trace is zero-padded to a fast length L >= n + m - 1
/// (so the circular convolution is the linear one), multiplied by the
/// wavelet's spectrum and transformed back. For the reference's 128-tap
/// wavelets this is about 15x faster than direct convolution.

#include <fftw3.h>

#include <complex>
#include <cstdint>
#include <optional>
#include <utility>

#include "dwsr/memory/buffer.hpp"
#include "dwsr/operators/detail/analytic_signal.hpp"

namespace dwsr::operators::detail {

/// The smallest L >= n whose only prime factors are 2, 3, 5 and 7 (FFTW's fast sizes).
inline std::uint64_t fast_fft_length(std::uint64_t n) {
  for (std::uint64_t l = n < 1 ? 1 : n;; ++l) {
    std::uint64_t r = l;
    for (std::uint64_t p : {2u, 3u, 5u, 7u})
      while (r % p == 0) r /= p;
    if (r == 1) return l;
  }
}

/// The forward real-to-complex and backward complex-to-real plans of length L.
class real_fft_pair {
 public:
  real_fft_pair(std::uint64_t l, float* real, std::complex<float>* spectrum)
      : plans_([&] {
          auto* c = reinterpret_cast<fftwf_complex*>(spectrum);
          return std::pair(fftwf_plan_dft_r2c_1d(static_cast<int>(l), real, c, FFTW_ESTIMATE),
                           fftwf_plan_dft_c2r_1d(static_cast<int>(l), c, real, FFTW_ESTIMATE));
        }) {}
  void forward(float* real, std::complex<float>* spectrum) const {
    fftwf_execute_dft_r2c(plans_.forward, real, reinterpret_cast<fftwf_complex*>(spectrum));
  }
  /// Overwrites `spectrum` (FFTW's complex-to-real transforms destroy their input).
  void backward(std::complex<float>* spectrum, float* real) const {
    fftwf_execute_dft_c2r(plans_.backward, reinterpret_cast<fftwf_complex*>(spectrum), real);
  }

 private:
  fftw_plans plans_;
};

/// Convolves traces of n samples with one wavelet on T threads. Memory, all
/// through the context (role workspace): the wavelet's spectrum and, per
/// thread, one padded real trace and one spectrum.
template <class Ctx>
class wavelet_convolution {
 public:
  /// An m-tap `wavelet` (m >= 1, read only here, only by computing contexts).
  wavelet_convolution(Ctx& ctx, std::uint64_t n, std::uint64_t m, const double* wavelet)
      : n_(n),
        m_(m),
        l_(fast_fft_length(n + m - 1)),
        bins_(l_ / 2 + 1),
        real_stride_(aligned_stride(l_, sizeof(float))),
        complex_stride_(aligned_stride(bins_, sizeof(std::complex<float>))),
        kernel_(ctx.template allocate<std::complex<float>>(bins_, buffer_role::workspace)),
        real_(ctx.template allocate<float>(real_stride_ * ctx.threads(), buffer_role::workspace)),
        spectrum_(ctx.template allocate<std::complex<float>>(complex_stride_ * ctx.threads(), buffer_role::workspace)) {
    if constexpr (Ctx::computes) {
      plans_.emplace(l_, real_.data(), spectrum_.data());
      // The wavelet's spectrum, once, with the inverse transform's 1/L folded in.
      float* r = real_.data();
      for (std::uint64_t t = 0; t < l_; ++t) r[t] = t < m_ ? static_cast<float>(wavelet[t]) : 0.0f;
      plans_->forward(r, kernel_.data());
      const float scale = 1.0f / static_cast<float>(l_);
      for (std::uint64_t k = 0; k < bins_; ++k) kernel_[k] *= scale;
    }
  }

  /// c[k] *= k[k] for k < n with the textbook products (ac - bd, ad + bc),
  /// which is what std::complex's operator*= computes for finite values, but
  /// without its NaN check and recovery call, which keep the loop from
  /// vectorising (infinite spectra give NaN either way after the inverse transform).
  static void multiply(std::complex<float>* c, const std::complex<float>* k, std::uint64_t n) {
    auto* cf = reinterpret_cast<float*>(c);
    const auto* kf = reinterpret_cast<const float*>(k);
    for (std::uint64_t i = 0; i < 2 * n; i += 2) {
      const float ar = cf[i], ai = cf[i + 1], br = kf[i], bi = kf[i + 1];
      cf[i] = ar * br - ai * bi;
      cf[i + 1] = ar * bi + ai * br;
    }
  }

  /// FFT length used for traces of n samples and an m-tap wavelet.
  std::uint64_t fft_length() const { return l_; }

  /// y = fftconvolve(x, wavelet, mode='same'), both n samples, with the slot's scratch.
  void convolve(std::size_t slot, const float* x, float* y) const {
    float* r = real_.data() + slot * real_stride_;
    std::complex<float>* c = spectrum_.data() + slot * complex_stride_;
    for (std::uint64_t t = 0; t < n_; ++t) r[t] = x[t];
    for (std::uint64_t t = n_; t < l_; ++t) r[t] = 0.0f;
    plans_->forward(r, c);
    multiply(c, kernel_.data(), bins_);
    plans_->backward(c, r);
    // 'same': the centred n samples of the n + m - 1 of the full convolution.
    const std::uint64_t start = (m_ - 1) / 2;
    for (std::uint64_t t = 0; t < n_; ++t) y[t] = r[start + t];
  }

 private:
  std::uint64_t n_, m_, l_, bins_, real_stride_, complex_stride_;
  buffer<std::complex<float>, Ctx> kernel_;
  buffer<float, Ctx> real_;
  buffer<std::complex<float>, Ctx> spectrum_;
  std::optional<real_fft_pair> plans_;
};

}  // namespace dwsr::operators::detail
