#pragma once
// Shared by the io tests: a fresh temporary directory per test (temp_dir.hpp)
// and the check that a call fails with a message naming what went wrong.

#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>

#include "io/temp_dir.hpp"

namespace dwsr::test {

/// Requires that f throws an E whose message contains every one of `parts`.
template <class E, class F>
void require_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    FAIL("expected an exception");
  } catch (const E& e) {
    for (const auto& p : parts) CHECK_THAT(e.what(), Catch::Matchers::Contains(p));
  }
}

}  // namespace dwsr::test
