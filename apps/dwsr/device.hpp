#pragma once
// `--device cuda` of `dwsr run`, `plan` and `advise`: graphs of the CUDA
// operators, planned with cuda_meta_context (no GPU needed) and run on GPU 0
// with cuda_context, one stream and memory pool per worker. A worker's peak
// and budget are its device bytes; pinned host staging is reported beside
// them. Only a build with CUDA (DWSR_WITH_CUDA) has the CUDA operators.

#include <string>

#include "dwsr/exec/cuda_meta_context.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/operators/catalogue.hpp"
#ifdef DWSR_WITH_CUDA
#include "dwsr/exec/cuda_context.hpp"
#include "dwsr/operators/cuda/device_operators.hpp"
#endif

namespace dwsr::cli {

/// The devices --device accepts.
inline const char* device_help =
    "host: the CPU (default); cuda: GPU 0, with the CUDA operators (dwsr ops --device cuda lists them; plans need "
    "no GPU)";

/// The operators of `device`: the catalogue (host) or the CUDA operators (cuda).
inline const registry& operators_of(const std::string& device) {
  if (device != "cuda") return operators::catalogue();
#ifdef DWSR_WITH_CUDA
  return operators::cuda::catalogue();
#else
  throw invalid_input(
      "--device cuda: this dwsr was built without CUDA (no nvcc was found when it was built); rebuild where the CUDA "
      "toolkit is installed");
#endif
}

/// The graph's name resolved against the device's operators, with a clear
/// error for a catalogue operator that has no CUDA implementation.
inline void check_on_device(const std::string& graph_text, const std::string& device) {
  const auto& ops = operators_of(device);
  if (device == "cuda" && !ops.contains(graph_text) && operators::catalogue().contains(graph_text)) {
    std::string known;
    for (const auto& e : ops.entries()) known += (known.empty() ? "" : ", ") + e.name;
    throw invalid_input("operator " + quote(graph_text) + " has no CUDA implementation; with --device cuda: " + known);
  }
}

/// Pinned host staging of worker 0 at its peak (the planned events' host bytes).
inline std::uint64_t planned_staging_peak(const chunked_schedule& s) {
  struct host_peak {
    std::uint64_t live = 0, peak = 0;
    void on_event(const event& e) {
      if (e.dev != device::host) return;
      live = e.act == action::alloc ? live + e.bytes : live - e.bytes;
      peak = std::max(peak, live);
    }
  } sink;
  worker_events<cuda_meta_context>(s, 0, sink);
  return sink.peak;
}

/// What a device run measured.
struct device_measurement {
  chunked_plan planned;
  chunked_result measured;
  std::string device;  ///< the GPU's name, memory and compute capability
};

/// Plans, then runs `s` on GPU 0 (see run_chunked), reporting each block to `on_block`.
inline device_measurement measure_on_device([[maybe_unused]] const chunked_schedule& s,
                                            [[maybe_unused]] const block_source& input,
                                            [[maybe_unused]] block_sink* sink,
                                            [[maybe_unused]] const std::vector<event_sink_ref>& worker_sinks,
                                            [[maybe_unused]] const std::function<void(const block&)>& on_block) {
#ifdef DWSR_WITH_CUDA
  if (operators::cuda::device_count() == 0)
    throw device_error("--device cuda: no CUDA device can be used here (no GPU, or no driver)");
  device_measurement m{plan_chunked<cuda_meta_context>(s), {}, operators::cuda::device_description()};
  m.measured = run_chunked<cuda_context>(s, input, sink, worker_sinks, on_block);
  return m;
#else
  operators_of("cuda");
  return {};
#endif
}

}  // namespace dwsr::cli
