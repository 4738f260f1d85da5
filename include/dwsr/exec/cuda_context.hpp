#pragma once
/// \file The real CUDA execution: device buffers from a memory pool of the
/// context's own through the stream-ordered allocator
/// (cudaMallocFromPoolAsync / cudaFreeAsync on the context's stream), pinned
/// host staging (cudaMallocHost), each an event (device cuda or host), and
/// parallel_for as a kernel launch on the stream.
///
/// The pool is the context's alone, so its attributes measure dwsr's device
/// memory and nothing else: `usage()` reads what the pool hands out (used)
/// and what it holds from the device (reserved). Its release threshold is 0:
/// at each synchronisation the pool gives freed memory back to the device, so
/// cudaMemGetInfo follows the live buffers (rounded up to the pool's
/// granularity) rather than a cache. Kernels and cuFFT run on the stream;
/// `synchronize()` waits for them.
///
/// The budget (context_options::budget) bounds the live device bytes: a CUDA
/// worker's budget is its GPU's memory. Pinned staging is host memory and is
/// emitted outside the budget.
///
/// parallel_for(n, f) launches f(i, i + 1, 0) for every i in [0, n) on the
/// device, so f must be a `__device__` (or `__host__ __device__`) lambda: an
/// operator that uses it is compiled by nvcc (--extended-lambda).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "dwsr/exec/context_base.hpp"
#include "dwsr/exec/detail/cuda_check.hpp"
#include "dwsr/memory/buffer.hpp"

namespace dwsr {

/// Bytes of a CUDA context's memory pool.
struct cuda_pool_usage {
  std::uint64_t used = 0;           ///< handed out to live buffers now
  std::uint64_t used_high = 0;      ///< highest `used` since the last reset_high()
  std::uint64_t reserved = 0;       ///< held from the device now
  std::uint64_t reserved_high = 0;  ///< highest `reserved` since the last reset_high()
};

namespace detail {
#ifdef __CUDACC__
/// One thread per index, grid-stride: f(i, i + 1, 0).
template <class F>
__global__ void grid_stride_kernel(std::uint64_t n, F f) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    f(i, i + 1, std::size_t{0});
}
#endif
template <class>
inline constexpr bool dependent_false = false;
}  // namespace detail

/// Executes operators for real on one CUDA device.
class cuda_context : public context_base {
 public:
  /// Operators compute only when this is true.
  static constexpr bool computes = true;
  static constexpr device memory_device = device::cuda;

  /// A context on device `ordinal` with its own stream and memory pool.
  /// Throws device_error when the device cannot be used.
  explicit cuda_context(event_bus& bus, context_options options = {}, int ordinal = 0)
      : context_base(bus, std::move(options)), ordinal_(ordinal) {
    int count = 0;
    detail::cuda_check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
    if (ordinal < 0 || ordinal >= count)
      throw device_error("CUDA device " + std::to_string(ordinal) + " does not exist; this machine has " +
                         std::to_string(count) + " (expected 0 to " + std::to_string(count - 1) + ")");
    detail::cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
    detail::cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = ordinal;
    if (const auto status = cudaMemPoolCreate(&pool_, &props); status != cudaSuccess) {
      cudaStreamDestroy(stream_);
      detail::cuda_check(status, "cudaMemPoolCreate");
    }
    std::uint64_t threshold = 0;
    cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold);
  }
  cuda_context(const cuda_context&) = delete;
  cuda_context& operator=(const cuda_context&) = delete;
  ~cuda_context() {
    cudaStreamSynchronize(stream_);
    cudaMemPoolDestroy(pool_);
    cudaStreamDestroy(stream_);
  }

  /// Allocates `count` elements of T on the device (uninitialised), stream-ordered.
  template <class T>
  buffer<T, cuda_context> allocate(std::uint64_t count, buffer_role role) {
    const event e = admit(count * sizeof(T), device::cuda, role);
    void* p = nullptr;
    if (e.bytes) {
      if (const auto status = cudaMallocFromPoolAsync(&p, e.bytes, pool_, stream_); status != cudaSuccess) {
        retire(e);
        cudaGetLastError();  // clear the sticky-free error state of a failed allocation
        if (status == cudaErrorMemoryAllocation)
          throw out_of_memory(options().name + ": the device refused " + std::to_string(e.bytes) + " bytes", e.bytes,
                              options().budget);
        detail::cuda_check(status, "cudaMallocFromPoolAsync");
      }
    }
    return {*this, static_cast<T*>(p), count, e};
  }

  /// Allocates `count` elements of T of pinned host memory (staging for
  /// transfers), emitted as a host event outside the budget.
  template <class T>
  buffer<T, cuda_context> allocate_host(std::uint64_t count, buffer_role role) {
    const event e = admit_outside_budget(count * sizeof(T), device::host, role);
    void* p = nullptr;
    if (e.bytes) {
      if (const auto status = cudaMallocHost(&p, e.bytes); status != cudaSuccess) {
        retire_outside_budget(e);
        detail::cuda_check(status, "cudaMallocHost");
      }
    }
    return {*this, static_cast<T*>(p), count, e};
  }

