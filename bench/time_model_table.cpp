// The time model against real runs: 20 configurations held out from the
// calibration (random graphs of 1 to 4 nodes, chunkings, W and T, drawn from
// a seed), each run for real (cube in memory, outputs copied into whole
// cubes) and predicted from a time profile; prints a markdown table and the
// median and largest relative errors of the predicted makespan.
//
//   build/bench/time_model_table [--profile FILE] [--seed N] [--configs N]
//
// Without --profile it calibrates first (--quick), so the table is
// self-contained; run it on an otherwise idle machine.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_graphs.hpp"
#include "dwsr/graph/calibrate.hpp"
#include "dwsr/graph/time_model.hpp"
#include "dwsr/operators/catalogue.hpp"

using namespace dwsr;

namespace {

/// Single-input operators with one float32 output: any of them can read any other.
const std::vector<std::string> pool = {"envelope",           "instantaneous_frequency",
                                       "gaussian",           "median",
                                       "first_derivative",   "rms",
                                       "gst_3d_dip",         "semblance",
                                       "gradient_magnitude", "lowpass_filter",
                                       "cwt_ricker",         "sweetness",
                                       "trace_agc",          "coherence"};

struct config {
  std::string text;  // the graph, as node<-input lists
  graph g;
  shape3 chunk;
  std::size_t workers, threads;
};

config draw(std::mt19937_64& rng, shape3 cube) {
  auto pick = [&](std::size_t n) { return std::size_t(rng() % n); };
  config c{"", graph(operators::catalogue()), {}, 1 + pick(2), 1 + pick(2)};
  const auto nodes = 1 + pick(4);
  for (std::size_t k = 0; k < nodes; ++k) {
    const auto& op = pool[pick(pool.size())];
    const auto node_name = [](std::size_t i) { return std::string("n").append(std::to_string(i)); };
    const std::string name = node_name(k);
    const std::string input = k == 0 || pick(3) == 0 ? std::string("input") : node_name(pick(k));
    c.g.add(name, op, {input});
    c.text += (k ? ", " : "") + op + (input == "input" ? "" : "(" + input + ")");
  }
  c.g.build();
  const std::uint64_t il[] = {cube.inlines, cube.inlines / 2, cube.inlines / 4, 8};
  const std::uint64_t xl[] = {cube.crosslines, cube.crosslines / 2, 16, 8};
  c.chunk = {il[pick(4)], xl[pick(4)], cube.samples};
  return c;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string profile_path;
  std::uint64_t seed = 20261123;
  std::size_t count = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--profile"))
      profile_path = argv[i + 1];
    else if (!std::strcmp(argv[i], "--seed"))
      seed = std::stoull(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--configs"))
      count = std::stoul(argv[i + 1]);
    else
      throw invalid_input(std::string("unknown option ") + argv[i]);
  }
  const auto profile =
      profile_path.empty() ? calibrate(operators::catalogue(), {.quick = true}) : sim::read_time_profile(profile_path);
  const shape3 cube{64, 64, profile.trace_samples};
  const auto data = detail::calibration_cube(cube);
  const memory_block_source input(cube_view<const float>(data.data(), cube));

  std::mt19937_64 rng(seed);
  std::printf("time profile: %s, %zu cores, traces of %llu samples%s; cube %s in memory\n\n", profile.cpu.c_str(),
              profile.cores, static_cast<unsigned long long>(profile.trace_samples), profile.quick ? " (quick)" : "",
              to_string(cube).c_str());
  std::printf(
      "| # | graph | chunk | W x T | blocks | predicted s | measured s | error |\n|---|---|---|---|---|---|---|---|\n");
  std::vector<double> errors;
  for (std::size_t k = 0; k < count; ++k) {
    auto c = draw(rng, cube);
    const chunked_schedule s(c.g, cube, {.chunk = c.chunk, .workers = c.workers, .threads = c.threads});
    const auto predicted = predict_time(s, profile).makespan;
    bench::output_cubes outs(c.g, cube);
    memory_block_sink sink(outs.refs);
    run_chunked(s, input, &sink);  // warm
    double measured = 1e300;
    for (int r = 0; r < 3; ++r) measured = std::min(measured, run_chunked(s, input, &sink).seconds);
    const double error = predicted / measured - 1;
    errors.push_back(std::abs(error));
    std::printf("| %zu | %s | %s | %zu x %zu | %llu | %.4f | %.4f | %+.0f%% |\n", k + 1, c.text.c_str(),
                to_string(s.blocks().chunk()).c_str(), c.workers, c.threads,
                static_cast<unsigned long long>(s.blocks().count()), predicted, measured, 100 * error);
  }
  std::sort(errors.begin(), errors.end());
  const double median =
      errors.size() % 2 ? errors[errors.size() / 2] : (errors[errors.size() / 2 - 1] + errors[errors.size() / 2]) / 2;
  std::printf("\nmedian |error| %.0f%%, largest %.0f%% over %zu configurations\n", 100 * median, 100 * errors.back(),
              errors.size());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "time_model_table: %s\n", e.what());
  return 2;
}
