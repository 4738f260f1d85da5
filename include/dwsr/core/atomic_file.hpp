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
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"

namespace dwsr::detail {

/// The marker in every temporary's name: ".<target>.dwsr-partial-<pid>-<n>".
inline constexpr std::string_view partial_marker = ".dwsr-partial-";

/// What a temporary's file name says about it, read back from the name alone.
struct partial_name {
  std::string target;  ///< the file it was meant to become (a name in the same directory)
  long pid = 0;        ///< the process that was writing it
};

/// Parses a file name made by atomic_file ("." + target + partial_marker +
/// pid + "-" + counter); nullopt for any other name.
inline std::optional<partial_name> parse_partial_name(std::string_view name) {
  const auto at = name.rfind(partial_marker);
  if (name.size() < 2 || name.front() != '.' || at == std::string_view::npos || at < 2) return std::nullopt;
  auto digits = [](std::string_view d) {
    return !d.empty() && d.size() <= 18 && d.find_first_not_of("0123456789") == std::string_view::npos;
  };
  const auto rest = name.substr(at + partial_marker.size());
  const auto dash = rest.find('-');
  if (dash == std::string_view::npos || !digits(rest.substr(0, dash)) || !digits(rest.substr(dash + 1)))
    return std::nullopt;
  return partial_name{std::string(name.substr(1, at - 1)), std::stol(std::string(rest.substr(0, dash)))};
}

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
    name += partial_marker;
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
    sync();
    publish();
  }

  /// The first half of commit(): syncs the complete temporary to disk, so that
  /// only the rename is left (io_error, the temporary removed, on failure).
  void sync() {
    const int fd = ::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      const int why = errno;
      if (fd >= 0) ::close(fd);
      discard();
      throw io_error(describe(std::string("cannot write: ") + std::strerror(why)));
    }
    ::close(fd);
  }

  /// The second half of commit(): renames the synced temporary onto the target
  /// (io_error, the temporary removed, on failure).
  void publish() {
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
  std::string describe(const std::string& what) const { return quote(target_.string(), 400) + ": " + what; }

 private:
  std::filesystem::path target_, temporary_;
  bool open_ = true;  // the temporary may exist and is ours to remove
};

/// Fills `file`'s temporary through write(std::ostream&) or
/// write(const std::filesystem::path& temporary); see write_atomically.
template <class Write>
void fill(const atomic_file& file, Write& write) {
  if constexpr (std::is_invocable_v<Write&, std::ostream&>) {
    std::ofstream out(file.temporary(), std::ios::binary | std::ios::trunc);
    if (!out) throw io_error(file.describe(std::string("cannot write: ") + std::strerror(errno)));
    write(static_cast<std::ostream&>(out));
    out.close();
    if (!out) throw io_error(file.describe(std::string("write failed: ") + std::strerror(errno)));
  } else {
    write(static_cast<const std::filesystem::path&>(file.temporary()));
  }
}

/// Writes `path` atomically in one call: write(std::ostream&) fills a stream,
/// or write(const std::filesystem::path& temporary) creates and fills the
/// temporary itself (closing it before it returns). Throws io_error naming
/// `path` when anything fails, and rethrows what write throws; either way
/// nothing is left behind.
template <class Write>
void write_atomically(const std::filesystem::path& path, Write&& write) {
  atomic_file file(path);
  fill(file, write);
  file.commit();
}

/// Whether a commit waits for the files to reach the disk before renaming them.
enum class durability {
  synced,    ///< fsync each file first: on disk, whole, before its name appears (the default)
  unsynced,  ///< rename only (as np.save writes): whole for every process at once, but a
             ///< power loss or kernel crash soon after may leave a renamed file empty or partial
};

/// The files of one run, committed together: each is written whole under its
/// temporary name first, and only once every one of them is complete and
/// synced are they renamed into place. An error before that (a full disk, an
/// unwritable trace) leaves none of them; a rename failing after the checks
/// (rare: the directory changed under the run) removes the files of the group
/// already renamed, so a run's outputs appear all together or not at all.
class commit_group {
 public:
  commit_group() = default;
  commit_group(const commit_group&) = delete;
  commit_group& operator=(const commit_group&) = delete;

  /// Adopts a file whose temporary is complete, every handle on it closed.
  void add(atomic_file file) { files_.push_back(std::move(file)); }

  /// Writes `path`'s content now, under its temporary name (write as for
  /// write_atomically); it is committed with the group.
  template <class Write>
  void write(const std::filesystem::path& path, Write&& write) {
    atomic_file file(path);
    fill(file, write);
    add(std::move(file));
  }

  /// Syncs every file (unless `d` is unsynced), checks every target, then
  /// renames them all; throws io_error naming the file at fault, leaving none
  /// of the group's files (neither temporaries nor targets of this group).
  void commit(durability d = durability::synced) {
    std::size_t published = 0;
    try {
      if (d == durability::synced)
        for (auto& f : files_) f.sync();
      for (auto& f : files_)
        if (std::filesystem::is_directory(f.target()))
          throw io_error(f.describe("cannot write: a directory of that name exists"));
      for (; published < files_.size(); ++published) files_[published].publish();
    } catch (...) {
      for (std::size_t k = 0; k < published; ++k) {
        std::error_code ignored;
        std::filesystem::remove(files_[k].target(), ignored);
      }
      files_.clear();  // removes the temporaries
      throw;
    }
    files_.clear();
  }

 private:
  std::vector<atomic_file> files_;  // uncommitted ones remove their temporaries when destroyed
};

}  // namespace dwsr::detail
