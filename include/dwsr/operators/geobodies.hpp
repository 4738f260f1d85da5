#pragma once
/// \file Geobodies: the connected bodies of voxels above a threshold, as an
/// int32 (or int64) label cube and a table of per-body statistics.
///
/// A voxel is in a body when its value is strictly above the threshold (NaN
/// never is). Two such voxels are connected when they share a face
/// (6-connectivity: inline, crossline or sample differ by one, the other two
/// equal), so bodies touching only along an edge or at a corner are separate.
/// Labels are 0 for background and 1..N for the bodies in a canonical order:
/// by each body's first voxel in C order. Two executions that find the same
/// bodies therefore write the same labels, however they were partitioned.
///
/// The work is on runs (maximal stretches of body voxels along a trace, time
/// being the fastest axis): a parallel pass counts and records the runs of
/// every trace, a union-find joins runs that overlap in the neighbouring
/// traces, and, since runs are numbered in C order and every union keeps the
/// smaller root, the roots taken in order are the bodies in canonical order.
///
/// Memory depends on the data twice: the runs (with their union-find) and the
/// statistics table. The real execution allocates their actual sizes; the meta
/// execution allocates bounds and flags those events (event::bound):
///  - runs: at most ceil(samples / 2) per trace (runs are separated by a
///    background voxel);
///  - bodies: at most ceil(voxels / 2). Proof: one voxel from each body gives
///    a set of voxels no two of which share a face. The box's 6-connected grid
///    has a Hamiltonian path (the boustrophedon walk), whose every other edge
///    makes a matching covering all voxels but at most one; such a set holds at
///    most one voxel of each matched pair, so at most floor(voxels / 2) + 1
///    when voxels is odd, ceil(voxels / 2) in all. A checkerboard reaches it.
///
/// The blocked form (geobodies_blocked) labels each block on its own, joins
/// (block, local label) pairs across block faces with a union-find, reading
/// the layers of voxels on either side of each face, and renumbers
/// canonically: its labels equal the whole cube's exactly.

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dwsr/concepts.hpp"
#include "dwsr/core/cube_view.hpp"
#include "dwsr/error.hpp"
#include "dwsr/memory/buffer.hpp"