#ifdef __CUDACC__
  /// Launches f(i, i + 1, 0) for i in [0, n) on the stream (f: a device lambda).
  template <class F>
  void parallel_for(std::uint64_t n, F&& f, std::uint64_t = 1) {
    if (n == 0) return;
    check_cancelled();
    constexpr unsigned threads_per_block = 256;
    const auto blocks = static_cast<unsigned>(
        std::min<std::uint64_t>((n + threads_per_block - 1) / threads_per_block, std::uint64_t{1} << 20));
    detail::grid_stride_kernel<<<blocks, threads_per_block, 0, stream_>>>(n, std::forward<F>(f));
    detail::cuda_check(cudaGetLastError(), "kernel launch");
  }
#else
  /// Declared for the ExecutionContext concept; launching needs nvcc.
  template <class F>
  void parallel_for(std::uint64_t, F&&, std::uint64_t = 1) {
    static_assert(detail::dependent_false<F>, "cuda_context::parallel_for launches a kernel: compile with nvcc");
  }
#endif

  /// Runs host code that enqueues work on the stream (skipped by the meta context).
  template <class F>
  void compute(F&& f) {
    check_cancelled();
    f();
  }

  /// Copies `bytes` between host and device (or within either), stream-ordered.
  void copy(void* dst, const void* src, std::uint64_t bytes) {
    if (bytes) detail::cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
  }
  /// Waits for everything enqueued on the stream; throws device_error on a failed kernel.
  void synchronize() const { detail::cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

  cudaStream_t stream() const noexcept { return stream_; }
  int ordinal() const noexcept { return ordinal_; }

  /// What the context's pool hands out and holds.
  cuda_pool_usage usage() const {
    cuda_pool_usage u;
    auto read = [&](cudaMemPoolAttr a, std::uint64_t& v) {
      detail::cuda_check(cudaMemPoolGetAttribute(pool_, a, &v), "cudaMemPoolGetAttribute");
    };
    read(cudaMemPoolAttrUsedMemCurrent, u.used);
    read(cudaMemPoolAttrUsedMemHigh, u.used_high);
    read(cudaMemPoolAttrReservedMemCurrent, u.reserved);
    read(cudaMemPoolAttrReservedMemHigh, u.reserved_high);
    return u;
  }
  /// Starts the high watermarks of usage() anew.
  void reset_high() {
    std::uint64_t zero = 0;
    detail::cuda_check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero), "cudaMemPoolSetAttribute");
    detail::cuda_check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero),
                       "cudaMemPoolSetAttribute");
  }

 private:
  template <class, class>
  friend class buffer;

  /// Emits the free event, then frees stream-ordered (device) or at once (pinned host).
  void release(void* data, const event& allocated) noexcept {
    if (allocated.dev == device::cuda) {
      retire(allocated);
      if (data) cudaFreeAsync(data, stream_);
    } else {
      retire_outside_budget(allocated);
      if (data) cudaFreeHost(data);
    }
  }

  int ordinal_;
  cudaStream_t stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
};

}  // namespace dwsr
