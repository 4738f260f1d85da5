#pragma once
/// \file The chunk-size advisor: the largest chunk whose predicted per-worker
/// peak fits a memory budget, and what Dask's default chunking would need.
///
/// Candidates keep time whole (the extent along time is the cube's), and every
/// axis an operator reads whole. Along
/// inline and crossline the candidates are the extents that change the block
/// count (ceil(n / k) for k = 1..n), since any other extent gives the same
/// blocks as the next smaller candidate plus wasted size. For every inline
/// extent, a binary search finds the largest crossline extent within budget
/// (peaks grow with the extent while there are three blocks or more; the last
/// two extents are checked one by one); the advice is the largest block (then
/// the fewest blocks, then the least halo). No larger candidate fits, so both
/// neighbours of the advice in the candidate grid are over budget or beyond
/// the cube.
///
/// Cost: about 2 sqrt(inlines) x log2(2 sqrt(crosslines)) candidates (some
/// 7,000 for a 100000 x 100000 cube), each one plan: one meta execution per
/// distinct block shape (graph/block_classes.hpp), a few dozen when the chunk
/// is at least the halo. A caching allocator model replays events instead,
/// within one budget for the whole advice (graph/model_plan.hpp).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/model_plan.hpp"
#include "dwsr/graph/time_model.hpp"
#include "dwsr/sim/any_model.hpp"

namespace dwsr {

/// What the advice optimises among the chunkings that fit the budget.
enum class advice_objective {
  largest,  ///< the largest block (then the fewest blocks, then the least halo)
  time,     ///< the smallest predicted makespan (needs a time profile), then the largest block
};

/// What to advise for.
struct advice_options {
  std::uint64_t budget = 0;         ///< bytes per worker
  std::size_t workers = 1;          ///< W
  std::size_t threads = 1;          ///< T per worker
  std::string allocator = "exact";  ///< allocator model spec (sim::make_model), applied to each worker's events
  advice_objective objective = advice_objective::largest;
  const sim::time_profile* profile = nullptr;  ///< when set, every evaluation predicts its time too
  std::size_t cores = 0;                       ///< cores of the machine that will run it (0: the profile's)
  /// Bytes each worker holds beside its buffers, added to every peak (for
  /// workers on a GPU: the CUDA context's own memory).
  std::uint64_t overhead = 0;
};

/// One evaluated chunking: its plan, the per-worker peak under the model, and
/// its predicted time when a profile was given.
struct chunk_evaluation {
  chunked_plan plan;
  std::uint64_t peak = 0;  ///< highest per-worker peak: requested bytes (exact) or the model's peak reserved
  std::optional<time_prediction> time;
};

/// The advisor's answer.
struct advice {
  advice_objective objective = advice_objective::largest;
  chunk_evaluation chosen;
  chunk_evaluation largest;                   ///< the largest chunk that fits (== chosen for that objective)
  std::vector<chunk_evaluation> next_larger;  ///< the largest chunk's larger neighbours (all over budget)
  shape3 dask_chunk;                          ///< Dask's default for the cube (128 MiB of float32, roughly cubic)
  chunk_evaluation dask;                      ///< what dwsr predicts for Dask's chunk (time kept whole if needed)
  std::uint64_t candidates = 0;               ///< chunkings evaluated
  double seconds = 0;
  /// Whether the peaks are upper bounds: an operator whose memory depends on
  /// the data was planned at its bound (plan_is_bound).
  bool peak_is_bound = false;
};

/// The extents along an axis of length n that change the block count,
/// ascending: ceil(n / k) for k = n..1.
inline std::vector<std::uint64_t> chunk_extents(std::uint64_t n) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t k = n; k >= 1; --k) {
    const auto e = (n + k - 1) / k;
    if (out.empty() || out.back() != e) out.push_back(e);
    if (k == 1) break;
  }
  return out;
}

