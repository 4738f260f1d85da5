#pragma once
/// \file A small, safe reader for the part of Python's pickle format that a
/// PyTorch memory snapshot uses (`torch.cuda.memory._dump_snapshot`): dicts,
/// lists, tuples, str, bytes, int, float, bool, None and the memo, in
/// protocols 1 to 5. It never imports or calls anything: an opcode that would
/// (GLOBAL, REDUCE, BUILD, NEWOBJ, PERSID, ...) is refused with its name and
/// byte offset, except `collections.OrderedDict()`, which becomes a dict.
///
/// The result is a graph of values (the memo lets one value appear in several
/// places, as in Python): nothing is copied, strings point into the input.
/// Memory is linear in the input's size: each opcode makes at most one value
/// and one reference, and a length read from the input is checked against
/// the bytes remaining before it is used.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dwsr/error.hpp"

namespace dwsr::sim::detail {

/// What a pickled value is.
enum class pickle_kind : std::uint8_t { none, boolean, integer, big_integer, real, text, bytes, list, tuple, dict };

/// One value: a scalar, a string (into the input), or a container of values.
struct pickle_value {
  pickle_kind kind = pickle_kind::none;
  bool flag = false;                 ///< a boolean's value
  std::int64_t integer = 0;          ///< an integer's value (big_integer: does not fit 64 bits)
  double real = 0;                   ///< a float's value
  std::string_view text;             ///< str (UTF-8) or bytes
  std::vector<std::uint32_t> items;  ///< list and tuple: values; dict: key, value, key, value, ...
};

/// A parsed pickle: its values and the top one.
class pickle_document {
 public:
  /// The value the pickle stores (what pickle.load returns).
  const pickle_value& root() const noexcept { return values_[root_]; }
  /// Bytes of the pickle.
  std::size_t bytes() const noexcept { return data_.size(); }
  /// Value number i (an entry of some value's items).
  const pickle_value& at(std::uint32_t i) const noexcept { return values_[i]; }
  /// The value stored under a str key in a dict (the last one, as Python keeps); null when absent.
  const pickle_value* find(const pickle_value& dict, std::string_view key) const noexcept {
    if (dict.kind != pickle_kind::dict) return nullptr;
    for (auto i = dict.items.size(); i >= 2; i -= 2) {
      const auto& k = values_[dict.items[i - 2]];
      if (k.kind == pickle_kind::text && k.text == key) return &values_[dict.items[i - 1]];
    }
    return nullptr;
  }

 private:
  friend class pickle_reader;
  std::string data_;
  std::vector<pickle_value> values_;
  std::uint32_t root_ = 0;
};

/// Parses pickles; see the file comment.
class pickle_reader {
 public:
  /// Parses `data`; errors are invalid_input naming `name`, the opcode and its byte offset.
  static pickle_document parse(std::string data, const std::string& name) {
    pickle_reader r(std::move(data), name);
    r.run();
    return std::move(r.doc_);
  }

 private:
  pickle_reader(std::string data, const std::string& name) : name_(name) { doc_.data_ = std::move(data); }

  std::string_view in() const noexcept { return doc_.data_; }

