// Untrusted text in messages: one line, no terminal escapes, bounded length.
#include <catch2/catch.hpp>

#include <string>

#include "dwsr/core/quote.hpp"

using dwsr::printable;
using dwsr::quote;

TEST_CASE("quote escapes every byte outside printable ASCII, and backslash") {
  CHECK(quote("envelope") == "'envelope'");
  CHECK(quote("a\nb\r\tc") == R"('a\nb\r\tc')");
  CHECK(quote("\x1b[2J\x07") == R"('\x1b[2J\x07')");
  CHECK(quote(std::string("nul\0byte", 8)) == R"('nul\x00byte')");
  CHECK(quote("\x7f\x80\xff") == R"('\x7f\x80\xff')");
  CHECK(quote("caf\xc3\xa9") == R"('caf\xc3\xa9')");
  CHECK(quote(R"(it's a\b)") == R"('it's a\\b')");
  CHECK(quote("key\n", 80, '"') == R"("key\n")");
  CHECK(quote("") == "''");
}

TEST_CASE("quote shortens long text and says how long it was") {
  const std::string long_text(1000, 'x');
  const auto q = quote(long_text, 10);
  CHECK(q == "'xxxxxxxxxx...' (1000 bytes)");
  CHECK(quote(std::string(10, 'x'), 10) == "'xxxxxxxxxx'");
  // Escapes never make a line of a shortened quote: at most 4 characters per byte.
  CHECK(quote(std::string(500, '\n'), 80).size() < 4 * 80 + 20);
}

TEST_CASE("printable keeps backslashes (a whole message may hold escapes) but never a line break") {
  CHECK(printable(R"(magic \x93NUMPY)") == R"(magic \x93NUMPY)");
  CHECK(printable("two\nlines\x1b") == R"(two\nlines\x1b)");
  CHECK(printable(std::string(30, 'y'), 20) == std::string(20, 'y') + "... (30 bytes)");
  const auto p = printable(std::string(5000, '\r'));
  CHECK(p.find('\r') == std::string::npos);
  CHECK(p.find("(5000 bytes)") != std::string::npos);
}
