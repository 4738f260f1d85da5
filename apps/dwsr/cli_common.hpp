#pragma once
// Helpers shared by the dwsr subcommands: byte formatting, JSON/table output.

#include <CLI/CLI.hpp>

#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "device.hpp"
#include "dwsr/core/bytes.hpp"
#include "dwsr/core/directory_lock.hpp"
#include "dwsr/core/limits.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/core/simd_isa.hpp"
#include "dwsr/error.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/graph/graph_json.hpp"
#include "dwsr/io/source.hpp"
#include "dwsr/operators/catalogue.hpp"
#include "dwsr/report/plan_report.hpp"
#include "dwsr/sim/any_model.hpp"
#include "dwsr/sim/time_profile.hpp"

namespace dwsr::cli {

/// "1.50 MiB": bytes for people (tables); JSON always carries exact integers.
inline std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

/// Prints a JSON document on stdout, indented.
inline void print_json(const nlohmann::json& j) { std::cout << j.dump(2) << '\n'; }

/// `--param name=value` overrides as a map.
inline std::map<std::string, std::string> parse_params(const std::vector<std::string>& params) {
  std::map<std::string, std::string> overrides;
  for (const auto& p : params) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw invalid_input("--param '" + p + "': expected NAME=VALUE, e.g. --param sigmas=3,3,3");
    overrides[p.substr(0, eq)] = p.substr(eq + 1);
  }
  return overrides;
}

/// The allocator models, for help texts: "exact, host_malloc, ...".
inline std::string model_names() {
  std::string out;
  for (const auto& [name, doc] : sim::model_catalogue()) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

/// The options of every command that executes, plans or advises on a graph.
struct graph_options {
  std::string graph;
  std::vector<std::string> params;
  std::string chunk;
  std::size_t workers = 1;
  std::size_t threads = 1;
  std::string memory;
  std::string device = "host";
  bool json = false;

  /// Adds the options; `chunked` adds --chunk (advise searches chunks itself).
  void add_to(CLI::App& cmd, bool chunked = true) {
    cmd.add_option("--device", device, device_help)->check(CLI::IsMember({"host", "cuda"}))->capture_default_str();
    cmd.add_option("graph", graph, "an operator name (see `dwsr ops`) or a graph file (.json, see the README)")
        ->required();
    cmd.add_option("-p,--param", params, "operator parameter NAME=VALUE (repeatable), e.g. sigmas=3,3,3");
    if (chunked) cmd.add_option("-c,--chunk", chunk, "block shape IxXxT (default: the whole cube)");
    cmd.add_option("-w,--workers", workers,
                   "workers W, 1 to " + std::to_string(max_workers) +
                       "; each runs a contiguous range of the blocks (C order) (each worker is a thread: more would "
                       "fail to start on "
                       "ordinary systems)")
        ->check(CLI::Range(std::size_t{1}, max_workers))
        ->capture_default_str();
    cmd.add_option("-t,--threads", threads,
                   "threads T per worker, 1 to " + std::to_string(max_threads) +
                       " (per-thread scratch is sized by T; more threads than that cannot be started reliably)")
        ->check(CLI::Range(std::size_t{1}, max_threads))
        ->capture_default_str();
    cmd.add_option("-m,--memory", memory,
                   "memory budget per worker (with --device cuda: its GPU memory), e.g. 512MiB, 4GiB (default: none)");
    cmd.add_flag("--json", json, "print a JSON document instead of a table");
  }
  dwsr::graph build() const {
    check_on_device(graph, device);
    return resolve_graph(graph, operators_of(device), parse_params(params));
  }
  bool on_cuda() const { return device == "cuda"; }
  std::uint64_t budget() const {
    return memory.empty() ? std::numeric_limits<std::uint64_t>::max() : parse_bytes(memory);
  }
  chunked_options options() const {
    return {.chunk = chunk.empty() ? shape3{} : parse_shape(chunk),
            .workers = workers,
            .threads = threads,
            .budget = budget()};
  }
};

/// The options of the commands that predict without running: the cube's shape
/// (given, or read from an input's header), the allocator model and the time profile.
struct prediction_options {
  std::string shape;
  std::string input;
  std::string allocator = "exact";
  std::string profile;
  std::size_t cores = 0;
  std::optional<sim::time_profile> loaded;  // the profile, once read

  void add_to(CLI::App& cmd) {
    cmd.add_option("-s,--shape", shape, "cube shape IxXxT (inline x crossline x time)");
    cmd.add_option("-i,--input", input,
                   "or take the shape from an input's header: " + std::string(io::source_spec_help));
    cmd.add_option("-a,--allocator", allocator,
                   "allocator model applied to each worker's events: " + model_names() +
                       " (settings as in `dwsr replay --help`)")
        ->capture_default_str();
    cmd.add_option("--profile", profile,
                   "time profile from `dwsr calibrate`, to predict time too (default: " +
                       sim::default_time_profile_path().string() + " when it exists; $DWSR_TIME_PROFILE moves it)");
    cmd.add_option("--cores", cores,
                   "cores the workers share, for the time prediction (default: the profiled machine's; workers on "
                   "machines of their own: W x T)")
        ->check(CLI::Range(std::size_t{1}, max_workers * max_threads));
  }
  /// The time profile of --profile (which must exist), else the default one
  /// when it exists, else null.
  const sim::time_profile* time_profile() {
    if (!loaded) {
      loaded = sim::find_time_profile(profile);
      // Its speeds are those of the instruction set it was measured with.
      const std::string now(name(simd_isa_in_use()));
      if (loaded && !loaded->vector_instructions.empty() && loaded->vector_instructions != now)
        std::fprintf(stderr,
                     "dwsr: note: the time profile was measured with %s vector instructions and this run has %s; "
                     "its times may be off (run `dwsr calibrate` again)\n",
                     loaded->vector_instructions.c_str(), now.c_str());
    }
    return loaded ? &*loaded : nullptr;
  }
  /// The cube shape of --shape or of --input (only its header is read).
  shape3 cube() const {
    if (!shape.empty() && !input.empty()) throw invalid_input("give --shape or --input, not both");
    if (!shape.empty()) return parse_shape(shape);
    if (!input.empty()) return io::open_source(input)->shape();
    throw invalid_input("a cube is needed: --shape IxXxT or --input SRC");
  }
};

/// A graph output's file: <output name>.npy (for one operator, the reference's names).
inline std::string output_file_name(const dwsr::graph& g, const cube_ref& r) { return g.output_name(r) + ".npy"; }

/// The files of a graph's outputs in `dir`, then those of its tables
/// (<node>_<suffix>.npy): every one a plain file name inside `dir` (node names
/// are checked when the graph is built; this is the last guard before
/// anything is written), no two the same.
inline std::vector<std::filesystem::path> output_paths(const dwsr::graph& g, const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& r : g.outputs()) names.push_back(output_file_name(g, r));
  for (const auto& t : g.tables()) names.push_back(g.table_name(t) + ".npy");
  std::vector<std::filesystem::path> paths;
  for (const auto& name : names) {
    const std::filesystem::path file(name);
    if (file.has_parent_path() || file.filename() != file || name.front() == '.')
      throw invalid_input("output " + quote(name) +
                          " is not a plain file name; node names are letters, digits, "
                          "'_' and '-'");
    for (const auto& p : paths)
      if (p.filename() == file)
        throw invalid_input("two outputs of the graph would both be written to " + quote(name) +
                            "; rename one of the nodes");
    paths.push_back(dir / file);
  }
  return paths;
}

