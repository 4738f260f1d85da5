#pragma once
/// \file A file read with positioned reads (pread): several threads may read
/// one open file at once, and no stdio buffer is allocated.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "dwsr/error.hpp"
#include "dwsr/io/detail/file.hpp"

namespace dwsr::io::detail {

/// A read-only file descriptor, closed on destruction.
class positioned_file {
 public:
  positioned_file() = default;
  explicit positioned_file(const std::filesystem::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw io_error(quoted(path) + ": cannot open for reading: " + std::strerror(errno));
  }
  positioned_file(positioned_file&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_) { o.fd_ = -1; }
  positioned_file& operator=(positioned_file&& o) noexcept {
    std::swap(path_, o.path_);
    std::swap(fd_, o.fd_);
    return *this;
  }
  positioned_file(const positioned_file&) = delete;
  positioned_file& operator=(const positioned_file&) = delete;
  ~positioned_file() {
    if (fd_ >= 0) ::close(fd_);
  }

  /// Reads exactly `bytes` bytes at `offset` into dst; thread-safe. A short read
  /// is reported as a truncated file (`what` says which part was being read).
  void read(std::uint64_t offset, void* dst, std::uint64_t bytes, const char* what) const {
    const auto got = pread_all(fd_, dst, bytes, offset);
    if (got < 0) throw io_error(quoted(path_) + ": read error in the " + what + ": " + std::strerror(errno));
    if (std::uint64_t(got) < bytes)
      throw io_error(quoted(path_) + ": truncated file: the " + what + " needs " + std::to_string(bytes) +
                     " bytes from byte " + std::to_string(offset) + " but only " + std::to_string(got) +
                     " are present");
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace dwsr::io::detail
