#pragma once
/// \file Each worker's peak of a chunked execution under an allocator model
/// (sim/any_model.hpp), what `dwsr plan --allocator` and the advisor report.
///
/// What it costs, and why it stays exact:
/// - exact: the plan's own peaks (graph/chunked.hpp), one meta execution per
///   block shape.
/// - host_pages: the model holds nothing but the live buffers, and a worker
///   holds nothing between blocks, so each block starts from an empty model:
///   one fresh model per block shape, as cheap as exact.
/// - the caching models (host_malloc, torch_cuda_caching, cupy_pool,
///   rmm_pool) carry their cache from one block to the next, so the peak
///   depends on the order of all the worker's blocks. They replay each
///   worker's whole event stream, which costs its events: past replay_limit
///   events over all workers (over all candidates, for an advice) the answer
///   is an invalid_input naming the chunk and the fix, not a replay that runs
///   for hours.

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/graph/chunked.hpp"
#include "dwsr/memory/device_filter.hpp"
#include "dwsr/sim/any_model.hpp"

namespace dwsr {

/// Most events a caching model's plan replays, over all workers.
inline constexpr std::uint64_t replay_limit = 1u << 25;

/// The events a caching model may still replay: replay_limit for one plan; an
/// advice shares one budget over all its candidates, so it stays bounded too.
struct replay_budget {
  std::uint64_t events_left = replay_limit;  ///< events that may still be replayed
};

/// The unit in which a model (built by sim::make_model) holds each buffer
/// when it holds the live buffers and nothing else (exact: 1 byte;
/// host_pages: a page); none for a model with a cache.
inline std::optional<std::uint64_t> whole_units_of(const sim::any_model& m) {
  if (m.model_name() == sim::exact_model::name) return sim::exact_model::granule;
  if (m.model_name() == sim::host_pages_model::name) return sim::host_pages_model::granule;
  return std::nullopt;
}

/// Whether a model (built by sim::make_model) holds nothing once every buffer
/// is freed, so that it can be planned one block shape at a time.
inline bool holds_nothing_between_blocks(const sim::any_model& m) { return whole_units_of(m).has_value(); }

/// whole_units_of(sim::make_model(spec)) without building the model for the
/// two whole-unit models (which take no settings): plans ask once per
/// chunking. Throws make_model's invalid_input for a bad spec.
inline std::optional<std::uint64_t> whole_units_of(std::string_view spec) {
  if (spec == sim::exact_model::name) return sim::exact_model::granule;
  if (spec == sim::host_pages_model::name) return sim::host_pages_model::granule;
  return whole_units_of(sim::make_model(spec));
}

namespace detail {

/// One step measured in a meta execution through a fresh model built from
/// `spec`: its peak reserved bytes and its events (meta_step's counterpart
/// for the models that hold nothing between blocks).
template <class MetaCtx = meta_context>
std::pair<std::uint64_t, std::uint64_t> model_step(const chunked_schedule& s, const node_reductions& reductions,
                                                   const schedule_phase& ph, const block& b, const std::string& spec) {
  auto model = sim::make_model(spec);
  device_filter<sim::any_model> modelled{&model, MetaCtx::memory_device};
  event_bus bus(modelled, emitters::one_thread);
  MetaCtx ctx(bus, {.threads = s.options().threads});
  reduction acc;
  run_step(
      ctx, s, ph, b, reductions, &acc, nullptr, [](float*) {}, nullptr);
  return {model.stats().peak_reserved, bus.events()};
}

/// The peaks of one step under several whole-unit models at once: each
/// holds the live buffers, each rounded up to its unit, so a sum and a
/// maximum per unit are the model (the stream, dwsr's own, needs no checks).
/// Units are powers of two (the models' granules, as sim::detail::whole_units
/// requires), each in one slot. This sink sees every event of every plan a
/// dataset measures, so it keeps its units in place and follows all
/// max_units slots on every event (a spare slot has unit 1): no loop bound
/// to test, nothing to load but the event.
class whole_units_peaks {
 public:
  /// The whole-unit models' distinct granules: exact's byte, host_pages' page.
  static constexpr std::size_t max_units = 2;

  /// The slot that follows `unit`, taken when no slot has it yet: models of
  /// one unit share a slot.
  std::size_t slot_of(std::uint64_t unit) {
    for (std::size_t m = 0; m < used_; ++m)
      if (units_[m] == unit) return m;
    if (!std::has_single_bit(unit)) throw std::logic_error("whole_units_peaks: a unit that is not a power of two");
    if (used_ == max_units)
      throw std::logic_error("whole_units_peaks: more than " + std::to_string(max_units) + " units");
    units_[used_] = unit;
    return used_++;
  }
  void on_event(const event& e) noexcept {
    if (e.dev != device::host) return;
    if (e.act == action::alloc) {
      for (std::size_t m = 0; m < max_units; ++m) {
        live_[m] += sim::detail::whole_units(e.bytes, units_[m]);
        peak_[m] = std::max(peak_[m], live_[m]);
      }
    } else {
      for (std::size_t m = 0; m < max_units; ++m) live_[m] -= sim::detail::whole_units(e.bytes, units_[m]);
    }
  }
  /// The peak of the m-th unit's model since the last restart.
  std::uint64_t peak(std::size_t m) const noexcept { return peak_[m]; }
  /// Starts a new step: nothing live, no peak.
  void restart() noexcept {
    live_ = {};
    peak_ = {};
  }

