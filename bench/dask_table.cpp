// Dask-style execution planned against real runs: for a few operators and
// graphs, chunkings and T, the model's schedule peak, the bound over every
// order, the floor, and the peak measured when each worker runs T
// single-threaded block tasks at once (graph/dask_run.hpp). Prints a markdown
// table; the measured peak depends on the threads' timing, the plan's figures
// do not.
//
//   build/bench/dask_table [--repeats N]

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dwsr/graph/dask_model.hpp"
#include "dwsr/graph/dask_run.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;

namespace {

double mib(std::uint64_t bytes) { return double(bytes) / (1 << 20); }

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::atoi(argv[i + 1]);
  const auto& ops = operators::catalogue();
  const auto sweet = graph_from_json(nlohmann::json::parse(R"({"nodes": [
      {"name": "env", "op": "envelope"}, {"name": "freq", "op": "instantaneous_frequency"},
      {"name": "sweet", "op": "sweetness_from", "inputs": ["env", "freq"], "keep": true}]})"),
                                     ops);
  struct config {
    std::string name;
    graph g;
    shape3 cube, chunk;
  };
  const std::vector<config> configs = {
      {"envelope", graph::single(ops, "envelope"), {64, 64, 256}, {16, 16, 256}},
      {"envelope", graph::single(ops, "envelope"), {64, 64, 256}, {20, 24, 256}},
      {"gst_2d_dips", graph::single(ops, "gst_2d_dips"), {64, 64, 128}, {16, 16, 128}},
      {"gst_2d_dips", graph::single(ops, "gst_2d_dips"), {64, 64, 128}, {24, 20, 128}},
      {"sweetness graph", sweet, {64, 64, 256}, {16, 16, 256}},
  };
  std::printf(
      "| graph | cube | chunk | W x T | tasks | schedule peak MiB | bound MiB | floor MiB | measured MiB "
      "(min-max over %d runs) | unfused schedule / bound MiB |\n",
      repeats);
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& c : configs) {
    std::vector<float> cube(c.cube.voxels());
    for (std::size_t i = 0; i < cube.size(); ++i) cube[i] = float((i * 7919) % 1000) / 500.0f - 1.0f;
    const memory_block_source source(cube_view<const float>(cube.data(), c.cube));
    for (std::size_t threads : {1, 2, 4})
      for (std::size_t workers : {1, 2}) {
        const chunked_schedule s(c.g, c.cube, {.chunk = c.chunk, .workers = workers, .threads = threads});
        const auto plan = plan_dask(s);
        const auto unfused = plan_dask(s, {.split = dask_split::unfused});
        std::uint64_t lo = ~0ull, hi = 0;
        for (int r = 0; r < repeats; ++r) {
          const auto m = run_dask_fused(s, source);
          std::uint64_t peak = 0;
          for (const auto& w : m.workers) peak = std::max(peak, w.peak);
          lo = std::min(lo, peak), hi = std::max(hi, peak);
        }
        std::printf("| %s | %s | %s | %zu x %zu | %llu | %.2f | %.2f | %.2f | %.2f-%.2f%s | %.2f / %.2f |\n",
                    c.name.c_str(), to_string(c.cube).c_str(), to_string(c.chunk).c_str(), workers, threads,
                    static_cast<unsigned long long>(plan.workers[0].tasks), mib(plan.schedule_peak()),
                    mib(plan.bound()), mib(plan.floor()), mib(lo), mib(hi),
                    hi > plan.bound() || lo < plan.floor() ? " OUT OF RANGE" : "", mib(unfused.schedule_peak()),
                    mib(unfused.bound()));
      }
  }
}
