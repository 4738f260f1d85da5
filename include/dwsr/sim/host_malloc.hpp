#pragma once
/// \file glibc's malloc on the main arena (one thread), as in shared
/// notes/allocators.md. `reserved` is what the process keeps resident once the
/// buffers are written: the heap pages touched so far (up to the break) plus
/// the mmapped chunks; `allocated` is the chunk sizes in use (header included).
///
/// - A request of n bytes needs a chunk of nb = max(32, round16(n + 8)).
/// - It takes the best-fitting free heap chunk (smallest, lowest address),
///   splitting off a tail of >= 32 B; else it carves the top chunk; else, when
///   nb >= the mmap threshold (128 KiB at first), it mmaps round_page(nb + 8)
///   bytes; else it grows the heap by round_page(nb + top_pad + 32 - top).
/// - free of an mmapped chunk unmaps it at once; if its size S is above the
///   threshold and at most 32 MiB, the threshold becomes S and the trim
///   threshold 2 S (unless the thresholds were set).
/// - free of a heap chunk merges it with free neighbours (into the top when
///   adjacent); when the merged chunk is >= 64 KiB and the top is >= the trim
///   threshold, the top is trimmed to top_pad: only the heap's end goes back.
/// - Pages count when first written: carving touches the chunk and the new top
///   header; a trim forgets the pages past the new break.
///
/// Simplifications: tcache and fastbins (small chunks kept unmerged for
/// reuse) and per-thread arenas are not modelled; frees always merge. dwsr's
/// host context allocates with 64-byte aligned new, which glibc serves like
/// malloc of the request plus at most 64 + 32 bytes; the model uses the request.
///
/// Settings (mallopt names): mmap_threshold, trim_threshold, top_pad,
/// page_size (bytes), mmap_max (count; 0 disables mmap).

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/detail/block_arena.hpp"
#include "dwsr/sim/detail/held_blocks.hpp"
#include "dwsr/sim/detail/model_base.hpp"
#include "dwsr/sim/detail/ordered_blocks.hpp"
#include "dwsr/sim/detail/settings.hpp"

namespace dwsr::sim {

/// Tunables of glibc malloc (mallopt), with glibc's defaults on 64-bit Linux.
struct host_malloc_settings {
  std::uint64_t mmap_threshold = 128 * 1024;  ///< M_MMAP_THRESHOLD
  std::uint64_t trim_threshold = 128 * 1024;  ///< M_TRIM_THRESHOLD
  std::uint64_t top_pad = 128 * 1024;         ///< M_TOP_PAD
  std::uint64_t mmap_max = 65536;             ///< M_MMAP_MAX
  std::uint64_t page_size = 4096;
  bool dynamic_threshold = true;  ///< false once a threshold is set, as with mallopt
};

/// The model of glibc malloc.
class host_malloc_model : public detail::model_base<host_malloc_model> {
 public:
  static constexpr std::string_view name = "host_malloc";
  static constexpr std::uint64_t min_chunk = 32;                    ///< MINSIZE
  static constexpr std::uint64_t mmap_threshold_max = 32ull << 20;  ///< DEFAULT_MMAP_THRESHOLD_MAX
  static constexpr std::uint64_t consolidation_threshold = 65536;   ///< FASTBIN_CONSOLIDATION_THRESHOLD

  explicit host_malloc_model(host_malloc_settings settings = {}, std::optional<std::uint64_t> capacity = {})
      : cfg_(settings), capacity_(capacity.value_or(unlimited)) {
    top_ = chunks_.make(chunk{});
  }
  /// Builds the model from settings ("mmap_threshold:1MiB,top_pad:0").
  explicit host_malloc_model(std::string_view settings, std::optional<std::uint64_t> capacity = {})
      : host_malloc_model(parse(settings), capacity) {}

