#pragma once
/// \file The GPUs a co-location replay (sim/colocate.hpp) runs jobs on: whole
/// GPUs and their MIG slices, each with the memory its processes can use.
/// Names are "<gpu>" or "<gpu>/<profile>": "h100-80gb", "h100-80gb/3g.40gb".
///
/// Where the figures come from:
/// - A whole GPU: its total memory as nvidia-smi reports it (MiB): what a
///   process sees as the device's memory, before any context.
/// - A MIG slice: NVIDIA's MIG user guide, "Supported MIG Profiles"
///   (docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html),
///   names the profiles of each GPU and the fraction of memory each gets
///   (1/8, 2/8, 4/8, full); the memory a slice really offers is what
///   `nvidia-smi mig -lgip` lists for the profile (in GiB, to 2 decimals; the
///   guide's own listing for the A100-40GB, published listings for the others).
///   Those listings differ between driver versions by up to 0.5 GiB; where two
///   disagreed the more common one is kept. Two H200 entries had no listing
///   (3g.71gb and 4g.71gb, 4/8 of the memory): they are estimated as twice the
///   2/8 slice, and flagged `listed = false`. A user with a real listing passes
///   its figure as the capacity instead (colocate_options::capacity).
///
/// Only memory is modelled: a slice's share of SMs or bandwidth changes how
/// fast a job runs, which the time model of this machine does not know.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/error.hpp"

namespace dwsr::sim {

/// One MiB, the unit nvidia-smi reports memory in.
inline constexpr std::uint64_t mib = std::uint64_t{1} << 20;

/// A MIG GPU instance profile of one GPU model.
struct mig_profile {
  std::string_view name;        ///< "3g.40gb"
  unsigned compute_slices = 0;  ///< the "3g": sevenths of the GPU's SMs
  unsigned memory_eighths = 0;  ///< NVIDIA's fraction of memory, in eighths (8: full)
  std::uint64_t bytes = 0;      ///< memory a process can use (see the file comment)
  bool listed = true;           ///< from an `nvidia-smi mig -lgip` listing; false: estimated
};

/// A GPU model dwsr knows, with its MIG profiles.
struct gpu_model {
  std::string_view name;     ///< "h100-80gb"
  std::string_view product;  ///< "NVIDIA H100 80GB"
  std::uint64_t bytes = 0;   ///< whole-GPU memory as nvidia-smi reports it
  std::vector<mig_profile> profiles;
};

/// A device a replay runs on: a whole GPU or one MIG slice of it.
struct device_spec {
  std::string name;            ///< "h100-80gb/3g.40gb"
  std::string gpu;             ///< "h100-80gb"
  std::string profile;         ///< "3g.40gb", or empty for the whole GPU
  std::uint64_t capacity = 0;  ///< bytes the device's processes can use, contexts included
  bool listed = true;          ///< false when the capacity is an estimate (see mig_profile::listed)
  friend bool operator==(const device_spec&, const device_spec&) = default;
};

namespace detail {

/// GiB to 2 decimals as nvidia-smi prints them, in MiB: 9.75 -> 9984. The
/// listings round to multiples of 1/8 GiB (x.12 is 1/8, x.38 is 3/8, ...).
constexpr std::uint64_t listed_gib(unsigned whole, unsigned hundredths) {
  const unsigned eighths = (hundredths * 8 + 50) / 100;  // 62 -> 5, 38 -> 3
  return (std::uint64_t{whole} * 1024 + std::uint64_t{eighths} * 128) * mib;
}

}  // namespace detail

/// The GPU models and MIG profiles dwsr knows (see the file comment).
inline const std::vector<gpu_model>& gpu_catalogue() {
  using detail::listed_gib;
  static const std::vector<gpu_model> models{
      {"a100-40gb",
       "NVIDIA A100 40GB",
       40960 * mib,
       {{"1g.5gb", 1, 1, listed_gib(4, 75)},
        {"1g.10gb", 1, 2, listed_gib(9, 62)},
        {"2g.10gb", 2, 2, listed_gib(9, 62)},
        {"3g.20gb", 3, 4, listed_gib(19, 50)},
        {"4g.20gb", 4, 4, listed_gib(19, 50)},
        {"7g.40gb", 7, 8, listed_gib(39, 25)}}},
      {"a100-80gb",
       "NVIDIA A100 80GB",
       81920 * mib,
       {{"1g.10gb", 1, 1, listed_gib(9, 50)},
        {"1g.20gb", 1, 2, listed_gib(19, 50)},
        {"2g.20gb", 2, 2, listed_gib(19, 50)},
        {"3g.40gb", 3, 4, listed_gib(39, 25)},
        {"4g.40gb", 4, 4, listed_gib(39, 25)},
        {"7g.80gb", 7, 8, listed_gib(79, 0)}}},
      {"h100-80gb",
       "NVIDIA H100 80GB",
       81559 * mib,
       {{"1g.10gb", 1, 1, listed_gib(9, 75)},
        {"1g.20gb", 1, 2, listed_gib(19, 62)},
        {"2g.20gb", 2, 2, listed_gib(19, 62)},
        {"3g.40gb", 3, 4, listed_gib(39, 50)},
        {"4g.40gb", 4, 4, listed_gib(39, 50)},
        {"7g.80gb", 7, 8, listed_gib(79, 25)}}},
      {"h200-141gb",
       "NVIDIA H200 141GB",
       143771 * mib,
       {{"1g.18gb", 1, 1, listed_gib(16, 0)},
        {"1g.35gb", 1, 2, listed_gib(32, 50)},
        {"2g.35gb", 2, 2, listed_gib(32, 50)},
        {"3g.71gb", 3, 4, 2 * listed_gib(32, 50), false},
        {"4g.71gb", 4, 4, 2 * listed_gib(32, 50), false},
        {"7g.141gb", 7, 8, listed_gib(140, 0)}}},
  };
  return models;
}

/// Every name device_named accepts, comma-separated ("a100-40gb, a100-40gb/1g.5gb, ...").
inline std::string known_devices() {
  std::string out;
  for (const auto& g : gpu_catalogue()) {
    out.append(out.empty() ? "" : ", ").append(g.name);
    for (const auto& p : g.profiles) out.append(", ").append(g.name).append("/").append(p.name);
  }
  return out;
}

/// The device named "<gpu>" or "<gpu>/<profile>" (case-insensitive, with an
/// optional "mig-" or "MIG " before the profile). Throws invalid_input naming
/// the text and listing the known names.
inline device_spec device_named(std::string_view text) {
  std::string name(text);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  const auto slash = name.find('/');
  const std::string gpu = name.substr(0, slash);
  std::string profile = slash == std::string::npos ? std::string{} : name.substr(slash + 1);
  for (std::string_view prefix : {"mig-", "mig "})
    if (profile.rfind(prefix, 0) == 0) profile.erase(0, prefix.size());
  auto unknown = [&]() -> device_spec {
    std::string shown(text.substr(0, 80));
    throw invalid_input("unknown device '" + shown +
                        "'; expected a GPU or GPU/MIG profile, one of: " + known_devices());
  };
  for (const auto& g : gpu_catalogue()) {
    if (g.name != gpu) continue;
    if (slash == std::string::npos) return {std::string(g.name), std::string(g.name), {}, g.bytes, true};
    for (const auto& p : g.profiles)
      if (p.name == profile)
        return {std::string(g.name) + "/" + std::string(p.name), std::string(g.name), std::string(p.name), p.bytes,
                p.listed};
    return unknown();
  }
  return unknown();
}

}  // namespace dwsr::sim
