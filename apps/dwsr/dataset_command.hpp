#pragma once
// `dwsr dataset`: labelled training data for memory estimators, drawn from a
// seed (graph/dataset.hpp; the files in docs/dataset.md).

#include <unistd.h>

#include <chrono>

#include "cli_common.hpp"
#include "dwsr/graph/dataset_files.hpp"

namespace dwsr::cli {

inline void add_dataset_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "dataset", "write labelled training data for memory estimators: features, labels and splits of random jobs");
  static std::string task = "peak", out, profile;
  static dataset_options o;
  static bool no_csv = false, json = false;
  cmd->add_option("--task", task,
                  "peak: the peaks of a given chunking; chunk: the chunk to choose for a budget; pack: 1 to 4 jobs "
                  "co-located on a GPU or MIG slice")
      ->capture_default_str();
  cmd->add_option("-n,--rows", o.rows, "rows to generate")->capture_default_str();
  cmd->add_option("--seed", o.seed, "seed of every draw (same options and seed, same bytes)")->capture_default_str();
  cmd->add_option("-o,--out", out, "directory to write (created when missing)")->required();
  static CLI::Option* cmd_allocators = nullptr;
  cmd_allocators =
      cmd->add_option("-a,--allocators", o.allocators,
                      "allocator models: the rows' allocators are drawn among them, and for task peak each has a label "
                      "column (" +
                          model_names() +
                          "; task chunk: exact and host_pages; task pack: default exact and the three GPU pools)")
          ->delimiter(',')
          ->capture_default_str();
  cmd->add_option("--exec", o.execs,
                  "task peak: execution models the rows draw from: dwsr, dask (T block tasks at once), "
                  "dask_unfused (one task per node and block)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--graphs", o.random_graphs, "random graphs of 2 to 4 nodes in the pool, beside every operator alone")
      ->capture_default_str();
  cmd->add_option("--profile", profile, "time profile from `dwsr calibrate`: adds the predicted makespan as a label");
  cmd->add_option("--cores", o.cores, "cores the workers share, for the makespan (default: the profiled machine's)")
      ->check(CLI::Range(std::size_t{1}, max_workers * max_threads));
  cmd->add_flag("--no-csv", no_csv, "skip dataset.csv (the .npy files hold everything)");
  cmd->add_flag("--json", json, "print a JSON summary instead of a table");
  cmd->callback([] {
    const auto parsed = parse_dataset_task(task);
    if (!parsed) throw invalid_input("--task " + quote(task) + ": expected peak, chunk or pack");
    o.task = *parsed;
    // GPU jobs: the device allocators, unless chosen.
    if (o.task == dataset_task::pack && cmd_allocators->count() == 0)
      o.allocators = {"exact", "torch_cuda_caching", "cupy_pool", "rmm_pool"};
    std::optional<sim::time_profile> loaded;
    if (!profile.empty()) loaded = sim::read_time_profile(profile);
    o.profile = loaded ? &*loaded : nullptr;
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    auto last = std::chrono::steady_clock::now();
    const auto started = last;
    const auto d = make_dataset(operators::catalogue(), o, [&](std::uint64_t done) {
      const auto now = std::chrono::steady_clock::now();
      if (!tty || (now - last < std::chrono::milliseconds(200) && done != o.rows)) return;
      last = now;
      std::fprintf(stderr, "\r\033[Kdataset: %llu/%llu rows", static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(o.rows));
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (tty) std::fprintf(stderr, "\r\033[K");
    remove_stale_partials_of(std::filesystem::path(out) / "features.npy");
    write_dataset(d, out, !no_csv);
    std::uint64_t test[3]{};
    for (std::uint64_t r = 0; r < d.rows(); ++r)
      for (int k = 0; k < 3; ++k) test[k] += d.split[r * 3 + std::size_t(k)];
    if (json)
      return print_json({{"task", task},
                         {"rows", d.rows()},
                         {"features", d.features.size()},
                         {"labels", d.labels.size()},
                         {"graphs", d.graphs.size()},
                         {"seconds", seconds},
                         {"out", out},
                         {"test_rows", {{"random", test[0]}, {"family", test[1]}, {"extrapolation", test[2]}}}});
    std::printf("%llu rows (task %s) of %zu features and %zu labels over %zu graphs in %.2f s (%.0f rows/s)\n",
                static_cast<unsigned long long>(d.rows()), task.c_str(), d.features.size(), d.labels.size(),
                d.graphs.size(), seconds, double(d.rows()) / seconds);
    std::printf("  test rows  random %llu, family %llu (held out: %s, %s), extrapolation %llu (input >= %s)\n",
                static_cast<unsigned long long>(test[0]), static_cast<unsigned long long>(test[1]),
                d.held_out.at(0).c_str(), d.held_out.at(1).c_str(), static_cast<unsigned long long>(test[2]),
                human_bytes(d.extrapolation_cut).c_str());
    std::printf("wrote %s/{features,labels,splits,graphs}.npy, columns.json%s\n", out.c_str(),
                no_csv ? "" : ", dataset.csv");
  });
}

}  // namespace dwsr::cli