  /// malloc(bytes); false when the memory would exceed the capacity.
  bool alloc(std::uint64_t id, std::uint64_t bytes) {
    if (owners_.open(s_, id, bytes)) return true;  // dwsr's contexts call no allocator for empty buffers
    if (bytes > (1ull << 62)) return owners_.fail(s_, id, bytes);
    const auto nb = std::max(min_chunk, (bytes + 8 + 15) & ~std::uint64_t{15});
    std::uint32_t b = detail::no_block;
    if (const auto c = free_.lower_bound({nb, 0}); free_.valid(c)) {  // best fit among free heap chunks
      b = free_.value(c);
      free_.erase(c);
      free_bytes_ -= chunks_[b].size;
      if (chunks_[b].size - nb >= min_chunk) insert_free(detail::split_after(chunks_, b, nb));
    } else if (chunks_[top_].size >= nb + min_chunk) {
      if (!touch(chunks_[top_].addr + nb + 16, 0)) return owners_.fail(s_, id, bytes);
      b = detail::split_before(chunks_, top_, nb);  // the front of the top becomes a chunk
    } else if (nb >= cfg_.mmap_threshold && mmaps_ < cfg_.mmap_max) {
      const auto size = round_page(nb + 8);
      if (reserved_total() > capacity_ || size > capacity_ - reserved_total()) return owners_.fail(s_, id, bytes);
      chunk m;
      m.size = size;
      m.mmapped = true;
      b = chunks_.make(m);
      mapped_ += size;
      ++mmaps_;
      ++s_.segments;
      ++s_.system_allocs;
    } else {  // grow the heap with brk, then carve the top
      const auto top_size = chunks_[top_].size;
      const auto grow = round_page(nb + cfg_.top_pad + min_chunk - std::min(top_size, nb + cfg_.top_pad + min_chunk));
      if (!touch(chunks_[top_].addr + nb + 16, grow)) return owners_.fail(s_, id, bytes);
      if (brk_ == 0) ++s_.segments;
      brk_ += grow;
      chunks_[top_].size += grow;
      ++s_.system_allocs;
      b = detail::split_before(chunks_, top_, nb);
    }
    s_.reserved = reserved_total();
    owners_.hand_out(s_, chunks_, id, b, bytes);
    return true;
  }

  /// free(): munmap for mmapped chunks; merge, and maybe trim, for heap chunks.
  void free(std::uint64_t id, std::uint64_t /*bytes*/ = 0) {
    auto b = owners_.take_back(s_, chunks_, id);
    if (b == detail::no_block) return;
    if (chunks_[b].mmapped) {
      const auto size = chunks_[b].size;
      if (cfg_.dynamic_threshold && size > cfg_.mmap_threshold && size <= mmap_threshold_max) {
        cfg_.mmap_threshold = size;
        cfg_.trim_threshold = 2 * size;
      }
      mapped_ -= size;
      --mmaps_;
      --s_.segments;
      ++s_.system_frees;
      chunks_.destroy(b);
      s_.reserved = reserved_total();
      return;
    }
    if (const auto p = chunks_[b].prev; p != detail::no_block && !chunks_[p].allocated) {
      erase_free(p);
      detail::absorb_next(chunks_, p);
      b = p;
    }
    const auto n = chunks_[b].next;
    std::uint64_t merged = 0;
    if (n == top_) {  // into the top chunk
      detail::absorb_prev(chunks_, top_);
      merged = chunks_[top_].size;
    } else {
      if (!chunks_[n].allocated) {
        erase_free(n);
        detail::absorb_next(chunks_, b);
      }
      insert_free(b);
      merged = chunks_[b].size;
    }
    if (merged >= consolidation_threshold && chunks_[top_].size >= cfg_.trim_threshold) trim();
    s_.reserved = reserved_total();
  }

  const host_malloc_settings& settings() const noexcept { return cfg_; }
  /// The current break: the heap's size.
  std::uint64_t heap_size() const noexcept { return brk_; }
  /// Bytes of mmapped chunks alive.
  std::uint64_t mmapped() const noexcept { return mapped_; }

