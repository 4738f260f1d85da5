#pragma once
/// \file The fused analytic-signal kernel: for traces of 2^L samples (16 to
/// 4096), each group of n / 16 threads reads two traces, computes their
/// Hilbert transforms in registers and shared memory (trace_fft.hpp) and
/// hands every sample's (x, H(x)) to the store, which writes the attribute.
///
/// Memory (device): none beyond the operator's input and output, against
/// the cuFFT path's work area and batch buffers (hilbert_batches.cuh).
/// Device traffic: the cube read once (twice from cache: the store re-reads
/// x) and the output written once, against about 7 bytes a byte of cube
/// through cuFFT's passes and the separate rotation and map.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "dwsr/exec/detail/cuda_check.hpp"
#include "dwsr/operators/cuda/detail/trace_fft.hpp"

namespace dwsr::operators::cuda::detail {

/// Threads per block of the fused kernel: 256 / (n / 16) groups of n / 16.
inline constexpr int fused_block = 256;

/// Blocks per multiprocessor the registers must allow (__launch_bounds__):
/// measured on an H200 (512x512x1024 and equal-sized cubes, envelope), 4
/// resident blocks ran 1.1 to 1.4x faster than the compiler's own choice
/// for 2^6..2^11 samples; more blocks spill. 2^5 and 2^12 were fastest at 3.
template <int L>
inline constexpr int fused_min_blocks = (L == 5 || L == 12) ? 3 : 4;

/// Block `offset + blockIdx.x` takes pairs of traces of `fused_block / (n / 16)`
/// groups. One block per set of groups, no grid-stride loop: the loop
/// raised the kernel's registers by half (ptxas, sm_90).
template <int L, class Store>
__global__ void __launch_bounds__(fused_block, fused_min_blocks<L>)
    fused_hilbert_kernel(const float* x, std::uint64_t traces, std::uint64_t offset, Store store) {
  constexpr int n = 1 << L, threads = n / 16, groups = fused_block / threads, floats = group_floats(n);
  __shared__ float re[groups * floats], im[groups * floats];
  const int g = int(threadIdx.x) / threads, t = int(threadIdx.x) % threads;
  const std::uint64_t first = ((offset + blockIdx.x) * groups + std::uint64_t(g)) * 2;  // the pair's first trace
  const float* a = first < traces ? x + first * n : nullptr;
  const float* b = first + 1 < traces ? a + n : nullptr;
  hilbert_pair<L>(
      t, re + g * floats, im + g * floats,
      [&](int k) {
        return cfloat{a ? a[k] : 0.0f, b ? b[k] : 0.0f};
      },
      [&](int k, float h1, float h2) {
        if (a) store(first * n + std::uint64_t(k), a[k], h1);
        if (b) store((first + 1) * n + std::uint64_t(k), b[k], h2);
      },
      [] { __syncthreads(); });
}

template <int L, class Store>
void launch_fused_hilbert(cudaStream_t stream, const float* x, std::uint64_t traces, const Store& store) {
  constexpr int groups = fused_block / ((1 << L) / 16);
  constexpr std::uint64_t max_grid = (std::uint64_t{1} << 31) - 1;
  const std::uint64_t pairs = (traces + 1) / 2, blocks = (pairs + groups - 1) / groups;
  for (std::uint64_t offset = 0; offset < blocks; offset += max_grid) {
    const auto grid = static_cast<unsigned>(std::min(blocks - offset, max_grid));
    fused_hilbert_kernel<L><<<grid, fused_block, 0, stream>>>(x, traces, offset, store);
    dwsr::detail::cuda_check(cudaGetLastError(), "fused Hilbert kernel launch");
  }
}

/// Calls store(i, x[i], H(x)[i]) on the device for every sample of `traces`
/// traces of 2^l samples at x (l from fused_log2), on `stream`.
template <class Store>
void fused_hilbert(cudaStream_t stream, const float* x, std::uint64_t traces, int l, const Store& store) {
  if (traces == 0) return;
  switch (l) {
    case 4: return launch_fused_hilbert<4>(stream, x, traces, store);
    case 5: return launch_fused_hilbert<5>(stream, x, traces, store);
    case 6: return launch_fused_hilbert<6>(stream, x, traces, store);
    case 7: return launch_fused_hilbert<7>(stream, x, traces, store);
    case 8: return launch_fused_hilbert<8>(stream, x, traces, store);
    case 9: return launch_fused_hilbert<9>(stream, x, traces, store);
    case 10: return launch_fused_hilbert<10>(stream, x, traces, store);
    case 11: return launch_fused_hilbert<11>(stream, x, traces, store);
    case 12: return launch_fused_hilbert<12>(stream, x, traces, store);
    default:
      throw invalid_input("fused Hilbert path: traces of 2^" + std::to_string(l) + " samples are outside 2^" +
                          std::to_string(fused_min_log2) + "..2^" + std::to_string(fused_max_log2));
  }
}

}  // namespace dwsr::operators::cuda::detail
