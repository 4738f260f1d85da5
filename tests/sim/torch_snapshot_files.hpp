#pragma once
// The PyTorch memory snapshots of tests/sim/data/make_torch_snapshots.py,
// written by Python's own pickle (protocols 2 and 4) and json modules into a
// temporary directory the first time a test asks for them.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "io/temp_dir.hpp"

namespace dwsr::test {

/// The directory holding NAME.p2.pickle, NAME.p4.pickle and NAME.json for
/// NAME in late_start, what_if, streams.
inline const std::filesystem::path& torch_snapshots() {
  static temp_dir dir;
  static const int made = std::system(
      ("python3 " + std::string(DWSR_SOURCE_DIR) + "/tests/sim/data/make_torch_snapshots.py " + dir.path().string())
          .c_str());
  REQUIRE(made == 0);
  return dir.path();
}

}  // namespace dwsr::test
