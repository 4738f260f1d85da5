#pragma once
/// \file The definitions of operators/cuda/device_operators.hpp. Include in
/// exactly one CUDA translation unit of a program (they are not inline).

#include <cuda_runtime_api.h>
#include <cufft.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "dwsr/exec/contexts.hpp"
#include "dwsr/exec/cuda_context.hpp"
#include "dwsr/exec/cuda_meta_context.hpp"
#include "dwsr/memory/event_bus.hpp"
#include "dwsr/operators/cuda/complex_trace.cuh"
#include "dwsr/operators/cuda/device_operators.hpp"
#include "dwsr/operators/cuda/frequency.cuh"
#include "dwsr/operators/cuda/gradient.cuh"
#include "dwsr/operators/cuda/semblance.cuh"
#include "dwsr/operators/cuda/structure_tensor.cuh"
#include "dwsr/operators/cuda/window.cuh"

/// Calls X(type) for every CUDA operator (in namespace dwsr::operators::cuda), in catalogue order.
// clang-format off
#define DWSR_FOR_EACH_CUDA_OPERATOR(X) \
  X(hilbert) X(envelope) X(instantaneous_phase) X(cosine_instantaneous_phase) X(relative_amplitude_change) \
  X(amplitude_acceleration) X(instantaneous_frequency) X(instantaneous_bandwidth) X(dominant_frequency) \
  X(frequency_change) X(sweetness) X(quality_factor) X(response_phase) X(response_frequency) X(response_amplitude) \
  X(apparent_polarity) X(phase_rotation) X(first_derivative) X(second_derivative) X(time_gain) \
  X(rescale_amplitude_range) X(rms) X(rms2) X(gradient_magnitude) X(reflection_intensity) X(lowpass_filter) \
  X(highpass_filter) X(bandpass_filter) X(cwt_ricker) X(cwt_ormsby) X(gaussian) X(median) X(convolution) \
  X(gradient_dips) X(gradient_structure_tensor) X(gst_3d_dip) X(gst_3d_azm) X(gst_2d_dips) \
  X(semblance) X(semblance2) X(chaos) X(coherence) X(structured_semblance)
// clang-format on

