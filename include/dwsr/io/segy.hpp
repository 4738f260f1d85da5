#pragma once
/// \file SEG-Y files of regular 3-D post-stack surveys, through segyio's C API:
/// read into a cube (inline, crossline, time) and write cubes as SEG-Y.
///
/// Reading is split like .npy: read_segy_header() validates the file and says
/// what to allocate, read_segy_data() fills caller memory with the whole cube,
/// read_segy_samples() with part of one trace (input windows). Traces may come in
/// any order (inline-sorted, crossline-sorted or other) as long as they form a
/// full grid; the cube's axes hold the line numbers in ascending order.
/// Samples in IBM float (format 1) or IEEE float (format 5), big-endian as the
/// standard says, or little-endian (detected from the format code).

#include <fcntl.h>
#include <segyio/segy.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/core/atomic_file.hpp"
#include "dwsr/core/cube_view.hpp"
#include "dwsr/core/shape.hpp"
#include "dwsr/error.hpp"
#include "dwsr/io/detail/file.hpp"
#include "dwsr/io/detail/positioned_file.hpp"
#include "dwsr/io/detail/segy_geometry.hpp"

namespace dwsr::io {

/// Where to find the line numbers of a trace, and what to assume when the file does not say.
struct segy_options {
  int inline_byte = 189;                      ///< 1-based trace header byte of the inline number (SEG-Y rev1: 189)
  int crossline_byte = 193;                   ///< of the crossline number (SEG-Y rev1: 193)
  double fallback_sample_interval_us = 4000;  ///< used when neither header gives an interval
};

/// Sample encodings dwsr reads.
enum class segy_sample_format : std::uint8_t { ibm_float = 1, ieee_float = 5 };

/// What a SEG-Y file holds, as read_segy_header() found it.
struct segy_header {
  shape3 shape{};                       ///< (inlines, crosslines, samples)
  double sample_interval_us = 0;        ///< microseconds between samples
  bool sample_interval_in_file = true;  ///< false when the fallback was used
  segy_sample_format format = segy_sample_format::ieee_float;
  bool little_endian = false;  ///< the file's byte order (standard: big-endian)
  segy_sorting sorting = segy_sorting::inline_sorted;
  std::vector<std::int32_t> inlines;          ///< inline number of each index along axis 0 (ascending)
  std::vector<std::int32_t> crosslines;       ///< crossline number of each index along axis 1 (ascending)
  std::vector<std::uint64_t> trace_position;  ///< cube trace index of each file trace
  long trace0 = 0;                            ///< byte offset of the first trace header
  int trace_bytes = 0;                        ///< sample bytes per trace
};

namespace detail {

/// Closes a segy_file on scope exit.
struct segy_closer {
  void operator()(segy_file* f) const noexcept { segy_close(f); }
};
using unique_segy = std::unique_ptr<segy_file, segy_closer>;

/// segyio's error codes in words.
inline std::string segy_error_text(int code) {
  switch (code) {
    case SEGY_FOPEN_ERROR: return "cannot open the file";
    case SEGY_FSEEK_ERROR: return "seek failed";
    case SEGY_FREAD_ERROR: return "read failed (the file is shorter than its headers say)";
    case SEGY_FWRITE_ERROR: return "write failed (disk full?)";
    case SEGY_TRACE_SIZE_MISMATCH: return "trace size mismatch";
    case SEGY_INVALID_ARGS: return "invalid arguments";
    default: return "segyio error " + std::to_string(code);
  }
}

/// Throws io_error naming the file and what was being done unless code is SEGY_OK.
inline void segy_check(int code, const std::filesystem::path& path, const char* doing) {
  if (code != SEGY_OK) throw io_error(quoted(path) + ": " + doing + ": " + segy_error_text(code));
}

inline std::string segy_format_name(int code) {
  switch (code) {
    case 1: return "1 (4-byte IBM float)";
    case 2: return "2 (4-byte integer)";
    case 3: return "3 (2-byte integer)";
    case 4: return "4 (fixed point with gain)";
    case 5: return "5 (4-byte IEEE float)";
    case 6: return "6 (8-byte IEEE float)";
    case 8: return "8 (1-byte integer)";
    default: return std::to_string(code);
  }
}

/// Throws invalid_input unless `byte` starts a 4-byte trace header field (line numbers are 4 bytes).
inline void check_line_byte(int byte, const char* which, int standard) {
  char header[SEGY_TRACE_HEADER_SIZE] = {};
  int value = 0;
  const bool field = byte >= 1 && byte <= SEGY_TRACE_HEADER_SIZE - 3 && segy_get_field(header, byte, &value) == SEGY_OK;
  bool four_bytes = false;
  if (field) {  // a 4-byte field: setting -1 fills 4 bytes
    segy_set_field(header, byte, -1);
    four_bytes = static_cast<unsigned char>(header[byte + 2]) == 0xff;
  }
  if (!four_bytes)
    throw invalid_input(std::string(which) + " header byte " + std::to_string(byte) +
                        ": not the first byte of a 4-byte SEG-Y trace header field; the standard position is " +
                        std::to_string(standard) + " (others in use: 9, 17, 21, 181, 185, 189, 193)");
}

/// A 2-byte unsigned binary header field (segyio returns them sign-extended).
inline std::uint32_t bfield_u16(const char* bin, int field) {
  int32_t v = 0;
  segy_get_bfield(bin, field, &v);
  return static_cast<std::uint32_t>(v) & 0xffffu;
}

}  // namespace detail

/// Reads and validates the headers of the SEG-Y file at `path`: sample format,
/// sample count and interval, and every trace's line numbers, which must form a
/// full (inline x crossline) grid. Reads no samples. Throws io_error naming the
/// file and the problem (missing, truncated, unknown format, irregular
/// geometry, duplicate traces) and invalid_input for bad options.
inline segy_header read_segy_header(const std::filesystem::path& path, const segy_options& options = {}) {
  using detail::quoted;
  detail::check_line_byte(options.inline_byte, "inline", 189);
  detail::check_line_byte(options.crossline_byte, "crossline", 193);
  const auto file_size = detail::checked_file_size(path, "SEG-Y");
  constexpr std::uint64_t headers = SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE;
  if (file_size < headers)
    throw io_error(quoted(path) + ": truncated or not a SEG-Y file: " + std::to_string(file_size) +
                   " bytes, fewer than the 3600 bytes of the textual and binary headers");
  detail::unique_segy f(segy_open(path.c_str(), "rb"));
  if (!f) throw io_error(quoted(path) + ": cannot open for reading: " + std::strerror(errno));

  segy_header h;
  char bin[SEGY_BINARY_HEADER_SIZE];
  detail::segy_check(segy_binheader(f.get(), bin), path, "reading the binary header");
  int format = ::segy_format(bin);
  if (format != 1 && format != 5) {
    // A little-endian file (SEG-Y rev2 allows it) shows its format code byte-swapped.
    const int swapped = ((format & 0xff) << 8) | ((format >> 8) & 0xff);
    if (swapped == 1 || swapped == 5) {
      detail::segy_check(segy_set_format(f.get(), SEGY_LSB), path, "switching to little-endian");
      detail::segy_check(segy_binheader(f.get(), bin), path, "reading the binary header");
      format = ::segy_format(bin);
      h.little_endian = true;
    }
  }
  if (format != 1 && format != 5)
    throw io_error(quoted(path) + ": unsupported sample format code " + detail::segy_format_name(format) +
                   " in binary header bytes 3225-3226; supported: 1 (4-byte IBM float), 5 (4-byte IEEE float)");
  h.format = static_cast<segy_sample_format>(format);
  detail::segy_check(segy_set_format(f.get(), format | (h.little_endian ? SEGY_LSB : SEGY_MSB)), path,
                     "setting the sample format");
  const std::uint32_t samples = detail::bfield_u16(bin, SEGY_BIN_SAMPLES);
  if (samples == 0) throw io_error(quoted(path) + ": the binary header says 0 samples per trace (bytes 3221-3222)");
  h.trace0 = segy_trace0(bin);
  h.trace_bytes = segy_trsize(format, static_cast<int>(samples));
  if (static_cast<std::uint64_t>(h.trace0) > file_size)
    throw io_error(quoted(path) + ": truncated: the binary header announces extended textual headers up to byte " +
                   std::to_string(h.trace0) + " but the file has " + std::to_string(file_size) + " bytes");
  const std::uint64_t trace_size = SEGY_TRACE_HEADER_SIZE + static_cast<std::uint64_t>(h.trace_bytes);
  const std::uint64_t body = file_size - static_cast<std::uint64_t>(h.trace0);
  if (body % trace_size != 0)
    throw io_error(quoted(path) + ": truncated or corrupt: the " + std::to_string(body) +
                   " bytes after the headers are not a whole number of " + std::to_string(trace_size) +
                   "-byte traces (240-byte header + " + std::to_string(samples) + " samples x 4 bytes); " +
                   std::to_string(body / trace_size) + " whole traces and " + std::to_string(body % trace_size) +
                   " bytes left over");
  if (body == 0) throw io_error(quoted(path) + ": the file has headers but no traces");
  if (body / trace_size > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    throw io_error(quoted(path) + ": more than 2^31 traces; segyio cannot index them");
  const int traces = static_cast<int>(body / trace_size);

  std::vector<std::int32_t> il(static_cast<std::size_t>(traces)), xl(il.size());
  detail::segy_check(segy_field_forall(f.get(), options.inline_byte, 0, traces, 1, il.data(), h.trace0, h.trace_bytes),
                     path, "reading inline numbers");
  detail::segy_check(
      segy_field_forall(f.get(), options.crossline_byte, 0, traces, 1, xl.data(), h.trace0, h.trace_bytes), path,
      "reading crossline numbers");
  auto grid = detail::segy_grid::from(il, xl);
  if (!grid.problem.empty())
    throw io_error(quoted(path) + ": " + grid.problem + " (inline numbers from trace header byte " +
                   std::to_string(options.inline_byte) + ", crossline from byte " +
                   std::to_string(options.crossline_byte) + ")");
  h.shape = {grid.inlines.size(), grid.crosslines.size(), samples};
  h.sorting = grid.sorting;
  h.inlines = std::move(grid.inlines);
  h.crosslines = std::move(grid.crosslines);
  h.trace_position = std::move(grid.trace_position);

  // Sample interval: the binary header's, else the first trace header's, else the fallback.
  char th[SEGY_TRACE_HEADER_SIZE];
  detail::segy_check(segy_traceheader(f.get(), 0, th, h.trace0, h.trace_bytes), path, "reading trace header 1");
  int32_t trace_dt = 0;
  segy_get_field(th, SEGY_TR_SAMPLE_INTER, &trace_dt);
  const std::uint32_t bin_dt = detail::bfield_u16(bin, SEGY_BIN_INTERVAL);
  const std::uint32_t tr_dt = static_cast<std::uint32_t>(trace_dt) & 0xffffu;
  h.sample_interval_us = bin_dt ? bin_dt : tr_dt ? tr_dt : options.fallback_sample_interval_us;
  h.sample_interval_in_file = bin_dt || tr_dt;
  return h;
}

/// Reads the samples of the SEG-Y file at `path` (whose header is `header`,
/// from read_segy_header) into dst, header.shape.voxels() floats in C order.
inline void read_segy_data(const std::filesystem::path& path, const segy_header& header, float* dst) {
  using detail::quoted;
  detail::unique_segy f(segy_open(path.c_str(), "rb"));
  if (!f) throw io_error(quoted(path) + ": cannot open for reading: " + std::strerror(errno));
  const int format = static_cast<int>(header.format);
  detail::segy_check(segy_set_format(f.get(), format | (header.little_endian ? SEGY_LSB : SEGY_MSB)), path,
                     "setting the sample format");
  const auto samples = header.shape.samples;
  for (std::size_t k = 0; k < header.trace_position.size(); ++k) {
    float* trace = dst + header.trace_position[k] * samples;
    const int err = segy_readtrace(f.get(), static_cast<int>(k), trace, header.trace0, header.trace_bytes);
    if (err != SEGY_OK)
      throw io_error(quoted(path) + ": reading trace " + std::to_string(k + 1) + ": " + detail::segy_error_text(err) +
                     (err == SEGY_FREAD_ERROR || err == SEGY_FSEEK_ERROR ? " (was the file truncated?)" : ""));
    segy_to_native(format, static_cast<long long>(samples), trace);
  }
}

/// Reads samples [t0, t0 + count) of file trace `k` (0-based, in file order)
/// of the SEG-Y file whose header is `header`, opened as `file`, into dst as
/// native floats, decoded exactly as read_segy_data decodes them (byte order,
/// IBM float): positioned reads, no stdio buffer, no scratch memory;
/// thread-safe. Throws io_error naming the file when it is shorter than the
/// header says.
inline void read_segy_samples(const detail::positioned_file& file, const segy_header& header, std::uint64_t k,
                              std::uint64_t t0, std::uint64_t count, float* dst) {
  const std::uint64_t trace_size = SEGY_TRACE_HEADER_SIZE + static_cast<std::uint64_t>(header.trace_bytes);
  const std::uint64_t offset =
      static_cast<std::uint64_t>(header.trace0) + k * trace_size + SEGY_TRACE_HEADER_SIZE + t0 * sizeof(float);
  file.read(offset, dst, count * sizeof(float), "SEG-Y trace samples");
  // segyio hands samples on big-endian (it swaps a little-endian file's words
  // as it reads them), then segy_to_native converts to the host's floats.
  if (header.little_endian) {
    auto* bytes = reinterpret_cast<unsigned char*>(dst);
    for (std::uint64_t i = 0; i < count; ++i, bytes += 4) std::swap(bytes[0], bytes[3]), std::swap(bytes[1], bytes[2]);
  }
  segy_to_native(static_cast<int>(header.format), static_cast<long long>(count), dst);
}

/// How write_segy numbers and labels what it writes.
struct segy_write_options {
  int inline_byte = 189;                 ///< trace header byte for the inline number
  int crossline_byte = 193;              ///< for the crossline number
  std::int32_t first_inline = 1;         ///< number of the cube's first inline (step 1)
  std::int32_t first_crossline = 1;      ///< of its first crossline (step 1)
  std::string text = "written by dwsr";  ///< put on line C 1 of the textual header
};

/// Writes `cube` to `path` as SEG-Y rev1: big-endian IEEE float samples
/// (format 5), inline-sorted, line numbers at the options' header bytes, sample
/// interval `sample_interval_us` (1..65535 microseconds). Atomic like
/// write_npy: an error leaves no partial file. Throws invalid_input for shapes
/// or intervals SEG-Y cannot hold, io_error naming the path when writing fails.
inline void write_segy(const std::filesystem::path& path, cube_view<const float> cube, double sample_interval_us,
                       const segy_write_options& options = {}) {
  using detail::quoted;
  detail::check_line_byte(options.inline_byte, "inline", 189);
  detail::check_line_byte(options.crossline_byte, "crossline", 193);
  const auto s = cube.shape();
  if (cube.data() == nullptr && s.voxels() > 0)
    throw invalid_input("cannot write " + quoted(path) + ": the cube has no data (a meta execution computes none)");
  if (s.voxels() == 0) throw invalid_input("cannot write an empty cube " + to_string(s) + " as SEG-Y");
  if (s.samples > 65535)
    throw invalid_input("cube " + to_string(s) + ": SEG-Y rev1 holds at most 65535 samples per trace");
  if (s.traces() > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
    throw invalid_input("cube " + to_string(s) + ": more than 2^31 traces");
  const auto last_il = static_cast<std::int64_t>(options.first_inline) + static_cast<std::int64_t>(s.inlines) - 1;
  const auto last_xl = static_cast<std::int64_t>(options.first_crossline) + static_cast<std::int64_t>(s.crosslines) - 1;
  if (last_il > std::numeric_limits<std::int32_t>::max() || last_xl > std::numeric_limits<std::int32_t>::max())
    throw invalid_input("cube " + to_string(s) + ": line numbers overflow 32 bits");
  if (!(sample_interval_us >= 1 && sample_interval_us <= 65535) ||
      sample_interval_us != static_cast<double>(static_cast<std::uint32_t>(sample_interval_us)))
    throw invalid_input("sample interval " + std::to_string(sample_interval_us) +
                        " us: SEG-Y stores a whole number of microseconds in 1..65535 (4 ms is 4000)");
  const auto dt = static_cast<int>(sample_interval_us);
  const int samples = static_cast<int>(s.samples);
  const int trace_bytes = segy_trsize(SEGY_IEEE_FLOAT_4_BYTE, samples);

  dwsr::detail::write_atomically(path, [&](const std::filesystem::path& tmp) {
    detail::unique_segy f(segy_open(tmp.c_str(), "w+b"));
    if (!f) throw io_error(quoted(path) + ": cannot create the file: " + std::strerror(errno));
    detail::segy_check(segy_set_format(f.get(), int{SEGY_IEEE_FLOAT_4_BYTE} | int{SEGY_MSB}), path,
                       "setting the format");
    std::string text(SEGY_TEXT_HEADER_SIZE, ' ');
    auto line = [&](int n, const std::string& content) {
      std::string l(1, 'C');
      l += n < 10 ? " " : "";
      l += std::to_string(n) + " " + content;
      l.resize(80, ' ');
      text.replace(static_cast<std::size_t>(n - 1) * 80, 80, l);
    };
    for (int n = 1; n <= 40; ++n) line(n, "");
    line(1, options.text);
    line(2, "CUBE " + to_string(s) + " (INLINE x CROSSLINE x SAMPLE), INLINE-SORTED");
    line(3, "SAMPLE INTERVAL " + std::to_string(dt) + " US, IEEE FLOAT (FORMAT 5)");
    line(4, "INLINE BYTE " + std::to_string(options.inline_byte) + ", CROSSLINE BYTE " +
                std::to_string(options.crossline_byte));
    line(40, "END TEXTUAL HEADER");
    detail::segy_check(segy_write_textheader(f.get(), 0, text.c_str()), path, "writing the textual header");

    char bin[SEGY_BINARY_HEADER_SIZE] = {};
    segy_set_bfield(bin, SEGY_BIN_TRACES, static_cast<int>(s.crosslines < 32767 ? s.crosslines : 0));
    segy_set_bfield(bin, SEGY_BIN_INTERVAL, dt);
    segy_set_bfield(bin, SEGY_BIN_SAMPLES, samples);
    segy_set_bfield(bin, SEGY_BIN_FORMAT, SEGY_IEEE_FLOAT_4_BYTE);
    segy_set_bfield(bin, SEGY_BIN_SORTING_CODE, 4);  // horizontally stacked
    segy_set_bfield(bin, SEGY_BIN_MEASUREMENT_SYSTEM, 1);
    segy_set_bfield(bin, SEGY_BIN_SEGY_REVISION, 0x0100);  // rev 1.0
    segy_set_bfield(bin, SEGY_BIN_TRACE_FLAG, 1);          // fixed-length traces
    detail::segy_check(segy_write_binheader(f.get(), bin), path, "writing the binary header");
    const long trace0 = SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE;

    std::vector<float> buf(s.samples);
    for (std::uint64_t i = 0; i < s.traces(); ++i) {
      const int k = static_cast<int>(i);
      char th[SEGY_TRACE_HEADER_SIZE] = {};
      segy_set_field(th, SEGY_TR_SEQ_LINE, k + 1);
      segy_set_field(th, SEGY_TR_SEQ_FILE, k + 1);
      segy_set_field(th, SEGY_TR_TRACE_ID, 1);  // seismic data
      segy_set_field(th, SEGY_TR_SAMPLE_COUNT, samples);
      segy_set_field(th, SEGY_TR_SAMPLE_INTER, dt);
      segy_set_field(th, options.inline_byte, options.first_inline + static_cast<std::int32_t>(i / s.crosslines));
      segy_set_field(th, options.crossline_byte, options.first_crossline + static_cast<std::int32_t>(i % s.crosslines));
      detail::segy_check(segy_write_traceheader(f.get(), k, th, trace0, trace_bytes), path, "writing a trace header");
      const auto tr = cube.trace(i);
      std::copy(tr.begin(), tr.end(), buf.begin());
      segy_from_native(SEGY_IEEE_FLOAT_4_BYTE, samples, buf.data());
      detail::segy_check(segy_writetrace(f.get(), k, buf.data(), trace0, trace_bytes), path, "writing a trace");
    }
    detail::segy_check(segy_close(f.release()), path, "closing the file");
  });
}

}  // namespace dwsr::io
