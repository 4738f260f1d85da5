// Throughput of every operator (MB/s of float32 input) on a 64x64x512 cube with
// 1 and 2 threads, and the time of the meta execution of the same operator on
// the same shape: planning must cost orders of magnitude less than running.
// Then the kernels several families share, alone (kernel/...).

#include <benchmark/benchmark.h>

#include <array>
#include <span>
#include <string>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/graph/execute.hpp"
#include "dwsr/io/synthetic.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/operators/detail/symmetric_eigen.hpp"

namespace {

const dwsr::shape3 bench_shape{64, 64, 512};

const std::vector<float>& bench_cube() {
  static const std::vector<float> cube = [] {
    std::vector<float> c(bench_shape.voxels());
    dwsr::io::generate_synthetic(bench_shape, 1, c.data(), 2);
    return c;
  }();
  return cube;
}

// Real execution: the operator's run() on an allocated input and outputs.
void run_real(benchmark::State& state, const dwsr::operator_entry* entry) {
  const auto op = entry->configure();
  const auto threads = static_cast<std::size_t>(state.range(0));
  dwsr::event_bus bus;
  dwsr::host_context ctx(bus, {.threads = threads});
  auto input = ctx.allocate<float>(bench_shape.voxels(), dwsr::buffer_role::input);
  std::copy(bench_cube().begin(), bench_cube().end(), input.data());
  std::vector<dwsr::buffer<std::byte, dwsr::host_context>> outputs;
  std::vector<dwsr::array_ref> refs;
  for (const auto& s : op->outputs()) {
    outputs.push_back(ctx.allocate<std::byte>(bench_shape.voxels() * dwsr::size_of(s.type), dwsr::buffer_role::output));
    refs.push_back({s.type, outputs.back().data(), bench_shape});
  }
  // A combination operator (sweetness_from, ...) reads the same cube as each of its inputs.
  const std::vector<dwsr::cube_view<const float>> inputs(op->arity(), {input.data(), bench_shape});
  for (auto _ : state) {
    op->run(ctx, std::span<const dwsr::cube_view<const float>>(inputs), refs);
    benchmark::DoNotOptimize(outputs.front().data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(std::int64_t(state.iterations()) * std::int64_t(bench_shape.voxels() * sizeof(float)));
}

// Meta execution of the same operator and shape: events only.
void run_meta(benchmark::State& state, const dwsr::operator_entry* entry) {
  const auto op = entry->configure();
  std::uint64_t peak = 0;
  for (auto _ : state) {
    peak = dwsr::plan(*op, bench_shape, 2).peak_bytes;
    benchmark::DoNotOptimize(peak);
  }
  state.counters["peak_bytes"] = double(peak);
}

// The batched 3x3 eigen-solve of the structure-tensor and edge families
// (eigen_rows_of): 2^16 structure tensors, each the sum of two rank-one
// gradient products (so positive semi-definite and rarely degenerate), solved
// in batches; items are voxels. Vectors: the eigenvalues and the principal
// vector (gst_*), else the eigenvalues only (chaos, coherence, ...).
template <bool Vectors>
void eigen_rows(benchmark::State& state) {
  constexpr std::size_t n = 1u << 16;
  std::array<std::vector<float>, 6> c;
  for (auto& row : c) row.resize(n);
  dwsr::xoshiro256ss rng(1);
  for (std::size_t t = 0; t < n; ++t) {
    std::array<float, 3> g, h;
    for (auto& x : g) x = float(rng.uniform(-1, 1));
    for (auto& x : h) x = float(rng.uniform(-0.3, 0.3));
    const int pairs[6][2] = {{0, 0}, {1, 1}, {2, 2}, {0, 1}, {0, 2}, {1, 2}};
    for (std::size_t k = 0; k < 6; ++k) c[k][t] = g[pairs[k][0]] * g[pairs[k][1]] + h[pairs[k][0]] * h[pairs[k][1]];
  }
  const float* rows[6];
  for (std::size_t k = 0; k < 6; ++k) rows[k] = c[k].data();
  dwsr::operators::detail::eigen_rows out;
  for (auto _ : state) {
    for (std::size_t t0 = 0; t0 < n; t0 += dwsr::operators::detail::eigen_batch) {
      dwsr::operators::detail::eigen_rows_of<Vectors>(rows, t0, dwsr::operators::detail::eigen_batch, out);
      benchmark::DoNotOptimize(out);
    }
  }
  state.SetItemsProcessed(std::int64_t(state.iterations() * n));
}
BENCHMARK(eigen_rows<true>)->Name("kernel/eigen_rows/vectors")->Unit(benchmark::kMicrosecond);
BENCHMARK(eigen_rows<false>)->Name("kernel/eigen_rows/values")->Unit(benchmark::kMicrosecond);

const bool registered = [] {
  // Which clones of the arithmetic-bound kernels ran (DWSR_SIMD caps it).
  benchmark::AddCustomContext("vector_instructions", std::string(dwsr::name(dwsr::simd_isa_in_use())));
  for (const auto& e : dwsr::operators::catalogue().entries()) {
    benchmark::RegisterBenchmark(("real/" + e.name).c_str(), run_real, &e)
        ->Arg(1)
        ->Arg(2)
        ->ArgName("threads")
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("meta/" + e.name).c_str(), run_meta, &e)->Unit(benchmark::kMicrosecond);
  }
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
