#pragma once
/// \file Labelled training data for memory estimators: configurations drawn
/// from a seed, their feature vectors (graph/features.hpp) and labels from the
/// simulator, with the splits an estimator is judged on. What `dwsr dataset`
/// writes (docs/dataset.md documents the files and every column).
///
/// What is drawn. A pool of graphs: every single-input operator of the
/// registry alone, then `random_graphs` graphs of 2 to 4 nodes
/// (graph/random_graph.hpp). Rows come in groups of `rows_per_group` that
/// share what is costly to plan:
/// - tasks peak and chunk: a graph of the pool, a cube (each extent
///   log-uniform: inline and crossline in [16, 2048], time in [64, 2048]), T
///   (1, 2, 4, 8 or 16) and, for peak, a chunking (the blocks along each axis
///   log-uniform, at most dataset_max_blocks in all, time whole three times in
///   four). Each row then draws W (1 to 64), an allocator among `allocators`,
///   an execution model among `execs` (peak) and a budget (the cube's bytes
///   times a factor log-uniform in [1/128, 4], whole MiB). A group's rows have
///   the same block shapes, so the meta execution of each shape runs once per
///   group (graph/chunked.hpp's measure_classes) and the rest of a row is
///   arithmetic: that is what makes task peak fast.
/// - task pack: 1 to pack_max_jobs jobs (a graph, a cube, at most
///   pack_max_blocks blocks, T), each one process of a chunked run timed by the
///   time model (graph/colocated_job.hpp). Each row draws the device (a GPU,
///   whole or a MIG slice), each job's allocator and its start.
///
/// Labels. Task peak: each worker's highest requested peak (the exact plan, or
/// for Dask-style rows the Dask model's schedule, with its bound), the
/// reserved peak under each allocator model, whether the row's allocator
/// exceeds its budget, and, with a time profile, the predicted makespan. Task
/// chunk: the advisor's chunk for the budget (graph/advisor.hpp: the fastest
/// that fits with a profile, else the largest; time kept whole), its blocks,
/// peak and makespan, or fits = 0 when not even one-trace blocks fit. Task
/// pack: the co-location replay's device peak and its time, the OOMs and the
/// first job to fail (sim/colocate.hpp). Every label is what `dwsr plan`,
/// `dwsr advise` or `dwsr colocate` print for the same configuration.
///
/// Splits (1 = test). random: one group in five, so that no group straddles
/// train and test. family: rows with a graph that has a node of one of two
/// operator families drawn from the seed. extrapolation: rows whose input
/// bytes are at least the 80th percentile of the groups', so that an
/// estimator trained on the smaller volumes is tested on the larger ones.
///
/// Same options and seed, same bytes: every group draws from its own stream
/// (core/random.hpp), whichever thread generates it.

#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/quote.hpp"
#include "dwsr/core/random.hpp"
#include "dwsr/graph/advisor.hpp"
#include "dwsr/graph/colocated_job.hpp"
#include "dwsr/graph/dask_model.hpp"
#include "dwsr/graph/features.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/graph/model_plan.hpp"
#include "dwsr/graph/random_graph.hpp"
#include "dwsr/graph/time_model.hpp"
#include "dwsr/sim/colocate.hpp"

