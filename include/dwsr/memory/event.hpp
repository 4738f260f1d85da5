#pragma once
/// \file The allocation event: the seam between executions and everything that
/// simulates, measures or learns. A recorded trace and a live run are the same
/// sequence of these records.

#include <cstdint>
#include <optional>
#include <string_view>

namespace dwsr {

/// Whether an event allocates or frees a buffer.
enum class action : std::uint8_t { alloc, free };

/// Where the buffer lives.
enum class device : std::uint8_t { host, cuda };

/// What the buffer is for. Inputs and outputs are the graph's data; temporaries
/// hold intermediates between stages; workspaces are per-thread scratch.
enum class buffer_role : std::uint8_t { input, output, temporary, workspace };

/// Index of a graph node (0 for a single operator).
using node_id = std::uint32_t;

/// One allocation or free, as requested by dwsr code (before any allocator model).
struct event {
  std::uint64_t seq = 0;  ///< position in the stream, from 0, gap-free
  action act = action::alloc;
  device dev = device::host;
  buffer_role role = buffer_role::temporary;
  node_id node = 0;
  std::uint64_t buffer = 0;  ///< buffer id, unique within a stream, from 1
  std::uint64_t bytes = 0;   ///< requested bytes (the same on the matching free)
  /// The bytes are an upper bound, not a size: a meta execution of an
  /// allocation whose size depends on the data (operators/event_picks.hpp,
  /// operators/geobodies.hpp). A real execution never sets it.
  bool bound = false;

  friend bool operator==(const event&, const event&) = default;
};

constexpr std::string_view name_of(action a) noexcept { return a == action::alloc ? "alloc" : "free"; }
constexpr std::string_view name_of(device d) noexcept { return d == device::host ? "host" : "cuda"; }
constexpr std::string_view name_of(buffer_role r) noexcept {
  switch (r) {
    case buffer_role::input: return "input";
    case buffer_role::output: return "output";
    case buffer_role::temporary: return "temporary";
    case buffer_role::workspace: return "workspace";
  }
  return "?";
}

inline std::optional<action> parse_action(std::string_view s) noexcept {
  if (s == "alloc") return action::alloc;
  if (s == "free") return action::free;
  return std::nullopt;
}
inline std::optional<device> parse_device(std::string_view s) noexcept {
  if (s == "host") return device::host;
  if (s == "cuda") return device::cuda;
  return std::nullopt;
}
inline std::optional<buffer_role> parse_role(std::string_view s) noexcept {
  for (auto r : {buffer_role::input, buffer_role::output, buffer_role::temporary, buffer_role::workspace})
    if (s == name_of(r)) return r;
  return std::nullopt;
}

}  // namespace dwsr
