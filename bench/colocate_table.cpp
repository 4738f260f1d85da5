// The co-location model against jobs that really ran at once on this machine.
// Each scenario runs 2 or 3 chunked jobs on threads of their own (each its own
// host context, W = 1, T = 1), the later ones starting after a delay (a
// fraction of the first job's predicted duration); every
// allocation and free is stamped, under one lock, into one timeline. Printed
// per scenario:
// - measured: the peak of the jobs' summed live bytes over that timeline;
// - replayed: the device model (sim/colocate.hpp, exact allocator, no
//   overhead) fed the recorded timeline: must equal measured, byte for byte;
// - predicted: the same jobs built by graph/colocated_job.hpp, timed by the
//   time model, started at the same offsets: the co-location prediction;
// - the bounds any interleaving respects: the largest job's own peak and the
//   sum of their peaks.
//
//   build/bench/colocate_table [--profile FILE]
//
// Without --profile it calibrates the operators it uses first (--quick).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dwsr/graph/calibrate.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/colocated_job.hpp"
#include "dwsr/memory/stamped_log.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/sim/colocate.hpp"

using namespace dwsr;

namespace {

struct run_spec {
  std::string op;
  shape3 chunk;
  double delay;  // start, in units of the first job's predicted duration
};

std::string mib_text(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", double(bytes) / double(sim::mib));
  return buf;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string profile_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--profile"))
      profile_path = argv[i + 1];
    else
      throw invalid_input(std::string("unknown option ") + argv[i]);
  }
  const std::vector<std::vector<run_spec>> scenarios{
      {{"envelope", {64, 64, 0}, 0}, {"gst_3d_dip", {32, 128, 0}, 0}, {"semblance", {128, 32, 0}, 0}},
      {{"gst_3d_dip", {64, 128, 0}, 0}, {"gst_3d_dip", {64, 128, 0}, 0.5}},
      {{"semblance", {32, 32, 0}, 0}, {"gst_3d_dip", {64, 64, 0}, 0.3}, {"gaussian", {128, 64, 0}, 0.6}},
      {{"gaussian", {128, 128, 0}, 0}, {"envelope", {128, 128, 0}, 0.9}},
  };
  std::vector<std::string> ops;
  for (const auto& s : scenarios)
    for (const auto& r : s)
      if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
  const auto profile = profile_path.empty()
                           ? calibrate(operators::catalogue(), {.quick = true, .ops = ops, .threads = {1}})
                           : sim::read_time_profile(profile_path);
  const shape3 cube{128, 128, profile.trace_samples};
  const auto data = detail::calibration_cube(cube);
  const memory_block_source input(cube_view<const float>(data.data(), cube));
  std::printf("time profile: %s, %zu cores%s; cube %s in memory; MiB\n\n", profile.cpu.c_str(), profile.cores,
              profile.quick ? " (quick)" : "", to_string(cube).c_str());
  std::printf(
      "| # | jobs (op chunk +delay s) | largest own | sum of own | measured | replayed | predicted | pred/meas |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (std::size_t n = 0; n < scenarios.size(); ++n) {
    const auto& runs = scenarios[n];
    std::vector<graph> graphs;
    std::vector<chunked_schedule> schedules;
    for (const auto& r : runs) graphs.push_back(graph::single(operators::catalogue(), r.op));
    for (std::size_t k = 0; k < runs.size(); ++k)
      schedules.emplace_back(graphs[k], cube, chunked_options{runs[k].chunk});

    stamped_log log;
    // Delays in seconds, from the first job's predicted duration.
    const double unit = colocated_job(schedules[0], {.profile = &profile}).duration;
    std::vector<stamped_sink> sinks;
    for (std::size_t k = 0; k < runs.size(); ++k) sinks.push_back({&log, k});
    std::vector<std::thread> threads;
    for (std::size_t k = 0; k < runs.size(); ++k)
      threads.emplace_back([&, k] {
        std::this_thread::sleep_until(log.t0 + std::chrono::duration<double>(runs[k].delay * unit));
        run_chunked(schedules[k], input, nullptr, {event_sink_ref(sinks[k])});
      });
    for (auto& t : threads) t.join();

    std::uint64_t live = 0, measured = 0;
    std::vector<sim::job> recorded(runs.size());
    for (const auto& [time, k, e] : log.entries) {
      live = e.act == action::alloc ? live + e.bytes : live - e.bytes;
      measured = std::max(measured, live);
      recorded[k].events.push_back(e);
      recorded[k].times.push_back(time);
    }
    std::vector<sim::job> predicted;
    std::uint64_t sum = 0, largest = 0;
    std::string desc;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      recorded[k].overhead = 0;
      recorded[k].duration = recorded[k].times.back();
      predicted.push_back(
          colocated_job(schedules[k], {.profile = &profile, .overhead = 0, .start = runs[k].delay * unit}));
      const auto own = plan_chunked(schedules[k]).peak();
      sum += own;
      largest = std::max(largest, own);
      char delay[32];
      std::snprintf(delay, sizeof delay, " +%.2fs", runs[k].delay * unit);
      desc += (k ? ", " : "") + runs[k].op + " " + to_string(runs[k].chunk) + delay;
    }
    const sim::device_spec host{"host", "host", "", sim::unlimited, true};
    const auto replayed = sim::colocate(host, recorded).peak;
    const auto model = sim::colocate(host, predicted).peak;
    std::printf("| %zu | %s | %s | %s | %s | %s%s | %s | %.2f |\n", n + 1, desc.c_str(), mib_text(largest).c_str(),
                mib_text(sum).c_str(), mib_text(measured).c_str(), mib_text(replayed).c_str(),
                replayed == measured ? " (=)" : " (DIFFERS)", mib_text(model).c_str(),
                double(model) / double(measured));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "colocate_table: %s\n", e.what());
  return 2;
}
