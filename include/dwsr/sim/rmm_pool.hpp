#pragma once
/// \file RMM's pool_memory_resource over cudaMalloc (one stream), as in shared
/// notes/allocators.md: sizes align up to 256 B; the free list is searched best
/// fit (the smallest block that fits, the lowest address on ties); the front of
/// the block is handed out and the rest stays free; frees merge with free
/// neighbours of the same upstream allocation. On a miss the pool grows by
/// max(request, current pool size), or, with a maximum pool size, by
/// max(request, half of what is left); when the upstream allocation fails it
/// retries with half the size down to the request. Memory goes back upstream
/// only when the pool is destroyed, so `reserved` (the pool size) never shrinks.
///
/// Settings: initial_pool_size:BYTES (allocated at construction; RMM's own
/// default is half the free device memory, write it out to model that) and
/// maximum_pool_size:BYTES.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/coalescing_pool.hpp"
#include "dwsr/sim/detail/model_base.hpp"
#include "dwsr/sim/detail/settings.hpp"

namespace dwsr::sim {

/// Settings of the RMM pool.
struct rmm_settings {
  std::uint64_t initial_pool_size = 0;
  std::optional<std::uint64_t> maximum_pool_size;
};

/// The model of rmm::mr::pool_memory_resource.
class rmm_pool_model : public detail::model_base<rmm_pool_model> {
 public:
  static constexpr std::string_view name = "rmm_pool";
  static constexpr std::uint64_t alignment = 256;  ///< CUDA_ALLOCATION_ALIGNMENT

  explicit rmm_pool_model(rmm_settings settings = {}, std::optional<std::uint64_t> capacity = {})
      : cfg_(settings), capacity_(capacity.value_or(unlimited)) {
    if (cfg_.initial_pool_size % alignment != 0)
      detail::bad_setting(
          name, "'initial_pool_size': must be a multiple of 256 bytes, got " + std::to_string(cfg_.initial_pool_size));
    if (cfg_.maximum_pool_size && *cfg_.maximum_pool_size < cfg_.initial_pool_size)
      detail::bad_setting(name, "'maximum_pool_size' is smaller than 'initial_pool_size'");
    if (cfg_.initial_pool_size > 0) {
      const auto b = try_to_expand(cfg_.initial_pool_size, cfg_.initial_pool_size);
      if (b == detail::no_block)
        detail::bad_setting(name, "'initial_pool_size': " + std::to_string(cfg_.initial_pool_size) +
                                      " bytes do not fit the capacity of " + std::to_string(capacity_) + " bytes");
      pool_.free.insert({pool_.blocks[b].size, pool_.blocks[b].addr}, b);
    }
  }
  /// Builds the model from settings ("initial_pool_size:1GiB,maximum_pool_size:8GiB").
  explicit rmm_pool_model(std::string_view settings, std::optional<std::uint64_t> capacity = {})
      : rmm_pool_model(parse(settings), capacity) {}

  /// allocate(bytes): the best fit, else the pool grows; the front of the block is handed out.
  bool alloc(std::uint64_t id, std::uint64_t bytes) {  // RMM returns nullptr for 0 bytes
    return pool_.allocate(s_, id, bytes, align_up(bytes),
                          [&](std::uint64_t size) { return try_to_expand(size_to_grow(size), size); });
  }
  /// deallocate(): the block merges with its free neighbours.
  void free(std::uint64_t id, std::uint64_t /*bytes*/ = 0) { pool_.release(s_, id); }

  /// Free blocks in the pool (after all frees: one per upstream allocation).
  std::size_t free_blocks() const noexcept { return pool_.free.size(); }
  model_stats stats() const { return pool_.stats(s_); }

 private:
  static rmm_settings parse(std::string_view text) {
    rmm_settings r;
    for (const auto& s : detail::parse_settings(name, text)) {
      if (s.key == "initial_pool_size")
        r.initial_pool_size = detail::setting_bytes(name, s);
      else if (s.key == "maximum_pool_size")
        r.maximum_pool_size = detail::setting_bytes(name, s);
      else
        detail::unknown_setting(name, s, "initial_pool_size, maximum_pool_size (bytes)");
    }
    return r;
  }

  static std::uint64_t align_up(std::uint64_t n) noexcept { return (n + alignment - 1) / alignment * alignment; }

  std::uint64_t size_to_grow(std::uint64_t size) const noexcept {
    if (cfg_.maximum_pool_size) {
      const auto remaining = align_up(*cfg_.maximum_pool_size - s_.reserved);
      return size <= remaining ? std::max(size, remaining / 2) : 0;
    }
    return std::max(size, s_.reserved);
  }

  // Upstream allocations of try_size, halving on failure down to min_size.
  std::uint32_t try_to_expand(std::uint64_t try_size, std::uint64_t min_size) {
    while (try_size >= min_size && try_size > 0) {
      if (s_.reserved <= capacity_ && try_size <= capacity_ - s_.reserved) return pool_.new_segment(s_, try_size);
      if (try_size == min_size) break;
      ++s_.retries;
      try_size = std::max(min_size, try_size / 2);
    }
    return detail::no_block;
  }

  rmm_settings cfg_;
  std::uint64_t capacity_;
  detail::coalescing_pool pool_{name};
};

}  // namespace dwsr::sim
