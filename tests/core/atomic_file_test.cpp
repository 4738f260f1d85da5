// Every output file is written through core/atomic_file.hpp: whole or not at all.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/core/atomic_file.hpp"
#include "io/temp_dir.hpp"

using dwsr::detail::atomic_file;
using dwsr::detail::write_atomically;
using dwsr::test::read_raw;
using dwsr::test::temp_dir;
using dwsr::test::write_raw;

TEST_CASE("write_atomically writes through a stream or the temporary's path, replacing the target whole") {
  temp_dir dir;
  write_raw(dir / "a.txt", "old");
  write_atomically(dir / "a.txt", [](std::ostream& out) { out << "new"; });
  CHECK(read_raw(dir / "a.txt") == "new");
  write_atomically(dir / "b.txt", [&](const std::filesystem::path& tmp) {
    CHECK(tmp.parent_path() == dir.path());
    write_raw(tmp, "by path");
  });
  CHECK(read_raw(dir / "b.txt") == "by path");
  CHECK(dir.entries().size() == 2);
}

TEST_CASE("a failing writer leaves the target as it was and no temporary") {
  temp_dir dir;
  write_raw(dir / "a.txt", "old");
  CHECK_THROWS_AS(write_atomically(dir / "a.txt",
                                   [](std::ostream& out) {
                                     out << "half";
                                     throw std::runtime_error("disk full");
                                   }),
                  std::runtime_error);
  CHECK(read_raw(dir / "a.txt") == "old");
  CHECK(dir.entries() == std::vector<std::string>{"a.txt"});
  CHECK_THROWS_WITH(write_atomically(dir / "no" / "a.txt", [](std::ostream& out) { out << "x"; }),
                    Catch::Contains("cannot write"));
  CHECK_THROWS_AS(write_atomically(dir.path() / "", [](std::ostream&) {}), dwsr::io_error);
  std::filesystem::create_directory(dir / "d");
  CHECK_THROWS_AS(write_atomically(dir / "d", [](std::ostream& out) { out << "x"; }), dwsr::io_error);
  CHECK(std::filesystem::is_directory(dir / "d"));
}

TEST_CASE("atomic_file: written over time, moved into place by commit, removed without it") {
  temp_dir dir;
  {
    atomic_file f(dir / "kept.npy");
    write_raw(f.temporary(), "data");
    CHECK_FALSE(std::filesystem::exists(dir / "kept.npy"));
    atomic_file moved = std::move(f);
    moved.commit();
  }
  CHECK(read_raw(dir / "kept.npy") == "data");
  {
    atomic_file f(dir / "dropped.npy");
    write_raw(f.temporary(), "data");
  }
  CHECK(dir.entries() == std::vector<std::string>{"kept.npy"});
  atomic_file a(dir / "x"), b(dir / "x");
  CHECK(a.temporary() != b.temporary());  // concurrent writers never share a temporary
}

TEST_CASE("a temporary's name says which file and which process it is for") {
  temp_dir dir;
  const atomic_file f(dir / "envelope.npy");
  const auto parsed = dwsr::detail::parse_partial_name(f.temporary().filename().string());
  REQUIRE(parsed);
  CHECK(parsed->target == "envelope.npy");
  CHECK(parsed->pid == ::getpid());
  for (const char* other : {"envelope.npy", ".envelope.npy", ".x.dwsr-partial-", ".x.dwsr-partial-12",
                            ".x.dwsr-partial-12-", ".x.dwsr-partial-a-1", "x.dwsr-partial-1-2", ".dwsr-run.lock"})
    CHECK_FALSE(dwsr::detail::parse_partial_name(other));
}

TEST_CASE("commit_group: a run's files appear together, or none of them") {
  temp_dir dir;
  using dwsr::detail::commit_group;
  SECTION("all complete: every file is moved into place") {
    commit_group group;
    atomic_file a(dir / "a.npy");
    write_raw(a.temporary(), "A");
    group.add(std::move(a));
    group.write(dir / "t.csv", [](std::ostream& out) { out << "T"; });
    CHECK(dir.entries().size() == 2);  // two temporaries, no target yet
    CHECK_FALSE(std::filesystem::exists(dir / "a.npy"));
    group.commit();
    CHECK(read_raw(dir / "a.npy") == "A");
    CHECK(read_raw(dir / "t.csv") == "T");
    CHECK(dir.entries().size() == 2);
  }
  SECTION("unsynced: the same files, renamed without waiting for the disk") {
    commit_group group;
    group.write(dir / "a.npy", [](std::ostream& out) { out << "A"; });
    group.write(dir / "t.csv", [](std::ostream& out) { out << "T"; });
    group.commit(dwsr::detail::durability::unsynced);
    CHECK(read_raw(dir / "a.npy") == "A");
    CHECK(read_raw(dir / "t.csv") == "T");
    CHECK(dir.entries() == std::vector<std::string>{"a.npy", "t.csv"});  // no temporary left
  }
  SECTION("unsynced, a target taken by a directory: none of the files appear either") {
    std::filesystem::create_directory(dir / "z.csv");
    commit_group group;
    group.write(dir / "a.npy", [](std::ostream& out) { out << "A"; });
    group.write(dir / "z.csv", [](std::ostream& out) { out << "Z"; });
    CHECK_THROWS_WITH(group.commit(dwsr::detail::durability::unsynced), Catch::Contains("z.csv"));
    CHECK(dir.entries() == std::vector<std::string>{"z.csv"});
  }
  SECTION("one file fails to be written: the others are not committed") {
    {
      commit_group group;
      group.write(dir / "a.npy", [](std::ostream& out) { out << "A"; });
      CHECK_THROWS_AS(group.write(dir / "missing" / "t.csv", [](std::ostream& out) { out << "T"; }), dwsr::io_error);
    }
    CHECK(dir.entries().empty());
  }
  SECTION("a target taken by a directory: checked before any rename") {
    std::filesystem::create_directory(dir / "z.csv");
    commit_group group;
    group.write(dir / "a.npy", [](std::ostream& out) { out << "A"; });
    group.write(dir / "z.csv", [](std::ostream& out) { out << "Z"; });
    CHECK_THROWS_WITH(group.commit(), Catch::Contains("z.csv") && Catch::Contains("directory"));
    CHECK(dir.entries() == std::vector<std::string>{"z.csv"});
  }
}
