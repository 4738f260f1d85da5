#pragma once
/// \file The tasks ChunkSchedule (env/chunk_schedule.hpp) draws from: each a
/// graph over the registry's operators, a cube, W workers of T threads and a
/// per-worker budget, in the train or the test part (by task: the parts never
/// share one). Generated from a seed, like generate_peak_jobs: same options,
/// same pool, bit for bit.
///
/// A task's graph: random_graphs' 1 to 4 nodes (graph/random_graph.hpp),
/// redrawn while some node reads the inline or crossline axis whole (a slab
/// could not split it); in about half the tasks an event_picks node reads the
/// last cube, a table sized by the data: the meta execution allocates its
/// bound and flags the event (event::bound).
///
/// The candidates: chunk_candidates chunk shapes, the same ladder for every
/// task, so that action k means "the k-th largest chunk": candidate k splits
/// the inline axis into 2^ceil(k/2) and the crossline axis into 2^floor(k/2)
/// (cube/1, /2 along inline, /2 along crossline, ...: k = 7 is inline/16 x
/// crossline/8), time whole.
///
/// Everything expensive is computed here, once: per task and candidate the
/// per-block memory as a function of the hidden data density d in [0, 1]. The
/// meta execution's events of each block class and phase of the candidate's
/// chunking of the whole cube are replayed with every bound alloc's bytes
/// times d, so the live bytes after event t are fixed_t + d x bound_t and the
/// block's peak is max_t (fixed_t + d x bound_t): a convex, piecewise-linear
/// function of d, stored as the lines of its upper envelope on [0, 1] (a
/// step evaluates it in a few multiply-adds). Bytes are the exact
/// allocator's (requested bytes, no page rounding): what the plan and the
/// budget of a dwsr context count. The candidate's worst class is taken for
/// every block of a slab (a clipped block at the cube's end is no larger).
///
/// Time: graph/colocated_job.hpp's placeholder, seconds_per_voxel per
/// extended voxel and per step (the copy and each node a phase runs, over
/// the phases), divided by T, plus block_overhead_seconds per block (a task's
/// scheduling, not divided by T). A slab's blocks go to the W workers round
/// robin and the slab lasts as long as its slowest worker.
///
/// The budget is drawn relative to the candidates' best-case peaks (d = 0):
/// between the m-th and the (m + 1)-th largest, m uniform in 1 to 3, log
/// uniformly, so that about a quarter of the candidates cannot fit even in
/// the best case, never all (the smallest always fits at d = 0).

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"
#include "dwsr/exec/meta_context.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/colocated_job.hpp"
#include "dwsr/graph/random_graph.hpp"
#include "dwsr/graph/time_model.hpp"

namespace dwsr::env {

/// Candidate chunk shapes of every task (ChunkSchedule's Discrete(8)).
inline constexpr std::size_t chunk_candidates = 8;

/// How generate_chunk_tasks draws a pool.
struct chunk_tasks_options {
  std::uint64_t tasks = 256;     ///< both parts
  std::uint64_t seed = 0;        ///< same seed, same pool
  std::uint64_t test_every = 5;  ///< task i is in the test part iff i % test_every == test_every - 1
  std::uint64_t min_extent = 64, max_extent = 1024;      ///< inlines and crosslines, each uniform in between
  std::uint64_t min_samples = 64, max_samples = 1024;    ///< time samples (float32)
  std::size_t min_nodes = 1, max_nodes = 4;              ///< random_graphs' nodes, uniform in between
  double picks_fraction = 0.5;                           ///< odds of an event_picks node after them
  std::size_t max_workers = 8, max_threads = 4;          ///< W and T, uniform from 1
  double seconds_per_voxel = default_seconds_per_voxel;  ///< per extended voxel and step
  double block_overhead_seconds = 0.002;                 ///< per block (task scheduling)
};

/// One line of a peak envelope: fixed + d x bound bytes at density d.
struct hull_line {
  double fixed = 0, bound = 0;
  bool operator==(const hull_line&) const = default;
};

/// One candidate chunk of one task.
struct chunk_candidate {
  shape3 chunk;                        ///< interior extents (time: the cube's)
  std::vector<hull_line> hull;         ///< the per-block peak's upper envelope, slopes increasing
  double peak0 = 0, peak1 = 0;         ///< the peak at d = 0 and d = 1, bytes
  std::uint64_t blocks = 0;            ///< blocks of a slab (along crossline)
  std::array<double, 8> per_inline{};  ///< worker w's seconds per extended inline of a slab (w < W)
  std::array<double, 8> fixed{};       ///< worker w's per-block overhead seconds per slab
  double block_per_inline = 0;         ///< the largest block's seconds per extended inline
  /// The per-block peak at density d, bytes: the envelope's highest line.
  double peak(double d) const noexcept {
    double p = 0;
    for (const auto& l : hull) p = std::max(p, l.fixed + d * l.bound);
    return p;
  }
};

/// One task (see the file comment).
struct chunk_task {
  std::vector<node_spec> specs;  ///< the graph
  bool picks = false;            ///< whether it ends with a data-dependent event_picks node
  shape3 cube;
  std::array<std::uint64_t, 3> halo{};  ///< the graph's input halo
  std::size_t workers = 1, threads = 1;
  std::uint64_t budget = 0;  ///< bytes per worker
  bool test = false;         ///< in the test part
  std::array<chunk_candidate, chunk_candidates> candidates;
  std::array<std::uint8_t, chunk_candidates> mask{};  ///< 1 where peak0 <= budget
  std::size_t advisor = 0;           ///< the largest candidate with peak1 <= budget (else the smallest)
  double reference_seconds = 0;      ///< the whole cube at the advisor's candidate
  std::uint64_t smallest_slabs = 0;  ///< slabs of the whole cube at the smallest candidate

