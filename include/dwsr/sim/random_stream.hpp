#pragma once
/// \file Random alloc/free streams for property tests and benchmarks of the
/// allocator models: reproducible from a seed on any standard library
/// (dwsr's splitmix64 from core/random.hpp and integer-only distributions).
///
/// Sizes are log-uniform: a power-of-two band between 2^min_log2 and
/// 2^max_log2 is drawn uniformly, then a size uniformly inside it. Lifetimes,
/// in events, mimic a computation: 70% short-lived temporaries (1-16 events,
/// mostly freed in reverse order of allocation), 25% intermediates (16-1,015),
/// 5% long-lived buffers (1,000-50,999). Every buffer is freed by the end, so
/// the stream has exactly the requested number of events (rounded down to even).

#include <cstdint>
#include <queue>
#include <vector>

#include "dwsr/core/random.hpp"
#include "dwsr/memory/event.hpp"

namespace dwsr::sim {

/// How random_stream draws sizes.
struct stream_shape {
  unsigned min_log2 = 9;   ///< smallest size 2^min_log2 bytes (512 B)
  unsigned max_log2 = 30;  ///< largest size below 2^(max_log2 + 1) bytes (up to 2 GiB - 1)
  device dev = device::cuda;
};

/// `events` alloc and free events (ids from 1, seq from 0) drawn from `seed`.
inline std::vector<event> random_stream(std::size_t events, std::uint64_t seed, stream_shape shape = {}) {
  splitmix64 rng{seed};
  struct pending {
    std::uint64_t due, order, id, bytes;
    node_id node;
    buffer_role role;
    bool operator>(const pending& o) const noexcept { return due != o.due ? due > o.due : order < o.order; }
  };
  std::priority_queue<pending, std::vector<pending>, std::greater<>> live;
  std::vector<event> out;
  events -= events % 2;
  out.reserve(events);
  std::uint64_t next_id = 1, t = 0;
  const auto bands = shape.max_log2 - shape.min_log2 + 1;
  while (out.size() < events) {
    const bool must_free = out.size() + live.size() >= events;
    if (!live.empty() && (must_free || live.top().due <= t)) {
      const auto p = live.top();
      live.pop();
      out.push_back({out.size(), action::free, shape.dev, p.role, p.node, p.id, p.bytes});
    } else {
      const auto band = shape.min_log2 + static_cast<unsigned>(rng.below(bands));
      const auto bytes = (1ull << band) + rng.below(1ull << band);
      const auto r = rng.below(100);
      const auto life = r < 70 ? 1 + rng.below(16) : r < 95 ? 16 + rng.below(1000) : 1000 + rng.below(50000);
      const auto role = r < 70 ? buffer_role::temporary : r < 95 ? buffer_role::workspace : buffer_role::output;
      const auto node = static_cast<node_id>(r % 4);
      live.push({t + life, next_id, next_id, bytes, node, role});
      out.push_back({out.size(), action::alloc, shape.dev, role, node, next_id, bytes});
      ++next_id;
    }
    ++t;
  }
  return out;
}

}  // namespace dwsr::sim
