#pragma once
/// \file Blocks of a chunked run on a device (a context whose memory_device is
/// cuda: cuda_context, cuda_meta_context): the block's window is read into
/// pinned host staging, copied to the device and the staging freed; each
/// graph output is copied back through pinned staging before the sink sees
/// it. Every staging buffer is an event (device host), so the plan counts the
/// transfers' host memory as the run holds it.

#include <cstdint>

#include "dwsr/core/cube_view.hpp"
#include "dwsr/memory/buffer.hpp"
#include "dwsr/memory/event.hpp"

namespace dwsr {

/// Whether contexts of type Ctx hold their buffers on a CUDA device.
template <class Ctx>
inline constexpr bool on_device = Ctx::memory_device == device::cuda;

/// The block's input of `voxels` floats on the device: fill(host) writes the
/// window into pinned staging (computing contexts only), which is copied to
/// the device and freed.
template <class Ctx, class Fill>
buffer<float, Ctx> device_input(Ctx& ctx, std::uint64_t voxels, Fill&& fill) {
  auto input = ctx.template allocate<float>(voxels, buffer_role::input);
  auto staging = ctx.template allocate_host<float>(voxels, buffer_role::input);
  if constexpr (Ctx::computes) {
    fill(staging.data());
    ctx.copy(input.data(), staging.data(), voxels * sizeof(float));
    ctx.synchronize();
  }
  return input;
}

/// Calls consume(host view) with a copy of the device cube `out` in pinned
/// staging (computing contexts only; the staging is planned in every context).
template <class Ctx, class Consume>
void with_host_copy(Ctx& ctx, const array_ref& out, Consume&& consume) {
  auto staging = ctx.template allocate_host<std::byte>(out.bytes(), buffer_role::output);
  if constexpr (Ctx::computes) {
    ctx.copy(staging.data(), out.data, out.bytes());
    ctx.synchronize();
    consume(array_ref{out.type, staging.data(), out.shape});
  }
}

}  // namespace dwsr
