#pragma once
/// \file A machine's time profile: what each operator costs per block and per
/// voxel on this machine, measured by `dwsr calibrate` (graph/calibrate.hpp),
/// kept as a JSON document under the user's cache directory, and read by the
/// time model (graph/time_model.hpp).
///
///     {"format": "dwsr-time-profile", "version": 1,
///      "machine": {"cpu": "AMD EPYC ...", "cores": 2, "vector_instructions": "avx2"},
///      "created": "2026-11-23T02:00:00Z",
///      "trace_samples": 256, "quick": true,
///      "copy": {"fixed_seconds": 1e-6, "seconds_per_voxel": {"1": 2e-10}},
///      "operators": {"envelope": {"fixed_seconds": 3e-5, "seconds_per_voxel": {"1": 4.1e-9, "2": 2.2e-9}}, ...}}
///
/// An operator's block costs fixed_seconds + seconds_per_voxel[T] x the
/// block's extended voxels (its input window): "copy" is reading the block's
/// window into its input buffer, once per block, and each operator's figures
/// exclude it. Threads between or beyond those measured scale ideally from the
/// nearest count measured below (see seconds_per_voxel()).

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/json_document.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"

namespace dwsr::sim {

/// The cost of one step of a block (an operator, or the copy of its window).
struct step_cost {
  double fixed_seconds = 0;                         ///< per block
  std::map<std::size_t, double> seconds_per_voxel;  ///< by thread count T, per extended voxel

  /// Seconds per voxel with T threads: the figure measured for T, else the
  /// nearest T' < T measured, scaled by T'/T (ideal scaling from there).
  double per_voxel(std::size_t threads) const {
    if (seconds_per_voxel.empty()) throw invalid_input("time profile: a step has no seconds_per_voxel");
    auto it = seconds_per_voxel.upper_bound(threads);
    if (it == seconds_per_voxel.begin()) return it->second;  // fewer threads than any measured: the least measured
    --it;
    return it->second * double(it->first) / double(threads);
  }
  /// Seconds for one block of `voxels` extended voxels with T threads.
  double seconds(std::uint64_t voxels, std::size_t threads) const {
    return fixed_seconds + per_voxel(threads) * double(voxels);
  }
};

/// A machine's measured costs (see the file comment).
struct time_profile {
  std::string cpu;        ///< the processor's model name
  std::size_t cores = 1;  ///< cores available when it was measured
  /// The cloned kernels' instruction set (core/simd_isa.hpp) when it was
  /// measured; empty in profiles written before it was recorded.
  std::string vector_instructions;
  std::string created;              ///< UTC time of the measurement, ISO 8601
  std::uint64_t trace_samples = 0;  ///< trace length the operators were measured on
  bool quick = false;               ///< measured with `--quick` (fewer shapes and repeats)
  step_cost copy;                   ///< reading a block's window into its input buffer
  std::map<std::string, step_cost> operators;

  /// The operator's costs; invalid_input naming the profile's gap when it was not measured.
  const step_cost& of(const std::string& op) const {
    const auto it = operators.find(op);
    if (it == operators.end())
      throw invalid_input("the time profile has no figures for operator " + quote(op) +
                          "; measure it with `dwsr calibrate --ops " + op + "`");
    return it->second;
  }
};

namespace detail {

inline nlohmann::json step_json(const step_cost& s) {
  nlohmann::json per = nlohmann::json::object();
  for (const auto& [t, v] : s.seconds_per_voxel) per[std::to_string(t)] = v;
  return {{"fixed_seconds", s.fixed_seconds}, {"seconds_per_voxel", per}};
}

inline step_cost step_from_json(const nlohmann::json& j, const std::string& where) {
  auto fail = [&](const std::string& what) -> step_cost { throw invalid_input(where + ": " + what); };
  if (!j.is_object() || !j.contains("fixed_seconds") || !j.contains("seconds_per_voxel"))
    return fail("expected an object with fixed_seconds and seconds_per_voxel");
  step_cost s;
  if (!j["fixed_seconds"].is_number() || j["fixed_seconds"].get<double>() < 0)
    return fail("fixed_seconds is not a number >= 0");
  s.fixed_seconds = j["fixed_seconds"].get<double>();
  if (!j["seconds_per_voxel"].is_object() || j["seconds_per_voxel"].empty())
    return fail("seconds_per_voxel is not an object of thread count -> seconds");
  for (const auto& [key, value] : j["seconds_per_voxel"].items()) {
    char* end = nullptr;
    const auto t = std::strtoull(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || t == 0 || t > 1024)
      return fail("seconds_per_voxel key " + quote(key, 40, '"') + " is not a thread count 1 to 1024");
    if (!value.is_number() || value.get<double>() < 0)
      return fail("seconds_per_voxel[" + key + "] is not a number >= 0");
    s.seconds_per_voxel[t] = value.get<double>();
  }
  return s;
}

}  // namespace detail

/// The profile as its JSON document.
inline nlohmann::json to_json(const time_profile& p) {
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [name, s] : p.operators) ops[name] = detail::step_json(s);
  return {{"format", "dwsr-time-profile"},
          {"version", 1},
          {"machine", {{"cpu", p.cpu}, {"cores", p.cores}, {"vector_instructions", p.vector_instructions}}},
          {"created", p.created},
          {"trace_samples", p.trace_samples},
          {"quick", p.quick},
          {"copy", detail::step_json(p.copy)},
          {"operators", ops}};
}

