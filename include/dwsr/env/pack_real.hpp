#pragma once
/// \file GpuPack's real mode: test job kinds executed on a GPU as what they
/// model, and the environment's rewards recomputed from what was measured.
///
/// A kind is one process of a chunked run whose allocations meet an
/// allocator on the device (env/gpu_pack_jobs.hpp). Real mode hands each
/// chosen kind's event stream, drawn again from the pool's seed, to a
/// runner: a program given `TRACE OUT` that replays TRACE (a dwsr trace,
/// every event on the GPU, in order) in a fresh process through the real
/// allocator, and writes OUT, CSV with the header `step,device_bytes`: the
/// row `start`, the process's device memory once its CUDA context is up and
/// before the first event, then the rows 0 to n - 1, its memory after each
/// event. The runner reads that memory as the driver counts it for the
/// process (NVML), an independent probe: it sees the context and the
/// allocator's segments, nothing of dwsr's accounting.
/// scripts/gpu/pack_replay.py is the runner for PyTorch's caching allocator
/// (the pool's default model, torch_cuda_caching).
///
/// Per kind, real mode compares:
/// - the measured profile (segment_maxima_of the readings, each at its
///   event's time in the job) with the kind's: peaks and the largest
///   segment difference;
/// - the overheads: the model's fixed one against the `start` reading;
/// - the reserved bytes after every event (a reading minus the `start`
///   reading, against the model's reserved bytes): 0 mismatches when the
///   allocator model is exact.
///
/// Rewards (pack_real_compare): a policy's episodes on traces made of the
/// measured kinds only (the arrival ticks of test episodes drawn as usual,
/// the kinds the measured ones in turn), once with the kinds' simulated
/// profiles and once with the measured ones; the same environment and
/// policy, so a difference in return or in out-of-memory verdicts comes
/// from the profiles alone.
///
/// Left out: co-location is still the environment's sum of profiles (MIG
/// slices are not configured on the GPU, and jobs do not run side by side),
/// and durations are the time model's.

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/env/gpu_pack.hpp"
#include "dwsr/env/gpu_pack_jobs.hpp"
#include "dwsr/error.hpp"
#include "dwsr/memory/child_peak.hpp"
#include "dwsr/sim/trace_csv.hpp"

namespace dwsr::env {

/// The first `n` test kinds of `pool` whose peak is at most `max_peak`, by
/// index (fewer when the pool has fewer).
inline std::vector<std::uint32_t> pack_real_kinds(const gpu_pack_jobs& pool, std::size_t n, std::uint64_t max_peak) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t k = 0; k < pool.size() && out.size() < n; ++k)
    if (pool.kinds[k].test && pool.kinds[k].peak <= max_peak) out.push_back(k);
  return out;
}

/// Kind k's job of a pool drawn with `o`: the stream its profile was made from.
inline sim::job gpu_pack_kind_job(const registry& operators, const gpu_pack_jobs_options& o, std::size_t k) {
  sim::job j;
  (void)detail::draw_gpu_job_kind(random_graphs(operators), o, k, &j);
  return j;
}

/// A runner's readings (see the file comment).
struct pack_measurement {
  std::uint64_t start = 0;           ///< bytes before the first event
  std::vector<std::uint64_t> after;  ///< bytes after each event
};

/// Reads a runner's OUT for a trace of `events` events. Throws io_error
/// when it cannot be read, invalid_input naming the file and line for a
/// malformed or incomplete one.
inline pack_measurement read_pack_measurement(const std::filesystem::path& path, std::size_t events) {
  std::ifstream in(path);
  if (!in) throw io_error("cannot read the runner's measurements " + quote(path.string(), 400));
  pack_measurement m;
  std::string line;
  std::size_t number = 0;
  auto bad = [&](const std::string& why) {
    return invalid_input(path.string() + ":" + std::to_string(number) + ": " + why);
  };
  auto value = [&](std::string_view text) {
    std::uint64_t v = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
    if (r.ec != std::errc{} || r.ptr != text.data() + text.size())
      throw bad(quote(std::string(text)) + ": expected a count of bytes");
    return v;
  };
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1) {
      if (line != "step,device_bytes") throw bad(quote(line) + ": expected the header step,device_bytes");
      continue;
    }
    const auto comma = line.find(',');
    if (comma == std::string::npos) throw bad(quote(line) + ": expected step,device_bytes");
    const std::string_view step(line.data(), comma), bytes(line.data() + comma + 1, line.size() - comma - 1);
    const auto want = number == 2 ? std::string("start") : std::to_string(number - 3);
    if (step != want || m.after.size() >= events)
      throw bad("step " + quote(std::string(step)) + ": expected " +
                (m.after.size() >= events
                     ? std::string("no more rows (the trace has ") + std::to_string(events) + " events)"
                     : quote(want)));
    (number == 2 ? m.start : m.after.emplace_back()) = value(bytes);
  }
  if (number < 2 || m.after.size() != events)
    throw invalid_input(
        path.string() + ": " +
        (number < 2 ? std::string("no start row") : "readings after " + std::to_string(m.after.size()) + " events") +
        "; expected the start and one row per event (" + std::to_string(events) + ")");
  return m;
}

