#pragma once
/// \file The EventSink concept and a non-owning, type-erased reference to a sink,
/// so that contexts need not be templates over their sinks.

#include <concepts>

#include "dwsr/memory/event.hpp"

namespace dwsr {

/// Anything that consumes events in sequence order.
template <class S>
concept EventSink = requires(S& s, const event& e) {
  { s.on_event(e) } -> std::same_as<void>;
};

/// A non-owning reference to any EventSink; empty references drop events.
class event_sink_ref {
 public:
  event_sink_ref() = default;
  template <EventSink S>
  requires(!std::same_as<S, event_sink_ref>) event_sink_ref(S& sink)
  noexcept  // NOLINT: implicit on purpose, like std::function_ref
      : object_(&sink), call_([](void* o, const event& e) { static_cast<S*>(o)->on_event(e); }) {}

  void on_event(const event& e) const {
    if (call_) call_(object_, e);
  }
  explicit operator bool() const noexcept { return call_ != nullptr; }

 private:
  void* object_ = nullptr;
  void (*call_)(void*, const event&) = nullptr;
};

}  // namespace dwsr
