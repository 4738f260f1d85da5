#pragma once
/// \file Where chunked execution reads blocks from and writes interiors to:
/// an in-memory cube, any input source (io/source.hpp; .npy files read block by
/// block), and .npy files written block by block, so that cubes larger than
/// memory never have to be held whole.

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/window_runs.hpp"
#include "dwsr/graph/chunking.hpp"
#include "dwsr/io/npy.hpp"
#include "dwsr/io/source.hpp"

namespace dwsr {

/// Reads the extended window of a block (C order) into caller memory.
class block_source {
 public:
  virtual ~block_source() = default;
  virtual shape3 shape() const = 0;
  /// Fills dst (block.extended() voxels) with the block's extended window; thread-safe.
  virtual void read(const block& b, float* dst) const = 0;
};

/// Writes one graph output's block interior; thread-safe for distinct blocks.
class block_sink {
 public:
  virtual ~block_sink() = default;
  /// `data` is the output over the block's extended window.
  virtual void write(std::size_t output, const block& b, const array_ref& data) = 0;
};

namespace detail {
/// The layout of a block's extended window (its buffer) inside the cube.
inline cube_layout extended_layout(const block& b) { return {b.extended(), b.ext_begin}; }
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

/// Interiors copied into whole output cubes the caller owns.
class memory_block_sink final : public block_sink {
 public:
  explicit memory_block_sink(std::vector<array_ref> outputs) : outputs_(std::move(outputs)) {}
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
};

/// Writes each output straight into a .npy file, block by block, so the whole
/// output is never held in memory. Files are written under temporary names
/// (core/atomic_file.hpp) and renamed into place, all together, by commit() or
/// with a run's other files by commit_into(); without either (an error), they
/// are removed.
class npy_block_sink final : public block_sink {
 public:
  struct file_spec {
    std::filesystem::path path;
    dtype type;
  };
  npy_block_sink(std::vector<file_spec> files, shape3 shape) : shape_(shape) {
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
    for_each_window_run(b.begin, b.end, {shape_, {}}, detail::extended_layout(b),
                        [&](std::uint64_t to, std::uint64_t from, std::uint64_t n) {
                          const auto dst = f.header + to * e;
                          const auto* p = static_cast<const char*>(data.data) + from * e;
                          std::uint64_t left = n * e, at = 0;
                          while (left > 0) {
                            const auto put = ::pwrite(f.fd, p + at, left, static_cast<off_t>(dst + at));
                            if (put < 0 && errno == EINTR) continue;
                            if (put <= 0)
                              throw io_error(f.file.describe(std::string("cannot write: ") + std::strerror(errno)));
                            left -= std::uint64_t(put), at += std::uint64_t(put);
                          }
                        });
  }

  /// Moves every complete file into place, all or none (see commit_group).
  void commit() {
    detail::commit_group group;
    commit_into(group);
    group.commit();
  }

  /// Hands every complete file to `group`, to be committed with the run's
  /// other files (traces); the sink is then empty.
  void commit_into(detail::commit_group& group) {
    for (auto& f : files_)
      if (::close(std::exchange(f.fd, -1)) != 0) {
        const std::string why = std::strerror(errno);
        const auto what = f.file.describe("cannot write: " + why);
        cleanup();
        throw io_error(what);
      }
    for (auto& f : files_) group.add(std::move(f.file));
    files_.clear();
  }

 private:
  struct open_file {
    detail::atomic_file file;
    int fd;
    std::uint64_t header;
    dtype type;
  };
  /// Closes every file; their temporaries are removed with them.
  void cleanup() noexcept {
    for (auto& f : files_)
      if (f.fd >= 0) ::close(f.fd);
    files_.clear();
  }

  shape3 shape_;
  std::vector<open_file> files_;
};

}  // namespace dwsr