/// One kind run for real (see the file comment).
struct pack_real_row {
  std::uint32_t kind = 0;
  std::string name;
  std::uint64_t events = 0;
  std::uint64_t simulated_peak = 0;                         ///< bytes: the kind's profile's highest segment
  std::uint64_t measured_peak = 0;                          ///< bytes: the highest reading
  std::uint64_t simulated_overhead = 0;                     ///< bytes: the model's context
  std::uint64_t measured_overhead = 0;                      ///< bytes: the start reading
  std::uint64_t model_reserved_peak = 0;                    ///< bytes: the allocator model's highest reserved
  std::uint64_t measured_reserved_peak = 0;                 ///< bytes: the highest reading above the start one
  std::uint64_t reserved_mismatches = 0;                    ///< events after which the two differ
  std::int64_t worst_reserved_difference = 0;               ///< measured - model of the largest |difference| (0: none)
  std::int64_t worst_segment_difference = 0;                ///< measured - simulated profile, the largest |difference|
  std::array<std::uint64_t, gpu_pack_segments> measured{};  ///< the measured profile
  double seconds = 0;                                       ///< the runner's wall time

  /// measured_peak / simulated_peak: 1 when the simulator is right.
  double ratio() const noexcept { return simulated_peak ? double(measured_peak) / double(simulated_peak) : 0.0; }
};

namespace detail {

/// Keeps in `worst` the signed difference measured - simulated of the largest magnitude.
inline void keep_worst(std::int64_t& worst, std::uint64_t measured, std::uint64_t simulated) noexcept {
  const auto d = std::int64_t(measured) - std::int64_t(simulated);
  if ((d < 0 ? -d : d) > (worst < 0 ? -worst : worst)) worst = d;
}

}  // namespace detail

/// Compares kind `k` of `pool` with readings `m` of its job `j`. Throws
/// dwsr::error (an internal error) when `j` is not the job the kind's
/// profile was made from.
inline pack_real_row compare_pack_real(const gpu_pack_jobs& pool, std::uint32_t k, const sim::job& j,
                                       const pack_measurement& m) {
  const auto& kind = pool.kinds.at(k);
  const auto n = j.events.size();
  if (m.after.size() != n)
    throw invalid_input("readings after " + std::to_string(m.after.size()) + " events of job kind " +
                        std::to_string(k) + " (" + kind.name + "), which has " + std::to_string(n) +
                        "; expected one per event");
  pack_real_row r{.kind = k,
                  .name = kind.name,
                  .events = n,
                  .simulated_peak = kind.peak,
                  .simulated_overhead = j.overhead,
                  .measured_overhead = m.start};
  const auto model = alone_timeline(j);  // start, each event, end
  if (segment_maxima_of(model, job_span(j)) != kind.reserved)
    throw error("internal error: job kind " + std::to_string(k) + " drawn again has another profile than the pool's");
  std::vector<sim::usage_point> measured;
  measured.reserve(n + 2);
  measured.push_back({model.front().time, m.start});
  r.measured_peak = m.start;
  for (std::size_t i = 0; i < n; ++i) {
    const auto reading = m.after[i], reserved = model[i + 1].bytes - j.overhead;
    const auto above = reading > m.start ? reading - m.start : 0;
    measured.push_back({model[i + 1].time, reading});
    r.measured_peak = std::max(r.measured_peak, reading);
    r.model_reserved_peak = std::max(r.model_reserved_peak, reserved);
    r.measured_reserved_peak = std::max(r.measured_reserved_peak, above);
    r.reserved_mismatches += above != reserved;
    detail::keep_worst(r.worst_reserved_difference, above, reserved);
  }
  measured.push_back(model.back());  // the end: nothing held
  r.measured = segment_maxima_of(measured, job_span(j));
  for (std::size_t s = 0; s < gpu_pack_segments; ++s)
    detail::keep_worst(r.worst_segment_difference, r.measured[s], kind.reserved[s]);
  return r;
}

