#pragma once
/// \file The jobs PeakPredict (env/peak_predict.hpp) draws from: each a
/// feature vector (graph/features.hpp, float32) and its true per-worker peak
/// in bytes, in the train or the test part of a split. Three sources, one
/// result: a generated dataset (graph/dataset.hpp, task peak), a generator
/// run once here from a seed, or a directory `dwsr dataset --task peak`
/// wrote (graph/dataset_files.hpp).
///
/// The label is picked by name among the dataset's labels (peak_requested by
/// default: the exact plan's peak of requested bytes; peak_reserved_MODEL for
/// an allocator's). Rows whose label is not a positive finite number (a
/// Dask-style row has no reserved peak) are left out. The split is one of
/// splits.npy's columns (random by default): a row is in exactly one part,
/// and the random split keeps a group of rows, which share a graph and a
/// cube, in one part, so train and test never share a job.
///
/// Each job keeps its graph (an index into the pool's graph documents), so
/// that real mode (env/peak_real.hpp) can execute it; a dataset directory
/// without graphs.npy gives a pool without graphs (-1).
///
/// Memory: the pool holds jobs x features float32, a double, an int64 and a
/// byte per job, and the graph documents; a dataset directory is read whole.

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/core/json_file.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"
#include "dwsr/graph/dataset.hpp"
#include "dwsr/graph/dataset_files.hpp"
#include "dwsr/io/detail/file.hpp"
#include "dwsr/io/detail/npy_dict.hpp"

namespace dwsr::env {

/// Which label and which split a pool takes from a dataset.
struct peak_jobs_options {
  std::string label = "peak_requested";  ///< a label column of task peak
  std::string split = "random";          ///< random, family or extrapolation
};

/// A pool of jobs (see the file comment).
struct peak_jobs {
  std::vector<column> features;        ///< the feature columns, in observation order
  std::vector<float> x;                ///< jobs x features, row-major
  std::vector<double> peak;            ///< per job: the true peak, bytes (> 0)
  std::vector<std::uint8_t> test;      ///< per job: 1 in the test part, 0 in train
  std::vector<std::uint64_t> row;      ///< per job: its row in the dataset
  std::vector<std::int64_t> graph;     ///< per job: its graph, an index into graphs (-1: not known)
  std::vector<nlohmann::json> graphs;  ///< the dataset's graph documents (graph/graph_json.hpp)
  std::string label, split;            ///< what the peaks and parts are