namespace dwsr::operators {

/// One row of the statistics table, in the whole cube's indices
/// (inline, crossline, sample). Packed, position first: a table row of the
/// geobodies operator (ops/protocol.hpp's table_spec).
struct body_stats {
  std::array<std::uint32_t, 3> first{};  ///< first voxel in C order (the canonical order's key)
  std::array<std::uint32_t, 3> lo{};     ///< bounding box, inclusive
  std::array<std::uint32_t, 3> hi{};     ///< bounding box, inclusive
  float peak = 0;                        ///< largest value of the attribute in the body
  std::uint64_t voxels = 0;              ///< number of voxels
  double sum = 0;                        ///< sum of the attribute over the body
  /// Mean of the attribute over the body.
  double mean() const noexcept { return sum / static_cast<double>(voxels); }
};
static_assert(sizeof(body_stats) == 56, "body_stats is a packed table row");

/// The element types of a label cube: int32, as the labels are counted (the
/// geobodies operator's output), or int64.
template <class L>
concept LabelType = std::same_as<L, std::int32_t> || std::same_as<L, std::int64_t>;

/// Settings of geobodies.
struct geobodies_options {
  float threshold = 0.0f;  ///< body voxels are strictly above this
};

/// The most bodies a cube of `voxels` voxels can hold: ceil(voxels / 2).
constexpr std::uint64_t max_bodies(std::uint64_t voxels) noexcept { return voxels / 2 + voxels % 2; }

namespace detail {

/// A run of body voxels along a trace: samples [start, end) of the region.
struct body_run {
  std::uint32_t start = 0;
  std::uint32_t end = 0;
};

/// Root of x in a union-find whose parents never exceed their children.
inline std::uint32_t find_root(std::uint32_t* parent, std::uint32_t x) noexcept {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}
/// Joins the sets of a and b under the smaller root.
inline void join(std::uint32_t* parent, std::uint32_t a, std::uint32_t b) noexcept {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a < b) parent[b] = a;
  if (b < a) parent[a] = b;
}

[[noreturn]] inline void too_many(const char* what, std::uint64_t count, std::uint64_t limit) {
  std::string m = "geobodies: ";
  m.append(std::to_string(count)).append(" ").append(what).append("; at most ").append(std::to_string(limit));
  throw invalid_input(m + " fit the int32 labels; raise the threshold or label a smaller cube");
}

inline void check_indices(shape3 s) {
  if (s.voxels() == 0 || std::max({s.inlines, s.crosslines, s.samples}) > std::numeric_limits<std::uint32_t>::max())
    throw invalid_input("geobodies: cube of shape " + to_string(s) +
                        "; expected non-empty axes whose indices fit 32 bits");
}

/// Labels the box [origin, origin + extent) of `in` on its own: writes local
/// labels 1..n (canonical within the box) into the same box of `labels` and
/// returns the n bodies' statistics (role `role`), in whole-cube indices.
template <class Ctx, class Label>
buffer<body_stats, Ctx> label_box(Ctx& ctx, cube_view<const float> in, cube_view<Label> labels, float threshold,
                                  std::array<std::uint64_t, 3> origin, shape3 extent, buffer_role role) {
  const std::uint64_t traces = extent.traces();
  auto trace_at = [&](std::uint64_t q) {  // the region's trace q, as a span of the region's samples
    return in.trace(origin[0] + q / extent.crosslines, origin[1] + q % extent.crosslines)
        .subspan(origin[2], extent.samples);
  };
  auto offsets = ctx.template allocate<std::uint64_t>(traces + 1, buffer_role::temporary);
  buffer<body_run, Ctx> runs;
  buffer<std::uint32_t, Ctx> parent;
  buffer<body_stats, Ctx> stats;
  if constexpr (!Ctx::computes) {
    const auto run_bound = traces * (extent.samples / 2 + extent.samples % 2);
    runs = ctx.template allocate_bound<body_run>(run_bound, buffer_role::temporary);
    parent = ctx.template allocate_bound<std::uint32_t>(run_bound, buffer_role::temporary);
    stats = ctx.template allocate_bound<body_stats>(max_bodies(extent.voxels()), role);
  } else {
    std::uint64_t* off = offsets.data();
    auto for_each_run = [threshold](std::span<const float> v, auto&& f) {
      for (std::size_t t = 0; t < v.size(); ++t) {
        if (!(v[t] > threshold)) continue;
        const auto start = t;
        while (t < v.size() && v[t] > threshold) ++t;
        f(start, t);
      }
    };
    ctx.parallel_for(traces, [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
      for (auto q = lo; q < hi; ++q) {
        std::uint64_t c = 0;
        for_each_run(trace_at(q), [&](std::size_t, std::size_t) { ++c; });
        off[q + 1] = c;
      }
    });
    off[0] = 0;
    for (std::uint64_t q = 0; q < traces; ++q) off[q + 1] += off[q];
    const std::uint64_t count = off[traces];
    if (count > std::uint64_t{std::numeric_limits<std::int32_t>::max()})
      too_many("runs", count, std::numeric_limits<std::int32_t>::max());
    runs = ctx.template allocate<body_run>(count, buffer_role::temporary);
    parent = ctx.template allocate<std::uint32_t>(count, buffer_role::temporary);
    body_run* r = runs.data();
    std::uint32_t* p = parent.data();
    ctx.parallel_for(traces, [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
      for (auto q = lo; q < hi; ++q) {
        auto k = off[q];
        for_each_run(trace_at(q), [&](std::size_t a, std::size_t b) {
          p[k] = static_cast<std::uint32_t>(k);
          r[k++] = {static_cast<std::uint32_t>(a), static_cast<std::uint32_t>(b)};
        });
      }
    });
    std::uint64_t bodies = 0;
    ctx.compute([&] {
      // Join each trace's runs with the overlapping runs of the previous inline and crossline.
      auto join_traces = [&](std::uint64_t q, std::uint64_t n) {
        auto i = off[q], j = off[n];
        while (i < off[q + 1] && j < off[n + 1]) {
          if (r[i].start < r[j].end && r[j].start < r[i].end) join(p, std::uint32_t(i), std::uint32_t(j));
          if (r[i].end < r[j].end)
            ++i;
          else
            ++j;
        }
      };
      for (std::uint64_t q = 0; q < traces; ++q) {
        if (q % extent.crosslines) join_traces(q, q - 1);
        if (q >= extent.crosslines) join_traces(q, q - extent.crosslines);
      }
      // Parents never exceed children, so in increasing order every parent is
      // already replaced by its body's label when its child is reached, and
      // each root (its body's first run in C order) takes the next label.
      for (std::uint64_t k = 0; k < count; ++k) p[k] = p[k] == k ? static_cast<std::uint32_t>(++bodies) : p[p[k]];
    });
    stats = ctx.template allocate<body_stats>(bodies, role);
    body_stats* st = stats.data();
    ctx.parallel_for(traces, [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
      for (auto q = lo; q < hi; ++q) {
        auto* out = &labels(origin[0] + q / extent.crosslines, origin[1] + q % extent.crosslines, origin[2]);
        std::fill(out, out + extent.samples, 0);
        for (auto k = off[q]; k < off[q + 1]; ++k) std::fill(out + r[k].start, out + r[k].end, Label(p[k]));
      }
    });
    ctx.compute([&] {
      std::fill(st, st + bodies, body_stats{});
      for (std::uint64_t q = 0; q < traces; ++q) {
        const auto v = trace_at(q);
        const auto il = static_cast<std::uint32_t>(origin[0] + q / extent.crosslines);
        const auto xl = static_cast<std::uint32_t>(origin[1] + q % extent.crosslines);
        for (auto k = off[q]; k < off[q + 1]; ++k) {
          auto& b = st[p[k] - 1];
          const std::array<std::uint32_t, 3> at{il, xl, static_cast<std::uint32_t>(origin[2] + r[k].start)};
          const std::uint32_t last = static_cast<std::uint32_t>(origin[2] + r[k].end - 1);
          if (b.voxels == 0) b = {at, at, {il, xl, last}, v[r[k].start], 0, 0.0};
          b.voxels += r[k].end - r[k].start;
          for (std::size_t a = 0; a < 3; ++a) {
            b.lo[a] = std::min(b.lo[a], at[a]);
            b.hi[a] = std::max(b.hi[a], a == 2 ? last : at[a]);
          }
          for (auto t = r[k].start; t < r[k].end; ++t) {
            b.sum += v[t];
            b.peak = std::max(b.peak, v[t]);
          }
        }
      }
    });
  }
  return stats;
}

}  // namespace detail

