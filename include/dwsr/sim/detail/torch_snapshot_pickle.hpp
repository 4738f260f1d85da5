#pragma once
/// \file Reads a PyTorch memory snapshot pickled by
/// torch.cuda.memory._dump_snapshot: the pickle is parsed into values
/// (detail/pickle.hpp), then device_traces, segments and allocator_settings
/// are walked into a torch_trace_builder, as the JSON reader does. Frames are
/// never visited. The memo lets a pickle name one list many times; the walk
/// visits at most as many values as the pickle has bytes, which no snapshot
/// written by Python exceeds, so a crafted file cannot make it run long.

#include <cstdint>
#include <optional>
#include <string>

#include "dwsr/error.hpp"
#include "dwsr/sim/detail/pickle.hpp"
#include "dwsr/sim/detail/torch_trace_builder.hpp"

namespace dwsr::sim::detail {

/// Walks a parsed snapshot pickle into `out`; returns whether it had device_traces.
class torch_snapshot_pickle {
 public:
  torch_snapshot_pickle(const pickle_document& doc, std::string name, torch_trace_builder& out)
      : doc_(doc), name_(std::move(name)), out_(out), budget_(doc.bytes()) {}

  bool walk() {
    const auto& root = doc_.root();
    if (root.kind == pickle_kind::dict) keys_of(root);
    const pickle_value* traces = &root;
    if (root.kind == pickle_kind::dict) {
      traces = doc_.find(root, "device_traces");
      if (const auto* segs = doc_.find(root, "segments")) segments(*segs);
      if (const auto* s = doc_.find(root, "allocator_settings")) settings(*s);
      if (!traces) return false;
      if (traces->kind != pickle_kind::list) throw invalid_input(name_ + ": 'device_traces' is not a list");
    } else if (root.kind != pickle_kind::list) {
      return false;
    }
    for (const auto d : traces->items) {
      visit();
      out_.begin_device();
      const auto& device = doc_.at(d);
      if (device.kind != pickle_kind::list)
        throw invalid_input(name_ + ": device_traces[" + std::to_string(out_.devices() - 1) + "] is not a list");
      for (const auto e : device.items) {
        visit();
        entry(doc_.at(e));
      }
    }
    return true;
  }

 private:
  // Every value visited, and every key a look-up in a dict passes, costs one of the budget.
  void visit(std::size_t n = 1) {
    if (n > budget_)
      throw invalid_input(name_ + ": the pickle repeats shared values more often than a memory snapshot does");
    budget_ -= n;
  }
  void keys_of(const pickle_value& dict) { visit(dict.items.size()); }
  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw invalid_input(name_ + ": " + where + ": " + why);
  }
  std::uint64_t whole(const pickle_value& v, const std::string& where, const char* key) const {
    if (v.kind == pickle_kind::integer && v.integer >= 0) return static_cast<std::uint64_t>(v.integer);
    if (v.kind == pickle_kind::integer) fail(where, std::string("'") + key + "' is negative");
    if (v.kind == pickle_kind::big_integer) fail(where, std::string("'") + key + "' does not fit 63 bits");
    if (v.kind == pickle_kind::real) fail(where, std::string("'") + key + "' is not a whole number");
    fail(where, std::string("'") + key + "' is not a number");
  }
  std::optional<std::uint64_t> field(const pickle_value& d, const char* key, const std::string& where) const {
    const auto* v = doc_.find(d, key);
    if (!v) return std::nullopt;
    return whole(*v, where, key);
  }

  void entry(const pickle_value& e) {
    const auto where = "device_traces[" + std::to_string(out_.devices() - 1) + "][" +
                       std::to_string(out_.entries(out_.devices() - 1)) + "]";
    if (e.kind != pickle_kind::dict) fail(where, "the entry is not a dict");
    keys_of(e);
    torch_entry t;
    if (const auto* a = doc_.find(e, "action")) {
      if (a->kind != pickle_kind::text) fail(where, "'action' is not a string");
      t.action = a->text;
    }
    t.addr = field(e, "addr", where);
    t.size = field(e, "size", where);
    t.device_free = field(e, "device_free", where);
    if (const auto* s = doc_.find(e, "stream"); s && s->kind == pickle_kind::integer) t.stream = s->integer;
    out_.entry(t);
  }

  void segments(const pickle_value& list) {
    out_.segments_present();
    if (list.kind != pickle_kind::list) throw invalid_input(name_ + ": 'segments' is not a list");
    for (std::size_t i = 0; i < list.items.size(); ++i) {
      visit();
      const auto& s = doc_.at(list.items[i]);
      const auto where = "segments[" + std::to_string(i) + "]";
      if (s.kind != pickle_kind::dict) fail(where, "the segment is not a dict");
      keys_of(s);
      torch_snapshot_segment seg;
      seg.address = field(s, "address", where).value_or(0);
      seg.total_size = field(s, "total_size", where).value_or(0);
      seg.device = field(s, "device", where).value_or(0);
      if (const auto* v = doc_.find(s, "stream"); v && v->kind == pickle_kind::integer) seg.stream = v->integer;
      if (const auto* v = doc_.find(s, "segment_type"); v && v->kind == pickle_kind::text)
        seg.large = v->text != "small";
      if (const auto* v = doc_.find(s, "is_expandable"); v && v->kind == pickle_kind::boolean) seg.expandable = v->flag;
      if (const auto* v = doc_.find(s, "segment_pool_id");
          v && (v->kind == pickle_kind::tuple || v->kind == pickle_kind::list))
        for (const auto p : v->items) {
          visit();
          if (doc_.at(p).kind == pickle_kind::integer && doc_.at(p).integer != 0) seg.private_pool = true;
        }
      if (const auto* blocks = doc_.find(s, "blocks"); blocks && blocks->kind == pickle_kind::list) {
        auto next = seg.address;
        for (std::size_t j = 0; j < blocks->items.size(); ++j) {
          visit();
          const auto& b = doc_.at(blocks->items[j]);
          const auto bw = where + ".blocks[" + std::to_string(j) + "]";
          if (b.kind != pickle_kind::dict) fail(bw, "the block is not a dict");
          keys_of(b);
          torch_snapshot_block blk;
          blk.address = field(b, "address", bw).value_or(next);
          blk.size = field(b, "size", bw).value_or(0);
          blk.requested = field(b, "requested_size", bw).value_or(0);
          if (const auto* st = doc_.find(b, "state"); st && st->kind == pickle_kind::text)
            blk.allocated = st->text == "active_allocated" || st->text == "active_pending_free";
          next = blk.address + blk.size;
          seg.blocks.push_back(blk);
        }
      }
      out_.segment(std::move(seg));
    }
  }

  void settings(const pickle_value& d) {
    keys_of(d);
    if (const auto* v = doc_.find(d, "PYTORCH_CUDA_ALLOC_CONF"); v && v->kind == pickle_kind::text)
      out_.settings.conf = std::string(v->text);
    if (const auto* v = doc_.find(d, "max_split_size"); v && v->kind == pickle_kind::integer)
      out_.settings.max_split_size = v->integer;
    if (const auto* v = doc_.find(d, "garbage_collection_threshold"); v && v->kind == pickle_kind::real)
      out_.settings.garbage_collection_threshold = v->real;
    if (const auto* v = doc_.find(d, "expandable_segments"); v && v->kind == pickle_kind::boolean)
      out_.settings.expandable_segments = v->flag;
  }

  const pickle_document& doc_;
  std::string name_;
  torch_trace_builder& out_;
  std::size_t budget_;
};

}  // namespace dwsr::sim::detail
