#pragma once
/// \file The job kinds GpuPack (env/gpu_pack.hpp) draws its arrivals from:
/// each one process of a chunked run, with its device memory over time as the
/// co-location replay (sim/colocate.hpp) sees it, summarised once, when the
/// pool is made, so that an environment's step replays nothing.
///
/// A kind k is drawn from its own stream (core/random.hpp, stream_key(seed,
/// k, 5)) as task pack of graph/dataset.hpp draws a job: a random graph of 1
/// to 4 nodes (graph/random_graph.hpp), a cube log-uniform in [128, 4096]^2 x
/// [256, 2048], T among 1 to 16 and a chunking of at most pack_max_blocks
/// blocks (detail::draw_chunk), made into a sim::job by colocated_job (the
/// time model's profile when given, else its default rate) under the
/// allocator model `allocator` (torch_cuda_caching by default) with the
/// process overhead. A kind whose peak exceeds max_peak (the whole H100's
/// memory by default) is drawn again from the same stream, up to 64 times.
///
/// Its profile: the job replayed alone on an unlimited device (colocate,
/// timeline kept), its usage (overhead + reserved) cut into gpu_pack_segments
/// equal segments of its duration, each segment the highest usage within it
/// (the level it starts at included): a step function never below the
/// replay's, whose highest segment is the replay's peak.
///
/// Time is counted in whole ticks (tick_seconds, the shortest kind's segment
/// over 16 by default), so that an environment's clock is exact integer
/// arithmetic: a kind's segment lasts ceil(seconds / segments / tick) ticks,
/// its duration segments times that (rounded up by less than a tick a segment).
///
/// Work: the voxels of the job's cube. Split: kind k is in the test part when
/// k % test_every == test_every - 1 (one in five by default), so train and
/// test never share a kind.

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/core/random.hpp"
#include "dwsr/error.hpp"
#include "dwsr/graph/colocated_job.hpp"
#include "dwsr/graph/dataset.hpp"
#include "dwsr/graph/random_graph.hpp"
#include "dwsr/sim/colocate.hpp"
#include "dwsr/sim/device_model.hpp"

