#pragma once
// `dwsr ops`: the operator catalogue with parameters, halos and outputs.

#include "cli_common.hpp"
#include "dwsr/ops/describe.hpp"

namespace dwsr::cli {

inline void add_ops_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("ops", "list every operator: family, parameters and defaults, halo, outputs");
  static bool json = false;
  static std::string device = "host";
  cmd->add_flag("--json", json, "print a JSON array");
  cmd->add_option("--device", device, "list the operators of this device: " + std::string(device_help))
      ->check(CLI::IsMember({"host", "cuda"}))
      ->capture_default_str();
  cmd->callback([] {
    const auto all = describe(operators_of(device));
    if (json) return print_json(all);
    std::string family;
    for (const auto& d : all) {
      if (d["family"] != family) {
        family = d["family"];
        std::cout << (family.empty() ? "" : "\n") << family << '\n';
      }
      std::string params;
      for (const auto& p : d["parameters"])
        params += (params.empty() ? "" : " ") + p["name"].get<std::string>() + "=" + p["default"].get<std::string>();
      // Radius per axis, or "whole" for an axis a chunk may not split.
      const auto& h = d["halo"];
      auto axis = [&](int a, const char* whole) {
        return h[whole].get<bool>() ? std::string("whole") : std::to_string(h["radius"][a].get<int>());
      };
      std::string halo = axis(0, "whole_inlines") + "x" + axis(1, "whole_crosslines") + "x" + axis(2, "whole_traces");
      if (d["reduction_passes"].get<int>() > 0) halo += "+global";
      std::string outs;
      for (const auto& o : d["outputs"])
        outs += (outs.empty() ? "" : " ") + o["name"].get<std::string>() + ":" + o["dtype"].get<std::string>();
      for (const auto& t : d["tables"]) outs += (outs.empty() ? "" : " ") + t["name"].get<std::string>() + ":table";
      std::printf("  %-28s halo %-16s %s\n", d["name"].get<std::string>().c_str(), halo.c_str(), outs.c_str());
      std::printf("  %-28s %s%s%s\n", "", d["summary"].get<std::string>().c_str(), params.empty() ? "" : "; ",
                  params.c_str());
    }
  });
}

}  // namespace dwsr::cli
