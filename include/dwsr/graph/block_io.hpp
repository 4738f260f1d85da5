#pragma once
/// \file Where chunked execution reads blocks from and writes interiors to:
/// an in-memory cube, any input source (io/source.hpp; .npy files read block by
/// block), and .npy files written block by block, so that cubes larger than
/// memory never have to be held whole. Tables (graph/block_tables.hpp) go to
/// the same sinks: kept in memory, or spilled block by block to a scratch file
/// and merged into a .npy file of a structured type when the run commits.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/window_runs.hpp"
#include "dwsr/graph/block_tables.hpp"
#include "dwsr/graph/chunking.hpp"
#include "dwsr/io/detail/file.hpp"
#include "dwsr/io/npy.hpp"
#include "dwsr/io/source.hpp"

namespace dwsr {

/// Reads the extended window of a block (C order) into caller memory.
class block_source {
 public:
  virtual ~block_source() = default;
  virtual shape3 shape() const = 0;
  /// Fills dst (block.extended() voxels) with the block's extended window;
  /// thread-safe. A run may read a window in parts, a slab of its inlines
  /// each, from several threads at once (b.ext_begin and b.ext_end say which).
  virtual void read(const block& b, float* dst) const = 0;
};

/// Writes one graph output's block interior; thread-safe for distinct blocks.
class block_sink {
 public:
  virtual ~block_sink() = default;
  /// `data` is the output over the block's extended window.
  virtual void write(std::size_t output, const block& b, const array_ref& data) = 0;
  /// Rows of the graph's table `table` (index into graph::tables()) from
  /// block b, positions in the block's extended window. A sink given no
  /// tables drops them, as a null sink drops outputs.
  virtual void write_table(std::size_t table, const block& b, const void* rows, std::uint64_t count) {
    (void)table, (void)b, (void)rows, (void)count;
  }
};

namespace detail {
/// The layout of a block's extended window (its buffer) inside the cube.
inline cube_layout extended_layout(const block& b) { return {b.extended(), b.ext_begin}; }

/// Writes n bytes at `offset` of fd, retrying short writes; false with errno set on failure.
inline bool write_fully(int fd, const void* data, std::uint64_t n, std::uint64_t offset) noexcept {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const auto put = ::pwrite(fd, p, n, static_cast<off_t>(offset));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    p += put, n -= std::uint64_t(put), offset += std::uint64_t(put);
  }
  return true;
}

/// Reads n bytes at `offset` of fd; false with errno set on failure or end of file.
inline bool read_fully(int fd, void* data, std::uint64_t n, std::uint64_t offset) noexcept {
  const auto got = io::detail::pread_all(fd, data, n, offset);
  if (got >= 0 && std::uint64_t(got) < n) errno = EIO;
  return got >= 0 && std::uint64_t(got) == n;
}

/// The structured NumPy type of a table's rows: [('name', '<u4'), ...].
inline std::string numpy_row_type(const table_spec& spec) {
  std::string out = "[";
  for (const auto& c : spec.columns) {
    if (out.size() > 1) out += ", ";
    out.append("('").append(c.name).append("', '").append(numpy_descr(c.type)).append("')");
  }
  return out + "]";
}
}  // namespace detail

/// Blocks of a cube held in memory.
class memory_block_source final : public block_source {
 public:
  explicit memory_block_source(cube_view<const float> cube) : cube_(cube) {}
  shape3 shape() const override { return cube_.shape(); }
  void read(const block& b, float* dst) const override {
    for_each_window_run(b.ext_begin, b.ext_end, {cube_.shape(), {}}, detail::extended_layout(b),
                        [&](std::uint64_t at, std::uint64_t to, std::uint64_t n) {
                          std::memcpy(dst + to, cube_.data() + at, n * sizeof(float));
                        });
  }

 private:
  cube_view<const float> cube_;
};

/// Blocks of any input source (io/source.hpp): each block's extended window,
/// read by the source (a .npy file reads the window alone).
class source_block_source : public block_source {
 public:
  explicit source_block_source(std::unique_ptr<io::cube_source> source) : source_(std::move(source)) {}
  shape3 shape() const override { return source_->shape(); }
  void read(const block& b, float* dst) const override { source_->read_window(b.ext_begin, b.ext_end, dst); }
  /// The source (header, description).
  const io::cube_source& source() const noexcept { return *source_; }

 private:
  std::unique_ptr<io::cube_source> source_;
};

/// Blocks of a float32 .npy file.
class npy_block_source final : public source_block_source {
 public:
  explicit npy_block_source(const std::filesystem::path& path)
      : source_block_source(std::make_unique<io::npy_source>(path)) {}
};

/// Opens an input spec (a .npy or SEG-Y file, or synthetic:IxXxT[:SEED]; see
/// io::open_source) for chunked execution.
inline std::unique_ptr<source_block_source> open_blocks(std::string_view spec) {
  return std::make_unique<source_block_source>(io::open_source(spec));
}

