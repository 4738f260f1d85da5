#pragma once
/// \file How dwsr writes every output file, so that an error never leaves a
/// partial one: the content goes to a temporary file beside the target (same
/// directory, so the final rename stays on one file system), which is synced
/// to disk and renamed over the target only once complete. On any failure, or
/// when the writer gives up, the temporary is removed and the target is left
/// as it was.
///
/// Two ways in: write_atomically(path, write) for a file written in one call
/// (write takes a std::ostream&, or the temporary's path for libraries that
/// open files themselves), and atomic_file for a file written piece by piece
/// over a longer time and committed at the end (block sinks).

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include "dwsr/error.hpp"

namespace dwsr::detail {

/// A file being written under a temporary name beside its target; commit()
/// moves it onto the target, destruction without commit() removes it.
class atomic_file {
 public:
  /// Picks the temporary's name (nothing is created on disk). Throws io_error
  /// when `target` names no file (an empty name or a directory path).
  explicit atomic_file(std::filesystem::path target) : target_(std::move(target)) {
    if (target_.filename().empty() || target_.filename() == "." || target_.filename() == "..")
      throw io_error(describe("not a file name; expected a path to a file"));
    static std::atomic<std::uint64_t> writers{0};
    const auto n = writers.fetch_add(1, std::memory_order_relaxed);
    std::string name(1, '.');  // hidden; built by appending (GCC 12 warns on "." + string)
    name += target_.filename().string();
    name += ".dwsr-partial-";
    name += std::to_string(::getpid());
    name += '-';
    name += std::to_string(n);
    temporary_ = target_.parent_path() / name;
  }
  atomic_file(atomic_file&& other) noexcept
      : target_(std::move(other.target_)), temporary_(std::move(other.temporary_)), open_(other.open_) {
    other.open_ = false;
  }
  atomic_file& operator=(atomic_file&& other) noexcept {
    if (this != &other) {
      discard();
      target_ = std::move(other.target_);
      temporary_ = std::move(other.temporary_);
      open_ = std::exchange(other.open_, false);
    }
    return *this;
  }
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  ~atomic_file() { discard(); }

  /// The file the content is meant for.
  const std::filesystem::path& target() const noexcept { return target_; }
  /// Where to write the content: a hidden name beside the target, unique to
  /// this writer (process id and a counter), so concurrent writers never meet.
  const std::filesystem::path& temporary() const noexcept { return temporary_; }

  /// Syncs the temporary to disk and renames it onto the target. Close every
  /// handle on the temporary first. Throws io_error naming the target (the
  /// temporary is then removed).
  void commit() {
    const int fd = ::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      const int why = errno;
      if (fd >= 0) ::close(fd);
      discard();
      throw io_error(describe(std::string("cannot write: ") + std::strerror(why)));
    }
    ::close(fd);
    std::error_code ec;
    std::filesystem::rename(temporary_, target_, ec);
    if (ec) {
      discard();
      throw io_error(describe(std::string("cannot write: ") + ec.message()));
    }
    open_ = false;
  }

  /// Removes the temporary (nothing happens to the target).
  void discard() noexcept {
    if (!open_) return;
    open_ = false;
    std::error_code ignored;
    std::filesystem::remove(temporary_, ignored);
  }

  /// "'target': what", the way dwsr's i/o messages name a file.
  std::string describe(const std::string& what) const {
    std::string out(1, '\'');
    out += target_.string();
    out += "': ";
    out += what;
    return out;
  }

 private:
  std::filesystem::path target_, temporary_;
  bool open_ = true;  // the temporary may exist and is ours to remove
};

/// Writes `path` atomically in one call: write(std::ostream&) fills a stream,
/// or write(const std::filesystem::path& temporary) creates and fills the
/// temporary itself (closing it before it returns). Throws io_error naming
/// `path` when anything fails, and rethrows what write throws; either way
/// nothing is left behind.
template <class Write>
void write_atomically(const std::filesystem::path& path, Write&& write) {
  atomic_file file(path);
  if constexpr (std::is_invocable_v<Write&, std::ostream&>) {
    std::ofstream out(file.temporary(), std::ios::binary | std::ios::trunc);
    if (!out) throw io_error(file.describe(std::string("cannot write: ") + std::strerror(errno)));
    write(static_cast<std::ostream&>(out));
    out.close();
    if (!out) throw io_error(file.describe(std::string("write failed: ") + std::strerror(errno)));
  } else {
    write(static_cast<const std::filesystem::path&>(file.temporary()));
  }
  file.commit();
}

}  // namespace dwsr::detail
