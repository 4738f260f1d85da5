// Throughput of every operator (MB/s of float32 input) on a 64x64x512 cube with
// 1 and 2 threads, and the time of the meta execution of the same operator on
// the same shape: planning must cost orders of magnitude less than running.

#include <benchmark/benchmark.h>

#include <span>
#include <string>
#include <vector>

#include "dwsr/graph/execute.hpp"
#include "dwsr/io/synthetic.hpp"
#include "dwsr/operators/catalogue.hpp"

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

const bool registered = [] {
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