/// Dask's "auto" chunks for a float32 cube under its default array.chunk-size
/// (128 MiB): as equal as the shape allows, axes shorter than the ideal edge
/// taken whole and the rest of the budget spread over the others.
inline shape3 dask_default_chunk(shape3 cube, std::uint64_t limit_bytes = 128ull << 20) {
  const double limit = double(limit_bytes) / sizeof(float);
  std::array<std::uint64_t, 3> dims = cube.as_array(), chunk{};
  std::array<bool, 3> fixed{};
  double budget = limit;
  for (int round = 0; round < 3; ++round) {
    int free_axes = 0;
    for (int a = 0; a < 3; ++a) free_axes += !fixed[a];
    if (free_axes == 0) break;
    const double edge = std::pow(budget, 1.0 / free_axes);
    bool changed = false;
    for (int a = 0; a < 3; ++a)
      if (!fixed[a] && double(dims[a]) <= edge)
        fixed[a] = true, chunk[a] = dims[a], budget /= double(dims[a]), changed = true;
    if (!changed) {
      for (int a = 0; a < 3; ++a)
        if (!fixed[a]) chunk[a] = std::max<std::uint64_t>(1, std::uint64_t(edge));
      break;
    }
  }
  return {chunk[0], chunk[1], chunk[2]};
}

/// Evaluates one chunking: the exact plan, and the model's per-worker peak
/// (a caching model's replay spends `budget`, graph/model_plan.hpp), plus
/// o.overhead. MetaCtx: the workers' planning context (cuda_meta_context
/// for workers on a GPU, whose peaks are device bytes).
template <class MetaCtx = meta_context>
chunk_evaluation evaluate_chunk(const graph& g, shape3 cube, shape3 chunk, const advice_options& o,
                                replay_budget& budget) {
  const chunked_schedule s(g, cube, {.chunk = chunk, .workers = o.workers, .threads = o.threads});
  chunk_evaluation e{plan_chunked<MetaCtx>(s), 0, {}};
  if (o.profile) e.time = predict_time(s, *o.profile, o.cores);
  if (o.allocator == "exact")
    e.peak = e.plan.peak();
  else
    for (const auto p : model_peaks<MetaCtx>(s, e.plan, o.allocator, budget)) e.peak = std::max(e.peak, p);
  e.peak += o.overhead;
  return e;
}

/// evaluate_chunk with a replay budget of its own.
template <class MetaCtx = meta_context>
chunk_evaluation evaluate_chunk(const graph& g, shape3 cube, shape3 chunk, const advice_options& o) {
  replay_budget budget;
  return evaluate_chunk<MetaCtx>(g, cube, chunk, o, budget);
}

