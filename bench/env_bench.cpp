// Steps per second of the RL environments (dwsr/env/), per core: PeakPredict
// from a dataset directory (generated once, written, loaded), one environment
// and vector_env batches of 1, 64 and 1024 in each autoreset mode, on one
// thread (a TBB arena of one) and on every core. The goal (issue 12):
// PeakPredict >= 1,000,000 steps/s per core from a dataset. ChunkSchedule
// (a generated pool of 256 tasks): one environment and vector_env batches of
// 1, 64 and 1024, actions drawn among the unmasked candidates each step (the
// mask is read every step, as a masked policy does); goal >= 100,000 steps/s
// per core.
//
// Build in Release and run, e.g.:
//   build/bench/env_bench --benchmark_counters_tabular=true
// "steps/s" counts step() calls of one environment (a batch of N counts N);
// in next_step mode every other call of a one-step episode is its reset.
// BM_fresh_plans draws and plans a new pool of jobs in every iteration (goal
// >= 100,000 steps/s per core with a fresh meta plan per step).
// BM_copy_baseline copies N random job rows into the observation buffer: what
// no PeakPredict step can beat.

#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "dwsr/env/chunk_schedule.hpp"
#include "dwsr/env/gpu_pack.hpp"
#include "dwsr/env/peak_predict.hpp"
#include "dwsr/env/vector_env.hpp"
#include "dwsr/graph/dataset_files.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;
using namespace dwsr::env;

namespace {

constexpr std::uint64_t pool_rows = 20000;

/// The pool, through the files `dwsr dataset` writes.
std::shared_ptr<const peak_jobs> pool() {
  static const auto jobs = [] {
    dataset_options o;
    o.rows = pool_rows;
    o.seed = 1;
    o.allocators = {"exact", "host_pages"};
    const auto dir = std::filesystem::temp_directory_path() / "dwsr-env-bench-dataset";
    write_dataset(make_dataset(operators::catalogue(), o), dir, false);
    auto p = std::make_shared<const peak_jobs>(load_peak_jobs(dir));
    std::filesystem::remove_all(dir);
    return p;
  }();
  return jobs;
}

void count(benchmark::State& state, std::size_t steps) {
  state.counters["steps/s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsIterationInvariantRate);
}

/// N actions within the action space, from a fixed stream.
template <class Env>
std::vector<typename action_of<typename Env::action_space_type>::element> actions_for(const Env& e, std::size_t n) {
  xoshiro256ss rng(5);
  std::vector<typename action_of<typename Env::action_space_type>::element> out(n);
  for (auto& a : out) {
    if constexpr (std::is_same_v<typename Env::action_space_type, box_space>)
      a = float(rng.uniform(e.action_space().low[0], e.action_space().high[0]));
    else
      a = std::int64_t(rng.next() % std::uint64_t(e.action_space().n));
  }
  return out;
}

// Baseline: a random job's features copied into the buffer, N per iteration.
void BM_copy_baseline(benchmark::State& state) {
  const auto p = pool();
  const auto n = std::size_t(state.range(0)), d = p->dim();
  std::vector<float> obs(n * d);
  xoshiro256ss rng(3);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) {
      const auto j = rng.next() % p->size();
      std::copy_n(p->x.data() + j * d, d, obs.data() + i * d);
    }
    benchmark::DoNotOptimize(obs.data());
  }
  count(state, n);
}
BENCHMARK(BM_copy_baseline)->Arg(1)->Arg(1024);

// One environment, no batch: reset then step, one episode per iteration.
template <class Env>
void BM_single(benchmark::State& state) {
  Env e(pool());
  std::vector<float> obs(e.observation_space().size());
  const auto actions = actions_for(e, 4096);
  peak_info info;
  e.reset(1, obs, info);
  std::size_t k = 0;
  for (auto _ : state) {
    e.reset(std::nullopt, obs, info);
    if constexpr (std::is_same_v<typename Env::action_space_type, box_space>)
      benchmark::DoNotOptimize(e.step(std::span<const float>(&actions[k], 1), obs, info));
    else
      benchmark::DoNotOptimize(e.step(actions[k], obs, info));
    k = (k + 1) % actions.size();
  }
  count(state, 1);
}
BENCHMARK_TEMPLATE(BM_single, peak_predict);
BENCHMARK_TEMPLATE(BM_single, peak_predict_bins);

