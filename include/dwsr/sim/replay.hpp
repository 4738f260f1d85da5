#pragma once
/// \file Replays an event stream (live from an execution, or read from a
/// trace) through one or several allocator models at once. For each model and
/// each device of the stream it reports the final statistics, the peaks and the
/// events at which they were reached, the statistics at the peak of reserved
/// memory, the event at which the model ran out of memory, optionally a
/// timeline (allocated and reserved after each event), and the buffers alive at
/// the OOM or, without one, at the peak of reserved memory: their id, bytes,
/// node and role, which is what a person needs to understand a peak.
///
/// Events are numbered from 0 in the order they arrive ("event N" below).
/// Each device gets its own instance of each model.

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/memory/event.hpp"
#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/any_model.hpp"
#include "dwsr/sim/detail/live_buffers.hpp"

namespace dwsr::sim {

/// A model's values right after one event.
struct timeline_point {
  std::uint64_t event = 0;
  std::uint64_t allocated = 0;
  std::uint64_t reserved = 0;
  friend bool operator==(const timeline_point&, const timeline_point&) = default;
};

/// A buffer alive at the event a result focuses on.
struct live_buffer {
  std::uint64_t id = 0;
  std::uint64_t bytes = 0;  ///< requested bytes
  node_id node = 0;
  buffer_role role = buffer_role::temporary;
  std::uint64_t allocated_at = 0;  ///< the event that allocated it
  friend bool operator==(const live_buffer&, const live_buffer&) = default;
};

/// One model on one device.
struct device_result {
  device dev = device::host;
  std::uint64_t events = 0;  ///< events of this device the model consumed
  model_stats stats;         ///< at the end of the stream, or right after the failed allocation
  model_stats at_peak;       ///< right after the event at which reserved memory peaked
  std::uint64_t peak_allocated_event = 0;
  std::uint64_t peak_reserved_event = 0;
  std::optional<std::uint64_t> oom_event;  ///< the allocation that failed
  std::vector<live_buffer> alive;          ///< at focus_event(), largest first (when attribution is on)
  std::vector<timeline_point> timeline;    ///< when the timeline is on

  /// The OOM event if there was one, else the event of the reserved peak.
  std::uint64_t focus_event() const noexcept { return oom_event.value_or(peak_reserved_event); }
  friend bool operator==(const device_result&, const device_result&) = default;
};

/// One model over a whole stream: a result per device that had events.
struct model_result {
  std::string spec;
  std::vector<device_result> devices;
  friend bool operator==(const model_result&, const model_result&) = default;
};

/// What a replay records besides the statistics.
struct replay_options {
  std::optional<std::uint64_t> capacity;  ///< per device; none: unlimited
  bool timeline = false;                  ///< keep allocated and reserved after each event
  bool attribution = true;                ///< keep a log of buffers to list those alive at the peak or OOM
  /// Builds a model from its spec and capacity (default: make_model); lets a
  /// caller prepare models, e.g. with the state a recording started from.
  std::function<any_model(const std::string&, std::optional<std::uint64_t>)> make;
};

/// Runs one model type per device and tracks peaks, OOM and the timeline.
template <AllocatorModel M>
class model_track {
 public:
  model_track(std::string spec, std::function<M()> make, bool timeline)
      : spec_(std::move(spec)), make_(std::move(make)), timeline_(timeline) {}

  /// Feeds event number `index`.
  void on_event(const event& e, std::uint64_t index) {
    auto& s = slots_[static_cast<std::size_t>(e.dev)];
    if (!s.model) {
      s.model.emplace(make_());
      s.result.dev = e.dev;
    }
    if (s.result.oom_event) return;
    ++s.result.events;
    M& m = *s.model;
    m.on_event(e);
    if (m.oom()) {
      s.result.oom_event = index;
      if (timeline_) s.result.timeline.push_back({index, m.allocated(), m.reserved()});
      return;
    }
    const auto a = m.allocated(), r = m.reserved();
    if (a > s.peak_allocated) {
      s.peak_allocated = a;
      s.result.peak_allocated_event = index;
    }
    if (r > s.peak_reserved) {
      s.peak_reserved = r;
      s.result.peak_reserved_event = index;
      s.result.at_peak = m.stats();
    }
    if (timeline_) s.result.timeline.push_back({index, a, r});
  }

