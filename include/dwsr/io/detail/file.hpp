#pragma once
/// \file File helpers shared by the readers and writers: checked opening,
/// exact positioned reads (writes go through core/atomic_file.hpp).

#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"

namespace dwsr::io::detail {

/// 'path' quoted, the way every io message names a file.
inline std::string quoted(const std::filesystem::path& path) { return quote(path.string(), 400); }

/// Closes a std::FILE on scope exit.
struct file_closer {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using unique_file = std::unique_ptr<std::FILE, file_closer>;

/// Throws io_error unless `path` names an existing regular file; returns its size.
inline std::uint64_t checked_file_size(const std::filesystem::path& path, const char* kind) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    throw io_error(quoted(path) + ": file not found; expected an existing " + kind + " file");
  if (std::filesystem::is_directory(status))
    throw io_error(quoted(path) + ": is a directory; expected a " + kind + " file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw io_error(quoted(path) + ": cannot read the file size: " + ec.message());
  return size;
}

/// Opens `path` for binary reading; io_error naming the file and the system's reason otherwise.
inline unique_file open_for_read(const std::filesystem::path& path) {
  unique_file f(std::fopen(path.c_str(), "rb"));
  if (!f) throw io_error(quoted(path) + ": cannot open for reading: " + std::strerror(errno));
  return f;
}

/// Reads up to `bytes` bytes of fd at `offset` into dst with pread, retrying
/// interrupted and partial reads: the bytes read before the end of the file
/// (`bytes` when all were there), or -1 with errno set on a read error.
/// Thread-safe: several threads may read one descriptor at once.
inline std::int64_t pread_all(int fd, void* dst, std::uint64_t bytes, std::uint64_t offset) noexcept {
  auto* out = static_cast<char*>(dst);
  std::uint64_t done = 0;
  while (done < bytes) {
    const auto got = ::pread(fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += std::uint64_t(got);
  }
  return std::int64_t(done);
}

/// Reads exactly `bytes` bytes at `offset` into dst; a short read is reported
/// as a truncated file (`what` says which part was being read).
inline void read_exact(std::FILE* f, const std::filesystem::path& path, std::uint64_t offset, void* dst,
                       std::uint64_t bytes, const char* what) {
  if (bytes == 0) return;
  if (::fseeko(f, static_cast<off_t>(offset), SEEK_SET) != 0)
    throw io_error(quoted(path) + ": cannot seek to byte " + std::to_string(offset) + ": " + std::strerror(errno));
  auto* out = static_cast<unsigned char*>(dst);
  std::uint64_t done = 0;
  constexpr std::uint64_t chunk = std::uint64_t{64} << 20;
  while (done < bytes) {
    const auto want = static_cast<std::size_t>(bytes - done < chunk ? bytes - done : chunk);
    const auto got = std::fread(out + done, 1, want, f);
    done += got;
    if (got < want) {
      if (std::ferror(f)) throw io_error(quoted(path) + ": read error in the " + what + ": " + std::strerror(errno));
      throw io_error(quoted(path) + ": truncated file: the " + what + " needs " + std::to_string(bytes) +
                     " bytes from byte " + std::to_string(offset) + " but only " + std::to_string(done) +
                     " are present");
    }
  }
}

}  // namespace dwsr::io::detail
