// One run per output directory, and the partial files of dead runs removed.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dwsr/core/directory_lock.hpp"
#include "io/temp_dir.hpp"

using dwsr::directory_lock;
using dwsr::remove_stale_partials;
using dwsr::test::temp_dir;
using dwsr::test::write_raw;

namespace {
/// The id of a process that has ended (and been reaped).
long dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}
/// A temporary's name as atomic_file makes it, for `target` written by `pid`.
std::string partial(const std::string& target, long pid) {
  std::string name = ".";
  name += target;
  name += ".dwsr-partial-";
  name += std::to_string(pid);
  name += "-0";
  return name;
}
}  // namespace

TEST_CASE("directory_lock: one holder at a time, the lock file gone after") {
  temp_dir dir;
  {
    const directory_lock lock(dir.path());
    CHECK(dwsr::test::read_raw(dir / ".dwsr-run.lock") == std::to_string(::getpid()) + "\n");
    CHECK_THROWS_WITH(directory_lock(dir.path()),
                      Catch::Contains("in use by another dwsr run (process " + std::to_string(::getpid()) + ")"));
  }
  CHECK(dir.entries().empty());
  // A lock file left by a dead owner is taken over.
  write_raw(dir / ".dwsr-run.lock", std::to_string(dead_pid()) + "\n");
  {
    const directory_lock lock(dir.path());
    CHECK(dwsr::test::read_raw(dir / ".dwsr-run.lock") == std::to_string(::getpid()) + "\n");
  }
  CHECK(dir.entries().empty());
  CHECK_THROWS_AS(directory_lock(dir / "missing"), dwsr::io_error);
}

TEST_CASE("remove_stale_partials removes the temporaries of dead processes only") {
  temp_dir dir;
  const long dead = dead_pid();
  write_raw(dir / partial("envelope.npy", dead), "stale");
  write_raw(dir / partial("t.csv", dead), "stale");
  write_raw(dir / partial("mine.npy", ::getpid()), "live: this process");
  write_raw(dir / partial("parent.npy", ::getppid()), "live: the parent");
  write_raw(dir / "envelope.npy", "an output");
  write_raw(dir / "notes.dwsr-partial-x", "not a temporary's name");
  std::filesystem::create_directory(dir / partial("dir.npy", dead));  // not a file: left alone

  SECTION("restricted to some targets") {
    const auto removed = remove_stale_partials(dir.path(), [](const std::string& t) { return t == "t.csv"; });
    REQUIRE(removed.size() == 1);
    CHECK(removed[0].name == partial("t.csv", dead));
    CHECK(removed[0].pid == dead);
    CHECK(dir.entries().size() == 6);
  }
  SECTION("every target") {
    const auto removed = remove_stale_partials(dir.path());
    CHECK(removed.size() == 2);
    CHECK(!std::filesystem::exists(dir / partial("envelope.npy", dead)));
    CHECK(dir.entries().size() == 5);
    CHECK(std::filesystem::exists(dir / partial("mine.npy", ::getpid())));
    CHECK(std::filesystem::exists(dir / partial("parent.npy", ::getppid())));
  }
  CHECK(remove_stale_partials(dir / "missing").empty());
}