/// What report_stale() removed, said once when the command ends: on its own
/// line after a success, or at the end of the error's one line.
inline std::string& stale_notice() {
  static std::string notice;
  return notice;
}

/// Says on stderr, on one line, which partial files of dead runs were removed from `dir`.
inline void report_stale(const std::filesystem::path& dir, const std::vector<stale_partial>& removed) {
  if (removed.empty()) return;
  std::set<long> pids;
  for (const auto& r : removed) pids.insert(r.pid);
  std::string line = quote(dir.string(), 400) + ": removed " + std::to_string(removed.size()) + " partial file" +
                     (removed.size() == 1 ? "" : "s") + " of an interrupted run (process";
  for (const auto pid : pids) {
    line += pid == *pids.begin() ? " " : ", ";
    line += std::to_string(pid);
  }
  line += "):";
  for (std::size_t k = 0; k < removed.size() && k < 4; ++k) {
    line += k ? ", " : " ";
    line += removed[k].name;
  }
  if (removed.size() > 4) line += ", ...";
  auto& notice = stale_notice();
  notice += notice.empty() ? "" : "; ";
  notice += line;
}

/// Removes the partial files that dead processes left while writing `file`
/// (beside it), saying so on stderr: a killed `generate`, `plan --trace`, ...
inline void remove_stale_partials_of(const std::filesystem::path& file) {
  const auto dir = file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  const auto name = file.filename().string();
  report_stale(dir, remove_stale_partials(dir, [&](const std::string& target) { return target == name; }));
}

using report::workers_json;

}  // namespace dwsr::cli