 private:
  std::array<std::uint64_t, max_units> units_{1, 1}, live_{}, peak_{};
  std::size_t used_ = 0;
};

/// class_steps of `classes` under each of `specs`: models that hold nothing
/// between blocks ("exact", "host_pages"; invalid_input for another). One
/// meta execution per class and phase feeds them all, so several models cost
/// one execution, not one each; the figures are those of measure_classes
/// with meta_step or model_step per spec (the block-classes tests hold them
/// equal to replays through the models themselves).
inline std::vector<class_steps> measure_classes_under(const chunked_schedule& s, const block_classes& classes,
                                                      const node_reductions& reductions,
                                                      const std::vector<std::string>& specs) {
  const auto& ks = classes.classes();
  std::vector<class_steps> out(
      specs.size(), class_steps{std::vector<std::uint64_t>(ks.size()), std::vector<std::uint64_t>(ks.size())});
  whole_units_peaks peaks;
  std::vector<std::size_t> slot(specs.size());
  for (std::size_t j = 0; j < specs.size(); ++j) {
    const auto unit = whole_units_of(specs[j]);
    if (!unit)
      throw invalid_input("allocator model '" + specs[j] +
                          "' keeps a cache from block to block, so its plan cannot be measured one block shape at a " +
                          "time; expected exact or host_pages");
    slot[j] = peaks.slot_of(*unit);
  }
  for (std::size_t k = 0; k < ks.size(); ++k)
    for (const auto& ph : s.phases()) {
      peaks.restart();
      event_bus bus(peaks, emitters::one_thread);
      meta_context ctx(bus, {.threads = s.options().threads});
      reduction acc;
      run_step(
          ctx, s, ph, ks[k].example, reductions, &acc, nullptr, [](float*) {}, nullptr);
      for (std::size_t j = 0; j < specs.size(); ++j) {
        out[j].peak[k] = std::max(out[j].peak[k], peaks.peak(slot[j]));
        out[j].events[k] += bus.events();
      }
    }
  return out;
}

}  // namespace detail

/// Each worker's peak reserved bytes under the model `spec` (see the file
/// comment); `plan` is plan_chunked<MetaCtx>(s). The model sees the events of
/// the workers' memory device (a GPU worker's device stream). Throws
/// invalid_input for an unknown model, or for a caching model whose replay
/// would exceed what is left of `budget` (which the replay spends).
template <class MetaCtx = meta_context>
std::vector<std::uint64_t> model_peaks(const chunked_schedule& s, const chunked_plan& plan, const std::string& spec,
                                       replay_budget& budget) {
  std::vector<std::uint64_t> peaks(s.workers());
  if (whole_units_of(spec)) {
    const auto reductions = detail::run_phase_reductions(s);
    const auto by_class = detail::plan_by_class(s, [&](const schedule_phase& ph, const block& b) {
      return detail::model_step<MetaCtx>(s, reductions, ph, b, spec);
    });
    for (std::size_t w = 0; w < s.workers(); ++w) peaks[w] = by_class.workers[w].peak;
    return peaks;
  }
  std::uint64_t events = 0;
  for (const auto& w : plan.workers)
    if ((events += std::min(w.events, replay_limit + 1)) > budget.events_left) break;
  if (events > budget.events_left)
    throw invalid_input("allocator model '" + spec + "' keeps a cache from block to block, so its plan replays every " +
                        "event of every worker, and chunk " + to_string(plan.chunk) + " (" +
                        std::to_string(plan.blocks) + " blocks) takes it past the " + std::to_string(replay_limit) +
                        " events a plan or an advice replays; use a larger chunk, a smaller cube, or the exact or " +
                        "host_pages model");
  budget.events_left -= events;
  for (std::size_t w = 0; w < s.workers() && s.blocks_of(w) > 0; ++w) {
    auto model = sim::make_model(spec);
    device_filter<sim::any_model> modelled{&model, MetaCtx::memory_device};
    worker_events<MetaCtx>(s, w, modelled);
    peaks[w] = model.stats().peak_reserved;
  }
  return peaks;
}

/// model_peaks with a budget of its own.
template <class MetaCtx = meta_context>
std::vector<std::uint64_t> model_peaks(const chunked_schedule& s, const chunked_plan& plan, const std::string& spec) {
  replay_budget budget;
  return model_peaks<MetaCtx>(s, plan, spec, budget);
}

}  // namespace dwsr