/// Runs kind `k` of `pool` (drawn with `o`) for real: writes its job's trace
/// into `scratch` (an existing directory), runs `runner` + {TRACE, OUT} in a
/// fresh process (argv[0] looked up on PATH; its stdout and stderr into
/// `scratch`, away from this process's --json output) and compares
/// (compare_pack_real). Throws dwsr::error naming the command and the last
/// line of its stderr when the runner fails, and what compare_pack_real throws.
inline pack_real_row run_pack_real(const registry& operators, const gpu_pack_jobs_options& o, const gpu_pack_jobs& pool,
                                   std::uint32_t k, const std::vector<std::string>& runner,
                                   const std::filesystem::path& scratch) {
  if (runner.empty()) throw invalid_input("real mode without a runner; expected a command that replays a trace");
  const auto j = gpu_pack_kind_job(operators, o, k);
  const auto trace = scratch / "trace.csv", out = scratch / "measured.csv", log = scratch / "stdout.txt",
             err = scratch / "stderr.txt";
  {
    std::ofstream f(trace);
    sim::write_trace_csv(f, j.events);
    if (!f.flush()) throw io_error("cannot write " + quote(trace.string(), 400));
  }
  auto argv = runner;
  argv.push_back(trace.string());
  argv.push_back(out.string());
  const auto t0 = std::chrono::steady_clock::now();
  const auto e = run_child(argv, log, err);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!e.ok()) {
    std::ifstream f(err);
    std::string text((std::istreambuf_iterator<char>(f)), {});
    const auto last = text.find_last_not_of("\n ");
    text = last == std::string::npos ? "" : text.substr(0, last + 1);
    if (const auto nl = text.rfind('\n'); nl != std::string::npos) text = text.substr(nl + 1);
    std::string words;
    for (const auto& w : argv) words += (words.empty() ? "" : " ") + w;
    throw error("the runner " + quote(words, 400) + " failed on job kind " + std::to_string(k) + " (exit " +
                std::to_string(e.status) + ", signal " + std::to_string(e.signal) + ")" +
                (text.empty() ? std::string() : ": " + text));
  }
  auto row = compare_pack_real(pool, k, j, read_pack_measurement(out, j.events.size()));
  row.seconds = seconds;
  std::error_code ignored;
  for (const auto& p : {trace, out, log, err}) std::filesystem::remove(p, ignored);
  return row;
}

/// `pool` with the kinds of `rows` given their measured profiles.
inline gpu_pack_jobs measured_pool(const gpu_pack_jobs& pool, std::span<const pack_real_row> rows) {
  auto out = pool;
  for (const auto& r : rows) {
    auto& k = out.kinds.at(r.kind);
    k.reserved = r.measured;
    k.peak = *std::max_element(r.measured.begin(), r.measured.end());
  }
  return out;
}

/// A policy's returns on the same episodes with simulated and measured profiles.
struct pack_real_rewards {
  std::uint64_t episodes = 0;
  double mean_simulated_return = 0, mean_measured_return = 0;
  double mean_abs_difference = 0;                       ///< mean |measured - simulated return|
  std::uint64_t simulated_ooms = 0, measured_ooms = 0;  ///< jobs out of memory, all episodes
  std::uint64_t episodes_with_other_ooms = 0;           ///< episodes whose jobs out of memory differ in number
};

