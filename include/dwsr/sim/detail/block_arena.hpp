#pragma once
/// \file Storage for the blocks of segmented allocator models: a vector of
/// blocks addressed by 32-bit index (links between neighbours are indices, so
/// blocks stay compact and the storage can grow), with recycling of freed slots;
/// and the splitting and merging of blocks linked to their address neighbours
/// (blocks with the fields addr, size, prev and next), which every such model
/// does the same way.

#include <cstdint>
#include <limits>
#include <vector>

namespace dwsr::sim::detail {

/// "No block": the null link.
inline constexpr std::uint32_t no_block = std::numeric_limits<std::uint32_t>::max();

/// Blocks of type B by index.
template <class B>
class block_arena {
 public:
  /// Stores a block and returns its index.
  std::uint32_t make(const B& b) {
    if (!free_.empty()) {
      const auto i = free_.back();
      free_.pop_back();
      blocks_[i] = b;
      live_[i] = true;
      return i;
    }
    blocks_.push_back(b);
    live_.push_back(true);
    return static_cast<std::uint32_t>(blocks_.size() - 1);
  }
  /// Forgets block i.
  void destroy(std::uint32_t i) {
    live_[i] = false;
    free_.push_back(i);
  }
  B& operator[](std::uint32_t i) noexcept { return blocks_[i]; }
  const B& operator[](std::uint32_t i) const noexcept { return blocks_[i]; }

  /// Calls f(index, block) for every live block.
  template <class F>
  void for_each(F&& f) const {
    for (std::uint32_t i = 0; i < blocks_.size(); ++i)
      if (live_[i]) f(i, blocks_[i]);
  }
  std::size_t live() const noexcept { return blocks_.size() - free_.size(); }

 private:
  std::vector<B> blocks_;
  std::vector<bool> live_;
  std::vector<std::uint32_t> free_;
};

/// Cuts block b after its first `size` bytes: the rest becomes a new block
/// linked after b (otherwise a copy of b), whose index is returned.
template <class B>
std::uint32_t split_after(block_arena<B>& blocks, std::uint32_t b, std::uint64_t size) {
  B rest = blocks[b];
  rest.addr += size;
  rest.size -= size;
  rest.prev = b;
  const auto r = blocks.make(rest);
  if (rest.next != no_block) blocks[rest.next].prev = r;
  blocks[b].next = r;
  blocks[b].size = size;
  return r;
}

/// Cuts the first `size` bytes of block b off into a new block linked before
/// b (otherwise a copy of b), whose index is returned; b keeps the rest.
template <class B>
std::uint32_t split_before(block_arena<B>& blocks, std::uint32_t b, std::uint64_t size) {
  B front = blocks[b];
  front.size = size;
  front.next = b;
  const auto f = blocks.make(front);
  if (front.prev != no_block) blocks[front.prev].next = f;
  blocks[b].prev = f;
  blocks[b].addr += size;
  blocks[b].size -= size;
  return f;
}

/// Block b absorbs the block after it, which is destroyed.
template <class B>
void absorb_next(block_arena<B>& blocks, std::uint32_t b) {
  const auto n = blocks[b].next;
  blocks[b].size += blocks[n].size;
  blocks[b].next = blocks[n].next;
  if (blocks[b].next != no_block) blocks[blocks[b].next].prev = b;
  blocks.destroy(n);
}

/// Block b absorbs the block before it (and takes its address), which is destroyed.
template <class B>
void absorb_prev(block_arena<B>& blocks, std::uint32_t b) {
  const auto p = blocks[b].prev;
  blocks[b].addr = blocks[p].addr;
  blocks[b].size += blocks[p].size;
  blocks[b].prev = blocks[p].prev;
  if (blocks[b].prev != no_block) blocks[blocks[b].prev].next = b;
  blocks.destroy(p);
}

}  // namespace dwsr::sim::detail
