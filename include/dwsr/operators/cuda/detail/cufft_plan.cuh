#pragma once
/// \file Batched 1-D cuFFT plans whose work area is a dwsr buffer: plans are
/// made with auto-allocation off and use a work area allocated through the
/// context (role workspace), so the library's scratch is an event too.
///
/// The size of a work area is known only once a plan is made, which needs a
/// device; the meta context has none. Both contexts therefore allocate
/// `work_area_bound(n, batch)`, a documented upper bound, and the real
/// context checks cuFFT's own size against it when it makes the plan (a GPU
/// test checks the bound over many lengths): plan == run holds by
/// construction, at the price of the bound's slack.
///
/// The bound: cuFFT computes lengths whose prime factors are at most 127
/// with its radix kernels, needing at most one complex intermediate of the
/// batch (batch x (n/2 + 1) complex; measured on an H200 with CUDA 13.0: no
/// work area at all for lengths 64 to 2048); other lengths use Bluestein's
/// algorithm, a convolution of length m = the next power of two >= 2n - 1,
/// needing at most one complex array of m per transform (measured: half of
/// it for n = 257). scripts/gpu-validate.sh reports the measured sizes.

#include <cufft.h>

#include <cstdint>
#include <string>

#include "dwsr/error.hpp"
#include "dwsr/memory/buffer.hpp"
#include "dwsr/operators/cuda/detail/cufft_library.hpp"

namespace dwsr::operators::cuda::detail {

/// Largest prime factor of n (n >= 1).
inline std::uint64_t largest_prime_factor(std::uint64_t n) {
  std::uint64_t largest = 1;
  for (std::uint64_t p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      largest = p;
      n /= p;
    }
  return n > 1 ? n : largest;
}

/// Upper bound, in bytes, of cuFFT's work area for `batch` real transforms of
/// length n (R2C or C2R); see the file comment.
inline std::uint64_t work_area_bound(std::uint64_t n, std::uint64_t batch) {
  constexpr std::uint64_t complex_bytes = 8;
  if (largest_prime_factor(n) <= 127) return batch * (n / 2 + 1) * complex_bytes;
  std::uint64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  return batch * m * complex_bytes;
}

/// Throws device_error naming `what` unless `status` is CUFFT_SUCCESS.
inline void cufft_check(cufftResult status, const char* what) {
  if (status != CUFFT_SUCCESS)
    throw device_error(std::string(what) + " failed: cuFFT status " + std::to_string(int(status)));
}

/// A batched 1-D real transform (R2C forward or C2R backward) of length n over
/// `batch` contiguous traces, on the context's stream, with its work area
/// from `work` (at least work_area_bound(n, batch) bytes). Under the meta
/// context it is an empty shell.
template <class Ctx>
class real_fft_plan {
 public:
  real_fft_plan([[maybe_unused]] Ctx& ctx, std::uint64_t n, std::uint64_t batch, cufftType type, void* work,
                std::uint64_t work_bytes) {
    if constexpr (Ctx::computes) {
      const auto& fft = cufft();
      cufft_check(fft.create(&handle_), "cufftCreate");
      made_ = true;
      try {
        cufft_check(fft.set_auto_allocation(handle_, 0), "cufftSetAutoAllocation");
        long long len = static_cast<long long>(n), half = len / 2 + 1;
        const bool forward = type == CUFFT_R2C;
        long long* in_embed = forward ? &len : &half;
        long long* out_embed = forward ? &half : &len;
        std::size_t size = 0;
        cufft_check(fft.make_plan_many64(handle_, 1, &len, in_embed, 1, *in_embed, out_embed, 1, *out_embed, type,
                                         static_cast<long long>(batch), &size),
                    "cufftMakePlanMany64");
        work_size_ = size;
        if (size > work_bytes)
          throw device_error("cuFFT asks for a work area of " + std::to_string(size) + " bytes for " +
                             std::to_string(batch) + " transforms of length " + std::to_string(n) +
                             ", above dwsr's bound of " + std::to_string(work_bytes) +
                             " bytes (operators/cuda/detail/cufft_plan.cuh); please report it");
        cufft_check(fft.set_work_area(handle_, work), "cufftSetWorkArea");
        cufft_check(fft.set_stream(handle_, ctx.stream()), "cufftSetStream");
      } catch (...) {
        fft.destroy(handle_);
        made_ = false;
        throw;
      }
    }
  }
  real_fft_plan(const real_fft_plan&) = delete;
  real_fft_plan& operator=(const real_fft_plan&) = delete;
  ~real_fft_plan() {
    if (made_) cufft().destroy(handle_);
  }

  /// Forward: real `in` (batch x n) to the half spectra `out` (batch x (n/2 + 1)).
  void forward(float* in, cufftComplex* out) const { cufft_check(cufft().exec_r2c(handle_, in, out), "cufftExecR2C"); }
  /// Backward: half spectra `in` (overwritten) to real `out`, unnormalised.
  void backward(cufftComplex* in, float* out) const { cufft_check(cufft().exec_c2r(handle_, in, out), "cufftExecC2R"); }
  /// The work area cuFFT asked for (0 under the meta context).
  std::uint64_t work_size() const noexcept { return work_size_; }

 private:
  cufftHandle handle_{};
  bool made_ = false;
  std::uint64_t work_size_ = 0;
};

}  // namespace dwsr::operators::cuda::detail
