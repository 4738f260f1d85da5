#pragma once
/// \file An external estimator's predictions, so that anyone can enter the
/// leaderboard without touching dwsr: a CSV file, one line per job of the
/// suite, that the leaderboard scores against the measured peaks.
///
///     job,predicted_bytes,upper_bytes
///     0,1048576,2097152
///     1,1.5e6,
///
/// The header is exactly `job,predicted_bytes`, optionally followed by
/// `,upper_bytes`. A job is an unsigned integer id, listed once; a predicted
/// or upper value is a finite number of bytes >= 0, integer or decimal
/// (`1048576`, `1.5e6`); an upper value may be left empty. Fields are not
/// quoted and hold no spaces. CRLF line endings, a UTF-8 byte order mark and
/// blank lines are accepted. Any other text is an invalid_input naming the
/// file, the line, the text and what was expected.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"
#include "dwsr/leaderboard/detail/csv_fields.hpp"

namespace dwsr::leaderboard {

/// The header of a predictions file without upper bounds.
inline constexpr std::string_view predictions_header = "job,predicted_bytes";
/// The header of a predictions file with an upper bound per job.
inline constexpr std::string_view predictions_upper_header = "job,predicted_bytes,upper_bytes";

/// One line of a predictions file: an estimator's peak bytes for a job.
struct prediction {
  std::uint64_t job;            ///< the suite's id of the run
  double predicted;             ///< estimated peak bytes
  std::optional<double> upper;  ///< an upper bound on the peak, when the estimator gives one
};

namespace detail {

[[noreturn]] inline void fail_line(const std::string& where, std::size_t line, const std::string& why) {
  throw invalid_input(where + ":" + std::to_string(line) + ": " + why);
}

/// `text` as a job id, or nothing when it is not wholly an unsigned 64-bit integer.
inline std::optional<std::uint64_t> parse_job(std::string_view text) {
  std::uint64_t v = 0;
  if (!parse_whole(text, v)) return std::nullopt;
  return v;
}

/// `text` as bytes, or nothing when it is not wholly a finite number >= 0.
inline std::optional<double> parse_bytes(std::string_view text) {
  double v = 0;
  if (!parse_whole(text, v) || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

/// The number of columns the header `line` declares (2 or 3); throws otherwise.
inline std::size_t header_columns(std::string_view line, const std::string& where, std::size_t line_no) {
  if (line == predictions_header) return 2;
  if (line == predictions_upper_header) return 3;
  fail_line(where, line_no,
            "expected the header '" + std::string(predictions_header) + "' or '" +
                std::string(predictions_upper_header) + "', got " + quote(line));
}

/// The bytes in field `column` of a row; throws naming the column when they are not a finite number >= 0.
inline double row_bytes(std::string_view field, const char* column, const std::string& where, std::size_t line_no) {
  const auto v = parse_bytes(field);
  if (!v)
    fail_line(where, line_no,
              std::string(column) + " " + quote(field) +
                  " is not a finite number >= 0; expected bytes such as 1048576 or 1.5e6");
  return *v;
}

/// The prediction on data line `line` of a file whose header has `columns` columns.
inline prediction parse_row(std::string_view line, std::size_t columns, const std::string& where, std::size_t line_no) {
  const auto f = split_fields(line);
  if (f.size() != columns)
    fail_line(where, line_no,
              std::to_string(f.size()) + (f.size() == 1 ? " field in " : " fields in ") + quote(line) + "; expected " +
                  std::to_string(columns) + " (" +
                  std::string(columns == 2 ? predictions_header : predictions_upper_header) + ")");
  const auto job = parse_job(f[0]);
  if (!job)
    fail_line(where, line_no, "job " + quote(f[0]) + " is not an unsigned integer; expected a job id such as 17");
  prediction p{*job, row_bytes(f[1], "predicted_bytes", where, line_no), std::nullopt};
  if (columns == 3 && !f[2].empty()) p.upper = row_bytes(f[2], "upper_bytes", where, line_no);
  return p;
}

}  // namespace detail

/// The predictions in `text`, the contents of a predictions file; `where`
/// (the quoted file name) begins every message. Throws invalid_input for an
/// empty text, a missing or wrong header, a line with the wrong number of
/// fields, a job id that is not an unsigned integer or is listed twice, or a
/// value that is not a finite number >= 0.
inline std::vector<prediction> parse_predictions(std::string_view text, const std::string& where) {
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
  std::vector<prediction> out;
  std::unordered_map<std::uint64_t, std::size_t> line_of_job;
  std::size_t columns = 0;
  for (std::size_t line_no = 1; !text.empty(); ++line_no) {
    const auto newline = text.find('\n');
    auto line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.empty()) continue;
    if (columns == 0) {
      columns = detail::header_columns(line, where, line_no);
      continue;
    }
    const auto p = detail::parse_row(line, columns, where, line_no);
    const auto [first, inserted] = line_of_job.try_emplace(p.job, line_no);
    if (!inserted)
      detail::fail_line(where, line_no,
                        "job " + std::to_string(p.job) + " is listed twice (first at line " +
                            std::to_string(first->second) + "); expected one prediction per job");
    out.push_back(p);
  }
  if (columns == 0)
    throw invalid_input(where + ": the file is empty; expected the header '" + std::string(predictions_header) +
                        "' and one line per job");
  return out;
}

/// The predictions in `file`. Throws io_error naming the file when it cannot
/// be read, and invalid_input as parse_predictions does.
inline std::vector<prediction> read_predictions(const std::filesystem::path& file) {
  const auto where = quote(file.string(), 400);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw io_error(where + ": cannot open for reading");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw io_error(where + ": reading failed");
  return parse_predictions(text, where);
}

/// Checks that `p` holds a prediction for every job in `jobs` and for no
/// other job. Throws invalid_input naming the first job of `jobs` with no
/// prediction (and how many have none), else the first predicted job that
/// is not in `jobs`.
inline void check_covers(const std::vector<prediction>& p, std::span<const std::uint64_t> jobs,
                         const std::string& where) {
  std::unordered_set<std::uint64_t> predicted;
  for (const auto& x : p) predicted.insert(x.job);
  std::size_t missing = 0;
  std::uint64_t first_missing = 0;
  for (const auto job : jobs) {
    if (predicted.contains(job)) continue;
    if (missing == 0) first_missing = job;
    ++missing;
  }
  if (missing)
    throw invalid_input(where + ": no prediction for job " + std::to_string(first_missing) + " (" +
                        std::to_string(missing) + " of the suite's " + std::to_string(jobs.size()) +
                        " runs have none); expected one line per run");
  const std::unordered_set<std::uint64_t> suite(jobs.begin(), jobs.end());
  for (const auto& x : p)
    if (!suite.contains(x.job))
      throw invalid_input(where + ": job " + std::to_string(x.job) +
                          " is not in the suite's runs; expected predictions only for the suite's jobs");
}

}  // namespace dwsr::leaderboard
