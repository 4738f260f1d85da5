#pragma once
/// \file A sink that passes on the events of one device only: a worker on a
/// GPU counts its peak in device bytes (its budget is the GPU's memory),
/// while its pinned host staging still reaches the other sinks.

#include "dwsr/memory/event.hpp"

namespace dwsr {

/// Forwards to `sink` the events whose device is `dev`.
template <class Sink>
struct device_filter {
  Sink* sink;
  device dev;
  void on_event(const event& e) {
    if (e.dev == dev) sink->on_event(e);
  }
};

}  // namespace dwsr