  /// The seconds of a slab of `a`'s blocks whose extended inline extent is
  /// `extended` (the slowest worker's).
  double slab_seconds(std::size_t a, std::uint64_t extended) const noexcept {
    const auto& c = candidates[a];
    double s = 0;
    for (std::size_t w = 0; w < workers; ++w) s = std::max(s, c.per_inline[w] * double(extended) + c.fixed[w]);
    return s;
  }
  /// The extended inline extent of the slab of interior [first, first + n).
  std::uint64_t extended_inlines(std::uint64_t first, std::uint64_t n) const noexcept {
    const auto lo = first > halo[0] ? first - halo[0] : 0;
    return std::min(first + n + halo[0], cube.inlines) - lo;
  }
};

/// A pool of tasks (see the file comment).
struct chunk_tasks {
  std::vector<chunk_task> tasks;
  chunk_tasks_options options;
  std::size_t size() const noexcept { return tasks.size(); }
};

namespace detail {

/// The live (fixed, bound) bytes after each alloc of an event stream, with
/// the bound allocs' bytes apart.
struct bound_live_sink {
  double fixed = 0, bound = 0;
  std::vector<hull_line> points;
  std::vector<std::uint8_t> is_bound;  ///< per buffer id
  void on_event(const event& e) {
    if (e.buffer >= is_bound.size()) is_bound.resize(e.buffer + 1, 0);
    if (e.act == action::alloc) {
      is_bound[e.buffer] = e.bound;
      (e.bound ? bound : fixed) += double(e.bytes);
      points.push_back({fixed, bound});
    } else {
      (is_bound[e.buffer] ? bound : fixed) -= double(e.bytes);
    }
  }
};

/// The upper envelope on d in [0, 1] of the lines `ls`, slopes increasing.
/// Byte counts are integers below 2^53, so the crossings compare exactly in
/// 128-bit integers.
inline std::vector<hull_line> upper_envelope(std::vector<hull_line> ls) {
  if (ls.empty()) return {{0, 0}};
  std::sort(ls.begin(), ls.end(), [](const hull_line& a, const hull_line& b) {
    return a.fixed != b.fixed ? a.fixed > b.fixed : a.bound > b.bound;
  });
  std::vector<hull_line> out{ls.front()};  // the highest at d = 0
  // Crossing of the current line c with l (l.bound > c.bound): d = (c.f - l.f) / (l.b - c.b).
  __extension__ typedef __int128 i128;
  for (;;) {
    const auto c = out.back();
    const hull_line* best = nullptr;
    for (const auto& l : ls) {
      if (!(l.bound > c.bound)) continue;
      const auto num = i128(c.fixed) - i128(l.fixed), den = i128(l.bound) - i128(c.bound);
      if (num > den) continue;  // crosses after d = 1
      if (!best) {
        best = &l;
        continue;
      }
      const auto bnum = i128(c.fixed) - i128(best->fixed), bden = i128(best->bound) - i128(c.bound);
      // l crosses earlier, or at the same d with a steeper slope.
      if (num * bden < bnum * den || (num * bden == bnum * den && l.bound > best->bound)) best = &l;
    }
    if (!best) return out;
    out.push_back(*best);
  }
}

/// The per-block peak envelope of candidate chunk `chunk` of graph g on cube
/// (worst block class, every phase), and the schedule's steps (for time).
inline std::pair<std::vector<hull_line>, std::size_t> candidate_memory(const graph& g, shape3 cube, shape3 chunk,
                                                                       std::size_t threads) {
  const chunked_schedule s(g, cube, {.chunk = chunk, .workers = 1, .threads = threads});
  const auto reductions = dwsr::detail::run_phase_reductions(s);
  const block_classes classes(s.blocks());
  std::vector<hull_line> lines;
  for (const auto& k : classes.classes())
    for (const auto& ph : s.phases()) {
      bound_live_sink sink;
      event_bus bus(sink, emitters::one_thread);
      meta_context ctx(bus, {.threads = threads});
      reduction acc;
      run_step(
          ctx, s, ph, k.example, reductions, &acc, nullptr, [](float*) {}, nullptr);
      lines.insert(lines.end(), sink.points.begin(), sink.points.end());
    }
  std::size_t steps = 0;
  for (const auto& ph : s.phases()) {
    steps += 1;
    for (bool n : phase_nodes(g, ph)) steps += n;
  }
  return {upper_envelope(std::move(lines)), steps};
}

inline std::uint64_t uniform_between(xoshiro256ss& rng, std::uint64_t lo, std::uint64_t hi) {
  return lo + rng.next() % (hi - lo + 1);
}

inline void check_range(const char* what, std::uint64_t lo, std::uint64_t hi, std::uint64_t least, std::uint64_t most) {
  if (lo < least || lo > hi || hi > most)
    throw invalid_input(std::string(what) + " " + std::to_string(lo) + " to " + std::to_string(hi) + "; expected " +
                        std::to_string(least) + " <= low <= high <= " + std::to_string(most));
}

/// Fills task t's candidates, budget, mask, advisor and reference time.
inline void precompute_task(const graph& g, chunk_task& t, xoshiro256ss& rng, const chunk_tasks_options& o) {
  const auto cube = t.cube;
  for (std::size_t k = 0; k < chunk_candidates; ++k) {
    auto& c = t.candidates[k];
    const std::uint64_t il_div = std::uint64_t{1} << ((k + 1) / 2), xl_div = std::uint64_t{1} << (k / 2);
    c.chunk = {(cube.inlines + il_div - 1) / il_div, (cube.crosslines + xl_div - 1) / xl_div, cube.samples};
    auto [hull, steps] = candidate_memory(g, cube, c.chunk, t.threads);
    c.hull = std::move(hull);
    c.peak0 = c.peak(0);
    c.peak1 = c.peak(1);
    c.blocks = (cube.crosslines + c.chunk.crosslines - 1) / c.chunk.crosslines;
    // seconds of a block = rate x extended inlines x extended crosslines x samples x steps / T + overhead
    const double rate = o.seconds_per_voxel * double(cube.samples) * double(steps) / double(t.threads);
    for (std::uint64_t j = 0; j < c.blocks; ++j) {
      const auto first = j * c.chunk.crosslines, last = std::min(first + c.chunk.crosslines, cube.crosslines);
      const auto ext = std::min(last + t.halo[1], cube.crosslines) - (first > t.halo[1] ? first - t.halo[1] : 0);
      c.per_inline[j % t.workers] += rate * double(ext);
      c.fixed[j % t.workers] += o.block_overhead_seconds;
      c.block_per_inline = std::max(c.block_per_inline, rate * double(ext));
    }
  }
  // The budget: between the m-th and (m + 1)-th largest best-case peaks.
  std::array<double, chunk_candidates> sorted;
  for (std::size_t k = 0; k < chunk_candidates; ++k) sorted[k] = t.candidates[k].peak0;
  std::sort(sorted.begin(), sorted.end(), [](double a, double b) { return a > b; });
  const auto m = std::size_t(uniform_between(rng, 1, 3));
  const double lo = sorted[m], hi = sorted[m - 1];
  const double u = rng.uniform();
  double budget = lo < hi ? portable_exp(portable_log(lo) + u * (portable_log(hi) - portable_log(lo))) : lo;
  budget = std::max(lo, std::min(budget, hi));
  t.budget = std::uint64_t(budget);
  if (double(t.budget) < lo) t.budget = std::uint64_t(lo);  // the smallest fits at d = 0, whatever the rounding
  for (std::size_t k = 0; k < chunk_candidates; ++k) t.mask[k] = t.candidates[k].peak0 <= double(t.budget);
  // The advisor: the largest candidate safe at d = 1, else the smallest that fits at d = 0.
  t.advisor = chunk_candidates;
  for (std::size_t k = 0; k < chunk_candidates && t.advisor == chunk_candidates; ++k)
    if (t.candidates[k].peak1 <= double(t.budget)) t.advisor = k;
  for (std::size_t k = chunk_candidates; k-- > 0 && t.advisor == chunk_candidates;)
    if (t.mask[k]) t.advisor = k;
  const auto& smallest = t.candidates[chunk_candidates - 1].chunk;
  t.smallest_slabs = (cube.inlines + smallest.inlines - 1) / smallest.inlines;
  const auto step = t.candidates[t.advisor].chunk.inlines;
  t.reference_seconds = 0;
  for (std::uint64_t first = 0; first < cube.inlines; first += step) {
    const auto n = std::min(step, cube.inlines - first);
    t.reference_seconds += t.slab_seconds(t.advisor, t.extended_inlines(first, n));
  }
}

}  // namespace detail

/// A pool of `o.tasks` tasks over the operators of `r` (see the file
/// comment). Throws invalid_input for options out of range, or a registry
/// without chainable operators or event_picks.
inline chunk_tasks generate_chunk_tasks(const registry& r, const chunk_tasks_options& o = {}) {
  if (o.tasks == 0 || o.tasks > (std::uint64_t{1} << 20))
    throw invalid_input("tasks " + std::to_string(o.tasks) + "; expected 1 to " + std::to_string(1 << 20));
  if (o.test_every < 2) throw invalid_input("test_every " + std::to_string(o.test_every) + "; expected at least 2");
  detail::check_range("extents", o.min_extent, o.max_extent, 16, 1 << 16);
  detail::check_range("samples", o.min_samples, o.max_samples, 8, 1 << 16);
  detail::check_range("nodes", o.min_nodes, o.max_nodes, 1, 16);
  detail::check_range("workers", 1, o.max_workers, 1, 8);
  detail::check_range("threads", 1, o.max_threads, 1, max_threads);
  if (!(o.picks_fraction >= 0 && o.picks_fraction <= 1))
    throw invalid_input("picks_fraction " + std::to_string(o.picks_fraction) + "; expected 0 to 1");
  if (!(o.seconds_per_voxel > 0 && o.seconds_per_voxel < 1) ||
      !(o.block_overhead_seconds >= 0 && o.block_overhead_seconds < 1e6))
    throw invalid_input("seconds_per_voxel " + std::to_string(o.seconds_per_voxel) + ", block_overhead_seconds " +
                        std::to_string(o.block_overhead_seconds) +
                        "; expected positive finite seconds (overhead >= 0)");
  const random_graphs draw(r);
  if (draw.chainable().empty()) throw invalid_input("a registry without chainable operators for ChunkSchedule");
  if (o.picks_fraction > 0 && !r.contains("event_picks"))
    throw invalid_input("a registry without event_picks for ChunkSchedule with picks_fraction > 0");
  chunk_tasks pool;
  pool.options = o;
  pool.tasks.resize(o.tasks);
  for (std::uint64_t i = 0; i < o.tasks; ++i) {
    auto& t = pool.tasks[i];
    xoshiro256ss rng(stream_key(o.seed, i, 0x636875));
    t.test = i % o.test_every == o.test_every - 1;
    t.cube = {detail::uniform_between(rng, o.min_extent, o.max_extent),
              detail::uniform_between(rng, o.min_extent, o.max_extent),
              detail::uniform_between(rng, o.min_samples, o.max_samples)};
    t.workers = std::size_t(detail::uniform_between(rng, 1, o.max_workers));
    t.threads = std::size_t(detail::uniform_between(rng, 1, o.max_threads));
    // A graph whose nodes read inline and crossline in pieces (a slab splits both).
    for (int tries = 0;; ++tries) {
      if (tries == 1000) throw invalid_input("no graph of the registry lets a slab split inline and crossline");
      t.specs = draw.specs(rng, std::size_t(detail::uniform_between(rng, o.min_nodes, o.max_nodes)));
      t.picks = rng.uniform() < o.picks_fraction;
      if (t.picks) {
        node_spec p;
        p.name = "picks";
        p.op = "event_picks";
        p.inputs = {t.specs.back().name};
        t.specs.push_back(std::move(p));
      }
      const auto g = graph::from_specs(r, t.specs);
      const auto whole = g.whole_axes();
      if (whole[0] || whole[1]) continue;
      t.halo = g.input_halo();
      detail::precompute_task(g, t, rng, o);
      break;
    }
  }
  return pool;
}

}  // namespace dwsr::env
