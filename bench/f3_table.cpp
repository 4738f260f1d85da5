// The chunking advice on a cube of the F3 survey's size (651 x 951 x 462
// float32, 1.07 GiB) for 4 workers x 2 threads with 2 GiB each, printed as a
// markdown table: the advised chunk, its exact per-worker peak, the block
// count and the halo overhead, beside the peak of Dask's default chunking
// (128 MiB of input per block, time kept whole where an operator needs it)
// and of no chunking at all. It only plans (meta execution), so it runs in
// about a second.
//
//   build/bench/f3_table [allocator model, default exact] [time profile]
//
// With a time profile (dwsr calibrate) it prints a second table: the advice
// for time against the largest chunk and Dask's default chunk, with each
// one's predicted makespan, peak and idle workers (4 workers with 2 cores each).

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_graphs.hpp"
#include "dwsr/graph/advisor.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;

namespace {

std::string gib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(1ull << 30));
  return text;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100.0 * fraction);
  return text;
}

}  // namespace

int main(int argc, char** argv) try {
  const shape3 f3{651, 951, 462};
  const advice_options o{.budget = 2ull << 30, .workers = 4, .threads = 2, .allocator = argc > 1 ? argv[1] : "exact"};
  const std::vector<std::pair<std::string, graph>> rows{
      {"envelope", graph::single(operators::catalogue(), "envelope")},
      {"gst_3d_dip", graph::single(operators::catalogue(), "gst_3d_dip")},
      {"envelope + instantaneous_frequency -> sweetness_from", bench::sweetness_graph()},
  };
  std::printf("Cube %s float32 (%s), %zu workers x %zu threads, %s per worker, allocator model %s.\n\n",
              to_string(f3).c_str(), gib(f3.voxels() * sizeof(float)).c_str(), o.workers, o.threads,
              gib(o.budget).c_str(), o.allocator.c_str());
  std::printf(
      "| graph | advised chunk | blocks | peak / worker | halo | Dask chunk | Dask blocks | Dask peak / worker | "
      "Dask fits? | one block, one worker | advice time |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& [name, g] : rows) {
    const auto a = advise(g, f3, o);
    const auto whole =
        evaluate_chunk(g, f3, f3, {.budget = o.budget, .workers = 1, .threads = o.threads, .allocator = o.allocator});
    std::printf("| %s | %s | %llu | %s | %s | %s | %llu | %s | %s | %s | %.3f s |\n", name.c_str(),
                to_string(a.chosen.plan.chunk).c_str(), static_cast<unsigned long long>(a.chosen.plan.blocks),
                gib(a.chosen.peak).c_str(), percent(a.chosen.plan.halo_overhead).c_str(),
                to_string(a.dask.plan.chunk).c_str(), static_cast<unsigned long long>(a.dask.plan.blocks),
                gib(a.dask.peak).c_str(), a.dask.peak <= o.budget ? "yes" : "no", gib(whole.peak).c_str(), a.seconds);
  }
  if (argc > 2) {
    const auto profile = sim::read_time_profile(argv[2]);
    auto timed = o;
    timed.objective = advice_objective::time;
    timed.profile = &profile;
    timed.cores = o.workers * o.threads;
    std::printf("\nPredicted from the time profile of %s (%s), workers on %zu cores:\n\n", profile.cpu.c_str(),
                profile.created.c_str(), timed.cores);
    std::printf("| graph | chunking | chunk | blocks | idle workers | peak / worker | predicted makespan |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (const auto& [name, g] : rows) {
      const auto a = advise(g, f3, timed);
      const std::pair<const char*, const chunk_evaluation*> kinds[] = {
          {"advised for time", &a.chosen}, {"largest that fits", &a.largest}, {"Dask's default", &a.dask}};
      for (const auto& [kind, e] : kinds)
        std::printf("| %s | %s | %s | %llu | %zu | %s | %.1f s |\n", name.c_str(), kind,
                    to_string(e->plan.chunk).c_str(), static_cast<unsigned long long>(e->plan.blocks),
                    e->time->idle_workers, gib(e->peak).c_str(), e->time->makespan);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "f3_table: %s\n", e.what());
  return 2;
}
