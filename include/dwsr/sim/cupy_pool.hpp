#pragma once
/// \file CuPy's MemoryPool (one device, one stream), as in shared
/// notes/allocators.md: sizes round up to 512 B; free chunks sit in one bin per
/// rounded size; a request takes a chunk from the first non-empty bin of at
/// least its size and splits off the remainder; a miss calls cudaMalloc for the
/// rounded size exactly; a free merges with free neighbours of the same
/// cudaMalloc'd memory. When cudaMalloc fails the pool frees every unsplit free
/// chunk (free_all_blocks) and retries before raising OutOfMemoryError.
///
/// `allocated` is used_bytes(), `reserved` is total_bytes(). CuPy pops an
/// arbitrary chunk of a bin (a Python set); the model takes the lowest address,
/// which changes which chunk, never how many bytes.
///
/// Setting: limit:BYTES or limit:N% (MemoryPool.set_limit / CUPY_GPU_MEMORY_LIMIT;
/// a percentage of the capacity): a cudaMalloc beyond it fails at once, without
/// freeing the cache.

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

/// The model of cupy.cuda.MemoryPool.
class cupy_pool_model : public detail::model_base<cupy_pool_model> {
 public:
  static constexpr std::string_view name = "cupy_pool";
  static constexpr std::uint64_t unit = 512;  ///< ALLOCATION_UNIT_SIZE

  /// A pool with an optional limit (0: none) and capacity.
  explicit cupy_pool_model(std::uint64_t limit = 0, std::optional<std::uint64_t> capacity = {})
      : limit_(limit), capacity_(capacity.value_or(unlimited)) {}
  /// Builds the model from settings ("limit:8GiB" or "limit:50%").
  explicit cupy_pool_model(std::string_view settings, std::optional<std::uint64_t> capacity = {})
      : cupy_pool_model(parse_limit(settings, capacity), capacity) {}

  /// malloc(bytes): the first non-empty bin of at least the rounded size, else cudaMalloc.
  bool alloc(std::uint64_t id, std::uint64_t bytes) {
    return pool_.allocate(s_, id, bytes, (bytes + unit - 1) / unit * unit,
                          [&](std::uint64_t size) { return try_malloc(size); });
  }
  /// free(): the chunk merges with its free neighbours.
  void free(std::uint64_t id, std::uint64_t /*bytes*/ = 0) { pool_.release(s_, id); }

  /// MemoryPool.free_all_blocks(): cudaFree of every free chunk that is not split.
  void free_all_blocks() {
    for (const auto b : pool_.free.values()) {
      if (pool_.blocks[b].prev == detail::no_block && pool_.blocks[b].next == detail::no_block)
        pool_.free_segment(s_, b);
    }
  }

  std::uint64_t limit() const noexcept { return limit_; }
  model_stats stats() const { return pool_.stats(s_); }

 private:
  static std::uint64_t parse_limit(std::string_view text, std::optional<std::uint64_t> capacity) {
    std::uint64_t limit = 0;
    for (const auto& s : detail::parse_settings(name, text)) {
      if (s.key != "limit") detail::unknown_setting(name, s, "limit (bytes, or N% of the capacity)");
      if (!s.is_list && !s.value.empty() && s.value.back() == '%') {
        detail::setting pct = s;
        pct.value.pop_back();
        const auto f = detail::setting_real(name, pct);
        if (!(f >= 0 && f <= 100))
          detail::bad_setting(name, "'limit': a percentage must be in [0, 100], got " + s.value);
        if (!capacity) detail::bad_setting(name, "'limit': a percentage needs a capacity (--capacity)");
        limit = static_cast<std::uint64_t>(f / 100.0 * static_cast<double>(*capacity));
      } else {
        limit = detail::setting_bytes(name, s);
      }
    }
    return limit;
  }

  bool cuda_malloc_fits(std::uint64_t size) const noexcept {
    return s_.reserved <= capacity_ && size <= capacity_ - s_.reserved;
  }

  std::uint32_t try_malloc(std::uint64_t size) {
    if (limit_ != 0 && s_.reserved + size > limit_) return detail::no_block;
    if (!cuda_malloc_fits(size)) {
      free_all_blocks();
      ++s_.retries;
      if (!cuda_malloc_fits(size)) return detail::no_block;
    }
    return pool_.new_segment(s_, size);
  }

  std::uint64_t limit_;
  std::uint64_t capacity_;
  detail::coalescing_pool pool_{name};
};

}  // namespace dwsr::sim