  [[noreturn]] void fail(const std::string& why) const {
    throw invalid_input(name_ + ": " + why + " (pickle opcode " + opcode_name() + " at byte " + std::to_string(op_at_) +
                        ")");
  }
  std::string opcode_name() const {
    static constexpr char hex[] = "0123456789abcdef";
    std::string s = "0x";
    s += hex[op_ >> 4];
    s += hex[op_ & 15];
    const char* n = known_name(op_);
    if (n) {
      s += ' ';
      s += n;
    }
    return s;
  }
  static const char* known_name(unsigned char op) noexcept {
    switch (op) {
      case 0x80: return "PROTO";
      case 0x95: return "FRAME";
      case '.': return "STOP";
      case '(': return "MARK";
      case '0': return "POP";
      case '1': return "POP_MARK";
      case '2': return "DUP";
      case 'N': return "NONE";
      case 0x88: return "NEWTRUE";
      case 0x89: return "NEWFALSE";
      case 'J': return "BININT";
      case 'K': return "BININT1";
      case 'M': return "BININT2";
      case 0x8a: return "LONG1";
      case 0x8b: return "LONG4";
      case 'G': return "BINFLOAT";
      case 0x8c: return "SHORT_BINUNICODE";
      case 'X': return "BINUNICODE";
      case 0x8d: return "BINUNICODE8";
      case 'C': return "SHORT_BINBYTES";
      case 'B': return "BINBYTES";
      case 0x8e: return "BINBYTES8";
      case 0x96: return "BYTEARRAY8";
      case 'U': return "SHORT_BINSTRING";
      case 'T': return "BINSTRING";
      case '}': return "EMPTY_DICT";
      case 'd': return "DICT";
      case 's': return "SETITEM";
      case 'u': return "SETITEMS";
      case ']': return "EMPTY_LIST";
      case 'l': return "LIST";
      case 'a': return "APPEND";
      case 'e': return "APPENDS";
      case ')': return "EMPTY_TUPLE";
      case 't': return "TUPLE";
      case 0x85: return "TUPLE1";
      case 0x86: return "TUPLE2";
      case 0x87: return "TUPLE3";
      case 'q': return "BINPUT";
      case 'r': return "LONG_BINPUT";
      case 0x94: return "MEMOIZE";
      case 'h': return "BINGET";
      case 'j': return "LONG_BINGET";
      case 'c': return "GLOBAL";
      case 0x93: return "STACK_GLOBAL";
      case 'R': return "REDUCE";
      case 'b': return "BUILD";
      case 0x81: return "NEWOBJ";
      case 0x92: return "NEWOBJ_EX";
      case 'i': return "INST";
      case 'o': return "OBJ";
      case 'P': return "PERSID";
      case 'Q': return "BINPERSID";
      case 0x82: return "EXT1";
      case 0x83: return "EXT2";
      case 0x84: return "EXT4";
      case 0x8f: return "EMPTY_SET";
      case 0x90: return "ADDITEMS";
      case 0x91: return "FROZENSET";
      case 0x97: return "NEXT_BUFFER";
      case 0x98: return "READONLY_BUFFER";
      case 'I': return "INT";
      case 'L': return "LONG";
      case 'F': return "FLOAT";
      case 'S': return "STRING";
      case 'V': return "UNICODE";
      case 'p': return "PUT";
      case 'g': return "GET";
      default: return nullptr;
    }
  }

