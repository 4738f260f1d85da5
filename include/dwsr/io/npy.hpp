#pragma once
/// \file NumPy .npy files (format versions 1.0, 2.0 and 3.0): little-endian
/// float32 ('<f4'), complex64 ('<c8') and int64 ('<i8') arrays in C order.
///
/// Reading is split in two so that callers allocate the data through an
/// execution context (every allocation is an event): read_npy_header() says
/// what to allocate, read_npy_data() fills caller memory. load_npy() does both
/// into a std::vector, for tests and tools. Writing is atomic.

#include <bit>
#include <complex>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/cube_view.hpp"
#include "dwsr/core/dtype.hpp"
#include "dwsr/core/quote.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"
#include "dwsr/io/detail/file.hpp"
#include "dwsr/io/detail/npy_dict.hpp"

namespace dwsr::io {

static_assert(std::endian::native == std::endian::little, "dwsr's .npy reader assumes a little-endian host");

/// What a .npy header says: element type, dimensions (C order) and where the data starts.
struct npy_header {
  dtype type = dtype::float32;
  std::vector<std::uint64_t> dims;
  std::uint64_t data_offset = 0;

  /// Number of elements (product of dims; 1 for a 0-d array).
  std::uint64_t count() const noexcept {
    std::uint64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
  /// Bytes of data after the header.
  std::uint64_t data_bytes() const noexcept { return count() * size_of(type); }
  /// The array as a cube: (n) is 1x1xn, (a, b) is 1xaxb, (a, b, c) is axbxc.
  /// Throws invalid_input for 0 or more than 3 dimensions.
  shape3 cube_shape() const {
    switch (dims.size()) {
      case 1: return {1, 1, dims[0]};
      case 2: return {1, dims[0], dims[1]};
      case 3: return {dims[0], dims[1], dims[2]};
      default:
        throw invalid_input("an array of " + std::to_string(dims.size()) +
                            " dimensions is not a cube; expected 1, 2 or 3 dimensions (inline, crossline, time)");
    }
  }
};

namespace detail {

/// NumPy's descr of a dtype.
constexpr std::string_view npy_descr(dtype t) noexcept {
  constexpr std::string_view descr[] = {"<f4", "<c8", "<i8", "<i4"};  // in the order of dtype's values
  return descr[static_cast<std::size_t>(t)];
}

inline constexpr std::string_view npy_magic{"\x93NUMPY", 6};
inline constexpr const char* npy_supported =
    "supported: '<f4' (float32), '<c8' (complex64), '<i8' (int64), '<i4' (int32)";

/// The dtype of a descr, or an io_error naming the file, the descr and what is supported.
inline dtype npy_dtype(const std::filesystem::path& path, const std::string& descr) {
  if (descr.size() >= 2 && descr[0] == '>')
    throw io_error(quoted(path) + ": big-endian data (" + quote(descr) + ") is not supported; " + npy_supported +
                   "; convert with numpy: a.astype(a.dtype.newbyteorder('<'))");
  // '=' is native order, little-endian on every host dwsr supports.
  const std::string little = (!descr.empty() && descr[0] == '=') ? std::string("<").append(descr, 1) : descr;
  for (auto t : {dtype::float32, dtype::complex64, dtype::int64, dtype::int32})
    if (little == npy_descr(t)) return t;
  throw io_error(quoted(path) + ": unsupported dtype " + quote(descr) + "; " + npy_supported);
}

inline std::uint32_t read_le(const unsigned char* p, int bytes) noexcept {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace detail

/// Reads and validates the header of the .npy file at `path`. Throws io_error
/// naming the file for a missing file, bad magic, unsupported version,
/// truncated header or data, malformed dictionary, unsupported or big-endian
/// dtype, Fortran order, or more than 3 dimensions.
inline npy_header read_npy_header(const std::filesystem::path& path) {
  using detail::quoted;
  const auto file_size = detail::checked_file_size(path, ".npy");
  auto f = detail::open_for_read(path);
  unsigned char pre[12] = {};
  if (file_size < 10)
    throw io_error(quoted(path) + ": truncated .npy header: the file has " + std::to_string(file_size) +
                   " bytes, fewer than the 10-byte preamble");
  detail::read_exact(f.get(), path, 0, pre, 10, ".npy preamble");
  if (std::memcmp(pre, detail::npy_magic.data(), detail::npy_magic.size()) != 0)
    throw io_error(quoted(path) + ": not a .npy file (the first bytes are not the magic \\x93NUMPY)");
  const int major = pre[6], minor = pre[7];
  if (major < 1 || major > 3 || minor != 0)
    throw io_error(quoted(path) + ": unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + "; supported: 1.0, 2.0, 3.0");
  const std::uint64_t len_bytes = major == 1 ? 2 : 4;
  if (file_size < 8 + len_bytes)
    throw io_error(quoted(path) + ": truncated .npy header: the file ends inside the header length");
  detail::read_exact(f.get(), path, 8, pre + 8, len_bytes, ".npy header length");
  const std::uint64_t header_len = detail::read_le(pre + 8, static_cast<int>(len_bytes));
  const std::uint64_t data_offset = 8 + len_bytes + header_len;
  if (file_size < data_offset)
    throw io_error(quoted(path) + ": truncated .npy header: it declares " + std::to_string(header_len) +
                   " bytes but the file has only " + std::to_string(file_size - 8 - len_bytes) + " after the preamble");
  std::string text(header_len, '\0');
  detail::read_exact(f.get(), path, 8 + len_bytes, text.data(), header_len, ".npy header");

  detail::npy_dict dict;
  if (auto why = dict.parse(text); !why.empty())  // the text is the file's: shown escaped and shortened
    throw io_error(quoted(path) + ": malformed .npy header dictionary (" + why + "): " + quote(text, 120));
  npy_header h;
  h.type = detail::npy_dtype(path, dict.descr);
  if (dict.fortran_order && dict.shape.size() > 1)
    throw io_error(quoted(path) +
                   ": Fortran-order arrays are not supported; expected C order "
                   "(save with numpy.save(path, numpy.ascontiguousarray(a)))");
  if (dict.shape.empty() || dict.shape.size() > 3)
    throw io_error(quoted(path) + ": an array of " + std::to_string(dict.shape.size()) +
                   " dimensions is not a cube; expected 1, 2 or 3 dimensions (inline, crossline, time)");
  h.dims = std::move(dict.shape);
  h.data_offset = data_offset;
  // The byte count must fit 64 bits (a corrupt shape could claim more).
  std::uint64_t bytes = size_of(h.type);
  for (auto d : h.dims) {
    if (d != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / d)
      throw io_error(quoted(path) + ": the shape in the header overflows 64-bit byte counts");
    bytes *= d;
  }
  if (file_size - data_offset < bytes)
    throw io_error(quoted(path) + ": truncated .npy data: the header declares " + std::to_string(bytes) +
                   " bytes of data but the file has " + std::to_string(file_size - data_offset));
  return h;
}

/// Reads the data of the .npy file at `path` (whose header is `header`, from
/// read_npy_header) into dst, which holds header.data_bytes() bytes.
inline void read_npy_data(const std::filesystem::path& path, const npy_header& header, void* dst) {
  auto f = detail::open_for_read(path);
  detail::read_exact(f.get(), path, header.data_offset, dst, header.data_bytes(), ".npy data");
}

/// A cube in a std::vector: for tests and tools (operators allocate through contexts).
template <class T>
struct host_cube {
  std::vector<T> data;
  shape3 shape{};

  /// A view of the data.
  cube_view<const T> view() const noexcept { return {data.data(), shape}; }
  /// A mutable view of the data.
  cube_view<T> view() noexcept { return {data.data(), shape}; }
};

/// Reads the .npy file at `path` as a cube of T; io_error naming the file and
/// both dtypes when its dtype is not T's.
template <class T>
host_cube<T> load_npy(const std::filesystem::path& path) {
  const auto h = read_npy_header(path);
  if (h.type != dtype_of<T>())
    throw io_error(detail::quoted(path) + ": holds " + std::string(name_of(h.type)) + " data ('" +
                   std::string(detail::npy_descr(h.type)) + "') but " + std::string(name_of(dtype_of<T>())) + " ('" +
                   std::string(detail::npy_descr(dtype_of<T>())) + "') was expected");
  host_cube<T> cube;
  cube.shape = h.cube_shape();
  cube.data.resize(h.count());
  read_npy_data(path, h, cube.data.data());
  return cube;
}

/// The header block (magic, version, length, dictionary, padding) of a .npy
/// file with this descr ("<f8", ..., or a structured type's list of fields,
/// "[('a', '<u4'), ...]", written as is) and dims: version 1.0 when it fits,
/// else 2.0; padded so that the data starts on a 64-byte boundary.
inline std::string npy_header_bytes(std::string_view descr, const std::vector<std::uint64_t>& dims) {
  const std::string quote_mark = !descr.empty() && descr.front() == '[' ? "" : "'";
  std::string dict =
      "{'descr': " + quote_mark + std::string(descr) + quote_mark + ", 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < dims.size(); ++i) dict += std::to_string(dims[i]) + (i + 1 < dims.size() ? ", " : "");
  dict += dims.size() == 1 ? ",), }" : "), }";
  for (std::uint64_t len_bytes : {2u, 4u}) {
    const std::uint64_t unpadded = 8 + len_bytes + dict.size() + 1;  // + '\n'
    const std::uint64_t total = (unpadded + 63) / 64 * 64;
    const std::uint64_t header_len = total - 8 - len_bytes;
    if (len_bytes == 2 && header_len > 0xffff) continue;
    std::string out(detail::npy_magic);
    out += static_cast<char>(len_bytes == 2 ? 1 : 2);
    out += '\0';
    for (std::uint64_t b = 0; b < len_bytes; ++b) out += static_cast<char>((header_len >> (8 * b)) & 0xff);
    out += dict;
    out.append(total - out.size() - 1, ' ');
    out += '\n';
    return out;
  }
  return {};  // unreachable: a 4-byte length always fits
}

/// npy_header_bytes for one of dwsr's dtypes.
inline std::string npy_header_bytes(dtype type, const std::vector<std::uint64_t>& dims) {
  return npy_header_bytes(detail::npy_descr(type), dims);
}

/// Writes `array` to `path` as a 3-D .npy file (C order, version 1.0). The
/// write is atomic (core/atomic_file.hpp): a temporary file in the same
/// directory is renamed onto `path` when complete, so an error never leaves a
/// partial file. Throws io_error naming the path when it cannot be written,
/// invalid_input when the array has no data (a meta execution's output).
inline void write_npy(const std::filesystem::path& path, const array_ref& array) {
  if (array.data == nullptr && array.bytes() > 0)
    throw invalid_input("cannot write " + detail::quoted(path) +
                        ": the array has no data (a meta execution computes none)");
  const auto header = npy_header_bytes(array.type, {array.shape.inlines, array.shape.crosslines, array.shape.samples});
  dwsr::detail::write_atomically(path, [&](std::ostream& out) {
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(static_cast<const char*>(array.data), static_cast<std::streamsize>(array.bytes()));
  });
}

/// Writes a typed cube view to `path` (see write_npy(path, array_ref)).
template <class T>
void write_npy(const std::filesystem::path& path, cube_view<T> cube) {
  using value = std::remove_const_t<T>;
  write_npy(path, array_ref{dtype_of<value>(), const_cast<value*>(cube.data()), cube.shape()});
}

}  // namespace dwsr::io