namespace dwsr::env {

/// Segments of a job kind's memory profile.
inline constexpr std::size_t gpu_pack_segments = 32;

/// How a pool of job kinds is drawn (see the file comment).
struct gpu_pack_jobs_options {
  std::size_t kinds = 64;  ///< job kinds, both parts
  std::uint64_t seed = 0;
  std::string allocator = "torch_cuda_caching";            ///< every kind's allocator model spec
  std::uint64_t overhead = sim::default_process_overhead;  ///< bytes each process holds from start to end
  std::uint64_t max_peak = 81559 * sim::mib;               ///< a kind's highest usage at most this (h100-80gb)
  std::size_t test_every = 5;                              ///< kind k is test when k % test_every == test_every - 1
  const sim::time_profile* profile = nullptr;              ///< the time model's profile; none: its default rate
  std::size_t cores = 0;                                   ///< cores of the predicted machine (0: the profile's)
};

/// One job kind (see the file comment).
struct gpu_job_kind {
  std::array<std::uint64_t, gpu_pack_segments> reserved{};  ///< bytes: highest usage within each segment
  std::uint64_t peak = 0;                                   ///< bytes: the highest segment
  std::uint64_t segment_ticks = 1;                          ///< ticks per segment
  double seconds = 0;                                       ///< the job's duration from the time model
  std::uint64_t work = 0;                                   ///< voxels of its cube
  bool test = false;                                        ///< in the test part
  std::string name;                                         ///< its operators and cube, for messages
  /// Ticks from start to end.
  std::uint64_t ticks() const noexcept { return segment_ticks * gpu_pack_segments; }
};

/// A pool of job kinds (see the file comment).
struct gpu_pack_jobs {
  std::vector<gpu_job_kind> kinds;
  double tick_seconds = 1;  ///< seconds per tick of an environment's clock
  /// Kinds in the pool, both parts.
  std::size_t size() const noexcept { return kinds.size(); }
};

/// The profile of a usage `timeline` (time, bytes after each step, in time
/// order) over [0, span): the highest bytes within each of
/// gpu_pack_segments equal segments, each segment starting at the level it
/// inherits.
inline std::array<std::uint64_t, gpu_pack_segments> segment_maxima_of(std::span<const sim::usage_point> timeline,
                                                                      double span) {
  std::array<std::uint64_t, gpu_pack_segments> out{};
  std::uint64_t level = 0;
  std::size_t seg = 0;
  for (const auto& p : timeline) {
    const auto at = span > 0 ? std::min(gpu_pack_segments - 1, std::size_t(p.time * double(gpu_pack_segments) / span))
                             : gpu_pack_segments - 1;
    for (; seg < at; ++seg) out[seg + 1] = level;  // a segment starts at the level it inherits
    out[at] = std::max(out[at], p.bytes);
    level = p.bytes;
  }
  for (; seg + 1 < gpu_pack_segments; ++seg) out[seg + 1] = level;
  return out;
}

/// Job `j`'s span: its duration, or its last event's time if later.
inline double job_span(const sim::job& j) noexcept {
  return j.times.empty() ? j.duration : std::max(j.duration, j.times.back());
}

/// `j` replayed alone from time 0 on an unlimited device: the usage
/// (overhead + reserved) after every step (start, each event, end). Throws
/// what colocate throws for a bad job.
inline std::vector<sim::usage_point> alone_timeline(const sim::job& j) {
  sim::job alone = j;
  alone.start = 0;
  return sim::colocate({"unlimited", "unlimited", "", std::numeric_limits<std::uint64_t>::max(), true},
                       std::span<const sim::job>(&alone, 1), {.timeline = true})
      .timeline;
}

/// The profile of `j`'s usage over its duration (see the file comment).
/// Throws what colocate throws for a bad job.
inline std::array<std::uint64_t, gpu_pack_segments> segment_maxima(const sim::job& j) {
  return segment_maxima_of(alone_timeline(j), job_span(j));
}

namespace detail {

/// Kind k of a pool of `o`'s seed, drawn again while its peak exceeds
/// max_peak; its job into `job` when given (ticks not set: set_ticks).
inline gpu_job_kind draw_gpu_job_kind(const random_graphs& graphs, const gpu_pack_jobs_options& o, std::size_t k,
                                      sim::job* job = nullptr) {
  xoshiro256ss rng(stream_key(o.seed, k, 5));
  for (int attempt = 0; attempt < 64; ++attempt) {
    const auto g = graphs.draw(rng, 1 + rng.next() % 4);
    const shape3 cube{dwsr::detail::log_uniform(rng, 128, 4096), dwsr::detail::log_uniform(rng, 128, 4096),
                      dwsr::detail::log_uniform(rng, 256, 2048)};
    const auto threads = dwsr::detail::pick(rng, dwsr::detail::thread_choices);
    const auto chunk = dwsr::detail::draw_chunk(rng, g, cube, pack_max_blocks);
    const chunked_schedule s(g, cube, {chunk, 1, threads});
    const auto j =
        colocated_job(s, {.profile = o.profile, .cores = o.cores, .allocator = o.allocator, .overhead = o.overhead});
    gpu_job_kind kind;
    kind.reserved = segment_maxima(j);
    kind.peak = *std::max_element(kind.reserved.begin(), kind.reserved.end());
    if (kind.peak > o.max_peak) continue;
    kind.seconds = job_span(j);
    kind.work = cube.voxels();
    kind.test = k % o.test_every == o.test_every - 1;
    if (job) *job = j;
    for (const auto& n : g.nodes()) kind.name.append(kind.name.empty() ? "" : "+").append(n.spec.op);
    kind.name += " on " + std::to_string(cube.inlines) + "x" + std::to_string(cube.crosslines) + "x" +
                 std::to_string(cube.samples);
    return kind;
  }
  throw invalid_input("job kind " + std::to_string(k) + " of seed " + std::to_string(o.seed) +
                      ": 64 draws all exceed max_peak " + std::to_string(o.max_peak) +
                      " bytes; expected a larger max_peak");
}

}  // namespace detail

/// Sets each kind's segment_ticks from `pool.tick_seconds` (see the file
/// comment). Throws invalid_input for a tick or a duration that is not a
/// positive finite number, or more than 2^40 ticks a segment.
inline void set_ticks(gpu_pack_jobs& pool) {
  if (!(std::isfinite(pool.tick_seconds) && pool.tick_seconds > 0))
    throw invalid_input("tick_seconds " + std::to_string(pool.tick_seconds) + ": expected a positive finite time");
  for (auto& k : pool.kinds) {
    if (!(std::isfinite(k.seconds) && k.seconds > 0))
      throw invalid_input("job kind " + quote(k.name) + " lasts " + std::to_string(k.seconds) +
                          " s; expected a positive finite time");
    const double ticks = std::ceil(k.seconds / double(gpu_pack_segments) / pool.tick_seconds);
    if (ticks > double(std::uint64_t{1} << 40))
      throw invalid_input("job kind " + quote(k.name) + " lasts " + std::to_string(k.seconds) + " s, " +
                          std::to_string(ticks) + " ticks a segment; expected at most 2^40 (a longer tick)");
    k.segment_ticks = std::max<std::uint64_t>(1, std::uint64_t(ticks));
  }
}

/// A pool of `o.kinds` kinds of operators in `r` (see the file comment). Same
/// arguments, same pool, whichever threads draw it. Throws invalid_input for
/// no kinds, a split with an empty part (test_every < 2 or more than kinds),
/// an unknown allocator, or kinds that never fit max_peak.
inline gpu_pack_jobs generate_gpu_pack_jobs(const registry& r, const gpu_pack_jobs_options& o = {}) {
  if (o.kinds == 0 || o.kinds > 1'000'000)
    throw invalid_input(std::to_string(o.kinds) + " job kinds; expected 1 to 1000000");
  if (o.test_every < 2 || o.test_every > o.kinds)
    throw invalid_input("test_every " + std::to_string(o.test_every) + " of " + std::to_string(o.kinds) +
                        " kinds; expected 2 to the kinds, so that both parts have a kind");
  (void)sim::make_model(o.allocator);  // throws for an unknown model, naming the known ones
  const random_graphs graphs(r);
  gpu_pack_jobs pool;
  pool.kinds.resize(o.kinds);
  tbb::parallel_for(std::size_t{0}, o.kinds,
                    [&](std::size_t k) { pool.kinds[k] = detail::draw_gpu_job_kind(graphs, o, k); });
  double shortest = pool.kinds.front().seconds;
  for (const auto& k : pool.kinds) shortest = std::min(shortest, k.seconds);
  pool.tick_seconds = shortest / double(gpu_pack_segments) / 16;
  set_ticks(pool);
  return pool;
}

}  // namespace dwsr::env
