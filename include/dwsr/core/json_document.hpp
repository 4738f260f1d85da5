#pragma once
/// \file JSON documents from users (graph files, graph text, time profiles),
/// parsed with one error style: an invalid_input naming the document, with
/// nlohmann's message escaped (it quotes the document's text).

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"

namespace dwsr {

/// Parses `text` (a string or an input stream); `where` names it in errors.
template <class Text>
nlohmann::json parse_json_document(Text&& text, const std::string& where) {
  try {
    return nlohmann::json::parse(std::forward<Text>(text));
  } catch (const nlohmann::json::parse_error& e) {
    throw invalid_input(where + " is not valid JSON: " + printable(e.what(), 300));
  } catch (const nlohmann::json::exception& e) {  // a number beyond double's range (1e400)
    throw invalid_input(where + " holds a value dwsr cannot represent: " + printable(e.what(), 300));
  }
}

}  // namespace dwsr
