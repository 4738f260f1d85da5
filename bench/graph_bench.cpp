// Graphs and chunking: what planning and advice cost, and what chunked
// execution costs against one block.
//
// - plan/advise: a 5-node graph (envelope and instantaneous_frequency of the
//   input, sweetness_from of the two, a gaussian of that, and the relative
//   amplitude change of the smoothed cube) on a 2000x2000x1000 float32 cube
//   (14.9 GiB), 4 workers x 2 threads, 4 GiB per worker. Nothing is computed
//   or allocated: the advice must come in under a second.
// - dataset_peak/...: training data (graph/dataset.hpp) on one thread, rows/s.
// - chunked/...: run_chunked on a 64x64x512 synthetic cube (the operator
//   benchmark's) with 1 worker x 1 thread, blocks of EDGE x EDGE x 512 (time
//   kept whole). Each iteration also runs the same graph as one block, so
//   "vs_one_block" is the ratio of the two times under the same load;
//   ns_per_voxel is the chunked run's time per voxel of the cube; peak_MiB, the
//   predicted per-worker peak, is what that chunk costs in memory (the
//   trade-off a user makes). A measured peak other than the predicted one is
//   reported as an error. Freed memory stays in glibc's heap (see main), so
//   neither run pays for faulting fresh pages.
//
// Build in Release and run, e.g.:
//   build/bench/graph_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>
#include <tbb/global_control.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "bench_graphs.hpp"
#include "dwsr/graph/advisor.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/dataset.hpp"
#include "dwsr/io/synthetic.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;

namespace {

constexpr double mib = 1024.0 * 1024.0;
constexpr double gib = 1024.0 * mib;

// ---------------------------------------------------------------- plan, advise

const shape3 large_cube{2000, 2000, 1000};
constexpr std::uint64_t large_budget = 4ull << 30;
constexpr std::size_t large_workers = 4;
constexpr std::size_t large_threads = 2;

/// Five nodes: two complex-trace attributes, a two-input combination, a
/// windowed smoothing and a windowed derivative attribute of the smoothed cube.
graph five_node_graph() {
  graph g(operators::catalogue());
  bench::add_sweetness(g).add("smooth", "gaussian", {"sweet"}).add("rac", "relative_amplitude_change", {"smooth"});
  g.build();
  return g;
}

// Exact per-worker plan of one chunking (the meta execution of every distinct block shape).
void BM_plan_5node(benchmark::State& state) {
  const auto g = five_node_graph();
  const auto edge = static_cast<std::uint64_t>(state.range(0));
  const chunked_options o{.chunk = {edge, edge, large_cube.samples},
                          .workers = large_workers,
                          .threads = large_threads,
                          .budget = large_budget};
  chunked_plan p;
  for (auto _ : state) {
    p = plan_chunked(g, large_cube, o);
    benchmark::DoNotOptimize(p.workers.data());
  }
  state.counters["blocks"] = double(p.blocks);
  state.counters["peak_GiB"] = double(p.peak()) / gib;
  state.counters["fits"] = p.peak() <= large_budget ? 1 : 0;
}
BENCHMARK(BM_plan_5node)->ArgName("chunk_edge")->Arg(500)->Arg(250)->Arg(100)->Arg(25)->Unit(benchmark::kMillisecond);

// The advisor's whole search, under the exact model or an allocator model.
void BM_advise_5node(benchmark::State& state, const char* allocator) {
  const auto g = five_node_graph();
  const advice_options o{
      .budget = large_budget, .workers = large_workers, .threads = large_threads, .allocator = allocator};
  advice a;
  for (auto _ : state) {
    a = advise(g, large_cube, o);
    benchmark::DoNotOptimize(a.candidates);
  }
  state.SetLabel("chunk " + to_string(a.chosen.plan.chunk));
  state.counters["candidates"] = double(a.candidates);
  state.counters["blocks"] = double(a.chosen.plan.blocks);
  state.counters["peak_GiB"] = double(a.chosen.peak) / gib;
  state.counters["dask_peak_GiB"] = double(a.dask.peak) / gib;
}
BENCHMARK_CAPTURE(BM_advise_5node, exact, "exact")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_advise_5node, host_malloc, "host_malloc")->Unit(benchmark::kMillisecond);

// ------------------------------------------------------------- training data