/// Interiors copied into whole output cubes the caller owns; tables kept in
/// memory (table_rows).
class memory_block_sink final : public block_sink {
 public:
  explicit memory_block_sink(std::vector<array_ref> outputs, std::vector<table_spec> tables = {})
      : outputs_(std::move(outputs)) {
    for (auto& t : tables) tables_.emplace_back(std::move(t));
  }
  void write_table(std::size_t table, const block& b, const void* rows, std::uint64_t count) override {
    if (table < tables_.size()) tables_[table].append(b, rows, count);
  }
  /// Table `table`'s rows so far, packed in position order.
  std::vector<std::byte> table_rows(std::size_t table) const { return tables_.at(table).rows(); }
  void write(std::size_t output, const block& b, const array_ref& data) override {
    const auto& out = outputs_.at(output);
    const auto e = size_of(out.type);
    for_each_window_run(b.begin, b.end, {out.shape, {}}, detail::extended_layout(b),
                        [&](std::uint64_t dst, std::uint64_t src, std::uint64_t n) {
                          std::memcpy(static_cast<std::byte*>(out.data) + dst * e,
                                      static_cast<const std::byte*>(data.data) + src * e, n * e);
                        });
  }

 private:
  std::vector<array_ref> outputs_;
  std::vector<memory_table> tables_;
};

