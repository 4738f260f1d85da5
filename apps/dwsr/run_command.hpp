#pragma once
// `dwsr run` and `dwsr demo`: real executions of a graph (or one operator),
// chunked over W workers x T threads, with each worker's planned peak, its
// peak measured from the events, the process's peak-RSS increase and the time.

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "cli_common.hpp"
#include "dwsr/graph/measure.hpp"
#include "dwsr/memory/recorder.hpp"
#include "dwsr/sim/trace_csv.hpp"
#include "progress.hpp"

namespace dwsr::cli {

/// What one run measured, beside its plan, and the files it wrote.
struct run_measurement : chunked_measurement {
  std::vector<std::string> files;
  /// The process's VmHWM when its first blocks had finished, one per worker
  /// (or every block, when there are fewer): what an online estimator sees
  /// of a run early (estimators/online.hpp).
  std::uint64_t first_blocks = 0;
  std::uint64_t first_blocks_vm_hwm = 0;
};

/// Plans and runs schedule `s` on `input` (see dwsr/graph/measure.hpp), writing
/// its outputs to `sink` when given, with progress on a terminal.
inline run_measurement measure_run(const chunked_schedule& s, const block_source& input, block_sink* sink,
                                   const std::vector<event_sink_ref>& worker_sinks = {}) {
  progress_meter progress(s.blocks().count(), input.shape().voxels());
  const std::uint64_t first = std::min<std::uint64_t>(s.workers(), s.blocks().count());
  std::uint64_t done = 0, first_hwm = 0;
  auto m = measure_chunked(s, input, sink, worker_sinks, [&](const block& b) {
    progress.on_block(b);  // called under run_chunked's lock
    if (++done == first) first_hwm = proc_self_bytes("/proc/self/status", "VmHWM:");
  });
  return {std::move(m), {}, first, first_hwm};
}

/// Prints a run on the device: each worker's planned and measured device peak, the time and the files.
inline void print_device_run(const device_measurement& d, const graph_options& opts, const std::string& input,
                             shape3 shape, const std::vector<std::string>& files) {
  const auto input_bytes = shape.voxels() * sizeof(float);
  const auto& o = opts;
  if (opts.json)
    return print_json({{"graph", opts.graph},
                       {"device", "cuda"},
                       {"gpu", d.device},
                       {"input", input},
                       {"shape", to_string(shape)},
                       {"chunk", to_string(d.planned.chunk)},
                       {"blocks", d.planned.blocks},
                       {"workers", o.workers},
                       {"input_bytes", input_bytes},
                       {"planned_peak_bytes", d.planned.peak()},
                       {"measured_peak_bytes", d.measured.workers.empty() ? 0 : [&] {
                          std::uint64_t p = 0;
                          for (const auto& w : d.measured.workers) p = std::max(p, w.peak);
                          return p;
                        }()},
                       {"planned_workers", workers_json(d.planned.workers)},
                       {"measured_workers", workers_json(d.measured.workers)},
                       {"seconds", d.measured.seconds},
                       {"outputs", files}});
  std::printf("%s on %s (%s), chunk %s: %llu block%s on %zu worker%s, on %s\n", opts.graph.c_str(), input.c_str(),
              human_bytes(input_bytes).c_str(), to_string(d.planned.chunk).c_str(),
              static_cast<unsigned long long>(d.planned.blocks), d.planned.blocks == 1 ? "" : "s", o.workers,
              o.workers == 1 ? "" : "s", d.device.c_str());
  std::printf("  %-8s %14s %14s %8s %8s   (device memory)\n", "worker", "planned peak", "measured peak", "x input",
              "blocks");
  for (std::size_t w = 0; w < d.planned.workers.size(); ++w) {
    const auto& p = d.planned.workers[w];
    const auto& r = d.measured.workers[w];
    std::printf("  %-8zu %14s %14s %8.2f %8llu%s\n", w, human_bytes(p.peak).c_str(), human_bytes(r.peak).c_str(),
                double(r.peak) / double(input_bytes), static_cast<unsigned long long>(r.blocks),
                p.peak == r.peak ? "  (= plan)" : "  (differs from plan!)");
  }
  std::printf("  time            %10.4f s  %8.1f MB/s of input (transfers included)\n", d.measured.seconds,
              double(input_bytes) / 1e6 / d.measured.seconds);
  for (const auto& f : files) std::printf("  wrote           %s\n", f.c_str());
}

inline void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "run an operator or a graph for real and write its outputs as .npy");
  static graph_options opts;
  static std::string input, output, trace;
  static bool no_sync = false;
  opts.add_to(*cmd);
  cmd->add_option("-i,--input", input, "a .npy (float32) or SEG-Y file, or synthetic:IxXxT[:SEED]")->required();
  cmd->add_option("-o,--output", output,
                  "directory for the outputs, <node>[_<output>].npy (created if missing). A run holds the "
                  "directory's lock (.dwsr-run.lock) while it runs; it removes partial files (.*.dwsr-partial-*) "
                  "left by runs that were killed, and says so on stderr")
      ->required();
  cmd->add_option("--trace", trace,
                  "write the run's events as a dwsr trace (CSV); with several workers, one file per worker "
                  "(NAME.worker<k>.csv). Outputs and traces appear together, or none of them");
  cmd->add_flag("--no-sync", no_sync,
                "rename the finished files into place without waiting for them to reach the disk (fsync), as "
                "np.save writes: they still appear whole and together for every process, but a power loss or "
                "kernel crash soon after may leave them empty or partial. Saves the disk's write time (about 20 ms "
                "per 32 MiB on a 2-core VM)");
  cmd->callback([] {
    const auto g = opts.build();
    const auto o = opts.options();
    const auto in = open_blocks(input);
    const auto shape = in->shape();
    const chunked_schedule schedule(g, shape, o);  // validates the chunking before anything is written
    const auto paths = output_paths(g, output);
    std::vector<std::filesystem::path> traces;
    for (std::size_t w = 0; !trace.empty() && w < o.workers; ++w) {
      std::filesystem::path p = trace;
      if (o.workers > 1) p = p.parent_path() / (p.stem().string() + ".worker" + std::to_string(w) + ".csv");
      // Checked now, so that a run is not computed for nothing.
      std::error_code ignored;
      for (const auto& output_path : paths)
        if (std::filesystem::weakly_canonical(p, ignored) == std::filesystem::weakly_canonical(output_path, ignored))
          throw invalid_input("--trace " + quote(p.string(), 400) +
                              " is also an output of the run; choose another name");
      const auto dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
      if (std::filesystem::is_directory(p) || !std::filesystem::is_directory(dir))
        throw io_error("--trace " + quote(p.string(), 400) + ": " +
                       (std::filesystem::is_directory(p) ? "is a directory; expected a file name"
                                                         : "its directory does not exist"));
      traces.push_back(p);
    }
    std::error_code ec;
    std::filesystem::create_directories(output, ec);
    if (ec || !std::filesystem::is_directory(output))
      throw io_error("output directory " + quote(output, 400) +
                     " cannot be created: " + (ec ? ec.message() : std::string("a file of that name exists")));
    const directory_lock lock(output);
    report_stale(output, remove_stale_partials(output));
    for (const auto& t : traces) remove_stale_partials_of(t);
    std::vector<npy_block_sink::file_spec> files;
    std::vector<npy_block_sink::table_file_spec> tables;
    for (std::size_t k = 0; k < g.outputs().size(); ++k) {
      const auto r = g.outputs()[k];
      files.push_back({paths[k], g.nodes()[r.node].outputs[r.output].type});
    }
    for (std::size_t k = 0; k < g.tables().size(); ++k) {
      const auto t = g.tables()[k];
      tables.push_back({paths[files.size() + k], g.nodes()[t.node].tables[t.table]});
    }
    const auto durable = no_sync ? dwsr::detail::durability::unsynced : dwsr::detail::durability::synced;
    npy_block_sink sink(files, shape, tables, durable);
    std::vector<recorder> recorders(traces.size());
    std::vector<event_sink_ref> sinks(recorders.begin(), recorders.end());
    if (opts.on_cuda()) {
      progress_meter progress(schedule.blocks().count(), shape.voxels());
      const auto d = measure_on_device(schedule, *in, &sink, sinks, [&](const block& b) { progress.on_block(b); });
      dwsr::detail::commit_group group;
      sink.commit_into(group);
      for (std::size_t w = 0; w < traces.size(); ++w)
        group.write(traces[w], [&](std::ostream& out) { sim::write_trace_csv(out, recorders[w].events()); });
      group.commit(durable);
      std::vector<std::string> written;
      for (const auto& p : paths) written.push_back(p.string());
      return print_device_run(d, opts, in->source().describe(), shape, written);
    }
    auto m = measure_run(schedule, *in, &sink, sinks);
    // Every file of the run is complete before any of them is moved into place.
    dwsr::detail::commit_group group;
    sink.commit_into(group);
    for (std::size_t w = 0; w < traces.size(); ++w)
      group.write(traces[w], [&](std::ostream& out) { sim::write_trace_csv(out, recorders[w].events()); });
    group.commit(durable);
    for (const auto& p : paths) m.files.push_back(p.string());
    const auto input_bytes = shape.voxels() * sizeof(float);
    if (opts.json)
      return print_json({{"graph", opts.graph},
                         {"input", in->source().describe()},
                         {"shape", to_string(shape)},
                         {"chunk", to_string(m.planned.chunk)},
                         {"blocks", m.planned.blocks},
                         {"workers", o.workers},
                         {"threads", o.threads},
                         {"input_bytes", input_bytes},
                         {"planned_peak_bytes", m.planned.peak()},
                         {"peak_is_bound", plan_is_bound(schedule)},
                         {"measured_peak_bytes", m.measured_peak()},
                         {"planned_workers", workers_json(m.planned.workers)},
                         {"measured_workers", workers_json(m.measured.workers)},
                         {"planned_pages_bytes", m.planned_pages},
                         {"planned_pages_sum_bytes", m.planned_pages_sum()},
                         {"rss_increase_bytes", m.rss_increase},
                         // The kernel's peak RSS of this process since the run began (its probe reset it), for
                         // probes outside (env/real_check.hpp).
                         {"vm_hwm_bytes", proc_self_bytes("/proc/self/status", "VmHWM:")},
                         {"first_blocks", {{"blocks", m.first_blocks}, {"vm_hwm_bytes", m.first_blocks_vm_hwm}}},
                         {"seconds", m.measured.seconds},
                         {"outputs", m.files}});
    std::printf("%s on %s (%s), chunk %s: %llu block%s on %zu worker%s x %zu thread%s\n", opts.graph.c_str(),
                in->source().describe().c_str(), human_bytes(input_bytes).c_str(), to_string(m.planned.chunk).c_str(),
                static_cast<unsigned long long>(m.planned.blocks), m.planned.blocks == 1 ? "" : "s", o.workers,
                o.workers == 1 ? "" : "s", o.threads, o.threads == 1 ? "" : "s");
    std::printf("  %-8s %14s %14s %8s %8s\n", "worker", "planned peak", "measured peak", "x input", "blocks");
    // Data-dependent operators plan bounds (event::bound): the run stays within them.
    const bool bound = plan_is_bound(schedule);
    for (std::size_t w = 0; w < o.workers; ++w) {
      const auto& p = m.planned.workers[w];
      const auto& r = m.measured.workers[w];
      std::printf("  %-8zu %14s %14s %8.2f %8llu%s\n", w, human_bytes(p.peak).c_str(), human_bytes(r.peak).c_str(),
                  double(r.peak) / double(input_bytes), static_cast<unsigned long long>(r.blocks),
                  p.peak == r.peak            ? "  (= plan)"
                  : bound && r.peak <= p.peak ? "  (within the planned bound)"
                                              : "  (differs from plan!)");
    }
    std::printf("  held (plan)     %12s  every worker's live buffers in whole pages (host_pages model)\n",
                human_bytes(m.planned_pages_sum()).c_str());
    std::printf("  peak RSS +      %12s  measured by the kernel (%+.1f%%)\n", human_bytes(m.rss_increase).c_str(),
                100.0 * (double(m.rss_increase) / double(std::max<std::uint64_t>(1, m.planned_pages_sum())) - 1));
    std::printf("  time            %10.4f s  %8.1f MB/s of input\n", m.measured.seconds,
                double(input_bytes) / 1e6 / m.measured.seconds);
    for (const auto& f : m.files) std::printf("  wrote           %s\n", f.c_str());
  });
}

