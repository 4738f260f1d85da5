// The pickle reader on bytes written by hand from the protocol's definition:
// every value type, the memo, and every refusal with its opcode and offset.

#include <catch2/catch.hpp>

#include <string>

#include "dwsr/sim/detail/pickle.hpp"

using namespace dwsr;
using namespace dwsr::sim::detail;

namespace {
pickle_document parse(const std::string& bytes) { return parse_pickle(bytes, "p.pickle"); }
std::string b(std::initializer_list<int> bytes) {
  std::string s;
  for (int c : bytes) s += static_cast<char>(c);
  return s;
}
void fails(const std::string& bytes, const std::string& what) {
  CHECK_THROWS_AS(parse(bytes), invalid_input);
  CHECK_THROWS_WITH(parse(bytes), Catch::Contains(what));
}
}  // namespace

TEST_CASE("pickle: dicts, lists, tuples, strings, numbers, booleans and None") {
  // {"a": [1, -2, 300, 70000, True, None, 1.5], "b": ("x", b"y")} in protocol 2
  const std::string p =
      b({0x80, 2,    '}',  'q',  0,   '(',  'X',  1,   0,    0,    0,    'a',  ']',  'q', 1,    '(',  'K',  1, 'J',
         0xfe, 0xff, 0xff, 0xff, 'M', 0x2c, 0x01, 'J', 0x70, 0x11, 0x01, 0x00, 0x88, 'N', 'G',  0x3f, 0xf8, 0, 0,
         0,    0,    0,    0,    'e', 0x8c, 1,    'b', 0x8c, 1,    'x',  'C',  1,    'y', 0x86, 'u',  '.'});
  const auto doc = parse(p);
  const auto& root = doc.root();
  REQUIRE(root.kind == pickle_kind::dict);
  const auto* a = doc.find(root, "a");
  REQUIRE(a);
  REQUIRE(a->kind == pickle_kind::list);
  REQUIRE(a->items.size() == 7);
  CHECK(doc.at(a->items[0]).integer == 1);
  CHECK(doc.at(a->items[1]).integer == -2);
  CHECK(doc.at(a->items[2]).integer == 300);
  CHECK(doc.at(a->items[3]).integer == 70000);
  CHECK(doc.at(a->items[4]).kind == pickle_kind::boolean);
  CHECK(doc.at(a->items[4]).flag);
  CHECK(doc.at(a->items[5]).kind == pickle_kind::none);
  CHECK(doc.at(a->items[6]).real == 1.5);
  const auto* t = doc.find(root, "b");
  REQUIRE(t);
  REQUIRE(t->kind == pickle_kind::tuple);
  CHECK(doc.at(t->items[0]).text == "x");
  CHECK(doc.at(t->items[1]).kind == pickle_kind::bytes);
  CHECK(doc.find(root, "missing") == nullptr);
}

TEST_CASE("pickle: long integers of any length, and the memo shares one value") {
  // [2**63 - 1, -2**63, 2**64, <memo 0 again>] in protocol 4 with a FRAME and MEMOIZE
  const std::string p = b({0x80, 4,    0x95, 40,   0,    0,    0,    0,    0, 0, 0, ']', 0x94, '(', 0x8a, 8, 0xff,
                           0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x8a, 8, 0, 0, 0,   0,    0,   0,    0, 0x80,
                           0x8a, 9,    0,    0,    0,    0,    0,    0,    0, 0, 1, 'h', 0,    'e', '.'});
  const auto doc = parse(p);
  const auto& l = doc.root();
  REQUIRE(l.items.size() == 4);
  CHECK(doc.at(l.items[0]).kind == pickle_kind::integer);
  CHECK(doc.at(l.items[0]).integer == INT64_MAX);
  CHECK(doc.at(l.items[1]).integer == INT64_MIN);
  CHECK(doc.at(l.items[2]).kind == pickle_kind::big_integer);
  CHECK(&doc.at(l.items[3]) == &l);  // the list contains itself, as Python allows
}

TEST_CASE("pickle: collections.OrderedDict() is a dict, nothing else is imported or called") {
  // OrderedDict([("k", 1)]) as protocol 2 writes it: GLOBAL, EMPTY_TUPLE, REDUCE, SETITEMS
  std::string od =
      b({0x80, 2, 'c'}) + "collections\nOrderedDict\n" + b({')', 'R', '(', 0x8c, 1, 'k', 'K', 1, 'u', '.'});
  const auto doc = parse(od);
  REQUIRE(doc.root().kind == pickle_kind::dict);
  CHECK(doc.find(doc.root(), "k")->integer == 1);

  fails(b({0x80, 2, 'c'}) + "os\nsystem\n" + b({0x8c, 2, 'l', 's', 0x85, 'R', '.'}),
        "refused to import 'os.system': a memory snapshot holds only dicts, lists, tuples, strings, numbers, booleans "
        "and None (pickle opcode 0x63 GLOBAL at byte 2)");
  fails(b({0x80, 4, 0x8c, 8}) + "builtins" + b({0x8c, 4}) + "eval" + b({0x93, '.'}),
        "refused to import 'builtins.eval': a memory snapshot holds only dicts, lists, tuples, strings, numbers, "
        "booleans and None (pickle opcode 0x93 STACK_GLOBAL at byte 18)");
  fails(b({0x80, 2, '}', ']', 'b', '.'}), "opcode 0x62 BUILD at byte 4");
  fails(b({0x80, 2, 'K', 1, 'K', 2, 'R', '.'}), "opcode 0x52 REDUCE at byte 6");
  fails(b({0x80, 2, 'P'}) + "x\n.", "opcode 0x50 PERSID at byte 2");
  fails(b({0x80, 5, 0x97, '.'}), "opcode 0x97 NEXT_BUFFER at byte 2");
  fails(b({0x80, 4, 0x8f, '.'}), "sets are not part of a memory snapshot");
}

TEST_CASE("pickle: corrupt or truncated input is an error naming the opcode and offset") {
  fails(b({0x80, 2, 'X', 0xff, 0xff, 0xff, 0x7f, 'a'}),
        "truncated pickle: 2147483647 bytes needed, 1 remain (pickle opcode 0x58 BINUNICODE at byte 2)");
  fails(b({0x80, 4, 0x8d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), "truncated pickle");
  fails(b({0x80, 2, ']', 'K'}), "truncated pickle: 1 bytes needed, 0 remain (pickle opcode 0x4b BININT1 at byte 3)");
  fails(b({0x80, 2, ']'}), "no STOP opcode before the end (byte 3)");
  fails(b({0x80, 2, 'a', '.'}), "the stack is empty (pickle opcode 0x61 APPEND at byte 2)");
  fails(b({0x80, 2, 'K', 1, 'K', 2, 'a', '.'}), "not a list");
  fails(b({0x80, 2, 'e', '.'}), "no MARK");
  fails(b({0x80, 2, 'h', 9, '.'}), "memo entry 9 was never stored (pickle opcode 0x68 BINGET at byte 2)");
  fails(b({0x80, 6, '.'}), "protocol 6 is newer than 5");
  fails(b({0x80, 2, 'I'}) + "1\n.", "protocol 0 (text) opcodes");
  fails(b({0x80, 2, 0xff}), "unknown opcode (pickle opcode 0xff at byte 2)");
  fails(b({0x80, 2, '(', 'K', 1, 'd', '.'}), "a key without a value");
  fails(b({0x80, 2, '.'}), "the stack is empty");
}
