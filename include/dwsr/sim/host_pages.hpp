#pragma once
/// \file The host_pages model: what the OS holds for dwsr's host context, which
/// maps every buffer on its own, in whole pages, populated at once, and unmaps
/// it when freed (exec/host_context.hpp). Reserved = the live buffers, each
/// rounded up to 4096-byte pages (x86-64 Linux's); no cache, no fragmentation.

#include <string_view>

#include "dwsr/sim/exact.hpp"

namespace dwsr::sim {

/// Live buffers in whole 4 KiB pages, with an optional capacity.
class host_pages_model : public detail::whole_units_model<host_pages_model, 4096> {
 public:
  static constexpr std::string_view name = "host_pages";
  using whole_units_model::whole_units_model;
};

}  // namespace dwsr::sim
