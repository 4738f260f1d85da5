#pragma once
// `dwsr calibrate`: measures every operator on this machine and writes the
// time profile that `plan` and `advise` predict time from.

#include "cli_common.hpp"
#include "dwsr/graph/calibrate.hpp"

namespace dwsr::cli {

inline void add_calibrate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "calibrate", "measure each operator on this machine and write the time profile `plan` and `advise` predict from");
  static bool quick = false, json = false;
  static std::vector<std::string> ops;
  static std::vector<std::size_t> threads;
  static std::string output;
  cmd->add_flag("--quick", quick, "smaller cubes and fewer repeats (seconds instead of a minute or two)");
  cmd->add_option("--ops", ops, "operators to measure (default: all)")->delimiter(',');
  cmd->add_option("-t,--threads", threads, "thread counts to measure (default: 1 and the machine's cores)")
      ->delimiter(',')
      ->check(CLI::Range(std::size_t{1}, max_threads));
  cmd->add_option("-o,--output", output,
                  "where to write the profile (default: " + sim::default_time_profile_path().string() +
                      "; $DWSR_TIME_PROFILE or $XDG_CACHE_HOME move it)");
  cmd->add_flag("--json", json, "print the profile instead of a table");
  cmd->callback([] {
    const auto path = output.empty() ? sim::default_time_profile_path() : std::filesystem::path(output);
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    calibrate_options o{.quick = quick, .ops = ops, .threads = threads, .progress = {}};
    if (tty)
      o.progress = [](const std::string& name, std::size_t done, std::size_t total) {
        std::fprintf(stderr, "\r\033[Kcalibrating %zu/%zu %s", done, total, name.c_str());
        if (done == total) std::fprintf(stderr, "\r\033[K");
      };
    const auto p = calibrate(operators::catalogue(), o);
    if (path.has_parent_path()) remove_stale_partials_of(path);
    sim::write_time_profile(path, p);
    if (json) return print_json(sim::to_json(p));
    std::printf("time profile of %s (%zu cores, %s vector instructions), traces of %llu samples%s\n", p.cpu.c_str(),
                p.cores, p.vector_instructions.c_str(), static_cast<unsigned long long>(p.trace_samples),
                p.quick ? ", quick" : "");
    std::printf("  %-28s %12s", "operator", "fixed us");
    for (const auto& [t, v] : p.copy.seconds_per_voxel) std::printf("   ns/voxel T=%-3zu", t);
    std::printf("\n  %-28s %12.1f", "(block copy)", 1e6 * p.copy.fixed_seconds);
    for (const auto& [t, v] : p.copy.seconds_per_voxel) std::printf(" %17.3f", 1e9 * v);
    std::printf("\n");
    for (const auto& [name, c] : p.operators) {
      std::printf("  %-28s %12.1f", name.c_str(), 1e6 * c.fixed_seconds);
      for (const auto& [t, v] : c.seconds_per_voxel) std::printf(" %17.3f", 1e9 * v);
      std::printf("\n");
    }
    std::printf("wrote %s\n", path.c_str());
  });
}

}  // namespace dwsr::cli
