#pragma once
/// \file The settings of PyTorch's CUDA caching allocator, read from the syntax
/// of PYTORCH_CUDA_ALLOC_CONF, and its size rules (rounding, pools, segment
/// sizes). The rules follow c10/cuda/CUDACachingAllocator.cpp and
/// c10/core/AllocatorConfig.cpp (see shared notes/allocators.md).

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "dwsr/sim/detail/settings.hpp"

namespace dwsr::sim::detail {

inline constexpr std::uint64_t MiB = 1ull << 20;
inline constexpr std::uint64_t torch_min_block = 512;             ///< kMinBlockSize
inline constexpr std::uint64_t torch_small_size = 1 * MiB;        ///< kSmallSize: the small pool's largest request
inline constexpr std::uint64_t torch_small_buffer = 2 * MiB;      ///< kSmallBuffer: small segments (and small pages)
inline constexpr std::uint64_t torch_min_large_alloc = 10 * MiB;  ///< kMinLargeAlloc
inline constexpr std::uint64_t torch_round_large = 2 * MiB;       ///< kRoundLarge
inline constexpr std::size_t torch_power2_intervals = 16;         ///< bands of roundup_power2_divisions, from 1 MiB

/// The allocator's configuration. Defaults are PyTorch's.
struct torch_settings {
  std::uint64_t large_segment_size = 20 * MiB;  ///< large_segment_size_mb (kLargeBuffer by default)
  std::uint64_t max_split_size = std::numeric_limits<std::uint64_t>::max();  ///< max_split_size_mb (unset: no limit)
  std::uint64_t max_non_split_rounding = 20 * MiB;  ///< max_non_split_rounding_mb (default: the large segment size)
  std::array<std::uint64_t, torch_power2_intervals> roundup_power2_divisions{};  ///< per band; 0 or 1: off
  double garbage_collection_threshold = 0;  ///< in (0, 1); acts only with a memory fraction
  bool expandable_segments = false;
  double memory_fraction = -1;  ///< per_process_memory_fraction in [0, 1]; negative: not set

  friend bool operator==(const torch_settings&, const torch_settings&) = default;

  /// The divisions of the power-of-two band of `size`.
  std::uint64_t divisions(std::uint64_t size) const noexcept {
    const auto log_size = static_cast<std::size_t>(std::bit_width(size) - 1);
    constexpr std::size_t start = 20;  // log2(1 MiB)
    std::size_t index = log_size > start ? log_size - start : 0;
    if (index > torch_power2_intervals - 1) index = torch_power2_intervals - 1;
    return roundup_power2_divisions[index];
  }

  /// The size a request of n > 0 bytes is rounded to.
  std::uint64_t round_size(std::uint64_t n) const noexcept {
    if (n < torch_min_block) return torch_min_block;
    const auto d = divisions(n);
    if (d > 1 && n > torch_min_block * d) {
      if (std::has_single_bit(n)) return n;
      const auto floor = std::bit_floor(n);
      const auto step = floor >> (std::bit_width(d) - 1);
      if (step == 0) return floor << 1;
      const auto down = n & ~(step - 1);
      return down == n ? n : down + step;
    }
    return torch_min_block * ((n + torch_min_block - 1) / torch_min_block);
  }

