#pragma once
/// \file The tables of a chunked run (ops/protocol.hpp's table_spec) between
/// the blocks and the sink: each block's rows are kept when their position is
/// in the block's interior (a halo's rows belong to a neighbour), moved to the
/// whole cube's indices and stored as one segment per write; the table is the
/// merge of the segments by position. An operator writes a segment's rows in
/// position order (C order), and a position belongs to one block's interior,
/// so the merged table is the same for every chunking and worker count.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/graph/chunking.hpp"
#include "dwsr/ops/protocol.hpp"

namespace dwsr {

namespace detail {

/// A row's position (inline, crossline, sample): its first three uint32 columns.
inline std::array<std::uint32_t, 3> row_position(const std::byte* row) noexcept {
  std::array<std::uint32_t, 3> p{};
  std::memcpy(p.data(), row, sizeof p);
  return p;
}

/// The longest row a table may have (a row is copied through the stack).
inline constexpr std::uint64_t max_row_bytes = 256;

/// Throws unless `spec` starts with its three uint32 position columns and its
/// rows are at most max_row_bytes long.
inline void check_table_spec(const table_spec& spec) {
  bool ok = spec.columns.size() >= 3;
  for (std::size_t c = 0; ok && c < 3; ++c) ok = spec.columns[c].type == column_type::uint32;
  if (!ok)
    throw invalid_input("table '" + spec.suffix +
                        "': expected its first three columns to be the position (inline, crossline, sample) as uint32");
  if (spec.row_bytes() > max_row_bytes)
    throw invalid_input("table '" + spec.suffix + "': rows of " + std::to_string(spec.row_bytes()) +
                        " bytes; expected at most " + std::to_string(max_row_bytes));
}

}  // namespace detail

/// Calls keep(row) for each of `count` rows (`row_bytes` each, positions in
/// the indices of block b's extended window) whose position lies in b's
/// interior, with the position moved to the cube's indices (`row` is a copy).
template <class Keep>
void interior_rows(const block& b, std::uint64_t row_bytes, const void* rows, std::uint64_t count, Keep&& keep) {
  std::array<std::byte, detail::max_row_bytes> row;
  const auto* p = static_cast<const std::byte*>(rows);
  for (std::uint64_t r = 0; r < count; ++r, p += row_bytes) {
    auto at = detail::row_position(p);
    bool inside = true;
    for (std::size_t a = 0; a < 3; ++a) {
      const auto g = b.ext_begin[a] + at[a];
      inside = inside && b.begin[a] <= g && g < b.end[a];
      at[a] = static_cast<std::uint32_t>(g);
    }
    if (!inside) continue;
    std::memcpy(row.data(), p, row_bytes);
    std::memcpy(row.data(), at.data(), sizeof at);
    keep(static_cast<const std::byte*>(row.data()));
  }
}

/// Merges segments of rows (`row_bytes` each), every segment in position
/// order, into one sequence in position order: read(segment, first_row, n,
/// dst) fills dst with n rows; emit(rows, n) receives the merged rows in
/// pieces. Equal positions keep their segment's order (they come from one
/// block). Each segment is read `buffer_rows` rows at a time (by default as
/// many as keep all the buffers within 8 MiB, from 16 to 1024).
template <class Read, class Emit>
void merge_segments(std::uint64_t row_bytes, const std::vector<std::uint64_t>& counts, Read&& read, Emit&& emit,
                    std::uint64_t buffer_rows = 0) {
  if (buffer_rows == 0)
    buffer_rows = std::clamp<std::uint64_t>(
        (std::uint64_t{8} << 20) / row_bytes / std::max<std::size_t>(1, counts.size()), 16, 1024);
  struct cursor {
    std::uint64_t next = 0;       ///< next row of the segment to read
    std::uint64_t at = 0, n = 0;  ///< position in and size of the buffered rows
    std::vector<std::byte> rows;
  };
  std::vector<cursor> cursors(counts.size());
  auto fill = [&](std::size_t s) {
    auto& c = cursors[s];
    c.n = std::min(buffer_rows, counts[s] - c.next);
    c.rows.resize(c.n * row_bytes);
    if (c.n) read(s, c.next, c.n, c.rows.data());
    c.next += c.n;
    c.at = 0;
    return c.n > 0;
  };
  using entry = std::pair<std::array<std::uint32_t, 3>, std::size_t>;  // (position, segment)
  std::priority_queue<entry, std::vector<entry>, std::greater<>> heap;
  for (std::size_t s = 0; s < counts.size(); ++s)
    if (fill(s)) heap.push({detail::row_position(cursors[s].rows.data()), s});
  std::vector<std::byte> out;
  out.reserve(buffer_rows * row_bytes);
  while (!heap.empty()) {
    const auto s = heap.top().second;
    heap.pop();
    auto& c = cursors[s];
    out.insert(out.end(), c.rows.begin() + std::ptrdiff_t(c.at * row_bytes),
               c.rows.begin() + std::ptrdiff_t((c.at + 1) * row_bytes));
    if (out.size() >= buffer_rows * row_bytes)
      emit(static_cast<const std::byte*>(out.data()), buffer_rows), out.clear();
    if (++c.at < c.n || fill(s)) heap.push({detail::row_position(c.rows.data() + c.at * row_bytes), s});
  }
  if (!out.empty()) emit(static_cast<const std::byte*>(out.data()), out.size() / row_bytes);
}

/// A table's segments held in memory (memory_block_sink); appends are
/// thread-safe.
class memory_table {
 public:
  explicit memory_table(table_spec spec) : spec_(std::move(spec)) { detail::check_table_spec(spec_); }
  memory_table(memory_table&& other) noexcept : spec_(std::move(other.spec_)), segments_(std::move(other.segments_)) {}

  const table_spec& spec() const noexcept { return spec_; }
  /// Keeps block b's interior rows as one segment.
  void append(const block& b, const void* rows, std::uint64_t count) {
    std::vector<std::byte> kept;
    interior_rows(b, spec_.row_bytes(), rows, count,
                  [&](const std::byte* row) { kept.insert(kept.end(), row, row + spec_.row_bytes()); });
    std::lock_guard lock(lock_);
    segments_.push_back(std::move(kept));
  }
  /// The table so far, rows packed in position order.
  std::vector<std::byte> rows() const {
    std::lock_guard lock(lock_);
    const auto bytes = spec_.row_bytes();
    std::vector<std::uint64_t> counts;
    for (const auto& s : segments_) counts.push_back(s.size() / bytes);
    std::vector<std::byte> out;
    merge_segments(
        bytes, counts,
        [&](std::size_t s, std::uint64_t first, std::uint64_t n, std::byte* dst) {
          std::memcpy(dst, segments_[s].data() + first * bytes, n * bytes);
        },
        [&](const std::byte* rows, std::uint64_t n) { out.insert(out.end(), rows, rows + n * bytes); });
    return out;
  }

 private:
  table_spec spec_;
  mutable std::mutex lock_;
  std::vector<std::vector<std::byte>> segments_;
};

}  // namespace dwsr