inline void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "demo", "run a few operators on a synthetic cube: planned vs measured peak and time, as a table");
  static std::string shape = "64x128x512";
  static std::vector<std::string> ops = {"envelope", "instantaneous_frequency", "sweetness", "response_phase",
                                         "dominant_frequency"};
  static std::size_t threads = 2;
  static std::uint64_t seed = 1;
  cmd->add_option("--shape", shape, "synthetic cube shape IxXxT")->capture_default_str();
  cmd->add_option("--seed", seed, "synthetic cube seed")->capture_default_str();
  cmd->add_option("--ops", ops, "operators to run")->delimiter(',')->capture_default_str();
  cmd->add_option("-t,--threads", threads, "threads, 1 to " + std::to_string(max_threads))
      ->check(CLI::Range(std::size_t{1}, max_threads))
      ->capture_default_str();
  cmd->callback([] {
    // The cube is generated once, before the runs: times and memory are the operators'.
    const auto source = io::open_source("synthetic:" + shape + ":" + std::to_string(seed));
    std::vector<float> cube(source->shape().voxels());
    source->read(cube.data(), threads);
    const memory_block_source in(cube_view<const float>(cube.data(), source->shape()));
    const auto input_bytes = cube.size() * sizeof(float);
    std::printf("dwsr demo: %s (%s of float32, generated in memory first), %zu threads\n\n", source->describe().c_str(),
                human_bytes(input_bytes).c_str(), threads);
    std::printf("%-28s %12s %12s %8s %12s %10s %10s\n", "operator", "planned peak", "measured", "x input", "peak RSS +",
                "time s", "MB/s");
    bool all_exact = true;
    for (const auto& name : ops) {
      const auto g = graph::single(operators::catalogue(), name);
      const chunked_schedule s(g, in.shape(), {.threads = threads});
      const auto m = measure_run(s, in, nullptr);
      all_exact = all_exact && (m.measured_peak() == m.planned.peak() ||
                                (plan_is_bound(s) && m.measured_peak() <= m.planned.peak()));
      std::printf("%-28s %12s %12s %8.2f %12s %10.4f %10.1f\n", name.c_str(), human_bytes(m.planned.peak()).c_str(),
                  human_bytes(m.measured_peak()).c_str(), double(m.measured_peak()) / double(input_bytes),
                  human_bytes(m.rss_increase).c_str(), m.measured.seconds,
                  double(input_bytes) / 1e6 / m.measured.seconds);
    }
    std::printf("\n%s\n", all_exact ? "Every measured peak equals its plan, byte for byte (or is within its bound, "
                                      "for operators whose memory depends on the data)."
                                    : "A measured peak differs from its plan: please report it.");
  });
}

}  // namespace dwsr::cli