/// A profile from its document; `where` names it in errors.
inline time_profile time_profile_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || j.value("format", "") != "dwsr-time-profile")
    throw invalid_input(where + ": not a dwsr time profile (expected \"format\": \"dwsr-time-profile\")");
  if (j.value("version", 0) != 1)
    throw invalid_input(where + ": time profile version " + j.value("version", nlohmann::json()).dump() +
                        "; this dwsr reads version 1 (run `dwsr calibrate` again)");
  time_profile p;
  try {
    p.cpu = j.at("machine").at("cpu").get<std::string>();
    p.cores = j.at("machine").at("cores").get<std::size_t>();
    p.vector_instructions = j.at("machine").value("vector_instructions", "");
    p.created = j.at("created").get<std::string>();
    p.trace_samples = j.at("trace_samples").get<std::uint64_t>();
    p.quick = j.at("quick").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    throw invalid_input(where + ": " + e.what());
  }
  if (p.cores == 0) throw invalid_input(where + ": machine.cores is 0");
  p.copy = detail::step_from_json(j.at("copy"), where + ": copy");
  if (!j.contains("operators") || !j["operators"].is_object())
    throw invalid_input(where + ": expected an \"operators\" object");
  for (const auto& [name, s] : j["operators"].items())
    p.operators[name] = detail::step_from_json(s, where + ": operator " + quote(name, 80, '"'));
  return p;
}

/// Where profiles live by default: $DWSR_TIME_PROFILE, else
/// $XDG_CACHE_HOME/dwsr/time-profile.json, else ~/.cache/dwsr/time-profile.json.
inline std::filesystem::path default_time_profile_path() {
  if (const char* p = std::getenv("DWSR_TIME_PROFILE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "dwsr" / "time-profile.json";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "dwsr" / "time-profile.json";
  return std::filesystem::path(".dwsr-time-profile.json");
}

/// Reads a profile; io_error when it cannot be read, invalid_input when it is malformed.
inline time_profile read_time_profile(const std::filesystem::path& path) {
  std::ifstream in(path);
  const auto where = "time profile " + quote(path.string(), 400);
  if (!in) throw io_error(where + " cannot be read; run `dwsr calibrate`");
  return time_profile_from_json(parse_json_document(in, where), where);
}

/// The profile at `path` when one is given (it must exist), else the one at
/// the default path when it exists, else none.
inline std::optional<time_profile> find_time_profile(const std::filesystem::path& path = {}) {
  if (!path.empty()) return read_time_profile(path);
  const auto fallback = default_time_profile_path();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(fallback, ec)) return std::nullopt;
  return read_time_profile(fallback);
}

/// Writes a profile whole or not at all (creating its directory).
inline void write_time_profile(const std::filesystem::path& path, const time_profile& p) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  dwsr::detail::write_atomically(path, [&](std::ostream& out) { out << to_json(p).dump(2) << '\n'; });
}

}  // namespace dwsr::sim