// `dwsr dataset --task peak` on one thread (no file written): labelled rows per
// second under the allocator models given; items_per_second is rows/s.
void BM_dataset_peak(benchmark::State& state, std::vector<std::string> allocators) {
  tbb::global_control one(tbb::global_control::max_allowed_parallelism, 1);
  dataset_options o;
  o.rows = std::uint64_t(state.range(0));
  o.allocators = std::move(allocators);
  for (auto _ : state) {
    const auto d = make_dataset(operators::catalogue(), o);
    benchmark::DoNotOptimize(d.y.data());
  }
  state.SetItemsProcessed(std::int64_t(state.iterations()) * state.range(0));
}
BENCHMARK_CAPTURE(BM_dataset_peak, exact, std::vector<std::string>{"exact"})
    ->Arg(200000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_dataset_peak, exact_host_pages, std::vector<std::string>{"exact", "host_pages"})
    ->Arg(200000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_dataset_peak, every_model,
                  std::vector<std::string>{"exact", "host_pages", "host_malloc", "torch_cuda_caching", "cupy_pool",
                                           "rmm_pool"})
    ->Arg(2000)
    ->Unit(benchmark::kMillisecond);

// ------------------------------------------------------ chunked vs one block

const shape3 small_cube{64, 64, 512};

const std::vector<float>& small_input() {
  static const std::vector<float> cube = [] {
    std::vector<float> c(small_cube.voxels());
    io::generate_synthetic(small_cube, 1, c.data(), 2);
    return c;
  }();
  return cube;
}

void BM_chunked(benchmark::State& state, const std::function<graph()>& make) {
  const auto g = make();
  const auto edge = static_cast<std::uint64_t>(state.range(0));
  const chunked_options whole{.workers = 1, .threads = 1};
  const chunked_options chunked{.chunk = {edge, edge, small_cube.samples}, .workers = 1, .threads = 1};

  bench::output_cubes outputs(g, small_cube);
  const memory_block_source source(cube_view<const float>(small_input().data(), small_cube));
  memory_block_sink sink(outputs.refs);

  const auto predicted = plan_chunked(g, small_cube, chunked);
  const auto predicted_whole = plan_chunked(g, small_cube, whole);
  double chunked_seconds = 0, whole_seconds = 0;
  std::uint64_t measured = 0;
  using clock = std::chrono::steady_clock;
  for (auto _ : state) {
    const auto t0 = clock::now();
    run_chunked(g, source, &sink, whole);
    const auto t1 = clock::now();
    const auto r = run_chunked(g, source, &sink, chunked);
    const auto t2 = clock::now();
    const double s = std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(s);
    chunked_seconds += s;
    whole_seconds += std::chrono::duration<double>(t1 - t0).count();
    measured = r.workers.front().peak;
    benchmark::DoNotOptimize(outputs.bytes.front().data());
    benchmark::ClobberMemory();
  }
  if (measured != predicted.peak()) {
    state.SkipWithError(
        ("measured peak " + std::to_string(measured) + " != predicted " + std::to_string(predicted.peak())).c_str());
    return;
  }
  // Time per voxel of the cube, in nanoseconds, chunked and as one block.
  const double runs = double(state.iterations()) * double(small_cube.voxels());
  state.counters["ns_per_voxel"] = 1e9 * chunked_seconds / runs;
  state.counters["one_block_ns_per_voxel"] = 1e9 * whole_seconds / runs;
  state.counters["vs_one_block"] = chunked_seconds / whole_seconds;
  state.counters["blocks"] = double(predicted.blocks);
  state.counters["halo"] = predicted.halo_overhead;
  state.counters["peak_MiB"] = double(predicted.peak()) / mib;
  state.counters["one_block_MiB"] = double(predicted_whole.peak()) / mib;
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(small_cube.voxels() * sizeof(float)));
}

void chunk_edges(benchmark::internal::Benchmark* b) {
  b->ArgName("chunk_edge");
  for (const auto edge : {4, 8, 16, 32, 64}) b->Arg(edge);
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK_CAPTURE(BM_chunked, envelope, [] {
  return graph::single(operators::catalogue(), "envelope");
})->Apply(chunk_edges);
BENCHMARK_CAPTURE(BM_chunked, gaussian, [] {
  return graph::single(operators::catalogue(), "gaussian");
})->Apply(chunk_edges);
BENCHMARK_CAPTURE(BM_chunked, sweetness_graph, bench::sweetness_graph)->Apply(chunk_edges);

}  // namespace

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Keep freed blocks in glibc's heap (no mmap for these sizes, no trimming).
  // Otherwise whether a run gets recycled or freshly faulted pages depends on
  // glibc's dynamic thresholds, and the one-block envelope run alternates
  // between ~7 and ~13 ns/voxel from one benchmark to the next: this isolates
  // what chunking itself costs (halos, per-block setup, copies).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