  /// Free chunks and the top count as free memory.
  model_stats stats() const {
    model_stats s = s_;
    s.largest_free = std::max(free_.empty() ? 0 : free_.largest().size, chunks_[top_].size);
    s.total_free = free_bytes_ + chunks_[top_].size;
    return s;
  }

 private:
  struct chunk {
    std::uint64_t addr = 0, size = 0, requested = 0;
    std::uint32_t prev = detail::no_block, next = detail::no_block;
    bool allocated = false, mmapped = false;
  };

  static host_malloc_settings parse(std::string_view text) {
    host_malloc_settings h;
    for (const auto& s : detail::parse_settings(name, text)) {
      if (s.key == "mmap_threshold") {
        h.mmap_threshold = detail::setting_bytes(name, s);
        if (h.mmap_threshold > mmap_threshold_max)
          detail::bad_setting(name, "'mmap_threshold': at most 32 MiB (HEAP_MAX_SIZE / 2), got " + s.value);
        h.dynamic_threshold = false;
      } else if (s.key == "trim_threshold") {
        h.trim_threshold = detail::setting_bytes(name, s);
        h.dynamic_threshold = false;
      } else if (s.key == "top_pad") {
        h.top_pad = detail::setting_bytes(name, s);
      } else if (s.key == "mmap_max") {
        h.mmap_max = detail::setting_uint(name, s);
      } else if (s.key == "page_size") {
        h.page_size = detail::setting_bytes(name, s);
        if (h.page_size < 4096 || !std::has_single_bit(h.page_size))
          detail::bad_setting(name, "'page_size': must be a power of two of at least 4096, got " + s.value);
      } else {
        detail::unknown_setting(name, s, "mmap_threshold, trim_threshold, top_pad, page_size (bytes), mmap_max");
      }
    }
    return h;
  }

  std::uint64_t round_page(std::uint64_t n) const noexcept {
    return (n + cfg_.page_size - 1) / cfg_.page_size * cfg_.page_size;
  }
  std::uint64_t reserved_total() const noexcept { return round_page(std::min(touched_, brk_)) + mapped_; }

  // Checks that writing up to `end` (with the break raised by `grow`) fits the
  // capacity, and records it.
  bool touch(std::uint64_t end, std::uint64_t grow) {
    const auto new_touched = std::min(std::max(touched_, end), brk_ + grow);
    const auto after = round_page(new_touched) + mapped_;
    if (after > capacity_) return false;
    touched_ = new_touched;
    return true;
  }

  void trim() {  // systrim(top_pad)
    const auto top_size = chunks_[top_].size;
    if (top_size < min_chunk + 1) return;
    const auto area = top_size - min_chunk - 1;
    if (area <= cfg_.top_pad) return;
    const auto extra = (area - cfg_.top_pad) / cfg_.page_size * cfg_.page_size;
    if (extra == 0) return;
    chunks_[top_].size -= extra;
    brk_ -= extra;
    touched_ = std::min(touched_, brk_);
    ++s_.system_frees;
    if (brk_ == 0) --s_.segments;
  }

  void insert_free(std::uint32_t b) {
    free_.insert({chunks_[b].size, chunks_[b].addr}, b);
    free_bytes_ += chunks_[b].size;
  }
  void erase_free(std::uint32_t b) {
    free_.erase(detail::block_key{chunks_[b].size, chunks_[b].addr});
    free_bytes_ -= chunks_[b].size;
  }

  host_malloc_settings cfg_;
  std::uint64_t capacity_;
  detail::block_arena<chunk> chunks_;
  detail::ordered_blocks free_;  // free heap chunks (not the top) by (size, address)
  detail::held_blocks owners_{name};
  std::uint32_t top_ = detail::no_block;
  std::uint64_t brk_ = 0;      // heap end (the heap starts at address 0)
  std::uint64_t touched_ = 0;  // highest heap address written
  std::uint64_t mapped_ = 0;   // bytes of mmapped chunks
  std::uint64_t mmaps_ = 0;
  std::uint64_t free_bytes_ = 0;
};

}  // namespace dwsr::sim
