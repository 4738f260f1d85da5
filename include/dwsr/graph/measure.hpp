#pragma once
/// \file A chunked run measured three ways at once: the plan (exact requested
/// bytes per worker, and what the OS will hold for them under the host_pages
/// model), the run's own events, and the process's resident memory read from
/// the kernel (memory/rss_probe.hpp), an independent check of both.
///
/// Before the probe starts, the graph runs once on a tiny cube with the same
/// trace length, workers and threads: the code, FFTW's plans and twiddle
/// tables, TBB's threads and glibc's per-thread arenas are loaded then, so the
/// measured increase is the run's data, not the process warming up.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/model_plan.hpp"
#include "dwsr/memory/rss_probe.hpp"
#include "dwsr/sim/host_pages.hpp"

namespace dwsr {

/// What measure_chunked found.
struct chunked_measurement {
  chunked_plan planned;                      ///< requested bytes per worker (exact)
  std::vector<std::uint64_t> planned_pages;  ///< per worker: peak bytes held under the host_pages model
  chunked_result measured;                   ///< from the run's events
  std::uint64_t rss_increase = 0;            ///< the process's peak RSS above its RSS when the run started

  /// Sum over the workers of their host_pages peaks: what the process holds
  /// when every worker is at its peak at once (workers running blocks of one
  /// shape do).
  std::uint64_t planned_pages_sum() const {
    std::uint64_t sum = 0;
    for (auto p : planned_pages) sum += p;
    return sum;
  }
  /// Highest measured per-worker peak of requested bytes.
  std::uint64_t measured_peak() const {
    std::uint64_t p = 0;
    for (const auto& w : measured.workers) p = std::max(p, w.peak);
    return p;
  }
};

/// Each worker's peak bytes under the host_pages model; `plan` is plan_chunked(s).
inline std::vector<std::uint64_t> plan_pages(const chunked_schedule& s, const chunked_plan& plan) {
  return model_peaks(s, plan, std::string(sim::host_pages_model::name));
}

/// Runs the graph of `s` on a zero cube of one block per worker (fewer where
/// the graph reads an axis whole), each trace as long as the real ones.
inline void warm_up(const chunked_schedule& s) {
  const auto cube = s.blocks().cube();
  const auto whole = s.graph().whole_axes();
  const std::uint64_t inlines =
      whole[0] ? std::min<std::uint64_t>(cube.inlines, 2) : std::min<std::uint64_t>(cube.inlines, s.workers());
  const shape3 tiny{inlines, std::min<std::uint64_t>(cube.crosslines, 2), cube.samples};
  const shape3 chunk{whole[0] ? tiny.inlines : 1, tiny.crosslines, tiny.samples};
  const std::vector<float> zeros(tiny.voxels(), 0.0f);
  const memory_block_source input(cube_view<const float>(zeros.data(), tiny));
  run_chunked(
      chunked_schedule(s.graph(), tiny, {.chunk = chunk, .workers = s.workers(), .threads = s.options().threads}),
      input, nullptr);
}

/// Plans, warms up, then runs `s` on `input` with the RSS probe listening to
/// every worker's events (it samples the exact resident bytes at each local peak of the live bytes).
inline chunked_measurement measure_chunked(const chunked_schedule& s, const block_source& input, block_sink* sink,
                                           std::vector<event_sink_ref> worker_sinks = {},
                                           const std::function<void(const block&)>& on_block = {}) {
  chunked_measurement m;
  m.planned = plan_chunked(s);
  m.planned_pages = plan_pages(s, m.planned);
  warm_up(s);
  rss_probe probe;
  std::vector<rss_sampler> samplers(s.workers(), rss_sampler(probe));
  std::vector<fan_out> fans(s.workers());
  std::vector<event_sink_ref> sinks;
  for (std::size_t w = 0; w < s.workers(); ++w) {
    fans[w].add(samplers[w]);
    if (w < worker_sinks.size()) fans[w].add(worker_sinks[w]);
    sinks.emplace_back(fans[w]);
  }
  m.measured = run_chunked(s, input, sink, sinks, on_block);
  probe.sample();
  m.rss_increase = probe.increase();
  return m;
}

}  // namespace dwsr