namespace dwsr {

/// What a dataset's labels are.
enum class dataset_task {
  peak,   ///< per-worker peaks of a given chunking
  chunk,  ///< the chunk to choose for a budget
  pack,   ///< co-located jobs on a GPU or MIG slice
};

/// The task named `s` ("peak", "chunk"), or none.
inline std::optional<dataset_task> parse_dataset_task(std::string_view s) {
  if (s == "peak") return dataset_task::peak;
  if (s == "chunk") return dataset_task::chunk;
  if (s == "pack") return dataset_task::pack;
  return std::nullopt;
}
inline std::string_view name_of(dataset_task t) {
  return t == dataset_task::peak ? "peak" : t == dataset_task::chunk ? "chunk" : "pack";
}

/// What to generate.
struct dataset_options {
  dataset_task task = dataset_task::peak;
  std::uint64_t rows = 10000;
  std::uint64_t seed = 0;
  /// Allocator models (sim::make_model specs): one label column each, and the
  /// rows' allocators are drawn among them. Task chunk takes exact and
  /// host_pages only (the caching models replay every candidate's events).
  std::vector<std::string> allocators = {"exact",     "host_pages", "host_malloc", "torch_cuda_caching",
                                         "cupy_pool", "rmm_pool"};
  /// Execution models task peak's rows draw from: "dwsr" (one block at a
  /// time, T threads inside), "dask" (T single-threaded block tasks at once,
  /// graph/dask_model.hpp) and "dask_unfused" (one task per node and block).
  std::vector<std::string> execs = {"dwsr"};
  std::size_t random_graphs = 256;  ///< multi-node graphs in the pool
  std::size_t rows_per_group = 8;
  const sim::time_profile* profile = nullptr;  ///< when set, makespan labels (and advice for time)
  std::size_t cores = 0;                       ///< cores of the predicted machine (0: the profile's)
};

/// The execution model named `s` (see dataset_options::execs): none for
/// dwsr's own, else the Dask task split. Throws invalid_input for another name.
inline std::optional<dask_split> execution_named(std::string_view s) {
  if (s == "dwsr") return std::nullopt;
  if (s == "dask") return dask_split::fused;
  if (s == "dask_unfused") return dask_split::unfused;
  throw invalid_input("execution model " + quote(s) + ": expected dwsr, dask or dask_unfused");
}

/// Most blocks of a drawn chunking (bounds the caching models' replays).
inline constexpr std::uint64_t dataset_max_blocks = 4096;
/// Task pack: most jobs on one device, and most blocks of a job's chunking
/// (a job replays its whole stream).
inline constexpr std::size_t pack_max_jobs = 4;
inline constexpr std::uint64_t pack_max_blocks = 16;
/// Most rows of one dataset.
inline constexpr std::uint64_t dataset_max_rows = 100'000'000;

/// A generated dataset (see the file comment).
struct dataset {
  dataset_task task = dataset_task::peak;
  dataset_options options;
  std::vector<column> features, labels;
  std::vector<float> x;                    ///< rows x features, row-major
  std::vector<double> y;                   ///< rows x labels
  std::size_t graph_slots = 1;             ///< graphs per row: 1, or pack_max_jobs for task pack
  std::vector<std::int64_t> graph_of_row;  ///< rows x graph_slots indices into graphs (-1: no job in the slot)
  std::vector<std::uint8_t> split;         ///< rows x 3 (random, family, extrapolation); 1 = test
  std::vector<nlohmann::json> graphs;      ///< the pool, as graph documents
  std::vector<std::string> held_out;       ///< the family split's test families
  std::uint64_t extrapolation_cut = 0;     ///< input bytes at and above which a row is in the test set
  std::uint64_t rows() const noexcept { return graph_of_row.size() / graph_slots; }
};

namespace detail {

/// Integer log-uniform draws in [lo, hi], from portable arithmetic only. The
/// bounds' logarithms are taken once: a dataset draws millions.
class log_uniform_range {
 public:
  log_uniform_range(std::uint64_t lo, std::uint64_t hi)
      : lo_(lo), hi_(hi), a_(portable_log(double(lo))), b_(portable_log(double(hi) + 1.0)) {}
  std::uint64_t operator()(xoshiro256ss& rng) const {
    return std::clamp(static_cast<std::uint64_t>(portable_exp(rng.uniform(a_, b_))), lo_, hi_);
  }

