#pragma once
/// \file Where an input cube comes from, behind one interface: a float32 .npy
/// file, a SEG-Y file, or a synthetic cube. open_source() checks the spec and
/// reads headers; read() fills caller memory with the whole cube and
/// read_window() with one window (chunked runs read each block's window into
/// a buffer of their worker's context). Every source reads a window alone,
/// straight into the caller's memory: positioned reads of the window's
/// contiguous runs (.npy) or spans of consecutive traces (SEG-Y), or the
/// window's traces generated one by one (synthetic). No source holds samples
/// of its own (SEG-Y's span buffer is 64 KiB on the stack), so the buffers the
/// plan predicts are all the input memory there is; a source keeps only its
/// headers (SEG-Y: 8 bytes a trace, 16 for unsorted files).

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dwsr/core/shape.hpp"
#include "dwsr/core/window_runs.hpp"
#include "dwsr/error.hpp"
#include "dwsr/io/detail/positioned_file.hpp"
#include "dwsr/io/npy.hpp"
#include "dwsr/io/segy.hpp"
#include "dwsr/io/synthetic.hpp"

namespace dwsr::io {

/// An input cube whose header is known and whose samples are read on demand.
class cube_source {
 public:
  virtual ~cube_source() = default;
  /// The cube's (inline, crossline, time) extent.
  virtual shape3 shape() const = 0;
  /// One line for people, e.g. "synthetic 64x64x512 seed 1".
  virtual std::string describe() const = 0;
  /// Fills dst (shape().voxels() floats, C order), using up to `threads` threads where that helps.
  virtual void read(float* dst, std::size_t threads) const = 0;
  /// Fills dst with the window [lo, hi) of the cube, (hi - lo) voxels in C
  /// order, reading only what the window needs; thread-safe (workers read
  /// their blocks' windows at once). Throws invalid_input for a window outside
  /// the cube.
  virtual void read_window(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi,
                           float* dst) const = 0;
  /// Milliseconds between samples when the source says (SEG-Y headers, synthetic: 4 ms), else none (.npy).
  virtual std::optional<double> sample_interval_ms() const { return std::nullopt; }

 protected:
  /// Throws invalid_input unless lo <= hi <= shape() on every axis.
  void check_window(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi) const {
    const auto s = shape();
    auto text = [](const std::array<std::uint64_t, 3>& p) {
      return "(" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ", " + std::to_string(p[2]) + ")";
    };
    for (std::size_t a = 0; a < 3; ++a)
      if (lo[a] > hi[a] || hi[a] > s[a])
        throw invalid_input("window [" + text(lo) + ", " + text(hi) + ") of the " + describe() +
                            " cube: expected lo <= hi <= " + text(s.as_array()) + " on every axis");
  }
  /// Checks the window, then calls part(i, x, t0, n, dst) for each of its
  /// traces in C order, with dst advancing n samples a trace.
  template <class Part>
  void for_each_window_trace(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi, float* dst,
                             Part&& part) const {
    check_window(lo, hi);
    const auto n = hi[2] - lo[2];
    for (auto i = lo[0]; i < hi[0]; ++i)
      for (auto x = lo[1]; x < hi[1]; ++x, dst += n) part(i, x, lo[2], n, dst);
  }
};

/// A float32 .npy file.
class npy_source final : public cube_source {
 public:
  /// Reads and checks the header; invalid_input unless the data are float32.
  explicit npy_source(std::filesystem::path path)
      : path_(std::move(path)), header_(read_npy_header(path_)), file_(path_) {
    if (header_.type != dtype::float32)
      throw invalid_input(detail::quoted(path_) + " holds " + std::string(name_of(header_.type)) +
                          " data; input cubes must be float32 ('<f4'); convert with numpy: a.astype(numpy.float32)");
    shape_ = header_.cube_shape();
    if (shape_.voxels() == 0)
      throw invalid_input(detail::quoted(path_) + " holds an empty array (" + to_string(shape_) +
                          "); an input cube needs at least one sample");
  }
  shape3 shape() const override { return shape_; }
  std::string describe() const override {
    return "npy " + detail::quoted(path_) + " " + to_string(shape_) + " float32";
  }
  void read(float* dst, std::size_t) const override { read_npy_data(path_, header_, dst); }
  /// One positioned read, straight into dst, per run of the window that is
  /// contiguous in the file (core/window_runs.hpp): a window spanning the
  /// samples is one read per inline, one spanning crosslines too is one read
  /// in all. Never the whole cube; no scratch memory.
  void read_window(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi,
                   float* dst) const override {
    check_window(lo, hi);
    const cube_layout file{shape_, {}}, window{{hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]}, lo};
    for_each_window_run(lo, hi, file, window, [&](std::uint64_t at, std::uint64_t to, std::uint64_t n) {
      file_.read(header_.data_offset + at * sizeof(float), dst + to, n * sizeof(float), ".npy data");
    });
  }
  /// The file.
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  npy_header header_;
  shape3 shape_{};
  detail::positioned_file file_;
};