/// The chunk (time whole) whose predicted per-worker peak fits o.budget and
/// that is the largest, or with advice_objective::time the fastest: the
/// smallest predicted makespan over every chunking that fits. Throws
/// invalid_input when even one-trace chunks do not fit.
template <class MetaCtx = meta_context>
advice advise(const graph& g, shape3 cube, const advice_options& o) {
  const auto started = std::chrono::steady_clock::now();
  sim::make_model(o.allocator);  // validates the spec before any work
  if (o.objective == advice_objective::time && !o.profile)
    throw invalid_input("advising for time needs a time profile of the machine (dwsr calibrate)");
  advice a;
  a.objective = o.objective;
  std::optional<double> fastest;  // the smallest predicted makespan among the chunkings that fit, and its chunk
  shape3 fastest_chunk{};
  replay_budget budget;  // shared by every candidate
  auto eval = [&](std::uint64_t ci, std::uint64_t cx) {
    ++a.candidates;
    return evaluate_chunk<MetaCtx>(g, cube, {ci, cx, cube.samples}, o, budget);
  };
  // Axes some node reads whole offer only the whole extent.
  const auto whole = g.whole_axes();
  const auto ins = whole[0] ? std::vector<std::uint64_t>{cube.inlines} : chunk_extents(cube.inlines);
  const auto xs = whole[1] ? std::vector<std::uint64_t>{cube.crosslines} : chunk_extents(cube.crosslines);
  std::optional<chunk_evaluation> best;
  auto better = [](const chunk_evaluation& x, const chunk_evaluation& y) {
    const auto vx = x.plan.chunk.voxels(), vy = y.plan.chunk.voxels();
    if (vx != vy) return vx > vy;
    if (x.plan.blocks != y.plan.blocks) return x.plan.blocks < y.plan.blocks;
    return x.plan.halo_overhead < y.plan.halo_overhead;
  };
  // With three or more blocks along an axis the largest extended block grows
  // with the extent (min(n, extent + 2 halo)); with one or two blocks it need
  // not (two blocks of n/2 + halo can be smaller than three of n/3 + 2 halo),
  // so those extents, at most two, are evaluated one by one.
  const auto three_blocks_or_more = [&](std::uint64_t e) { return (cube.crosslines + e - 1) / e >= 3; };
  const auto split = std::size_t(std::partition_point(xs.begin(), xs.end(), three_blocks_or_more) - xs.begin());
  for (const auto ci : ins) {
    std::optional<chunk_evaluation> fit;
    auto consider = [&](chunk_evaluation e) {
      if (e.peak <= o.budget && (!fit || better(e, *fit))) fit = std::move(e);
    };
    std::size_t lo = 0, hi = split;  // binary search: [0, lo) fits, [hi, split) does not
    while (lo < hi) {
      const auto mid = (lo + hi) / 2;
      auto e = eval(ci, xs[mid]);
      const bool fits = e.peak <= o.budget;
      consider(std::move(e));
      if (fits)
        lo = mid + 1;
      else
        hi = mid;
    }
    std::vector<std::uint64_t> fitting(xs.begin(), xs.begin() + std::ptrdiff_t(lo));  // peaks grow with the extent
    for (auto k = split; k < xs.size(); ++k) {
      auto e = eval(ci, xs[k]);
      if (e.peak <= o.budget) fitting.push_back(xs[k]);
      consider(std::move(e));
    }
    if (fit && (!best || better(*fit, *best))) best = std::move(fit);
    if (o.objective == advice_objective::time)
      for (const auto cx : fitting) {
        const shape3 chunk{ci, cx, cube.samples};
        const auto t =
            predict_time(chunked_schedule(g, cube, {.chunk = chunk, .workers = o.workers, .threads = o.threads}),
                         *o.profile, o.cores);
        const bool larger = chunk.voxels() > fastest_chunk.voxels();
        if (!fastest || t.makespan < *fastest || (t.makespan == *fastest && larger))
          fastest = t.makespan, fastest_chunk = chunk;
      }
  }
  if (!best) {
    const shape3 smallest_chunk{ins.front(), xs.front(), cube.samples};
    const auto smallest = evaluate_chunk<MetaCtx>(g, cube, smallest_chunk, o, budget);
    throw invalid_input("memory budget of " + std::to_string(o.budget) +
                        " bytes per worker is too small: the smallest chunk " + to_string(smallest_chunk) + " needs " +
                        std::to_string(smallest.peak) + " bytes per worker");
  }
  a.largest = *best;
  a.chosen = o.objective == advice_objective::time && fastest_chunk != best->plan.chunk
                 ? evaluate_chunk<MetaCtx>(g, cube, fastest_chunk, o, budget)
                 : *best;
  const auto chunk = a.largest.plan.chunk;
  auto next = [](const std::vector<std::uint64_t>& v, std::uint64_t x) {
    const auto it = std::upper_bound(v.begin(), v.end(), x);
    return it == v.end() ? std::optional<std::uint64_t>{} : *it;
  };
  if (const auto ni = next(ins, chunk.inlines)) a.next_larger.push_back(eval(*ni, chunk.crosslines));
  if (const auto nx = next(xs, chunk.crosslines)) a.next_larger.push_back(eval(chunk.inlines, *nx));
  a.dask_chunk = dask_default_chunk(cube);
  auto dask = a.dask_chunk;
  for (int axis = 0; axis < 3; ++axis)
    if (whole[axis]) (axis == 0 ? dask.inlines : axis == 1 ? dask.crosslines : dask.samples) = cube[axis];
  a.dask = evaluate_chunk<MetaCtx>(g, cube, dask, o, budget);
  a.peak_is_bound =
      plan_is_bound<MetaCtx>(chunked_schedule(g, cube, {.chunk = a.chosen.plan.chunk, .threads = o.threads}));
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return a;
}

}  // namespace dwsr
