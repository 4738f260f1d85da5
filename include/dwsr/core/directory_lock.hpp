#pragma once
/// \file One run at a time per output directory, and the debris of dead runs
/// cleared away.
///
/// A run that is killed (kill -9, power loss) leaves its temporaries
/// (".<name>.dwsr-partial-<pid>-<n>", core/atomic_file.hpp) behind. A later run
/// in the same directory takes the directory's lock, ".dwsr-run.lock": an
/// advisory flock(2) held for the run's lifetime, with the owner's process id
/// written in it for messages. The kernel drops the lock when its owner dies,
/// however it dies, so a lock that can be taken means no live run owns the
/// directory. remove_stale_partials() then removes every temporary whose
/// writing process is gone (the process id in its name is not alive on this
/// machine), which leaves a live writer's temporaries alone even when it is not
/// a run (`dwsr generate` writing into the same directory).

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"

namespace dwsr {

/// Whether process `pid` exists on this machine (it may belong to another user).
inline bool process_alive(long pid) noexcept {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

/// A temporary removed by remove_stale_partials().
struct stale_partial {
  std::string name;  ///< its file name
  long pid = 0;      ///< the dead process that was writing it
};

/// Removes the temporaries in `dir` (not its subdirectories) whose writing
/// process is no longer alive; `wanted(target)` may restrict them to some
/// target names. Returns what was removed. Never touches other files, nor the
/// temporaries of a live process, this one included.
template <class Wanted>
std::vector<stale_partial> remove_stale_partials(const std::filesystem::path& dir, Wanted&& wanted) {
  std::vector<stale_partial> removed;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    const auto partial = detail::parse_partial_name(name);
    if (!partial || partial->pid == ::getpid() || process_alive(partial->pid) || !wanted(partial->target)) continue;
    std::error_code status;
    if (!it->is_regular_file(status)) continue;
    if (std::filesystem::remove(it->path(), status)) removed.push_back({name, partial->pid});
  }
  return removed;
}

/// remove_stale_partials() for every target name.
inline std::vector<stale_partial> remove_stale_partials(const std::filesystem::path& dir) {
  return remove_stale_partials(dir, [](const std::string&) { return true; });
}

/// Exclusive use of an output directory by one process, for as long as the
/// object lives. The lock file is removed when the lock is released.
class directory_lock {
 public:
  /// The lock file's name inside the directory.
  static constexpr std::string_view file_name = ".dwsr-run.lock";

  /// Takes the lock of the existing directory `dir`. Throws io_error when
  /// another live process holds it (naming that process) or the lock file
  /// cannot be created.
  explicit directory_lock(const std::filesystem::path& dir) : path_(dir / file_name) {
    // A lock file removed by its owner between our open and our flock would
    // leave us locking a file nobody else sees: retry until the file we locked
    // is the one at the path.
    for (int attempt = 0; attempt < 100; ++attempt) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
      if (fd_ < 0) throw io_error(quote(dir.string(), 400) + ": cannot create the run lock: " + std::strerror(errno));
      if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        const int why = errno;
        const auto owner = read_owner();
        ::close(std::exchange(fd_, -1));
        if (why != EWOULDBLOCK)
          throw io_error(quote(dir.string(), 400) + ": cannot take the run lock: " + std::strerror(why));
        throw io_error("output directory " + quote(dir.string(), 400) + " is in use by another dwsr run" +
                       (owner.empty() ? std::string() : " (process " + owner + ")") +
                       "; wait for it to finish or choose another output directory");
      }
      struct stat held {};
      struct stat named {};
      if (::fstat(fd_, &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
          held.st_dev == named.st_dev) {
        const auto pid = std::to_string(::getpid()) + "\n";
        if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size()))
          return;
        const std::string why = std::strerror(errno);
        release();
        throw io_error(quote(dir.string(), 400) + ": cannot write the run lock: " + why);
      }
      ::close(std::exchange(fd_, -1));
    }
    throw io_error(quote(dir.string(), 400) + ": cannot take the run lock: it keeps changing");
  }
  directory_lock(const directory_lock&) = delete;
  directory_lock& operator=(const directory_lock&) = delete;
  ~directory_lock() { release(); }

 private:
  /// The process id written in the open lock file ("" if none).
  std::string read_owner() const {
    char buf[32] = {};
    const auto n = ::pread(fd_, buf, sizeof buf - 1, 0);
    std::string pid(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return pid.find_first_not_of("0123456789") == std::string::npos ? pid : std::string();
  }
  /// Removes the lock file, then drops the lock (in that order: a process
  /// waiting on this file fails its identity check and retries on a new one).
  void release() noexcept {
    if (fd_ < 0) return;
    ::unlink(path_.c_str());
    ::close(std::exchange(fd_, -1));
  }

  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace dwsr
