#pragma once
// `dwsr generate`: writes a deterministic synthetic cube as .npy or SEG-Y.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "dwsr/io/npy.hpp"
#include "dwsr/io/segy.hpp"
#include "dwsr/io/synthetic.hpp"

namespace dwsr::cli {

/// Registers `dwsr generate --shape IxXxT [--seed N] --output FILE(.npy|.sgy)`.
inline void add_generate_command(CLI::App& app) {
  struct options {
    std::string shape;
    std::uint64_t seed = 1;
    std::string output;
    std::size_t threads = 1;
    bool json = false;
  };
  static options o;
  auto* cmd = app.add_subcommand(
      "generate", "write a synthetic cube (sparse reflectivity * 25 Hz Ricker + 5% noise, 4 ms) as .npy or SEG-Y");
  cmd->add_option("--shape", o.shape, "cube shape IxXxT (inline x crossline x time), e.g. 64x64x512")->required();
  cmd->add_option("--seed", o.seed, "random seed; same shape and seed give the same bytes")->capture_default_str();
  cmd->add_option("-o,--output", o.output, "output file: .npy (float32) or .sgy/.segy (IEEE float, inline-sorted)")
      ->required();
  cmd->add_option("-t,--threads", o.threads,
                  "threads, 1 to " + std::to_string(max_threads) + " (the bytes do not depend on it)")
      ->check(CLI::Range(std::size_t{1}, max_threads))
      ->capture_default_str();
  cmd->add_flag("--json", o.json, "print a JSON document instead of a line");
  cmd->callback([] {
    const shape3 shape = parse_shape(o.shape);
    const std::filesystem::path out{o.output};
    std::string ext = out.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const bool npy = ext == ".npy", segy = ext == ".sgy" || ext == ".segy";
    if (!npy && !segy)
      throw invalid_input("--output '" + o.output + "': expected a file name ending in .npy, .sgy or .segy");
    remove_stale_partials_of(out);
    std::vector<float> cube(shape.voxels());
    io::generate_synthetic(shape, o.seed, cube.data(), o.threads);
    const cube_view<const float> view(cube.data(), shape);
    if (npy) {
      io::write_npy(out, view);
    } else {
      io::segy_write_options w;
      w.text = "dwsr synthetic cube " + to_string(shape) + " seed " + std::to_string(o.seed);
      io::write_segy(out, view, std::round(io::synthetic_recipe::sample_interval_s * 1e6), w);
    }
    const auto bytes = static_cast<std::uint64_t>(std::filesystem::file_size(out));
    if (o.json)
      return print_json({{"output", o.output},
                         {"format", npy ? "npy" : "segy"},
                         {"shape", {shape.inlines, shape.crosslines, shape.samples}},
                         {"seed", o.seed},
                         {"sample_interval_ms", io::synthetic_recipe::sample_interval_s * 1e3},
                         {"bytes", bytes}});
    std::cout << "wrote synthetic " << to_string(shape) << " seed " << o.seed << " to " << o.output << " ("
              << human_bytes(bytes) << ")\n";
  });
}

}  // namespace dwsr::cli