  /// Jobs in the pool, both parts.
  std::size_t size() const noexcept { return peak.size(); }
  /// Values of a feature vector.
  std::size_t dim() const noexcept { return features.size(); }
};

namespace detail {

inline std::size_t index_named(const std::vector<column>& cs, const std::string& name, const char* what,
                               const std::string& where) {
  std::string known;
  for (std::size_t k = 0; k < cs.size(); ++k) {
    if (cs[k].name == name) return k;
    known.append(k ? ", " : "").append(cs[k].name);
  }
  throw invalid_input(where + " has no " + what + " " + quote(name) + "; expected one of: " + known);
}

inline std::size_t split_named(const std::string& name, const std::string& where) {
  for (std::size_t k = 0; k < 3; ++k)
    if (name == split_names[k]) return k;
  throw invalid_input(where + " has no split " + quote(name) + "; expected random, family or extrapolation");
}

/// The pool from matrices laid out as make_dataset's (x rows x nf, y rows x
/// nl, split rows x 3, graph_of_row rows or null), for label column `l` and
/// split column `s`.
inline peak_jobs pool_of(std::vector<column> features, const float* x, const double* y, std::size_t nl,
                         const std::uint8_t* split, const std::int64_t* graph_of_row,
                         std::vector<nlohmann::json> graphs, std::uint64_t rows, std::size_t l, std::size_t s,
                         const peak_jobs_options& o) {
  peak_jobs p;
  p.features = std::move(features);
  p.graphs = std::move(graphs);
  p.label = o.label;
  p.split = o.split;
  const auto nf = p.features.size();
  for (std::uint64_t r = 0; r < rows; ++r) {
    const double v = y[r * nl + l];
    if (!(std::isfinite(v) && v > 0)) continue;
    p.x.insert(p.x.end(), x + r * nf, x + (r + 1) * nf);
    p.peak.push_back(v);
    p.test.push_back(split[r * 3 + s] ? 1 : 0);
    p.row.push_back(r);
    const auto g = graph_of_row ? graph_of_row[r] : -1;
    p.graph.push_back(g >= 0 && std::uint64_t(g) < p.graphs.size() ? g : -1);
  }
  return p;
}

/// jobs_from_dataset's body, with the dataset's columns and graphs given
/// (copied or moved by the caller).
inline peak_jobs jobs_of(const dataset& d, std::vector<column> features, std::vector<nlohmann::json> graphs,
                         const peak_jobs_options& o) {
  if (d.task != dataset_task::peak)
    throw invalid_input("a dataset of task " + std::string(name_of(d.task)) + " for PeakPredict; expected task peak");
  const auto l = index_named(d.labels, o.label, "label", "the dataset");
  const auto s = split_named(o.split, "the dataset");
  const bool one_graph_per_row = d.graph_slots == 1 && d.graph_of_row.size() == d.rows();
  return pool_of(std::move(features), d.x.data(), d.y.data(), d.labels.size(), d.split.data(),
                 one_graph_per_row ? d.graph_of_row.data() : nullptr, std::move(graphs), d.rows(), l, s, o);
}

}  // namespace detail

/// The pool of a generated dataset `d` (task peak). Throws invalid_input for
/// another task, or a label or split the dataset lacks.
inline peak_jobs jobs_from_dataset(const dataset& d, const peak_jobs_options& o = {}) {
  return detail::jobs_of(d, d.features, d.graphs, o);
}
/// jobs_from_dataset, moving the dataset's columns and graphs instead of
/// copying them (a pool drawn per batch of episodes makes the copy count).
inline peak_jobs jobs_from_dataset(dataset&& d, const peak_jobs_options& o = {}) {
  return detail::jobs_of(d, std::move(d.features), std::move(d.graphs), o);
}

/// A pool drawn from `seed`: make_dataset of task peak with `rows` rows of
/// the operators in `r` (the other dataset_options at their defaults but
/// `o`'s). Same arguments, same pool.
inline peak_jobs generate_peak_jobs(const registry& r, dataset_options d, const peak_jobs_options& o = {}) {
  d.task = dataset_task::peak;
  return jobs_from_dataset(make_dataset(r, d), o);
}

namespace detail {

/// A 2-D .npy matrix of `descr` with `rows` rows and `cols` columns (1-D when
/// cols == 1, as write_dataset writes it), read whole. Throws io_error naming
/// the file and what was expected.
template <class T>
std::vector<T> read_matrix(const std::filesystem::path& path, std::string_view descr, const char* type,
                           std::uint64_t rows, std::uint64_t cols) {
  using io::detail::quoted;
  const auto size = io::detail::checked_file_size(path, ".npy");
  auto f = io::detail::open_for_read(path);
  unsigned char pre[12] = {};
  auto corrupt = [&](const std::string& why) { return io_error(quoted(path) + ": " + why); };
  if (size < 10) throw corrupt("truncated: " + std::to_string(size) + " bytes, fewer than a .npy header");
  io::detail::read_exact(f.get(), path, 0, pre, 10, ".npy preamble");
  if (std::string_view(reinterpret_cast<const char*>(pre), 6) != std::string_view("\x93NUMPY", 6))
    throw corrupt("not a .npy file (the first bytes are not the magic \\x93NUMPY)");
  const int major = pre[6];
  if (major < 1 || major > 3 || pre[7] != 0) throw corrupt("unsupported .npy format version; expected 1.0 to 3.0");
  const std::uint64_t len_bytes = major == 1 ? 2 : 4;
  if (size < 8 + len_bytes) throw corrupt("truncated .npy header");
  io::detail::read_exact(f.get(), path, 8, pre + 8, len_bytes, ".npy header length");
  std::uint64_t header_len = 0;
  for (auto i = std::uint64_t(len_bytes); i-- > 0;) header_len = (header_len << 8) | pre[8 + i];
  if (size < 8 + len_bytes + header_len) throw corrupt("truncated .npy header");
  std::string text(header_len, '\0');
  io::detail::read_exact(f.get(), path, 8 + len_bytes, text.data(), header_len, ".npy header");
  io::detail::npy_dict dict;
  if (auto why = dict.parse(text); !why.empty()) throw corrupt("malformed .npy header (" + why + ")");
  const std::string want_descr(descr);
  const bool same_type = dict.descr == want_descr || (descr[0] == '<' && dict.descr == "=" + want_descr.substr(1));
  if (!same_type) throw corrupt("dtype " + quote(dict.descr) + "; expected " + quote(want_descr) + " (" + type + ")");
  const auto expected = std::to_string(rows) + (cols == 1 ? "" : " x " + std::to_string(cols));
  const bool shape_ok = dict.shape == std::vector<std::uint64_t>{rows, cols} ||
                        (cols == 1 && dict.shape == std::vector<std::uint64_t>{rows});
  if (!shape_ok || (dict.fortran_order && cols > 1)) {
    std::string got;
    for (std::size_t k = 0; k < dict.shape.size(); ++k)
      got.append(k ? " x " : "").append(std::to_string(dict.shape[k]));
    throw corrupt("shape (" + got + (dict.fortran_order ? ", Fortran order" : "") + "); expected " + expected +
                  " in C order, as columns.json describes");
  }
  const std::uint64_t bytes = rows * cols * sizeof(T);
  const auto offset = 8 + len_bytes + header_len;
  if (size - offset != bytes)
    throw corrupt("holds " + std::to_string(size - offset) + " bytes of data; expected " + std::to_string(bytes) +
                  " (" + expected + " " + type + ")");
  std::vector<T> out(rows * cols);
  io::detail::read_exact(f.get(), path, offset, out.data(), bytes, ".npy data");
  return out;
}

inline std::vector<column> columns_of(const nlohmann::json& doc, const char* key, const std::string& where) {
  const auto it = doc.find(key);
  if (it == doc.end() || !it->is_array()) throw io_error(where + ": no " + key + " array; expected a dwsr dataset");
  std::vector<column> out;
  for (const auto& c : *it) {
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string())
      throw io_error(where + ": a " + key + " entry without a name; expected {\"name\": ..., \"unit\": ..., ...}");
    out.push_back({c["name"].get<std::string>(), c.value("unit", ""), c.value("doc", "")});
  }
  return out;
}

}  // namespace detail

