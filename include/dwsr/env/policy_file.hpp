#pragma once
/// \file Reading back a policy.json that `dwsr train` wrote (format "dwsr
/// policy 1"): the document, checked, and the observation space the policy
/// was trained on. Each policy's reader (read_peak_policy,
/// read_episodic_policy) takes its learned state from the document; the
/// writers share write_policy_files.

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/json_file.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/env/spaces.hpp"
#include "dwsr/error.hpp"

namespace dwsr::env {

/// A file written beside policy.json and curve.csv, in the same group.
struct extra_file {
  std::string name;     ///< a plain file name
  std::string content;  ///< its bytes
};

/// Writes policy.json (`document`), curve.csv (what `curve` prints, at full
/// precision) and `extra` into `dir` (created when missing), together or not
/// at all. Throws io_error naming what could not be written.
inline void write_policy_files(const std::filesystem::path& dir, const nlohmann::json& document,
                               const std::function<void(std::ostream&)>& curve, const std::vector<extra_file>& extra) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw io_error("cannot create the output directory " + quote(dir.string(), 400) +
                   (ec ? ": " + ec.message() : std::string(": a file of that name exists")));
  dwsr::detail::commit_group files;
  files.write(dir / "policy.json", [&](std::ostream& out) { out << document.dump(1) << '\n'; });
  files.write(dir / "curve.csv", [&](std::ostream& out) {
    out.precision(17);
    curve(out);
  });
  for (const auto& f : extra) files.write(dir / f.name, [&](std::ostream& out) { out << f.content; });
  files.commit();
}

/// A policy document and the observation space it records.
struct policy_document {
  nlohmann::json doc;
  box_space observations;
};

/// Reads the policy.json at `path`, which must hold the learned state under
/// `state` ("linucb", "reinforce"). Throws io_error naming the file when it
/// cannot be read or is not a dwsr policy, invalid_input when it holds no
/// such state or its observation bounds are corrupt.
inline policy_document read_policy_document(const std::filesystem::path& path, const std::string& state) {
  const auto where = quote(path.string(), 400);
  auto doc = read_format_json(path, "dwsr policy 1", "a dwsr policy");
  if (!doc.contains(state))
    throw invalid_input(where + " holds a " + quote(doc.value("policy", "")) + " policy; expected " + state);
  try {
    auto low = doc.at("observation_low").get<std::vector<float>>();
    auto high = doc.at("observation_high").get<std::vector<float>>();
    const auto n = low.size();
    box_space space(std::move(low), std::move(high), {n});
    return {std::move(doc), std::move(space)};
  } catch (const nlohmann::json::exception& e) {
    throw invalid_input(where + ": observation bounds " + printable(e.what(), 200) + "; expected arrays of numbers");
  }
}

}  // namespace dwsr::env