  /// Releases the cached memory of device d's model (empty_cache), unless it ran out of memory.
  void release(device d) {
    auto& s = slots_[static_cast<std::size_t>(d)];
    if constexpr (requires(M & m) { m.empty_cache(); })
      if (s.model && !s.result.oom_event) s.model->empty_cache();
  }

  /// The model of a device, if that device had events.
  const M* model(device d) const {
    const auto& s = slots_[static_cast<std::size_t>(d)];
    return s.model ? &*s.model : nullptr;
  }
  const std::string& spec() const noexcept { return spec_; }

  /// The results so far, one per device that had events.
  model_result result() const {
    model_result out{spec_, {}};
    for (const auto& s : slots_) {
      if (!s.model) continue;
      out.devices.push_back(s.result);
      out.devices.back().stats = s.model->stats();
    }
    return out;
  }

 private:
  struct slot {
    std::optional<M> model;
    device_result result;
    std::uint64_t peak_allocated = 0, peak_reserved = 0;
  };
  std::string spec_;
  std::function<M()> make_;
  bool timeline_;
  std::array<slot, 2> slots_;
};

/// Replays a stream through several models given as text ("exact",
/// "torch_cuda_caching:max_split_size_mb:128", ...). An EventSink.
class replay {
 public:
  /// Builds the models (throws invalid_input for an unknown model or setting).
  replay(std::span<const std::string> specs, replay_options options = {}) : options_(options) {
    if (!options_.make)
      options_.make = [](const std::string& spec, std::optional<std::uint64_t> cap) { return make_model(spec, cap); };
    for (const auto& spec : specs) {
      options_.make(spec, options_.capacity);  // validate now, not at the first event
      tracks_.emplace_back(
          spec, [spec, cap = options_.capacity, make = options_.make] { return make(spec, cap); }, options_.timeline);
    }
  }

  /// Feeds one event; a free must follow the alloc of its buffer (invalid_input
  /// naming the event and the buffer otherwise).
  void on_event(const event& e) {
    const auto index = n_++;
    if (e.act == action::alloc) {
      live_.add(e.buffer, index, options_.attribution ? log_.size() : 0);
      if (options_.attribution) log_.push_back({e.buffer, e.bytes, e.node, e.role, e.dev, index, never});
    } else {
      const auto at = live_.remove(e.buffer, index);
      if (options_.attribution) log_[at].freed_at = index;
    }
    for (auto& t : tracks_) t.on_event(e, index);
  }
  /// torch.cuda.empty_cache() on device d, between two events: every model that caches releases.
  void release(device d) {
    for (auto& t : tracks_) t.release(d);
  }
  /// Feeds events in order (the same as on_event on each).
  void on_events(std::span<const event> events) {
    for (const auto& e : events) on_event(e);
  }
  /// Events fed so far.
  std::uint64_t events() const noexcept { return n_; }

  /// The results, in the order of the specs, with the buffers alive at each
  /// result's focus event when attribution is on.
  std::vector<model_result> results() const {
    std::vector<model_result> out;
    for (const auto& t : tracks_) {
      out.push_back(t.result());
      if (!options_.attribution) continue;
      for (auto& d : out.back().devices) {
        const auto at = d.focus_event();
        for (const auto& b : log_) {
          if (b.dev != d.dev || b.allocated_at > at || b.freed_at <= at) continue;
          if (d.oom_event && b.allocated_at == at) continue;  // the allocation that failed
          d.alive.push_back({b.id, b.bytes, b.node, b.role, b.allocated_at});
        }
        std::sort(d.alive.begin(), d.alive.end(), [](const live_buffer& a, const live_buffer& b) {
          return a.bytes != b.bytes ? a.bytes > b.bytes : a.allocated_at < b.allocated_at;
        });
      }
    }
    return out;
  }

 private:
  static constexpr std::uint64_t never = ~std::uint64_t{0};
  struct record {
    std::uint64_t id, bytes;
    node_id node;
    buffer_role role;
    device dev;
    std::uint64_t allocated_at, freed_at;
  };
  replay_options options_;
  std::vector<model_track<any_model>> tracks_;
  std::vector<record> log_;
  detail::live_buffers<std::uint64_t> live_{"replay"};  // checks ids; the position of each in log_
  std::uint64_t n_ = 0;
};

/// Replays a recorded stream through the models named by `specs`.
inline std::vector<model_result> replay_events(std::span<const event> events, std::span<const std::string> specs,
                                               replay_options options = {}) {
  replay r(specs, options);
  r.on_events(events);
  return r.results();
}

}  // namespace dwsr::sim