/// The pool of the dataset `dwsr dataset --task peak` wrote into `dir`:
/// columns.json, features.npy, labels.npy and splits.npy, and graphs.npy
/// when it is there (each job's graph, for real mode). Throws io_error
/// naming the file for a missing or corrupt one (not JSON, not a dwsr
/// dataset, a dtype or shape other than columns.json describes, truncated
/// data), invalid_input for a dataset of another task or a label or split
/// it lacks.
inline peak_jobs load_peak_jobs(const std::filesystem::path& dir, const peak_jobs_options& o = {}) {
  using io::detail::quoted;
  const auto columns_path = dir / "columns.json";
  const auto where = quoted(columns_path);
  io::detail::checked_file_size(columns_path, "columns.json");
  const auto doc = read_format_json(columns_path, "dwsr dataset 1", "a dwsr dataset description");
  const auto task = doc.value("task", "");
  if (task != "peak")
    throw invalid_input("the dataset in " + quoted(dir) + " is of task " + quote(task) +
                        "; expected task peak for PeakPredict");
  const auto rows_it = doc.find("rows");
  if (rows_it == doc.end() || !rows_it->is_number_unsigned())
    throw io_error(where + ": no row count; expected \"rows\": N");
  const auto rows = rows_it->get<std::uint64_t>();
  if (rows == 0 || rows > dataset_max_rows)
    throw io_error(where + ": " + std::to_string(rows) + " rows; expected 1 to " + std::to_string(dataset_max_rows));
  const auto features = detail::columns_of(doc, "features", where);
  const auto labels = detail::columns_of(doc, "labels", where);
  const auto l = detail::index_named(labels, o.label, "label", "the dataset in " + quoted(dir));
  const auto s = detail::split_named(o.split, "the dataset in " + quoted(dir));
  const auto x = detail::read_matrix<float>(dir / "features.npy", "<f4", "float32", rows, features.size());
  const auto y = detail::read_matrix<double>(dir / "labels.npy", "<f8", "float64", rows, labels.size());
  const auto split = detail::read_matrix<std::uint8_t>(dir / "splits.npy", "|u1", "uint8", rows, 3);
  std::vector<std::int64_t> graph_of_row;
  std::vector<nlohmann::json> graphs;
  if (std::filesystem::exists(dir / "graphs.npy")) {
    graph_of_row = detail::read_matrix<std::int64_t>(dir / "graphs.npy", "<i8", "int64", rows, 1);
    if (const auto it = doc.find("graphs"); it != doc.end() && it->is_array()) graphs.assign(it->begin(), it->end());
  }
  return detail::pool_of(features, x.data(), y.data(), labels.size(), split.data(),
                         graph_of_row.empty() ? nullptr : graph_of_row.data(), std::move(graphs), rows, l, s, o);
}

}  // namespace dwsr::env