/// A SEG-Y file of a regular 3-D survey.
class segy_source final : public cube_source {
 public:
  /// Reads and checks every header (not the samples).
  explicit segy_source(std::filesystem::path path, const segy_options& options = {})
      : path_(std::move(path)), header_(read_segy_header(path_, options)), file_(path_) {
    if (header_.sorting == segy_sorting::unsorted) {  // invert the header's file trace -> cube position map
      file_trace_.resize(header_.trace_position.size());
      for (std::uint64_t k = 0; k < file_trace_.size(); ++k) file_trace_[header_.trace_position[k]] = k;
    }
  }
  shape3 shape() const override { return header_.shape; }
  std::string describe() const override {
    std::string d = "SEG-Y " + detail::quoted(path_) + " " + to_string(header_.shape) + ", ";
    d += name_of(header_.format);
    d += header_.little_endian ? " little-endian, " : ", ";
    d += name_of(header_.sorting);
    char ms[32];
    std::snprintf(ms, sizeof ms, ", %g ms", header_.sample_interval_us / 1000);
    d += ms;
    if (!header_.sample_interval_in_file) d += " (assumed)";
    return d;
  }
  void read(float* dst, std::size_t) const override { read_segy_data(path_, header_, dst); }
  /// Positioned reads of the window's time runs, never the whole cube: the
  /// window's traces that follow each other in the file (a row of crosslines
  /// of an inline-sorted file) are read a span at a time through a 64 KiB
  /// stack buffer (read_segy_traces); no heap memory.
  void read_window(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi,
                   float* dst) const override {
    std::uint64_t first = 0, traces = 0;  // the pending span of consecutive file traces
    float* span_dst = dst;
    auto flush = [&] {
      if (traces > 0) read_segy_traces(file_, header_, first, traces, lo[2], hi[2] - lo[2], span_dst);
    };
    for_each_window_trace(lo, hi, dst, [&](auto i, auto x, auto, auto, float* trace) {
      const auto k = file_trace(i, x);
      if (traces > 0 && k == first + traces) {
        ++traces;
        return;
      }
      flush();
      first = k, traces = 1, span_dst = trace;
    });
    flush();
  }
  std::optional<double> sample_interval_ms() const override {
    if (!header_.sample_interval_in_file) return std::nullopt;
    return header_.sample_interval_us / 1000;
  }
  /// The headers as read.
  const segy_header& header() const noexcept { return header_; }

 private:
  /// The file trace (0-based) at inline index i, crossline index x.
  std::uint64_t file_trace(std::uint64_t i, std::uint64_t x) const noexcept {
    const auto& s = header_.shape;
    switch (header_.sorting) {
      case segy_sorting::inline_sorted: return i * s.crosslines + x;
      case segy_sorting::crossline_sorted: return x * s.inlines + i;
      case segy_sorting::unsorted: break;
    }
    return file_trace_[i * s.crosslines + x];
  }