/// Labels the bodies of `in` into `labels` (same shape; under the meta context
/// both are shapes only) and returns their statistics, row i for label i + 1,
/// in a buffer of ctx with role `role`. Temporaries: 8 bytes per trace, and
/// 12 bytes per run of body voxels along a trace.
template <ExecutionContext Ctx, LabelType Label>
buffer<body_stats, Ctx> geobodies(Ctx& ctx, cube_view<const float> in, cube_view<Label> labels,
                                  const geobodies_options& options = {}, buffer_role role = buffer_role::output) {
  detail::check_indices(in.shape());
  if (labels.shape() != in.shape())
    throw invalid_input("geobodies: labels of shape " + to_string(labels.shape()) + " for a cube of shape " +
                        to_string(in.shape()) + "; expected the same shape");
  return detail::label_box(ctx, in, labels, options.threshold, {0, 0, 0}, in.shape(), role);
}

/// geobodies computed block by block (blocks of shape `block`, the last ones
/// along each axis smaller): the same labels and the same statistics (sums up
/// to rounding: they are added in another order). Each block is labelled from
/// its own voxels with its temporaries freed before the next; the blocks'
/// tables (temporaries) then live until the merge, which adds a union-find
/// over all of the blocks' bodies (4 + 8 bytes each) and the sorted roots (4
/// bytes per body).
template <ExecutionContext Ctx, LabelType Label>
buffer<body_stats, Ctx> geobodies_blocked(Ctx& ctx, cube_view<const float> in, cube_view<Label> labels, shape3 block,
                                          const geobodies_options& options = {},
                                          buffer_role role = buffer_role::output) {
  const shape3 s = in.shape();
  detail::check_indices(s);
  if (labels.shape() != s)
    throw invalid_input("geobodies: labels of shape " + to_string(labels.shape()) + " for a cube of shape " +
                        to_string(s) + "; expected the same shape");
  if (block.voxels() == 0) throw invalid_input("geobodies: block shape " + to_string(block) + "; expected no zero");
  const std::array<std::uint64_t, 3> n{(s.inlines + block.inlines - 1) / block.inlines,
                                       (s.crosslines + block.crosslines - 1) / block.crosslines,
                                       (s.samples + block.samples - 1) / block.samples};
  const std::uint64_t blocks = n[0] * n[1] * n[2];
  auto corner = [&](std::uint64_t b) -> std::array<std::uint64_t, 3> {
    return {b / (n[1] * n[2]) * block.inlines, b / n[2] % n[1] * block.crosslines, b % n[2] * block.samples};
  };
  auto extent_of = [&](std::uint64_t b) {
    const auto c = corner(b);
    return shape3{std::min(block.inlines, s.inlines - c[0]), std::min(block.crosslines, s.crosslines - c[1]),
                  std::min(block.samples, s.samples - c[2])};
  };

  auto base = ctx.template allocate<std::uint64_t>(blocks + 1, buffer_role::temporary);
  std::vector<buffer<body_stats, Ctx>> local;
  local.reserve(blocks);
  std::uint64_t total = 0;  // the blocks' bodies (their bounds under the meta context)
  for (std::uint64_t b = 0; b < blocks; ++b) {
    local.push_back(
        detail::label_box(ctx, in, labels, options.threshold, corner(b), extent_of(b), buffer_role::temporary));
    ctx.compute([&] { base[b] = total; });
    total += local.back().size();
  }
  ctx.compute([&] { base[blocks] = total; });
  if (total > std::numeric_limits<std::uint32_t>::max())
    detail::too_many("bodies in all blocks", total, std::numeric_limits<std::uint32_t>::max());

  buffer<std::uint32_t, Ctx> parent, roots;
  buffer<std::uint64_t, Ctx> keys;
  buffer<body_stats, Ctx> stats;
  if constexpr (!Ctx::computes) {
    parent = ctx.template allocate_bound<std::uint32_t>(total, buffer_role::temporary);
    keys = ctx.template allocate_bound<std::uint64_t>(total, buffer_role::temporary);
    roots = ctx.template allocate_bound<std::uint32_t>(std::min(total, max_bodies(s.voxels())), buffer_role::temporary);
    stats = ctx.template allocate_bound<body_stats>(max_bodies(s.voxels()), role);
  } else {
    parent = ctx.template allocate<std::uint32_t>(total, buffer_role::temporary);
    keys = ctx.template allocate<std::uint64_t>(total, buffer_role::temporary);
    std::uint32_t* p = parent.data();
    std::uint64_t* key = keys.data();
    std::uint64_t bodies = 0;
    ctx.compute([&] {
      for (std::uint64_t m = 0; m < total; ++m) p[m] = static_cast<std::uint32_t>(m);
      // Join across every face between a block and the next one along each
      // axis: the last layer of one, the first layer of the other.
      for (std::uint64_t b = 0; b < blocks; ++b) {
        const auto c = corner(b);
        const auto e = extent_of(b);
        for (std::size_t axis = 0; axis < 3; ++axis) {
          if (c[axis] + e[axis] >= s[axis]) continue;
          const std::uint64_t next = b + (axis == 0 ? n[1] * n[2] : axis == 1 ? n[2] : 1);
          std::array<std::uint64_t, 3> lo = c, hi{c[0] + e[0], c[1] + e[1], c[2] + e[2]};
          lo[axis] = hi[axis] - 1;
          for (auto i = lo[0]; i < hi[0]; ++i)
            for (auto j = lo[1]; j < hi[1]; ++j)
              for (auto t = lo[2]; t < hi[2]; ++t) {
                const auto x = static_cast<std::uint64_t>(labels(i, j, t));
                const auto y = static_cast<std::uint64_t>(labels(i + (axis == 0), j + (axis == 1), t + (axis == 2)));
                if (x && y)
                  detail::join(p, static_cast<std::uint32_t>(base[b] + x - 1),
                               static_cast<std::uint32_t>(base[next] + y - 1));
              }
        }
      }
      // A body's key is its first voxel's C-order index: the least over its parts.
      for (std::uint64_t m = 0; m < total; ++m) key[m] = std::numeric_limits<std::uint64_t>::max();
      for (std::uint64_t b = 0; b < blocks; ++b)
        for (std::uint64_t k = 0; k < local[b].size(); ++k) {
          const auto& f = local[b][k];
          const auto m = base[b] + k;
          const auto root = detail::find_root(p, static_cast<std::uint32_t>(m));
          bodies += root == m;
          key[root] = std::min(key[root], (f.first[0] * s.crosslines + f.first[1]) * s.samples + f.first[2]);
        }
    });
    if (bodies > std::uint64_t{std::numeric_limits<std::int32_t>::max()})
      detail::too_many("bodies", bodies, std::numeric_limits<std::int32_t>::max());
    roots = ctx.template allocate<std::uint32_t>(bodies, buffer_role::temporary);
    stats = ctx.template allocate<body_stats>(bodies, role);
    std::uint32_t* order = roots.data();
    body_stats* st = stats.data();
    ctx.compute([&] {
      std::uint64_t k = 0;
      for (std::uint64_t m = 0; m < total; ++m)
        if (p[m] == m) order[k++] = static_cast<std::uint32_t>(m);
      std::sort(order, order + bodies, [&](std::uint32_t a, std::uint32_t b) { return key[a] < key[b]; });
      // Keys are no longer needed: a root's key becomes its final label.
      for (std::uint64_t i = 0; i < bodies; ++i) key[order[i]] = i + 1;
      std::fill(st, st + bodies, body_stats{});
      for (std::uint64_t b = 0; b < blocks; ++b)
        for (std::uint64_t j = 0; j < local[b].size(); ++j) {
          const auto& f = local[b][j];
          auto& to = st[key[detail::find_root(p, static_cast<std::uint32_t>(base[b] + j))] - 1];
          if (to.voxels == 0) to = {f.first, f.lo, f.hi, f.peak, 0, 0.0};
          to.voxels += f.voxels;
          to.first = std::min(to.first, f.first);
          for (std::size_t a = 0; a < 3; ++a) {
            to.lo[a] = std::min(to.lo[a], f.lo[a]);
            to.hi[a] = std::max(to.hi[a], f.hi[a]);
          }
          to.sum += f.sum;
          to.peak = std::max(to.peak, f.peak);
        }
      // Flatten the union-find, so that the parallel relabelling only reads it.
      for (std::uint64_t m = 0; m < total; ++m) p[m] = detail::find_root(p, static_cast<std::uint32_t>(m));
    });
    for (std::uint64_t b = 0; b < blocks; ++b) {
      const auto c = corner(b);
      const auto e = extent_of(b);
      ctx.parallel_for(e.traces(), [&](std::uint64_t lo, std::uint64_t hi, std::size_t) {
        for (auto q = lo; q < hi; ++q) {
          auto* out = &labels(c[0] + q / e.crosslines, c[1] + q % e.crosslines, c[2]);
          for (std::uint64_t t = 0; t < e.samples; ++t)
            if (out[t]) out[t] = static_cast<Label>(key[p[base[b] + std::uint64_t(out[t]) - 1]]);
        }
      });
    }
  }
  return stats;
}

}  // namespace dwsr::operators