// A vector_env of N = range(0) environments in `mode`; range(1) = 1 runs it
// in an arena of one thread (per core), 0 on every core.
template <class Env>
void BM_vector(benchmark::State& state, autoreset_mode mode) {
  const auto n = std::size_t(state.range(0));
  const bool one_thread = state.range(1) != 0;
  vector_env<Env> v(std::vector<Env>(n, Env(pool())), mode);
  const auto d = v.obs_dim();
  std::vector<float> obs(n * d), final_obs(n * d);
  std::vector<double> rewards(n);
  std::vector<std::uint8_t> term(n), trunc(n);
  std::vector<peak_info> infos(n), finals(n);
  const auto actions = actions_for(v[0], n * v.action_dim());
  const typename vector_env<Env>::step_buffers out{obs, rewards, term, trunc, infos, final_obs, finals};
  tbb::task_arena arena(one_thread ? 1 : tbb::task_arena::automatic);
  arena.execute([&] {
    v.reset(1, obs, infos);
    for (auto _ : state) {
      v.step(actions, out);
      benchmark::DoNotOptimize(rewards.data());
    }
  });
  state.counters["threads"] = double(arena.max_concurrency());
  count(state, n);
}

void batches(benchmark::internal::Benchmark* b) {
  b->ArgNames({"envs", "one_thread"});
  for (long n : {1, 64, 1024}) b->Args({n, 1});
  b->Args({1024, 0});
}
void BM_vector_box(benchmark::State& state, autoreset_mode mode) { BM_vector<peak_predict>(state, mode); }
void BM_vector_bins(benchmark::State& state, autoreset_mode mode) { BM_vector<peak_predict_bins>(state, mode); }
BENCHMARK_CAPTURE(BM_vector_box, next_step, autoreset_mode::next_step)->Apply(batches);
BENCHMARK_CAPTURE(BM_vector_box, same_step, autoreset_mode::same_step)->Apply(batches);
BENCHMARK_CAPTURE(BM_vector_bins, same_step, autoreset_mode::same_step)->Apply(batches);

// PeakPredict with a fresh meta plan per step: each iteration draws a new
// pool of range(0) jobs (graph/dataset.hpp: random graphs, cubes, chunkings
// and W x T, planned by meta execution under the exact and host_pages models)
// and steps one episode per job, on one thread. range(1) is the rows per
// group: 1 plans every job's chunking afresh; the dataset's default 8 shares
// one chunking (its meta executions) among a group's rows. Steps/s counts the
// jobs: what a stream of never-seen jobs costs, planning included.
void BM_fresh_plans(benchmark::State& state) {
  const auto rows = std::uint64_t(state.range(0));
  std::vector<float> obs;
  peak_info info;
  std::uint64_t seed = 100;
  tbb::task_arena arena(1);
  arena.execute([&] {
    for (auto _ : state) {
      dataset_options o;
      o.rows = rows;
      o.seed = seed++;
      o.allocators = {"exact", "host_pages"};
      o.rows_per_group = std::size_t(state.range(1));
      peak_predict_bins e(std::make_shared<const peak_jobs>(generate_peak_jobs(operators::catalogue(), o)));
      obs.resize(e.observation_space().size());
      e.reset(1, obs, info);
      for (std::uint64_t k = 0; k < rows; ++k) {
        e.reset(std::nullopt, obs, info);
        benchmark::DoNotOptimize(e.step(std::int64_t(k % 16), obs, info));
      }
    }
  });
  count(state, rows);
}
BENCHMARK(BM_fresh_plans)
    ->ArgNames({"jobs", "per_group"})
    ->Args({4096, 1})
    ->Args({4096, 8})
    ->Unit(benchmark::kMillisecond);

/// ChunkSchedule's pool, generated once.
std::shared_ptr<const chunk_tasks> chunk_pool() {
  static const auto p = std::make_shared<const chunk_tasks>(generate_chunk_tasks(operators::catalogue(), {}));
  return p;
}

/// A random unmasked candidate of `mask` (8 bytes), from `rng`.
std::int64_t unmasked(std::span<const std::uint8_t> mask, xoshiro256ss& rng) {
  auto k = std::size_t(rng.next() % chunk_candidates);
  while (!mask[k]) k = (k + 1) % chunk_candidates;
  return std::int64_t(k);
}

