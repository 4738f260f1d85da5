// What the data-dependent operators really allocate against the bound their
// meta execution plans, as the threshold rises: the gap an estimator of the
// real size has to close. On the reference's synthetic cube (seeded), the
// thresholds at quantiles of its amplitude; for event_picks (the table of
// local maxima) and geobodies (the bodies' statistics table and the kernel's
// whole peak), the real figure from a host run and the bound from a meta run.
// Prints CSV (one row per quantile) for bench/plot_bound_ratio.py.
//
//   build/bench/bound_ratio_table [--shape IxXxT] [--seed S] > ratio.csv

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dwsr/exec/host_context.hpp"
#include "dwsr/exec/meta_context.hpp"
#include "dwsr/io/synthetic.hpp"
#include "dwsr/memory/peak_counter.hpp"
#include "dwsr/operators/event_picks.hpp"
#include "dwsr/operators/geobodies.hpp"

using namespace dwsr;

namespace {

/// The table's rows and the peak of one kernel call in context Ctx.
struct measured {
  std::uint64_t rows = 0, peak = 0;
};

template <class Ctx, class Run>
measured measure(Run&& run) {
  peak_counter counter;
  event_bus bus(counter);
  Ctx ctx(bus, {.threads = 1});
  measured m;
  {
    auto table = run(ctx);
    m.rows = table.size();
  }
  m.peak = counter.peak();
  return m;
}

}  // namespace

int main(int argc, char** argv) try {
  shape3 shape{64, 64, 256};
  std::uint64_t seed = 42;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--shape"))
      shape = parse_shape(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed"))
      seed = std::stoull(argv[i + 1]);
    else
      throw invalid_input(std::string("unknown option ") + argv[i] + "; expected --shape or --seed");
  }
  std::vector<float> cube(shape.voxels());
  io::generate_synthetic(shape, seed, cube.data());
  auto sorted = cube;
  std::sort(sorted.begin(), sorted.end());
  const cube_view<const float> in(cube.data(), shape);
  std::vector<std::int32_t> labels(shape.voxels());
  const cube_view<std::int32_t> out(labels.data(), shape);

  std::printf(
      "quantile,threshold,picks,picks_bound,picks_peak,picks_peak_bound,bodies,bodies_bound,bodies_peak,"
      "bodies_peak_bound\n");
  for (double q : {0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999}) {
    const float threshold = sorted[std::min(sorted.size() - 1, std::size_t(q * double(sorted.size())))];
    const operators::event_picks_options po{.threshold = threshold};
    const operators::geobodies_options go{.threshold = threshold};
    const auto picks = measure<host_context>([&](auto& ctx) { return operators::event_picks(ctx, in, po); });
    const auto picks_bound = measure<meta_context>([&](auto& ctx) { return operators::event_picks(ctx, in, po); });
    const auto bodies = measure<host_context>([&](auto& ctx) { return operators::geobodies(ctx, in, out, go); });
    const auto bodies_bound = measure<meta_context>([&](auto& ctx) { return operators::geobodies(ctx, in, out, go); });
    std::printf("%.3f,%.6g,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n", q, double(threshold),
                static_cast<unsigned long long>(picks.rows), static_cast<unsigned long long>(picks_bound.rows),
                static_cast<unsigned long long>(picks.peak), static_cast<unsigned long long>(picks_bound.peak),
                static_cast<unsigned long long>(bodies.rows), static_cast<unsigned long long>(bodies_bound.rows),
                static_cast<unsigned long long>(bodies.peak), static_cast<unsigned long long>(bodies_bound.peak));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bound_ratio_table: %s\n", e.what());
  return 2;
}