  /// The size of a new segment for a rounded request.
  std::uint64_t allocation_size(std::uint64_t size) const noexcept {
    if (size <= torch_small_size) return torch_small_buffer;
    if (size < torch_min_large_alloc) return large_segment_size;
    return torch_round_large * ((size + torch_round_large - 1) / torch_round_large);
  }
};

/// Parses PYTORCH_CUDA_ALLOC_CONF syntax into settings, checking values as
/// PyTorch does. Settings of PyTorch that do not change device memory in a
/// one-stream replay (pinned host memory, locking, graph capture) are accepted
/// and ignored; backend:cudaMallocAsync is a different allocator and refused.
inline torch_settings parse_torch_settings(std::string_view text, std::string_view model = "torch_cuda_caching") {
  torch_settings t;
  const auto settings = parse_settings(model, text);
  // large_segment_size_mb bounds the other two, whatever the order they come in.
  bool max_split_set = false, non_split_set = false;
  std::uint64_t max_split_mb = 0, non_split_mb = 0;
  constexpr std::string_view known =
      "large_segment_size_mb, max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, "
      "garbage_collection_threshold, expandable_segments, per_process_memory_fraction, backend (native), and, "
      "ignored: release_lock_on_cudamalloc, pinned_use_cuda_host_register, pinned_num_register_threads, "
      "pinned_use_background_threads, pinned_reserve_segment_size_mb, pinned_free_catch_all, "
      "graph_capture_record_stream_reuse, throw_on_cudamalloc_oom";
  for (const auto& s : settings) {
    const std::string& k = s.key;
    if (k == "large_segment_size_mb") {
      const auto v = setting_uint(model, s);
      if (v <= torch_min_large_alloc / MiB) bad_setting(model, "'large_segment_size_mb': must be > 10, got " + s.value);
      t.large_segment_size = v * MiB;
    } else if (k == "max_split_size_mb") {
      max_split_mb = setting_uint(model, s);
      max_split_set = true;
    } else if (k == "max_non_split_rounding_mb") {
      non_split_mb = setting_uint(model, s);
      non_split_set = true;
    } else if (k == "roundup_power2_divisions") {
      auto power_of_two_or_zero = [&](const std::string& v) {
        setting one{s.key, v, {}, false};
        const auto d = setting_uint(model, one);
        if (d != 0 && !std::has_single_bit(d))
          bad_setting(model, "'roundup_power2_divisions': divisions must be a power of 2 (or 0), got " + v);
        return d;
      };
      if (!s.is_list) {
        const auto d = power_of_two_or_zero(s.value);
        if (d == 0) bad_setting(model, "'roundup_power2_divisions': divisions must be a power of 2, got 0");
        t.roundup_power2_divisions.fill(d);
      } else {
        bool first = true;
        std::size_t last = 0;
        for (const auto& [band, value] : s.list) {
          const auto d = power_of_two_or_zero(value);
          if (band == ">") {
            for (auto j = last + 1; j < torch_power2_intervals; ++j) t.roundup_power2_divisions[j] = d;
            continue;
          }
          setting b{s.key, band, {}, false};
          const auto mb = setting_uint(model, b);
          if (!std::has_single_bit(mb))
            bad_setting(model, "'roundup_power2_divisions': band sizes (MB) must be powers of 2, got " + band);
          auto index = static_cast<std::size_t>(std::bit_width(mb) - 1);
          if (index > torch_power2_intervals - 1) index = torch_power2_intervals - 1;
          if (first) {
            for (std::size_t j = 0; j < index; ++j) t.roundup_power2_divisions[j] = d;
            first = false;
          }
          t.roundup_power2_divisions[index] = d;
          last = index;
        }
      }
    } else if (k == "garbage_collection_threshold") {
      const auto v = setting_real(model, s);
      if (!(v > 0 && v < 1))
        bad_setting(model, "'garbage_collection_threshold': must be in (0.0, 1.0), got " + s.value);
      t.garbage_collection_threshold = v;
    } else if (k == "expandable_segments") {
      t.expandable_segments = setting_bool(model, s);
    } else if (k == "per_process_memory_fraction") {
      const auto v = setting_real(model, s);
      if (!(v >= 0 && v <= 1))
        bad_setting(model, "'per_process_memory_fraction': must be in [0.0, 1.0], got " + s.value);
      t.memory_fraction = v;
    } else if (k == "backend") {
      if (s.value != "native")
        bad_setting(model, "'backend': only 'native' (the caching allocator) is modelled, got '" + s.value + "'");
    } else if (k == "release_lock_on_cudamalloc" || k == "pinned_use_cuda_host_register" ||
               k == "pinned_num_register_threads" || k == "pinned_use_background_threads" ||
               k == "pinned_reserve_segment_size_mb" || k == "pinned_free_catch_all" ||
               k == "graph_capture_record_stream_reuse" || k == "throw_on_cudamalloc_oom") {
      // No effect on device memory in a one-stream replay.
    } else {
      unknown_setting(model, s, known);
    }
  }
  const auto min_mb = t.large_segment_size / MiB;
  t.max_non_split_rounding = t.large_segment_size;
  if (max_split_set) {
    if (max_split_mb < min_mb)
      bad_setting(model, "'max_split_size_mb': must be >= " + std::to_string(min_mb) +
                             " (the large segment size), got " + std::to_string(max_split_mb));
    t.max_split_size = max_split_mb >= std::numeric_limits<std::uint64_t>::max() / MiB
                           ? std::numeric_limits<std::uint64_t>::max() / MiB * MiB
                           : max_split_mb * MiB;
  }
  if (non_split_set) {
    if (non_split_mb < min_mb)
      bad_setting(model, "'max_non_split_rounding_mb': must be >= " + std::to_string(min_mb) + ", got " +
                             std::to_string(non_split_mb));
    t.max_non_split_rounding = non_split_mb >= std::numeric_limits<std::uint64_t>::max() / MiB
                                   ? std::numeric_limits<std::uint64_t>::max() / MiB * MiB
                                   : non_split_mb * MiB;
  }
  return t;
}

}  // namespace dwsr::sim::detail
