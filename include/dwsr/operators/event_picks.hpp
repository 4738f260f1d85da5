#pragma once
/// \file Event picking: the local maxima of an attribute along each trace,
/// above a threshold, as a table of (inline, crossline, sample, value) rows.
///
/// Its output size depends on the data, which is why it is here: the real
/// execution counts the picks of every trace in a first parallel pass, sums
/// the counts and allocates the table at its actual size; the meta execution,
/// which has no data, allocates the largest table the shape allows and flags
/// that event as a bound (event::bound). Every other event is the same in both.
///
/// A pick is a sample t of a trace v with
///   v[t] > threshold, v[t - 1] < v[t], and the first sample after t that
///   differs from v[t] exists and is lower than v[t].
/// Only maxima: troughs are the maxima of the negated attribute, and absolute
/// values are not taken. A plateau of equal samples counts once, at its first
/// sample, when it is entered from below and left downwards; a shoulder (a
/// plateau left upwards) is no pick. The first and last samples of a trace are
/// never picks (one of their neighbours is missing), and NaN is never a pick
/// nor, compared with anything, lets its neighbour be one.
///
/// The bound: two picks p < q are at least two samples apart (q = p + 1 would
/// need v[p] < v[p + 1], but p's plateau is left downwards; every sample of
/// that plateau and the first lower one after it fail q's rising test), and
/// picks lie in [1, n - 2]; so a trace of n samples has at most
/// floor((n - 1) / 2) picks, reached by 0, 1, 0, 1, ... with n odd.

#include <array>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "dwsr/concepts.hpp"
#include "dwsr/core/cube_view.hpp"
#include "dwsr/error.hpp"
#include "dwsr/memory/buffer.hpp"

namespace dwsr::operators {

/// One row of the table: where a pick is (in the whole cube's indices) and
/// the attribute's value there.
struct pick {
  std::uint32_t inline_index = 0;
  std::uint32_t crossline = 0;
  std::uint32_t sample = 0;
  float value = 0;
  friend bool operator==(const pick&, const pick&) = default;
};
static_assert(sizeof(pick) == 16, "pick is a packed table row");

/// Settings of event_picks.
struct event_picks_options {
  float threshold = 0.0f;  ///< a pick's value is strictly above this
  /// Index of the cube's first (inline, crossline, sample) in the whole
  /// survey, added to the rows' indices (a block of a larger cube).
  std::array<std::uint64_t, 3> origin{};
};

/// The most picks a trace of `samples` samples can have: floor((samples - 1) / 2).
constexpr std::uint64_t max_picks_per_trace(std::uint64_t samples) noexcept {
  return samples < 1 ? 0 : (samples - 1) / 2;
}

namespace detail {
/// Calls f(t) for every pick of trace v, in increasing t.
template <class F>
void for_each_pick(std::span<const float> v, float threshold, F&& f) {
  const std::size_t n = v.size();
  std::size_t t = 1;
  while (t + 1 < n) {
    if (!(v[t] > threshold && v[t - 1] < v[t])) {
      ++t;
      continue;
    }
    std::size_t end = t + 1;  // first sample after the plateau that starts at t
    while (end < n && v[end] == v[t]) ++end;
    if (end < n && v[end] < v[t]) f(t);
    t = end;  // no pick inside the plateau; `end` cannot rise from it either
  }
}
}  // namespace detail

/// The picks of `in` (rows in trace order, then sample order), in a buffer of
/// ctx with role `role`. Under the meta context the buffer has the bound's
/// size and its event is flagged bound. Temporaries: one count per trace
/// plus one (8 bytes each), freed before returning.
template <ExecutionContext Ctx>
buffer<pick, Ctx> event_picks(Ctx& ctx, cube_view<const float> in, const event_picks_options& options = {},
                              buffer_role role = buffer_role::output) {
  const shape3 s = in.shape();
  constexpr auto limit = std::uint64_t{std::numeric_limits<std::uint32_t>::max()};
  for (std::size_t axis = 0; axis < 3; ++axis)
    if (s[axis] == 0 || options.origin[axis] + s[axis] - 1 > limit) {
      std::string what = "event_picks: cube of shape ";
      what.append(to_string(s)).append(" at origin ").append(std::to_string(options.origin[axis]));
      what.append(" on axis ").append(std::to_string(axis));
      throw invalid_input(what + "; expected non-empty axes whose indices fit 32 bits");
    }
  const std::uint64_t traces = s.traces();
  auto offsets = ctx.template allocate<std::uint64_t>(traces + 1, buffer_role::temporary);
  buffer<pick, Ctx> table;
  if constexpr (Ctx::computes) {
    std::uint64_t* count = offsets.data();
    ctx.parallel_for(traces, [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
      for (auto i = lo; i < hi; ++i) {
        std::uint64_t c = 0;
        detail::for_each_pick(in.trace(i), options.threshold, [&](std::size_t) { ++c; });
        count[i + 1] = c;
      }
    });
    count[0] = 0;
    for (std::uint64_t i = 0; i < traces; ++i) count[i + 1] += count[i];
    table = ctx.template allocate<pick>(count[traces], role);
    pick* rows = table.data();
    ctx.parallel_for(traces, [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
      for (auto i = lo; i < hi; ++i) {
        const auto trace = in.trace(i);
        const auto il = static_cast<std::uint32_t>(options.origin[0] + i / s.crosslines);
        const auto xl = static_cast<std::uint32_t>(options.origin[1] + i % s.crosslines);
        std::uint64_t k = count[i];
        detail::for_each_pick(trace, options.threshold, [&](std::size_t t) {
          rows[k++] = {il, xl, static_cast<std::uint32_t>(options.origin[2] + t), trace[t]};
        });
      }
    });
  } else {
    table = ctx.template allocate_bound<pick>(traces * max_picks_per_trace(s.samples), role);
  }
  return table;
}

}  // namespace dwsr::operators
