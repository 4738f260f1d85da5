#pragma once
/// \file A dataset (graph/dataset.hpp) on disk, as `dwsr dataset` writes it
/// into a directory (docs/dataset.md):
///
/// - features.npy: float32, rows x features;
/// - labels.npy: float64, rows x labels (bytes stay exact up to 2^53);
/// - splits.npy: uint8, rows x 3 (random, family, extrapolation), 1 = test;
/// - graphs.npy: int64, rows (rows x 4 for task pack, -1 for an empty job
///   slot): each row's graph, an index into columns.json's "graphs";
/// - columns.json: every column's name, unit and meaning, the splits' rules,
///   the options and the graph documents;
/// - dataset.csv (unless left out): the same, one line per row, for people.
///
/// The files are committed together (core/atomic_file.hpp): an error leaves
/// none of them, and a directory's earlier dataset stays whole until the new
/// one replaces it.

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/graph/dataset.hpp"
#include "dwsr/io/npy.hpp"

namespace dwsr {

/// The names of the split columns, in splits.npy's order.
inline constexpr const char* split_names[3] = {"random", "family", "extrapolation"};

/// columns.json's document for `d`.
inline nlohmann::json dataset_columns(const dataset& d) {
  auto columns = [](const std::vector<column>& cs) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : cs) out.push_back({{"name", c.name}, {"unit", c.unit}, {"doc", c.doc}});
    return out;
  };
  const auto& o = d.options;
  return {{"format", "dwsr dataset 1"},
          {"task", name_of(d.task)},
          {"rows", d.rows()},
          {"seed", o.seed},
          {"options",
           {{"allocators", o.allocators},
            {"execs", o.execs},
            {"random_graphs", o.random_graphs},
            {"rows_per_group", o.rows_per_group},
            {"cores", o.cores}}},
          {"features", columns(d.features)},
          {"labels", columns(d.labels)},
          {"splits",
           {{"columns", {split_names[0], split_names[1], split_names[2]}},
            {"test", 1},
            {"random", "one group of rows in five is test; a group never straddles train and test"},
            {"family", {{"held_out", d.held_out}, {"rule", "test when the graph has a node of a held-out family"}}},
            {"extrapolation",
             {{"cut_input_bytes", d.extrapolation_cut},
              {"rule", "test when input_bytes is at least the cut (the 80th percentile of the groups)"}}}}},
          {"graphs", d.graphs}};
}

namespace detail {

template <class T>
void write_matrix(std::ostream& out, std::string_view descr, const std::vector<T>& data, std::uint64_t rows,
                  std::uint64_t cols) {
  const auto header = io::npy_header_bytes(
      descr, cols == 1 ? std::vector<std::uint64_t>{rows} : std::vector<std::uint64_t>{rows, cols});
  out.write(header.data(), std::streamsize(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * sizeof(T)));
}

/// Shortest text that reads back as the same value.
template <class T>
void append_number(std::string& line, T value) {
  char buf[40];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  line.append(buf, end);
}

inline void write_csv(std::ostream& out, const dataset& d) {
  std::string line = "row";
  for (std::size_t k = 0; k < d.graph_slots; ++k)
    line.append(d.graph_slots == 1 ? ",graph" : ",graph_").append(d.graph_slots == 1 ? "" : std::to_string(k));
  for (const auto& c : d.features) line += "," + c.name;
  for (const auto& c : d.labels) line += "," + c.name;
  for (const char* s : split_names) line.append(",split_").append(s);
  out << line << '\n';
  const auto nf = d.features.size(), nl = d.labels.size();
  for (std::uint64_t r = 0; r < d.rows(); ++r) {
    line.clear();
    append_number(line, r);
    for (std::size_t k = 0; k < d.graph_slots; ++k)
      line += ',', append_number(line, d.graph_of_row[r * d.graph_slots + k]);
    for (std::size_t k = 0; k < nf; ++k) line += ',', append_number(line, d.x[r * nf + k]);
    for (std::size_t k = 0; k < nl; ++k) line += ',', append_number(line, d.y[r * nl + k]);
    for (std::size_t k = 0; k < 3; ++k) line += ',', append_number(line, int(d.split[r * 3 + k]));
    line += '\n';
    out.write(line.data(), std::streamsize(line.size()));
  }
}

}  // namespace detail

/// Writes `d` into directory `dir` (created when missing); see the file
/// comment. Throws io_error naming the file at fault, leaving none of them.
inline void write_dataset(const dataset& d, const std::filesystem::path& dir, bool csv = true) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw io_error("cannot create the dataset directory " + quote(dir.string(), 400) +
                   (ec ? ": " + ec.message() : std::string(": a file of that name exists")));
  const auto rows = d.rows();
  detail::commit_group files;
  files.write(dir / "features.npy",
              [&](std::ostream& out) { detail::write_matrix(out, "<f4", d.x, rows, d.features.size()); });
  files.write(dir / "labels.npy",
              [&](std::ostream& out) { detail::write_matrix(out, "<f8", d.y, rows, d.labels.size()); });
  files.write(dir / "splits.npy", [&](std::ostream& out) { detail::write_matrix(out, "|u1", d.split, rows, 3); });
  files.write(dir / "graphs.npy",
              [&](std::ostream& out) { detail::write_matrix(out, "<i8", d.graph_of_row, rows, d.graph_slots); });
  files.write(dir / "columns.json", [&](std::ostream& out) { out << dataset_columns(d).dump(1) << '\n'; });
  if (csv) files.write(dir / "dataset.csv", [&](std::ostream& out) { detail::write_csv(out, d); });
  files.commit();
  if (!csv) std::filesystem::remove(dir / "dataset.csv", ec);  // an earlier dataset's, now stale
}

}  // namespace dwsr