  // Reads n bytes after the opcode; checks them against what remains first.
  std::string_view take(std::uint64_t n) {
    const auto left = in().size() - pos_;
    if (n > left) fail("truncated pickle: " + std::to_string(n) + " bytes needed, " + std::to_string(left) + " remain");
    const auto s = in().substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::uint64_t little(std::size_t n) {
    const auto s = take(n);
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = v << 8 | static_cast<unsigned char>(s[i]);
    return v;
  }

  std::uint32_t make(pickle_value v) {
    doc_.values_.push_back(std::move(v));
    return static_cast<std::uint32_t>(doc_.values_.size() - 1);
  }
  void push_new(pickle_value v) { stack_.push_back(make(std::move(v))); }
  void push_text(pickle_kind k, std::string_view s) {
    pickle_value v;
    v.kind = k;
    v.text = s;
    push_new(std::move(v));
  }
  void push_integer(std::int64_t i) {
    pickle_value v;
    v.kind = pickle_kind::integer;
    v.integer = i;
    push_new(std::move(v));
  }
  std::uint32_t pop() {
    if (stack_.size() <= base()) fail("corrupt pickle: the stack is empty");
    const auto v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::uint32_t top() const {
    if (stack_.size() <= base()) fail("corrupt pickle: the stack is empty");
    return stack_.back();
  }
  std::size_t base() const noexcept { return marks_.empty() ? 0 : marks_.back(); }
  // Pops the values above the last mark, and the mark.
  std::vector<std::uint32_t> pop_mark() {
    if (marks_.empty()) fail("corrupt pickle: no MARK before it");
    const auto from = marks_.back();
    marks_.pop_back();
    std::vector<std::uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    return items;
  }
  pickle_value& target(pickle_kind want) {
    auto& v = doc_.values_[top()];
    if (v.kind != want)
      fail(want == pickle_kind::dict ? "corrupt pickle: items set on a value that is not a dict"
                                     : "corrupt pickle: items appended to a value that is not a list");
    return v;
  }
  void set_items(const std::vector<std::uint32_t>& kv) {
    if (kv.size() % 2) fail("corrupt pickle: a key without a value");
    auto& d = target(pickle_kind::dict);
    d.items.insert(d.items.end(), kv.begin(), kv.end());
  }
  void tuple_of(std::vector<std::uint32_t> items) {
    pickle_value v;
    v.kind = pickle_kind::tuple;
    v.items = std::move(items);
    push_new(std::move(v));
  }
  void memo_put(std::uint64_t key) { memo_[key] = top(); }
  void memo_get(std::uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("corrupt pickle: memo entry " + std::to_string(key) + " was never stored");
    stack_.push_back(it->second);
  }
  // Two's complement, little-endian, of any length: an int64 when it fits.
  void push_long(std::string_view bytes) {
    pickle_value v;
    v.kind = pickle_kind::integer;
    const bool negative = !bytes.empty() && (static_cast<unsigned char>(bytes.back()) & 0x80);
    const unsigned char fill = negative ? 0xff : 0x00;
    std::size_t n = bytes.size();
    while (n > 8 && static_cast<unsigned char>(bytes[n - 1]) == fill) --n;  // sign extension beyond 64 bits
    std::uint64_t u = negative ? ~std::uint64_t{0} : 0;
    for (std::size_t i = std::min<std::size_t>(n, 8); i-- > 0;) u = (u << 8) | static_cast<unsigned char>(bytes[i]);
    if (n > 8 || (n == 8 && ((u >> 63) != 0) != negative)) v.kind = pickle_kind::big_integer;
    v.integer = static_cast<std::int64_t>(u);
    push_new(std::move(v));
  }
  [[noreturn]] void refuse() const {
    fail(
        "refused: a memory snapshot holds only dicts, lists, tuples, strings, numbers, booleans and None, and "
        "this opcode would import or call code");
  }

  void run() {
    if (in().size() >= (std::size_t{1} << 32)) {
      op_at_ = 0;
      fail("pickle too large: this reader takes files up to 4 GiB");
    }
    while (true) {
      if (pos_ >= in().size()) {
        op_at_ = pos_;
        op_ = 0;
        throw invalid_input(name_ + ": truncated pickle: no STOP opcode before the end (byte " + std::to_string(pos_) +
                            ")");
      }
      op_at_ = pos_;
      op_ = static_cast<unsigned char>(in()[pos_++]);
      switch (op_) {
        case 0x80: {
          const auto p = little(1);
          if (p > 5) fail("pickle protocol " + std::to_string(p) + " is newer than 5, the newest this reader knows");
          break;
        }
        case 0x95: little(8); break;  // FRAME: a length hint; the opcodes follow as usual
        case '.': doc_.root_ = pop(); return;
        case '(': marks_.push_back(stack_.size()); break;
        case '0': pop(); break;
        case '1': pop_mark(); break;
        case '2': stack_.push_back(top()); break;
        case 'N': push_new({}); break;
        case 0x88:
        case 0x89: {
          pickle_value v;
          v.kind = pickle_kind::boolean;
          v.flag = op_ == 0x88;
          push_new(std::move(v));
          break;
        }
        case 'J': push_integer(static_cast<std::int32_t>(static_cast<std::uint32_t>(little(4)))); break;
        case 'K': push_integer(static_cast<std::int64_t>(little(1))); break;
        case 'M': push_integer(static_cast<std::int64_t>(little(2))); break;
        case 0x8a: push_long(take(little(1))); break;
        case 0x8b: {
          const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(little(4)));
          if (n < 0) fail("corrupt pickle: negative length");
          push_long(take(static_cast<std::uint64_t>(n)));
          break;
        }
        case 'G': {
          const auto s = take(8);
          std::uint64_t u = 0;
          for (char c : s) u = u << 8 | static_cast<unsigned char>(c);  // big-endian
          pickle_value v;
          v.kind = pickle_kind::real;
          v.real = std::bit_cast<double>(u);
          push_new(std::move(v));
          break;
        }
        case 0x8c: push_text(pickle_kind::text, take(little(1))); break;
        case 'X': push_text(pickle_kind::text, take(little(4))); break;
        case 0x8d: push_text(pickle_kind::text, take(little(8))); break;
        case 'C': push_text(pickle_kind::bytes, take(little(1))); break;
        case 'B': push_text(pickle_kind::bytes, take(little(4))); break;
        case 0x8e:
        case 0x96: push_text(pickle_kind::bytes, take(little(8))); break;
        case 'U': push_text(pickle_kind::text, take(little(1))); break;  // Python 2 str: read as text
        case 'T': {
          const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(little(4)));
          if (n < 0) fail("corrupt pickle: negative length");
          push_text(pickle_kind::text, take(static_cast<std::uint64_t>(n)));
          break;
        }
        case '}': {
          pickle_value v;
          v.kind = pickle_kind::dict;
          push_new(std::move(v));
          break;
        }
        case 'd': {
          auto kv = pop_mark();
          if (kv.size() % 2) fail("corrupt pickle: a key without a value");
          pickle_value v;
          v.kind = pickle_kind::dict;
          v.items = std::move(kv);
          push_new(std::move(v));
          break;
        }
        case 's': {
          const auto value = pop(), key = pop();
          set_items({key, value});
          break;
        }
        case 'u': set_items(pop_mark()); break;
        case ']': {
          pickle_value v;
          v.kind = pickle_kind::list;
          push_new(std::move(v));
          break;
        }
        case 'l': {
          pickle_value v;
          v.kind = pickle_kind::list;
          v.items = pop_mark();
          push_new(std::move(v));
          break;
        }
        case 'a': {
          const auto value = pop();
          target(pickle_kind::list).items.push_back(value);
          break;
        }
        case 'e': {
          const auto values = pop_mark();
          auto& l = target(pickle_kind::list);
          l.items.insert(l.items.end(), values.begin(), values.end());
          break;
        }
        case ')': tuple_of({}); break;
        case 't': tuple_of(pop_mark()); break;
        case 0x85:
        case 0x86:
        case 0x87: {
          std::vector<std::uint32_t> items(static_cast<std::size_t>(op_ - 0x84));
          for (auto i = items.size(); i-- > 0;) items[i] = pop();
          tuple_of(std::move(items));
          break;
        }
        case 'q': memo_put(little(1)); break;
        case 'r': memo_put(little(4)); break;
        case 0x94: memo_put(memo_.size()); break;
        case 'h': memo_get(little(1)); break;
        case 'j': memo_get(little(4)); break;
        case 'c': {  // GLOBAL "module\nname\n": only collections.OrderedDict
          const auto rest = in().substr(pos_);
          const auto a = rest.find('\n');
          const auto b = a == std::string_view::npos ? a : rest.find('\n', a + 1);
          if (b == std::string_view::npos) fail("truncated pickle: GLOBAL without its two lines");
          const auto module = rest.substr(0, a), attr = rest.substr(a + 1, b - a - 1);
          pos_ += b + 1;
          push_global(module, attr);
          break;
        }
        case 0x93: {
          const auto attr = pop(), module = pop();
          if (at(module).kind != pickle_kind::text || at(attr).kind != pickle_kind::text)
            fail("corrupt pickle: STACK_GLOBAL needs two strings");
          push_global(at(module).text, at(attr).text);
          break;
        }
        case 'R':
        case 0x81: {  // REDUCE / NEWOBJ: only OrderedDict() with no arguments
          const auto args = pop(), callable = pop();
          if (callable != ordered_dict_ || at(args).kind != pickle_kind::tuple || !at(args).items.empty()) refuse();
          pickle_value v;
          v.kind = pickle_kind::dict;
          push_new(std::move(v));
          break;
        }
        case 'I':
        case 'L':
        case 'F':
        case 'S':
        case 'V':
        case 'p':
        case 'g': fail("protocol 0 (text) opcodes are not read; write the snapshot with pickle protocol 2 or later");
        case 'b':
        case 0x92:
        case 'i':
        case 'o':
        case 'P':
        case 'Q':
        case 0x82:
        case 0x83:
        case 0x84:
        case 0x97:
        case 0x98: refuse();
        case 0x8f:
        case 0x90:
        case 0x91: fail("refused: sets are not part of a memory snapshot");
        default: fail("unknown opcode");
      }
    }
  }

  const pickle_value& at(std::uint32_t i) const noexcept { return doc_.values_[i]; }

  void push_global(std::string_view module, std::string_view attr) {
    if (module != "collections" || attr != "OrderedDict")
      fail("refused to import '" + std::string(module.substr(0, 64)) + "." + std::string(attr.substr(0, 64)) +
           "': a memory snapshot holds only dicts, lists, tuples, strings, numbers, booleans and None");
    if (ordered_dict_ == no_value) ordered_dict_ = make({});
    stack_.push_back(ordered_dict_);
  }

  static constexpr std::uint32_t no_value = ~std::uint32_t{0};
  const std::string& name_;
  pickle_document doc_;
  std::size_t pos_ = 0, op_at_ = 0;
  unsigned char op_ = 0;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, std::uint32_t> memo_;
  std::uint32_t ordered_dict_ = no_value;  // the one value standing for the class collections.OrderedDict
};

/// Parses a pickle held in `data` (see pickle_reader).
inline pickle_document parse_pickle(std::string data, const std::string& name) {
  return pickle_reader::parse(std::move(data), name);
}

}  // namespace dwsr::sim::detail
