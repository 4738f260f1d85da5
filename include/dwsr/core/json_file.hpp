#pragma once
/// \file Reading back a JSON file that dwsr wrote (a policy, a dataset's
/// columns): one io_error style for a file that cannot be opened, is not
/// JSON, or is not in the expected format. Documents users write (graphs,
/// time profiles) go through json_document.hpp instead, as invalid_input.

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"

namespace dwsr {

/// Reads the JSON object at `path` whose "format" is `format` (such as
/// "dwsr policy 1"). Throws io_error naming the file and `what` (such as
/// "a dwsr policy") when it cannot be opened, is not JSON, or is not an
/// object in that format.
inline nlohmann::json read_format_json(const std::filesystem::path& path, std::string_view format,
                                       std::string_view what) {
  const auto where = quote(path.string(), 400);
  std::ifstream in(path);
  if (!in) throw io_error(where + ": cannot open for reading");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw io_error(where + ": not valid JSON (" + printable(e.what(), 200) + "); expected " + std::string(what));
  }
  if (!doc.is_object() || doc.value("format", "") != format)
    throw io_error(where + ": not " + std::string(what) + "; expected \"format\": \"" + std::string(format) + "\"");
  return doc;
}

}  // namespace dwsr