// One ChunkSchedule: a step per iteration (a reset when an episode ends, not counted apart).
void BM_chunk_single(benchmark::State& state) {
  chunk_schedule e(chunk_pool());
  std::vector<float> obs(e.observation_space().size());
  std::array<std::uint8_t, chunk_candidates> mask{};
  chunk_info info;
  xoshiro256ss rng(2);
  e.reset(1, obs, info);
  std::size_t episodes = 0;
  for (auto _ : state) {
    e.action_mask(mask);
    const auto r = e.step(unmasked(mask, rng), obs, info);
    if (r.terminated || r.truncated) e.reset(std::nullopt, obs, info), ++episodes;
    benchmark::DoNotOptimize(obs.data());
  }
  state.counters["episodes"] = double(episodes);
  count(state, 1);
}
BENCHMARK(BM_chunk_single);

// A vector_env of N = range(0) ChunkSchedules (next_step); range(1) as BM_vector's.
void BM_chunk_vector(benchmark::State& state) {
  const auto n = std::size_t(state.range(0));
  const bool one_thread = state.range(1) != 0;
  vector_env<chunk_schedule> v(std::vector<chunk_schedule>(n, chunk_schedule(chunk_pool())));
  const auto d = v.obs_dim();
  std::vector<float> obs(n * d);
  std::vector<double> rewards(n);
  std::vector<std::uint8_t> term(n), trunc(n), masks(n * chunk_candidates);
  std::vector<chunk_info> infos(n);
  std::vector<std::int64_t> actions(n);
  xoshiro256ss rng(4);
  const vector_env<chunk_schedule>::step_buffers out{obs, rewards, term, trunc, infos, {}, {}};
  tbb::task_arena arena(one_thread ? 1 : tbb::task_arena::automatic);
  arena.execute([&] {
    v.reset(1, obs, infos);
    for (auto _ : state) {
      v.action_masks(masks);
      for (std::size_t i = 0; i < n; ++i)
        actions[i] = unmasked(std::span(masks).subspan(i * chunk_candidates, chunk_candidates), rng);
      v.step(actions, out);
      benchmark::DoNotOptimize(rewards.data());
    }
  });
  state.counters["threads"] = double(arena.max_concurrency());
  count(state, n);
}
BENCHMARK(BM_chunk_vector)->Apply(batches);

}  // namespace

// GpuPack (env/gpu_pack.hpp): the default pool (64 kinds) and devices, 32
// jobs an episode; actions uniform over the G + 1 from a fixed stream (a
// masked one is a wait), an episode reset when it ends.
namespace {

std::shared_ptr<const gpu_pack_jobs> pack_pool() {
  static const auto jobs = std::make_shared<const gpu_pack_jobs>(generate_gpu_pack_jobs(operators::catalogue()));
  return jobs;
}

void BM_gpu_pack_single(benchmark::State& state) {
  gpu_pack e(pack_pool());
  std::vector<float> obs(e.observation_space().size());
  const auto actions = actions_for(e, 4096);
  gpu_pack_info info;
  e.reset(1, obs, info);
  std::size_t k = 0;
  for (auto _ : state) {
    const auto r = e.step(actions[k], obs, info);
    if (r.terminated || r.truncated) e.reset(std::nullopt, obs, info);
    k = (k + 1) % actions.size();
  }
  count(state, 1);
}
BENCHMARK(BM_gpu_pack_single);

void BM_gpu_pack_vector(benchmark::State& state, autoreset_mode mode) {
  const auto n = std::size_t(state.range(0));
  const bool one_thread = state.range(1) != 0;
  vector_env<gpu_pack> v(std::vector<gpu_pack>(n, gpu_pack(pack_pool())), mode);
  const auto d = v.obs_dim();
  std::vector<float> obs(n * d), final_obs(n * d);
  std::vector<double> rewards(n);
  std::vector<std::uint8_t> term(n), trunc(n);
  std::vector<gpu_pack_info> infos(n), finals(n);
  const auto actions = actions_for(v[0], 64 * n);
  const vector_env<gpu_pack>::step_buffers out{obs, rewards, term, trunc, infos, final_obs, finals};
  tbb::task_arena arena(one_thread ? 1 : tbb::task_arena::automatic);
  std::size_t k = 0;
  arena.execute([&] {
    v.reset(1, obs, infos);
    for (auto _ : state) {
      v.step(std::span<const std::int64_t>(actions).subspan(k * n, n), out);
      k = (k + 1) % 64;
      benchmark::DoNotOptimize(rewards.data());
    }
  });
  state.counters["threads"] = double(arena.max_concurrency());
  count(state, n);
}
BENCHMARK_CAPTURE(BM_gpu_pack_vector, next_step, autoreset_mode::next_step)->Apply(batches);
BENCHMARK_CAPTURE(BM_gpu_pack_vector, same_step, autoreset_mode::same_step)->Apply(batches);

}  // namespace

BENCHMARK_MAIN();