 private:
  std::uint64_t lo_, hi_;
  double a_, b_;
};

/// One integer log-uniform in [lo, hi].
inline std::uint64_t log_uniform(xoshiro256ss& rng, std::uint64_t lo, std::uint64_t hi) {
  return log_uniform_range(lo, hi)(rng);
}

template <class T, std::size_t N>
const T& pick(xoshiro256ss& rng, const std::array<T, N>& from) {
  return from[rng.next() % N];
}

/// One pool graph with what rows need of it.
struct pool_graph {
  graph g;
  std::vector<double> code;        ///< code_features values
  std::set<std::string> families;  ///< its nodes' operator families
};

/// One group's shared draw.
struct group_draw {
  std::size_t graph = 0;
  shape3 cube, chunk;
  std::size_t threads = 1;
};

inline constexpr std::array<std::size_t, 5> thread_choices{1, 2, 4, 8, 16};
inline constexpr std::array<std::size_t, 12> worker_choices{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64};

/// Draws a budget per worker: the cube's bytes times a factor log-uniform in
/// [1/128, 4], in whole MiB (at least one): relative to the cube, so that both
/// outcomes (fits, out of memory) stay common whatever the cube's size.
inline std::uint64_t draw_budget(xoshiro256ss& rng, shape3 cube) {
  static const double lo = portable_log(1.0 / 128), hi = portable_log(4.0);
  const double factor = portable_exp(rng.uniform(lo, hi));
  const auto bytes = static_cast<std::uint64_t>(double(cube.voxels() * sizeof(float)) * factor);
  return std::max<std::uint64_t>(1, bytes >> 20) << 20;
}

/// Draws a chunk of `cube` for `g`: per axis a log-uniform block count, the
/// axes `g` reads whole kept whole, time whole three times in four, at most
/// max_blocks blocks.
inline shape3 draw_chunk(xoshiro256ss& rng, const graph& g, shape3 cube,
                         std::uint64_t max_blocks = dataset_max_blocks) {
  const auto whole = g.whole_axes();
  shape3 chunk = cube;
  std::uint64_t blocks = 1;
  for (int a = 0; a < 3; ++a) {
    if (whole[std::size_t(a)] || (a == 2 && rng.next() % 4 != 0)) continue;
    const auto n = cube[a];
    const auto along = log_uniform(rng, 1, std::min(n, max_blocks / blocks));
    const auto extent = (n + along - 1) / along;
    (a == 0 ? chunk.inlines : a == 1 ? chunk.crosslines : chunk.samples) = extent;
    blocks *= (n + extent - 1) / extent;
  }
  return chunk;
}

}  // namespace detail

/// Generates a dataset of operators from `r` (see the file comment); calls
/// progress(rows done) now and then from the generating threads, serialised.
/// Throws invalid_input for bad options: no rows or too many, an unknown
/// allocator, a caching allocator for task chunk, a profile lacking one of
/// the pool's operators.
inline dataset make_dataset(const registry& r, const dataset_options& o,
                            const std::function<void(std::uint64_t)>& progress = {}) {
  if (o.rows == 0 || o.rows > dataset_max_rows)
    throw invalid_input(std::to_string(o.rows) + " rows; expected 1 to " + std::to_string(dataset_max_rows));
  if (o.rows_per_group == 0) throw invalid_input("0 rows per group; expected at least 1");
  if (o.allocators.empty()) throw invalid_input("no allocator model; expected at least one, e.g. exact");
  for (std::size_t k = 0; k < o.allocators.size(); ++k) {
    const auto& a = o.allocators[k];
    if (std::find(o.allocators.begin(), o.allocators.begin() + std::ptrdiff_t(k), a) !=
        o.allocators.begin() + std::ptrdiff_t(k))
      throw invalid_input("allocator '" + a + "' is listed twice; expected each model once");
    const auto m = sim::make_model(a);  // throws for an unknown model, naming the known ones
    if (o.task == dataset_task::chunk && !holds_nothing_between_blocks(m))
      throw invalid_input("allocator '" + a + "' for task chunk: expected exact or host_pages (a caching model " +
                          "replays every event of every chunking the advisor tries)");
  }

  if (o.execs.empty()) throw invalid_input("no execution model; expected at least one, e.g. dwsr");
  std::vector<std::optional<dask_split>> execs;
  for (const auto& x : o.execs) execs.push_back(execution_named(x));
  const bool dask = std::any_of(execs.begin(), execs.end(), [](const auto& x) { return x.has_value(); });
  if (dask && o.task != dataset_task::peak)
    throw invalid_input("Dask-style execution for task " + std::string(name_of(o.task)) +
                        ": expected task peak (the advisor and the device model plan dwsr's execution)");

  dataset d;
  d.task = o.task;
  d.options = o;
  d.options.profile = nullptr;

  // The pool: every single-input operator alone, then random graphs.
  const random_graphs draw_graphs(r);
  std::vector<detail::pool_graph> pool;
  for (const auto& e : r.entries())
    if (e.configure()->arity() == 1) pool.push_back({graph::single(r, e.name), {}, {}});
  {
    xoshiro256ss rng(stream_key(o.seed, 0, 3));
    for (std::size_t k = 0; k < o.random_graphs; ++k)
      pool.push_back({draw_graphs.draw(rng, 2 + rng.next() % 3), {}, {}});
  }
  for (std::size_t k = 0; k < pool.size(); ++k) {
    auto v = feature_vector::values_only();  // the columns come from the first row's emission below
    code_features(pool[k].g, v);
    pool[k].code = v.values();
    for (const auto& n : pool[k].g.nodes()) {
      pool[k].families.insert(r.find(n.spec.op).family);
      if (o.profile) (void)o.profile->of(n.spec.op);  // throws for an operator the profile lacks
    }
    d.graphs.push_back(graph_to_json(pool[k].g));
  }

  // Held-out families: two drawn from those the pool has, combinations aside
  // (they only appear beside other families).
  {
    std::set<std::string> families;
    for (const auto& p : pool) families.insert(p.families.begin(), p.families.end());
    families.erase("combination");
    std::vector<std::string> names(families.begin(), families.end());
    xoshiro256ss rng(stream_key(o.seed, 0, 4));
    for (std::size_t k = 0; k < 2 && k < names.size(); ++k) {
      std::swap(names[k], names[k + rng.next() % (names.size() - k)]);
      d.held_out.push_back(names[k]);
    }
    std::sort(d.held_out.begin(), d.held_out.end());
  }

  // Task pack: the devices rows draw from, every GPU whole and every MIG slice.
  std::vector<sim::device_spec> devices;
  for (const auto& m : sim::gpu_catalogue()) {
    devices.push_back(sim::device_named(m.name));
    for (const auto& p : m.profiles)
      devices.push_back(sim::device_named(std::string(m.name) + "/" + std::string(p.name)));
  }
  // A pack row's columns for job slot k: "job<k>_" and the job's features.
  auto slot = [](feature_vector& v, std::size_t k) {
    return [&v, prefix = "job" + std::to_string(k) + "_"](std::string_view n, std::string_view u, std::string_view doc,
                                                          double value) {
      if (v.recording())
        v(prefix + std::string(n), u, doc, value);
      else
        v(n, u, doc, value);
    };
  };
  auto pack_head = [](feature_vector& v, const sim::device_spec& dev, std::size_t jobs) {
    v("device_capacity", "bytes", "memory the device's processes can use, contexts included", double(dev.capacity));
    v("device_mig", "flag", "1 for a MIG slice, 0 for a whole GPU", double(!dev.profile.empty()));
    v("jobs", "count", "jobs co-located on the device", double(jobs));
  };
  auto job_head = [](auto&& emit, double start, double duration) {
    emit("present", "flag", "1 when the slot holds a job", 1.0);
    emit("start", "seconds", "when the job starts", start);
    emit("duration", "seconds", "the job's time from the time model (its default rate without a profile)", duration);
  };

  // Columns, from a first row's emission.
  {
    feature_vector v;
    const chunked_schedule s(pool.front().g, canonical_shape, {});
    const execution_config e{canonical_shape, canonical_shape, 1, 1, o.allocators.front(), 1};
    if (o.task == dataset_task::pack) {
      pack_head(v, devices.front(), 1);
      for (std::size_t k = 0; k < pack_max_jobs; ++k) {
        auto emit = slot(v, k);
        job_head(emit, 0, 0);
        code_features(pool.front().g, emit);
        execution_features(e, &s, emit);
      }
    } else {
      code_features(pool.front().g, v);
      execution_features(e, o.task == dataset_task::peak ? &s : nullptr, v);
    }
    d.features = v.columns();
  }
  auto label = [&](std::string name, std::string unit, std::string doc) {
    d.labels.push_back({std::move(name), std::move(unit), std::move(doc)});
  };
  // Label columns beside the requested peak, one per model other than exact,
  // in the order given; per_class: exact, then the models planned by class.
  std::vector<std::string> reserved, per_class{std::string(sim::exact_model::name)};
  if (o.task == dataset_task::peak) {
    label("peak_requested", "bytes",
          "highest per-worker peak of requested bytes (the exact plan; Dask-style: the model's schedule)");
    if (dask)
      label("peak_bound", "bytes",
            "Dask-style: no task order of the same concurrency exceeds it (dwsr's execution: peak_requested)");
    std::vector<std::string> caching;
    for (const auto& a : o.allocators) {
      const auto m = sim::make_model(a);
      if (m.model_name() != sim::exact_model::name)
        (holds_nothing_between_blocks(m) ? per_class : caching).push_back(a);
    }
    reserved.assign(per_class.begin() + 1, per_class.end());
    reserved.insert(reserved.end(), caching.begin(), caching.end());
    for (const auto& a : reserved)
      label("peak_reserved_" + a, "bytes", "highest per-worker peak the allocator model '" + a + "' reserves");
    label("oom", "flag", "1 when the row's allocator reserves more than the budget on some worker");
  } else if (o.task == dataset_task::pack) {
    label("device_peak", "bytes", "highest device usage: the jobs' contexts and their allocators' reserved bytes");
    label("peak_time", "seconds", "when the device's usage first reached its peak");
    label("oom", "flag", "1 when some job ran out of device memory");
    label("jobs_failed", "count", "jobs that ran out of device memory (each releases what it held)");
    label("first_oom_job", "index", "the slot of the first job to run out of memory, -1 when none did");
  } else {
    label("fits", "flag", "1 when some chunking fits the budget (the other labels are 0 otherwise)");
    label("chunk_inlines", "voxels", "the advised block extent along inline");
    label("chunk_crosslines", "voxels", "the advised block extent along crossline (time stays whole)");
    label("blocks", "count", "blocks of the advised chunking");
    label("peak", "bytes", "highest per-worker peak of the advised chunking under the row's allocator");
  }
  if (o.profile && o.task != dataset_task::pack)
    label("makespan", "seconds", "predicted time of the (advised) chunked run, from the time profile");

  const std::size_t nf = d.features.size(), nl = d.labels.size();
  const std::uint64_t groups = (o.rows + o.rows_per_group - 1) / o.rows_per_group;
  d.x.assign(o.rows * nf, 0.0f);
  d.y.assign(o.rows * nl, 0.0);
  d.graph_slots = o.task == dataset_task::pack ? pack_max_jobs : 1;
  d.graph_of_row.assign(o.rows * d.graph_slots, -1);
  d.split.assign(o.rows * 3, 0);
  std::vector<std::uint64_t> group_bytes(groups);
  std::vector<std::uint8_t> group_test(groups);

  std::atomic<std::uint64_t> done{0};
  std::mutex progress_lock;
  const detail::log_uniform_range lateral(16, 2048), in_time(64, 2048);  // a peak or chunk row's cube extents
  auto run_group = [&](std::uint64_t gi) {
    const auto first = gi * o.rows_per_group, last = std::min(o.rows, first + o.rows_per_group);
    xoshiro256ss rng(stream_key(o.seed, gi, 0));
    detail::group_draw gd;
    gd.graph = std::size_t(rng.next() % pool.size());
    const auto& pg = pool[gd.graph];
    const auto& g = pg.g;
    const auto whole = g.whole_axes();
    gd.cube = {lateral(rng), lateral(rng), in_time(rng)};
    gd.threads = detail::pick(rng, detail::thread_choices);
    // Task peak: the group's chunking, its block classes, and what one block
    // of each costs under the models that hold nothing between blocks (the
    // exact plan's and host_pages'), measured once for all the group's rows.
    std::optional<chunked_schedule> base;
    std::optional<block_classes> classes;
    std::vector<detail::class_steps> steps;  // per per_class model
    if (o.task == dataset_task::peak) {
      gd.chunk = detail::draw_chunk(rng, g, gd.cube);
      base.emplace(g, gd.cube, chunked_options{gd.chunk, 1, gd.threads});
      classes.emplace(base->blocks());
      steps = detail::measure_classes_under(*base, *classes, detail::run_phase_reductions(*base), per_class);
    }
    feature_vector v = feature_vector::values_only();
    v.reserve(nf);
    for (auto row = first; row < last; ++row) {
      execution_config e{gd.cube,
                         gd.chunk,
                         detail::pick(rng, detail::worker_choices),
                         gd.threads,
                         o.allocators[rng.next() % o.allocators.size()],
                         detail::draw_budget(rng, gd.cube)};
      e.dask = execs.size() > 1 ? execs[rng.next() % execs.size()] : execs.front();
      double* y = &d.y[row * nl];
      std::size_t l = 0;
      std::optional<chunked_schedule> s;
      if (o.task == dataset_task::peak && e.dask) {
        // Dask-style rows: requested bytes only (the allocator models replay
        // one stream per worker, not T interleaved tasks), so exact.
        e.allocator = sim::exact_model::name;
        s.emplace(g, e.cube, chunked_options{e.chunk, e.workers, e.threads});
        const auto p = plan_dask(*s, {.split = *e.dask, .profile = o.profile});
        y[l++] = double(p.schedule_peak());
        y[l++] = double(p.bound());
        for (std::size_t k = 0; k < reserved.size(); ++k) y[l++] = std::nan("");
        y[l++] = p.schedule_peak() > e.budget;
        if (o.profile) y[l++] = std::nan("");
      } else if (o.task == dataset_task::peak) {
        s.emplace(g, e.cube, chunked_options{e.chunk, e.workers, e.threads});
        // A per_class model's label is its highest class peak, whatever W; a
        // caching model replays the workers of the exact plan, built once.
        std::uint64_t held = steps.front().highest_peak();
        y[l++] = double(held);
        if (dask) y[l++] = double(held);
        std::optional<chunked_plan> plan;
        for (std::size_t k = 0; k < reserved.size(); ++k) {
          const auto& a = reserved[k];
          std::uint64_t peak = 0;
          if (k + 1 < per_class.size()) {
            peak = steps[k + 1].highest_peak();
          } else {
            if (!plan) plan = detail::plan_from_classes(*s, *classes, steps.front());
            const auto peaks = model_peaks(*s, *plan, a);
            peak = *std::max_element(peaks.begin(), peaks.end());
          }
          y[l++] = double(peak);
          if (a == e.allocator) held = peak;
        }
        y[l++] = held > e.budget;
        if (o.profile) y[l++] = predict_time(*s, *o.profile, o.cores).makespan;
      } else {
        advice_options ao{e.budget,
                          e.workers,
                          e.threads,
                          e.allocator,
                          o.profile ? advice_objective::time : advice_objective::largest,
                          o.profile,
                          o.cores};
        const shape3 smallest{whole[0] ? e.cube.inlines : 1, whole[1] ? e.cube.crosslines : 1, e.cube.samples};
        if (evaluate_chunk(g, e.cube, smallest, ao).peak > e.budget) {
          l = nl;  // fits = 0 and the rest 0
        } else {
          const auto a = advise(g, e.cube, ao);
          y[l++] = 1;
          y[l++] = double(a.chosen.plan.chunk.inlines);
          y[l++] = double(a.chosen.plan.chunk.crosslines);
          y[l++] = double(a.chosen.plan.blocks);
          y[l++] = double(a.chosen.peak);
          if (o.profile) y[l++] = a.chosen.time->makespan;
        }
      }
      v.clear();
      for (double c : pg.code) v("", "", "", c);
      execution_features(e, s ? &*s : nullptr, v);
      std::transform(v.values().begin(), v.values().end(), &d.x[row * nf],
                     [](double value) { return static_cast<float>(value); });
      d.graph_of_row[row] = std::int64_t(gd.graph);
      bool family = false;
      for (const auto& f : d.held_out) family = family || pg.families.count(f);
      d.split[row * 3 + 1] = family;
    }
    group_bytes[gi] = gd.cube.voxels() * sizeof(float);
    group_test[gi] = mix64(stream_key(o.seed, gi, 1)) % 5 == 0;
    const auto now = done += last - first;
    if (progress) {
      std::lock_guard lock(progress_lock);
      progress(now);
    }
  };
  // Task pack: a group shares its jobs (graphs, cubes, chunkings, T: their
  // streams and times); each row draws the device, each job's allocator and
  // start (uniform over the longest job's duration, so that jobs overlap).
  const std::size_t slot_width = o.task == dataset_task::pack ? (nf - 3) / pack_max_jobs : 0;
  auto run_pack_group = [&](std::uint64_t gi) {
    const auto first = gi * o.rows_per_group, last = std::min(o.rows, first + o.rows_per_group);
    xoshiro256ss rng(stream_key(o.seed, gi, 0));
    struct slot_job {
      std::size_t graph;
      execution_config e;
      std::optional<chunked_schedule> s;
    };
    std::vector<slot_job> slots(1 + rng.next() % pack_max_jobs);
    std::vector<sim::job> jobs;
    std::uint64_t bytes = 0;
    bool family = false;
    double longest = 0;
    for (auto& j : slots) {
      j.graph = std::size_t(rng.next() % pool.size());
      const auto& g = pool[j.graph].g;
      j.e.cube = {detail::log_uniform(rng, 128, 4096), detail::log_uniform(rng, 128, 4096),
                  detail::log_uniform(rng, 256, 2048)};
      j.e.threads = detail::pick(rng, detail::thread_choices);
      j.e.chunk = detail::draw_chunk(rng, g, j.e.cube, pack_max_blocks);
      j.s.emplace(g, j.e.cube, chunked_options{j.e.chunk, 1, j.e.threads});
      jobs.push_back(colocated_job(*j.s, {.profile = o.profile, .cores = o.cores}));
      jobs.back().name = "job " + std::to_string(jobs.size() - 1);
      longest = std::max(longest, jobs.back().duration);
      bytes += j.e.cube.voxels() * sizeof(float);
      for (const auto& f : d.held_out) family = family || pool[j.graph].families.count(f);
    }
    feature_vector v = feature_vector::values_only();
    for (auto row = first; row < last; ++row) {
      const auto& dev = devices[rng.next() % devices.size()];
      for (std::size_t k = 0; k < slots.size(); ++k) {
        jobs[k].allocator = o.allocators[rng.next() % o.allocators.size()];
        // A float32 value, so that the start feature is the job's start exactly.
        jobs[k].start = k == 0 ? 0.0 : double(static_cast<float>(rng.uniform() * longest));
        slots[k].e.allocator = jobs[k].allocator;
        slots[k].e.budget = dev.capacity;
      }
      const auto replay = sim::colocate(dev, jobs);
      double* y = &d.y[row * nl];
      y[0] = double(replay.peak);
      y[1] = replay.peak_time;
      y[2] = !replay.ooms.empty();
      std::size_t failed = 0;
      for (const auto& j : replay.jobs) failed += j.failed;
      y[3] = double(failed);
      y[4] = replay.ooms.empty() ? -1.0 : double(replay.ooms.front().job);
      v.clear();
      pack_head(v, dev, slots.size());
      for (std::size_t k = 0; k < pack_max_jobs; ++k) {
        if (k >= slots.size()) {
          for (std::size_t c = 0; c < slot_width; ++c) v("", "", "", 0.0);
          continue;
        }
        auto emit = slot(v, k);
        job_head(emit, jobs[k].start, jobs[k].duration);
        for (double c : pool[slots[k].graph].code) v("", "", "", c);
        execution_features(slots[k].e, &*slots[k].s, emit);
        d.graph_of_row[row * pack_max_jobs + k] = std::int64_t(slots[k].graph);
      }
      std::transform(v.values().begin(), v.values().end(), &d.x[row * nf],
                     [](double value) { return static_cast<float>(value); });
      d.split[row * 3 + 1] = family;
    }
    group_bytes[gi] = bytes;
    group_test[gi] = mix64(stream_key(o.seed, gi, 1)) % 5 == 0;
    const auto now = done += last - first;
    if (progress) {
      std::lock_guard lock(progress_lock);
      progress(now);
    }
  };
  tbb::parallel_for(std::uint64_t{0}, groups,
                    [&](std::uint64_t gi) { o.task == dataset_task::pack ? run_pack_group(gi) : run_group(gi); });

  auto sorted = group_bytes;
  std::sort(sorted.begin(), sorted.end());
  d.extrapolation_cut = sorted[sorted.size() * 4 / 5];
  for (std::uint64_t row = 0; row < o.rows; ++row) {
    const auto gi = row / o.rows_per_group;
    d.split[row * 3] = group_test[gi];
    d.split[row * 3 + 2] = group_bytes[gi] >= d.extrapolation_cut;
  }
  return d;
}

}  // namespace dwsr