namespace dwsr::operators::cuda {

namespace detail {

using dwsr::detail::cuda_check;

/// Host -> device (upload) or device -> host through `staging`, a chunk at a time.
template <class Ctx>
void staged_copy(Ctx& ctx, std::byte* staging, std::uint64_t staging_size, void* dst, const void* src,
                 std::uint64_t bytes, bool upload) {
  for (std::uint64_t at = 0; at < bytes; at += staging_size) {
    const auto n = std::min(staging_size, bytes - at);
    if (upload) {
      std::memcpy(staging, static_cast<const std::byte*>(src) + at, n);
      ctx.copy(static_cast<std::byte*>(dst) + at, staging, n);
      ctx.synchronize();
    } else {
      ctx.copy(staging, static_cast<const std::byte*>(src) + at, n);
      ctx.synchronize();
      std::memcpy(static_cast<std::byte*>(dst) + at, staging, n);
    }
  }
}

/// Seconds of the work enqueued on a stream between construction and seconds().
class stream_timer {
 public:
  explicit stream_timer(cudaStream_t stream) : stream_(stream) {
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    if (const auto s = cudaEventCreate(&stop_); s != cudaSuccess) {
      cudaEventDestroy(start_);
      cuda_check(s, "cudaEventCreate");
    }
    cuda_check(cudaEventRecord(start_, stream_), "cudaEventRecord");
  }
  stream_timer(const stream_timer&) = delete;
  stream_timer& operator=(const stream_timer&) = delete;
  ~stream_timer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  /// Waits for the stream; the seconds since construction on it.
  double seconds() {
    cuda_check(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms / 1000.0;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_{}, stop_{};
};

/// The device run of `op` (one schedule for cuda_context and cuda_meta_context):
/// staging in, device input, outputs, the operator, input freed, staging out.
/// Returns the operator's seconds on the stream (0 under the meta context).
template <class Op, class Ctx>
double execute(Ctx& ctx, const Op& op, shape3 shape, const float* host_in, std::span<const array_ref> host_out) {
  const auto in_bytes = shape.voxels() * sizeof(float);
  auto input = ctx.template allocate<float>(shape.voxels(), buffer_role::input);
  {
    const auto size = std::min(in_bytes, staging_bytes);
    auto staging = ctx.template allocate_host<std::byte>(size, buffer_role::input);
    ctx.compute([&] { staged_copy(ctx, staging.data(), size, input.data(), host_in, in_bytes, true); });
  }
  std::vector<buffer<std::byte, Ctx>> outputs;
  std::vector<array_ref> refs;
  std::uint64_t largest = 0;
  for (const auto& spec : op.outputs()) {
    const array_ref r{spec.type, nullptr, shape};
    outputs.push_back(ctx.template allocate<std::byte>(r.bytes(), buffer_role::output));
    refs.push_back({spec.type, outputs.back().data(), shape});
    largest = std::max(largest, r.bytes());
  }
  double seconds = 0;
  if constexpr (Ctx::computes) {
    stream_timer timer(ctx.stream());
    op.run(ctx, cube_view<const float>(input.data(), shape), refs);
    seconds = timer.seconds();
  } else {
    op.run(ctx, cube_view<const float>(input.data(), shape), refs);
  }
  input.reset();
  const auto size = std::min(largest, staging_bytes);
  auto staging = ctx.template allocate_host<std::byte>(size, buffer_role::output);
  ctx.compute([&] {
    for (std::size_t k = 0; k < refs.size(); ++k)
      staged_copy(ctx, staging.data(), size, host_out[k].data, refs[k].data, refs[k].bytes(), false);
  });
  return seconds;
}

/// Reads the device's memory at every device free event (see device_memory_check).
class memory_probe {
 public:
  memory_probe(event_sink_ref next, device_memory_check& out) : next_(next), out_(&out) {}
  /// Starts reading: the context whose pool and stream to read; the current
  /// cudaMemGetInfo use is the baseline.
  void arm(cuda_context& ctx) {
    ctx_ = &ctx;
    ctx.synchronize();
    baseline_ = used();
  }
  void on_event(const event& e) {
    next_.on_event(e);
    if (e.dev != device::cuda || !ctx_) return;
    if (e.act == action::alloc) {
      live_ += e.bytes;
      for (std::size_t g = 0; g < granularities.size(); ++g) rounded_[g] += round_up(e.bytes, granularities[g]);
      out_->live_peak = std::max(out_->live_peak, live_);
      return;
    }
    ctx_->synchronize();
    const auto u = ctx_->usage();
    const auto info = used() - baseline_;
    const auto used_minus_live = std::int64_t(u.used) - std::int64_t(live_);
    const auto info_minus_reserved = info - std::int64_t(u.reserved);
    auto& c = *out_;
    if (c.checks++ == 0) {
      c.used_minus_live_min = c.used_minus_live_max = used_minus_live;
      c.info_minus_reserved_min = c.info_minus_reserved_max = info_minus_reserved;
    }
    c.used_minus_live_min = std::min(c.used_minus_live_min, used_minus_live);
    c.used_minus_live_max = std::max(c.used_minus_live_max, used_minus_live);
    c.info_minus_reserved_min = std::min(c.info_minus_reserved_min, info_minus_reserved);
    c.info_minus_reserved_max = std::max(c.info_minus_reserved_max, info_minus_reserved);
    c.pool_used_peak = std::max(c.pool_used_peak, u.used);
    c.pool_reserved_peak = std::max(c.pool_reserved_peak, u.reserved);
    c.info_peak = std::max(c.info_peak, std::uint64_t(std::max<std::int64_t>(info, 0)));
    for (std::size_t g = 0; g < granularities.size(); ++g) {
      if (rounded_[g] != u.used) matches_[g] = false;
      rounded_[g] -= round_up(e.bytes, granularities[g]);
    }
    live_ -= e.bytes;
  }
  /// Completes the check after the run.
  void finish() {
    out_->info_after = used() - baseline_;
    out_->pool_granularity = 0;
    for (std::size_t g = 0; g < granularities.size() && out_->checks; ++g)
      if (matches_[g]) {
        out_->pool_granularity = granularities[g];
        break;
      }
  }

 private:
  static std::int64_t used() {
    std::size_t free = 0, total = 0;
    cuda_check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    return std::int64_t(total - free);
  }
  static constexpr std::array<std::uint64_t, 7> granularities{1, 256, 512, 1024, 2048, 4096, std::uint64_t{2} << 20};
  static std::uint64_t round_up(std::uint64_t b, std::uint64_t g) { return (b + g - 1) / g * g; }
  event_sink_ref next_;
  device_memory_check* out_;
  std::array<std::uint64_t, granularities.size()> rounded_{};
  std::array<bool, granularities.size()> matches_ = {true, true, true, true, true, true, true};
  cuda_context* ctx_ = nullptr;
  std::int64_t baseline_ = 0;
  std::uint64_t live_ = 0;
};

/// Calls f(op) with the CUDA operator `name` configured by `params`.
template <class F>
void with_operator(std::string_view name, const param_overrides& params, F&& f) {
#define DWSR_CUDA_OPERATOR_CASE(Op) \
  if (name == Op::name) return f(Op(param_values::bind(Op::name, Op::params(), params)));
  DWSR_FOR_EACH_CUDA_OPERATOR(DWSR_CUDA_OPERATOR_CASE)
#undef DWSR_CUDA_OPERATOR_CASE
  throw invalid_input("operator " + quote(name) + " has no CUDA implementation; those with one: " + [] {
    std::string all;
    for (const auto& n : operator_names()) all += (all.empty() ? "" : ", ") + n;
    return all;
  }());
}

}  // namespace detail

const registry& catalogue() {
  static const registry r = [] {
    registry out;
#define DWSR_ADD_CUDA_OPERATOR(Op) out.add<Op, context_list<cuda_context, cuda_meta_context>>();
    DWSR_FOR_EACH_CUDA_OPERATOR(DWSR_ADD_CUDA_OPERATOR)
#undef DWSR_ADD_CUDA_OPERATOR
    return out;
  }();
  return r;
}

std::vector<std::string> operator_names() {
  std::vector<std::string> names;
#define DWSR_CUDA_OPERATOR_NAME(Op) names.emplace_back(Op::name);
  DWSR_FOR_EACH_CUDA_OPERATOR(DWSR_CUDA_OPERATOR_NAME)
#undef DWSR_CUDA_OPERATOR_NAME
  return names;
}

bool has_operator(std::string_view name) {
  const auto names = operator_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

void plan(std::string_view name, const param_overrides& params, shape3 shape, event_sink_ref sink,
          const context_options& options) {
  detail::with_operator(name, params, [&](const auto& op) {
    event_bus bus(sink);
    cuda_meta_context ctx(bus, options);
    detail::execute(ctx, op, shape, nullptr, {});
  });
}

device_run run(std::string_view name, const param_overrides& params, cube_view<const float> in,
               std::span<const array_ref> out, event_sink_ref sink, const context_options& options, bool check_memory,
               int ordinal) {
  device_run result;
  detail::with_operator(name, params, [&](const auto& op) {
    const auto outputs = op.outputs();
    if (out.size() != outputs.size())
      throw invalid_input(std::string(name) + " has " + std::to_string(outputs.size()) + " outputs; " +
                          std::to_string(out.size()) + " were given");
    for (std::size_t k = 0; k < out.size(); ++k)
      if (out[k].type != outputs[k].type || out[k].shape != in.shape())
        throw invalid_input(std::string(name) + ": output " + std::to_string(k) +
                            " must have the operator's dtype and the input's shape");
    device_memory_check memory;
    detail::memory_probe probe(sink, memory);
    event_bus bus(check_memory ? event_sink_ref(probe) : sink);
    const auto begin = std::chrono::steady_clock::now();
    cuda_context ctx(bus, options, ordinal);
    if (check_memory) probe.arm(ctx);
    result.operator_seconds = detail::execute(ctx, op, in.shape(), in.data(), out);
    ctx.synchronize();
    result.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (check_memory) {
      probe.finish();
      result.memory = memory;
    }
  });
  return result;
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::string device_description(int ordinal) {
  cudaDeviceProp p{};
  dwsr::detail::cuda_check(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties");
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", double(p.totalGlobalMem) / double(1ull << 30));
  return std::string(p.name) + ", " + memory + ", compute capability " + std::to_string(p.major) + "." +
         std::to_string(p.minor);
}

std::uint64_t device_memory_used(int ordinal) {
  dwsr::detail::cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
  dwsr::detail::cuda_check(cudaFree(nullptr), "cudaFree");  // creates the context
  std::size_t free = 0, total = 0;
  dwsr::detail::cuda_check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return total - free;
}

work_area_sizes fft_work_area(std::uint64_t n, std::uint64_t batch) {
  dwsr::detail::cuda_check(cudaSetDevice(0), "cudaSetDevice");
  auto size_of_plan = [&](cufftType type) {
    cufftHandle h{};
    const auto& fft = detail::cufft();
    detail::cufft_check(fft.create(&h), "cufftCreate");
    long long len = static_cast<long long>(n), half = len / 2 + 1;
    long long* in = type == CUFFT_R2C ? &len : &half;
    long long* out = type == CUFFT_R2C ? &half : &len;
    std::size_t size = 0;
    auto status = fft.set_auto_allocation(h, 0);
    if (status == CUFFT_SUCCESS)
      status = fft.make_plan_many64(h, 1, &len, in, 1, *in, out, 1, *out, type, static_cast<long long>(batch), &size);
    fft.destroy(h);
    detail::cufft_check(status, "cufftMakePlanMany64");
    return std::uint64_t(size);
  };
  if (n < 2) return {0, 0, detail::work_area_bound(n, batch)};  // no transform (hilbert_batches.cuh)
  return {size_of_plan(CUFFT_R2C), size_of_plan(CUFFT_C2R), detail::work_area_bound(n, batch)};
}

}  // namespace dwsr::operators::cuda