namespace detail {

/// One episode of `act` (a copy: a policy's random stream starts where the
/// caller's is) in `env` from `seed`: its return and the jobs that ran out of memory.
template <class Act>
std::pair<double, std::uint64_t> pack_episode(gpu_pack env, Act act, std::uint64_t seed) {
  std::vector<float> obs(env.observation_space().size());
  std::vector<std::uint8_t> mask(std::size_t(env.action_space().n));
  gpu_pack_info info;
  env.reset(seed, obs, info);
  double total = 0;
  for (;;) {
    env.action_mask(mask);
    const auto r =
        env.step(act(std::as_const(env), std::span<const float>(obs), std::span<const std::uint8_t>(mask)), obs, info);
    total += r.reward;
    if (r.terminated || r.truncated) return {total, info.ooms};
  }
}

}  // namespace detail

/// `act(env, observation, mask)` on `episodes` traces of the kinds of `rows`
/// (see the file comment), under `o` (part test); trace e takes the arrival
/// ticks of a test episode drawn with seed + e. Each run acts with a copy of
/// `act`, so a policy that draws random actions draws the same ones with
/// either profile. Throws invalid_input without
/// rows or episodes, and what gpu_pack throws (a measured kind that fits no
/// device).
template <class Act>
pack_real_rewards pack_real_compare(std::shared_ptr<const gpu_pack_jobs> pool, std::span<const pack_real_row> rows,
                                    gpu_pack_options o, Act act, std::uint64_t episodes, std::uint64_t seed) {
  if (rows.empty() || episodes == 0)
    throw invalid_input("comparing rewards over " + std::to_string(rows.size()) + " measured kinds and " +
                        std::to_string(episodes) + " episodes; expected at least one of each");
  o.part = pool_part::test;
  o.trace.clear();
  auto measured = std::make_shared<const gpu_pack_jobs>(measured_pool(*pool, rows));
  gpu_pack draw(pool, o);
  std::vector<float> obs(draw.observation_space().size());
  gpu_pack_info info;
  pack_real_rewards r{.episodes = episodes};
  for (std::uint64_t e = 0; e < episodes; ++e) {
    draw.reset(seed + e, obs, info);
    auto t = o;
    t.trace.assign(draw.trace().begin(), draw.trace().end());
    for (std::size_t i = 0; i < t.trace.size(); ++i) t.trace[i].kind = rows[i % rows.size()].kind;
    const auto [sim_return, sim_ooms] = detail::pack_episode(gpu_pack(pool, t), act, seed + e);
    const auto [real_return, real_ooms] = detail::pack_episode(gpu_pack(measured, t), act, seed + e);
    r.mean_simulated_return += sim_return;
    r.mean_measured_return += real_return;
    r.mean_abs_difference += std::abs(real_return - sim_return);
    r.simulated_ooms += sim_ooms;
    r.measured_ooms += real_ooms;
    r.episodes_with_other_ooms += sim_ooms != real_ooms;
  }
  for (auto* v : {&r.mean_simulated_return, &r.mean_measured_return, &r.mean_abs_difference}) *v /= double(episodes);
  return r;
}

/// real.csv of GpuPack: one row per kind run.
inline std::string pack_real_csv(std::span<const pack_real_row> rows) {
  std::string out =
      "kind,name,events,simulated_peak_bytes,measured_peak_bytes,ratio,simulated_overhead_bytes,"
      "measured_overhead_bytes,model_reserved_peak_bytes,measured_reserved_peak_bytes,reserved_mismatches,"
      "worst_reserved_difference_bytes,worst_segment_difference_bytes,seconds\n";
  for (const auto& r : rows) {
    char cells[64];
    std::snprintf(cells, sizeof cells, "%.6f", r.ratio());
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.3f", r.seconds);
    // Names hold '+' and spaces, never a comma or a quote (operator names and a shape).
    out += std::to_string(r.kind) + ',' + r.name + ',' + std::to_string(r.events) + ',' +
           std::to_string(r.simulated_peak) + ',' + std::to_string(r.measured_peak) + ',' + cells + ',' +
           std::to_string(r.simulated_overhead) + ',' + std::to_string(r.measured_overhead) + ',' +
           std::to_string(r.model_reserved_peak) + ',' + std::to_string(r.measured_reserved_peak) + ',' +
           std::to_string(r.reserved_mismatches) + ',' + std::to_string(r.worst_reserved_difference) + ',' +
           std::to_string(r.worst_segment_difference) + ',' + secs + '\n';
  }
  return out;
}

}  // namespace dwsr::env
