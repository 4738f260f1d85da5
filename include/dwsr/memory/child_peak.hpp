#pragma once
/// \file The independent probe of a fresh process: run a command as a child
/// and read its peak resident memory from the kernel when it exits (wait4's
/// ru_maxrss, the high-water mark of the child's whole life). Nothing of
/// dwsr's own accounting enters the figure. What it holds beside the data
/// (code, libraries, threads, FFTW's plans) is measured by running the same
/// command on a tiny input: the difference is the run's data.
///
/// A floor: at exec the kernel records the high-water mark of the memory the
/// child was started from, here the parent's (posix_spawn shares it until
/// exec). A child's figure is therefore never below the parent's peak, and a
/// baseline must hold more than the parent does to be the child's own.

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "dwsr/core/quote.hpp"
#include "dwsr/error.hpp"
#include "dwsr/memory/page_mapping.hpp"

extern char** environ;

namespace dwsr {

/// How far one ru_maxrss reading can lag the pages a process touched, in
/// bytes. Linux counts a process's resident pages in per-CPU counters and
/// folds a CPU's share into the total only once it reaches the batch,
/// max(32, 2 x online CPUs) pages, so a reading misses less than a batch on
/// each CPU the process ran on: 64 pages on two CPUs, 512 on sixteen. An
/// increase (the difference of two readings) is known to twice this.
inline double rss_reading_lag(long online_cpus = sysconf(_SC_NPROCESSORS_ONLN)) noexcept {
  const double cpus = double(std::max(online_cpus, 1L));
  return std::max(32.0, 2 * cpus) * cpus * double(detail::page_bytes());
}

/// How a child ended and what the kernel measured of it.
struct child_exit {
  int status = -1;            ///< exit code; -1 when a signal ended it
  int signal = 0;             ///< the signal that ended it, 0 when it exited
  std::uint64_t max_rss = 0;  ///< bytes: the child's peak resident set size
  double user_seconds = 0;    ///< CPU time in user mode
  double system_seconds = 0;  ///< CPU time in the kernel
  bool ok() const noexcept { return status == 0; }
};

/// Starts argv[0] (a path, or a name looked up on PATH) with `argv` in a fresh
/// process, stdout and stderr sent to the given files (empty paths: inherited).
/// Returns its pid; throws io_error when it cannot be started.
inline pid_t spawn_child(const std::vector<std::string>& argv, const std::filesystem::path& stdout_file = {},
                         const std::filesystem::path& stderr_file = {}) {
  if (argv.empty()) throw invalid_input("a child process needs a program to run; argv is empty");
  std::vector<std::string> words = argv;
  std::vector<char*> args;
  for (auto& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  if (!stdout_file.empty())
    posix_spawn_file_actions_addopen(&files, 1, stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!stderr_file.empty())
    posix_spawn_file_actions_addopen(&files, 2, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &files, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) throw io_error(quote(argv[0]) + ": cannot start: " + std::strerror(rc));
  return pid;
}

/// Waits for child `pid` to end and reads what the kernel measured of it.
inline child_exit wait_child(pid_t pid) {
  int status = 0;
  rusage usage{};
  while (::wait4(pid, &status, 0, &usage) < 0)
    if (errno != EINTR)
      throw io_error("cannot wait for child process " + std::to_string(pid) + ": " + std::strerror(errno));
  child_exit e;
  if (WIFEXITED(status)) e.status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  e.max_rss = std::uint64_t(usage.ru_maxrss) * 1024;  // Linux reports KiB
  e.user_seconds = double(usage.ru_utime.tv_sec) + 1e-6 * double(usage.ru_utime.tv_usec);
  e.system_seconds = double(usage.ru_stime.tv_sec) + 1e-6 * double(usage.ru_stime.tv_usec);
  return e;
}

/// spawn_child, then wait_child.
inline child_exit run_child(const std::vector<std::string>& argv, const std::filesystem::path& stdout_file = {},
                            const std::filesystem::path& stderr_file = {}) {
  return wait_child(spawn_child(argv, stdout_file, stderr_file));
}

}  // namespace dwsr