  std::filesystem::path path_;
  segy_header header_;
  detail::positioned_file file_;
  std::vector<std::uint64_t> file_trace_;  ///< file trace at each cube trace; unsorted files only (8 B a trace)
};

/// A deterministic synthetic cube (see synthetic.hpp).
class synthetic_source final : public cube_source {
 public:
  synthetic_source(shape3 shape, std::uint64_t seed) : shape_(shape), seed_(seed) {}
  shape3 shape() const override { return shape_; }
  std::string describe() const override { return "synthetic " + to_string(shape_) + " seed " + std::to_string(seed_); }
  void read(float* dst, std::size_t threads) const override { generate_synthetic(shape_, seed_, dst, threads); }
  /// Generates the window's traces alone, each written straight into dst (see
  /// synthetic_trace), after the cube's noise std is computed once per source
  /// (streamed, on the first call); no scratch memory.
  void read_window(const std::array<std::uint64_t, 3>& lo, const std::array<std::uint64_t, 3>& hi,
                   float* dst) const override {
    const double noise = noise_std();
    for_each_window_trace(lo, hi, dst, [&](auto i, auto x, auto t0, auto n, float* trace) {
      synthetic_trace(seed_, shape_.samples, noise, i * shape_.crosslines + x, t0, std::span<float>(trace, n));
    });
  }
  std::optional<double> sample_interval_ms() const override { return synthetic_recipe::sample_interval_s * 1000; }
  /// The seed.
  std::uint64_t seed() const noexcept { return seed_; }
  /// The cube's noise standard deviation (synthetic_noise_std), computed on
  /// first use, on one thread (the caller may be a worker of a parallel run).
  double noise_std() const {
    std::call_once(noise_once_, [&] { noise_std_ = synthetic_noise_std(shape_, seed_); });
    return noise_std_;
  }

 private:
  shape3 shape_;
  std::uint64_t seed_;
  mutable std::once_flag noise_once_;
  mutable double noise_std_ = 0;
};

/// The spec syntax, for messages and help texts.
inline constexpr std::string_view source_spec_help =
    "a .npy file (float32), a .sgy/.segy file, or synthetic:IxXxT[:SEED] (e.g. synthetic:64x64x512:1)";

/// Opens an input: "PATH.npy", "PATH.sgy" / "PATH.segy" (any case), or
/// "synthetic:IxXxT[:SEED]" (seed 1 by default). Reads and validates headers,
/// not samples. Throws invalid_input for a malformed spec or unsupported kind
/// and io_error for a missing or corrupt file.
inline std::unique_ptr<cube_source> open_source(std::string_view spec, const segy_options& segy = {}) {
  constexpr std::string_view synthetic = "synthetic:";
  if (spec.substr(0, synthetic.size()) == synthetic) {
    const auto rest = spec.substr(synthetic.size());
    const auto colon = rest.find(':');
    const shape3 shape = parse_shape(rest.substr(0, colon));
    std::uint64_t seed = 1;
    if (colon != std::string_view::npos) {
      const auto text = rest.substr(colon + 1);
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
      if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
        throw invalid_input("seed '" + std::string(text) + "' in '" + std::string(spec) +
                            "': expected an integer in 0..18446744073709551615, e.g. synthetic:64x64x512:7");
    }
    return std::make_unique<synthetic_source>(shape, seed);
  }
  const std::filesystem::path path{std::string(spec)};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".npy") return std::make_unique<npy_source>(path);
  if (ext == ".sgy" || ext == ".segy") return std::make_unique<segy_source>(path, segy);
  throw invalid_input("input '" + std::string(spec) + "': unknown kind" +
                      (ext.empty() ? std::string(" (no file extension)") : " (extension '" + ext + "')") +
                      "; expected " + std::string(source_spec_help));
}

}  // namespace dwsr::io