/// Writes each output straight into a .npy file, block by block, so the whole
/// output is never held in memory. Files are written under temporary names
/// (core/atomic_file.hpp) and renamed into place, all together, by commit() or
/// with a run's other files by commit_into(); without either (an error), they
/// are removed. Synced (the default), each block is handed to the kernel's
/// writeback as soon as it is written, so that the final fsync has little
/// left to wait for.
class npy_block_sink final : public block_sink {
 public:
  struct file_spec {
    std::filesystem::path path;
    dtype type;
  };
  /// A table's file: <path> holds a 1-D array of the table's structured type.
  struct table_file_spec {
    std::filesystem::path path;
    table_spec table;
  };
  npy_block_sink(std::vector<file_spec> files, shape3 shape, std::vector<table_file_spec> tables = {},
                 detail::durability durable = detail::durability::synced)
      : shape_(shape), durable_(durable) {
    for (auto& t : tables) {
      detail::check_table_spec(t.table);
      auto& spilled = *tables_.emplace_back(std::make_unique<spilled_table>(std::move(t.path), std::move(t.table)));
      // The rows wait in a scratch file, unlinked at once: nothing stays behind.
      std::string name = spilled.file.temporary().string();
      name += ".rows-XXXXXX";
      spilled.scratch = ::mkostemp(name.data(), O_CLOEXEC);
      if (spilled.scratch < 0) {
        const std::string why = std::strerror(errno);
        const auto what = spilled.file.describe("cannot create a scratch file: " + why);
        cleanup();
        throw io_error(what);
      }
      ::unlink(name.c_str());
    }
    for (auto& f : files) {
      detail::atomic_file file(f.path);
      // O_NOFOLLOW: a link planted under the temporary's name is never written through.
      const int fd = ::open(file.temporary().c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
      if (fd < 0) {
        cleanup();
        throw io_error(file.describe(std::string("cannot create: ") + std::strerror(errno)));
      }
      const auto header = io::npy_header_bytes(f.type, {shape.inlines, shape.crosslines, shape.samples});
      files_.push_back({std::move(file), fd, header.size(), f.type});
      if (::pwrite(fd, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size()) ||
          ::ftruncate(fd, static_cast<off_t>(header.size() + shape.voxels() * size_of(f.type))) != 0) {
        const std::string why = std::strerror(errno);
        const auto what = files_.back().file.describe("cannot write: " + why);
        cleanup();
        throw io_error(what);
      }
    }
  }
  npy_block_sink(const npy_block_sink&) = delete;
  npy_block_sink& operator=(const npy_block_sink&) = delete;
  ~npy_block_sink() override { cleanup(); }

  void write(std::size_t output, const block& b, const array_ref& data) override {
    const auto& f = files_.at(output);
    const auto e = size_of(f.type);
    // One positioned write per run of the interior contiguous in both the
    // file and the buffer: one per inline when the block spans the samples
    // (no time halo), one in all when it spans the crosslines too.
    std::uint64_t first = ~std::uint64_t{0}, end = 0;
    for_each_window_run(
        b.begin, b.end, {shape_, {}}, detail::extended_layout(b),
        [&](std::uint64_t to, std::uint64_t from, std::uint64_t n) {
          if (!detail::write_fully(f.fd, static_cast<const char*>(data.data) + from * e, n * e, f.header + to * e))
            throw io_error(f.file.describe(std::string("cannot write: ") + std::strerror(errno)));
          first = std::min(first, f.header + to * e);
          end = std::max(end, f.header + (to + n) * e);
        });
    // Start writing the block back now, while the next blocks compute, so
    // that commit()'s fsync finds little left to wait for. A hint: an error
    // here is fsync's to report. Unsynced, the kernel writes back in its time.
    if (durable_ == detail::durability::synced && end > first)
      ::sync_file_range(f.fd, off_t(first), off_t(end - first), SYNC_FILE_RANGE_WRITE);
  }

  void write_table(std::size_t table, const block& b, const void* rows, std::uint64_t count) override {
    if (table >= tables_.size()) return;
    auto& t = *tables_[table];
    const auto bytes = t.spec.row_bytes();
    // Counted first, to reserve the segment; then written through a stack
    // buffer: a block's rows cost no heap beyond the operator's own buffer.
    std::uint64_t kept = 0;
    interior_rows(b, bytes, rows, count, [&](const std::byte*) { ++kept; });
    std::uint64_t at = 0;
    {
      std::lock_guard lock(t.lock);
      at = t.end;
      t.end += kept * bytes;
      t.segments.push_back({at, kept});
    }
    std::array<std::byte, 64 * detail::max_row_bytes> buffer;
    std::uint64_t filled = 0;
    auto flush = [&] {
      if (!detail::write_fully(t.scratch, buffer.data(), filled, at))
        throw io_error(t.file.describe(std::string("cannot write the rows' scratch file: ") + std::strerror(errno)));
      at += filled;
      filled = 0;
    };
    interior_rows(b, bytes, rows, count, [&](const std::byte* row) {
      if (filled + bytes > buffer.size()) flush();
      std::memcpy(buffer.data() + filled, row, bytes);
      filled += bytes;
    });
    if (filled) flush();
  }

  /// Moves every complete file into place, all or none (see commit_group).
  void commit() {
    detail::commit_group group;
    commit_into(group);
    group.commit(durable_);
  }

  /// Hands every complete file to `group`, to be committed with the run's
  /// other files (traces); the sink is then empty.
  void commit_into(detail::commit_group& group) {
    for (auto& t : tables_) merge_table(*t);
    for (auto& f : files_)
      if (::close(std::exchange(f.fd, -1)) != 0) {
        const std::string why = std::strerror(errno);
        const auto what = f.file.describe("cannot write: " + why);
        cleanup();
        throw io_error(what);
      }
    for (auto& f : files_) group.add(std::move(f.file));
    for (auto& t : tables_) group.add(std::move(t->file));
    files_.clear();
    tables_.clear();
  }

 private:
  struct open_file {
    detail::atomic_file file;
    int fd;
    std::uint64_t header;
    dtype type;
  };
  /// A table: its rows' scratch file, the segments in it, and the file it becomes.
  struct spilled_table {
    spilled_table(std::filesystem::path path, table_spec table) : file(std::move(path)), spec(std::move(table)) {}
    ~spilled_table() {
      if (scratch >= 0) ::close(scratch);
    }
    detail::atomic_file file;
    table_spec spec;
    int scratch = -1;
    std::mutex lock;
    std::uint64_t end = 0;                                          ///< bytes in the scratch file
    std::vector<std::pair<std::uint64_t, std::uint64_t>> segments;  ///< (byte offset, rows)
  };

  /// Writes table t's file (header, then the segments merged by position).
  void merge_table(spilled_table& t) {
    const auto bytes = t.spec.row_bytes();
    std::vector<std::uint64_t> counts;
    std::uint64_t rows = 0;
    for (const auto& [at, n] : t.segments) counts.push_back(n), rows += n;
    auto fail = [&](const std::string& what) {
      const std::string why = std::strerror(errno);
      const auto message = t.file.describe(what + why);
      cleanup();
      throw io_error(message);
    };
    const int fd = ::open(t.file.temporary().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) fail("cannot create: ");
    const auto header = io::npy_header_bytes(detail::numpy_row_type(t.spec), {rows});
    std::uint64_t at = header.size();
    bool ok = detail::write_fully(fd, header.data(), header.size(), 0);
    merge_segments(
        bytes, counts,
        [&](std::size_t s, std::uint64_t first, std::uint64_t n, std::byte* dst) {
          ok = ok && detail::read_fully(t.scratch, dst, n * bytes, t.segments[s].first + first * bytes);
        },
        [&](const std::byte* data, std::uint64_t n) {
          ok = ok && detail::write_fully(fd, data, n * bytes, at);
          at += n * bytes;
        });
    if (::close(fd) != 0) ok = false;
    if (!ok) fail("cannot write: ");
  }

  /// Closes every file; their temporaries are removed with them.
  void cleanup() noexcept {
    for (auto& f : files_)
      if (f.fd >= 0) ::close(f.fd);
    files_.clear();
    tables_.clear();
  }

  shape3 shape_;
  detail::durability durable_;
  std::vector<open_file> files_;
  std::vector<std::unique_ptr<spilled_table>> tables_;
};

}  // namespace dwsr
