#pragma once
/// \file The CUDA operators from plain C++ (no CUDA headers needed): plan or
/// run one operator of the CUDA catalogue on a cube held on the host. The
/// definitions are in operators/cuda/device_operators.cuh, which one CUDA
/// translation unit of the program includes (src/cuda_operators.cu in dwsr's
/// own build, which defines DWSR_WITH_CUDA for the programs that link it).
///
/// A device run stages the cube through pinned host memory (at most
/// staging_bytes at a time), allocates the input and the outputs on the
/// device, runs the operator on the context's stream and copies the outputs
/// back: every buffer, the staging and cuFFT's work areas included, is an
/// event, and plan() emits the same events without a GPU.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/cube_view.hpp"
#include "dwsr/exec/context_base.hpp"
#include "dwsr/memory/event_sink.hpp"
#include "dwsr/ops/param.hpp"
#include "dwsr/ops/registry.hpp"

namespace dwsr::operators::cuda {

/// Largest pinned staging buffer of a device run (64 MiB).
inline constexpr std::uint64_t staging_bytes = std::uint64_t{64} << 20;

/// Device memory read during a checked run, at every free event of a device
/// buffer (before it is freed, after the stream has finished), against the
/// live device bytes the events say.
struct device_memory_check {
  std::uint64_t checks = 0;              ///< free events at which memory was read
  std::uint64_t live_peak = 0;           ///< peak of the live device bytes from the events
  std::uint64_t pool_used_peak = 0;      ///< peak of what the context's pool handed out
  std::uint64_t pool_reserved_peak = 0;  ///< peak of what the pool held from the device
  std::int64_t used_minus_live_min = 0;  ///< pool used - live events, lowest over the checks
  std::int64_t used_minus_live_max = 0;  ///< ... and highest (0 and 0: every device byte an event)
  /// The smallest of 1, 256, 512, 1024, 2048, 4096 and 2 MiB such that the
  /// pool's used bytes equal the live events' bytes, each rounded up to it,
  /// at every check (0: none does).
  std::uint64_t pool_granularity = 0;
  std::int64_t info_minus_reserved_min = 0;  ///< cudaMemGetInfo's used delta - pool reserved, lowest
  std::int64_t info_minus_reserved_max = 0;  ///< ... and highest: memory outside the pool (cuFFT's plans)
  std::uint64_t info_peak = 0;               ///< peak cudaMemGetInfo used delta over the checks
  std::int64_t info_after = 0;               ///< cudaMemGetInfo used delta after the run (0: nothing left)
};

/// What a device run measured.
struct device_run {
  double operator_seconds = 0;                ///< the operator on the stream (CUDA events), transfers excluded
  double total_seconds = 0;                   ///< staging, transfers and the operator (host clock)
  std::optional<device_memory_check> memory;  ///< with check_memory only
};

/// The CUDA operators as a registry (compiled for cuda_context and
/// cuda_meta_context): graphs built over it run on a GPU in chunks
/// (run_chunked<cuda_context>) and plan without one
/// (plan_chunked<cuda_meta_context>).
const registry& catalogue();

/// Names of the operators with a CUDA implementation, in catalogue order.
std::vector<std::string> operator_names();
/// Whether `name` has a CUDA implementation.
bool has_operator(std::string_view name);

/// Emits the events of run() for a cube of `shape` to `sink`; needs no GPU.
/// Throws invalid_input for an unknown operator or parameter.
void plan(std::string_view name, const param_overrides& params, shape3 shape, event_sink_ref sink,
          const context_options& options = {});

/// Runs `name` on device `ordinal` from `in` into `out` (host memory; `out`
/// as the operator's outputs() describe), emitting every event to `sink`.
/// With check_memory, reads the device's memory at every device free
/// (synchronising, so slower). Throws device_error when no GPU can be used.
device_run run(std::string_view name, const param_overrides& params, cube_view<const float> in,
               std::span<const array_ref> out, event_sink_ref sink, const context_options& options = {},
               bool check_memory = false, int ordinal = 0);

/// Number of CUDA devices (0 without a driver or a GPU).
int device_count();
/// The device's name and memory, e.g. "NVIDIA H100 80GB HBM3, 79.1 GiB".
std::string device_description(int ordinal = 0);
/// Device memory in use now by every process (cudaMemGetInfo's total - free),
/// this one's CUDA context included: in a fresh process that uses nothing
/// else, the context's own overhead.
std::uint64_t device_memory_used(int ordinal = 0);

/// cuFFT's work areas for `batch` R2C and C2R transforms of length n, as
/// cuFFT reports them on device 0, and dwsr's bound for both (needs a GPU).
struct work_area_sizes {
  std::uint64_t forward = 0;   ///< R2C
  std::uint64_t backward = 0;  ///< C2R
  std::uint64_t bound = 0;
};
work_area_sizes fft_work_area(std::uint64_t n, std::uint64_t batch);

}  // namespace dwsr::operators::cuda
