#pragma once
/// \file Reads the allocation history of a real PyTorch run, so that it can be
/// replayed through any model: the `device_traces` of
/// torch.cuda.memory._snapshot() exported to JSON. Export it with
///
///     torch.cuda.memory._record_memory_history(max_entries=10_000_000)  # before the run
///     ...  # the run
///     import json, torch; s = torch.cuda.memory._snapshot(); json.dump({"device_traces": [[{k: e[k] for k in
///     ("action", "addr", "size", "stream")} for e in t] for t in s["device_traces"]]}, open("trace.json", "w"))
///
/// (dumping the whole snapshot dict also works; frames and other keys are
/// skipped while reading, without building a document in memory).
///
/// Entries become events of device cuda, buffer ids numbered from 1 in the
/// order of allocation: `alloc` allocates `size` requested bytes at `addr`,
/// `free_completed` (or the older `free`) frees the block at `addr`; a
/// `free_requested` is not yet a free (PyTorch may defer it across streams).
/// Segment actions are not replayed (models re-derive segments) but give
/// PyTorch's own reserved memory, reported beside the model's. All streams are
/// replayed as one.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <istream>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/error.hpp"
#include "dwsr/memory/event.hpp"

namespace dwsr::sim {

/// One GPU's allocation history from a PyTorch memory snapshot.
struct torch_trace {
  std::vector<event> events;                        ///< alloc and free events (device cuda, node 0, role temporary)
  std::size_t gpu = 0;                              ///< the index in device_traces these came from
  std::uint64_t entries = 0;                        ///< entries of that GPU's trace, of every action
  std::uint64_t recorded_peak_reserved = 0;         ///< peak of PyTorch's reserved memory from segment actions
  bool recorded_reserved_complete = true;           ///< false when a segment freed was not allocated in the trace
  std::optional<std::uint64_t> recorded_oom_event;  ///< events.size() when PyTorch raised OOM
  std::uint64_t recorded_oom_bytes = 0;             ///< the size PyTorch failed to allocate
};

namespace detail {

// A SAX handler that keeps only device_traces[*][*].{action, addr, size}.
class snapshot_handler {
 public:
  using json = nlohmann::json;
  explicit snapshot_handler(std::string name) : name_(std::move(name)) {}

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t v) {
    if (in_entry_field() && v < 0) fail_entry("'" + key_ + "' is negative");
    return number(static_cast<std::uint64_t>(v));
  }
  bool number_unsigned(json::number_unsigned_t v) { return number(v); }
  bool number_float(json::number_float_t, const json::string_t&) {
    if (in_entry_field()) fail_entry("'" + key_ + "' is not a whole number");
    return value();
  }
  bool string(json::string_t& s) {
    if (in_entry_field() && key_ == "action")
      action_ = s;
    else if (in_entry_field())
      fail_entry("'" + key_ + "' is not a number");
    return value();
  }
  bool binary(json::binary_t&) { return value(); }
  bool key(json::string_t& k) {
    key_ = k;
    return true;
  }
  bool start_object(std::size_t) {
    const auto parent = top();
    if (stack_.empty())
      push(kind::root);
    else if (parent == kind::device) {
      push(kind::entry);
      action_.clear();
      addr_.reset();
      size_.reset();
    } else
      push(kind::other);
    return true;
  }
  bool end_object() {
    if (top() == kind::entry) finish_entry();
    stack_.pop_back();
    after_value();
    return true;
  }
  bool start_array(std::size_t) {
    const auto parent = top();
    if (stack_.empty() || (parent == kind::root && key_ == "device_traces")) {
      push(kind::traces);
      found_ = true;
    } else if (parent == kind::traces) {
      push(kind::device);
      devices_.emplace_back();
      index_ = 0;
    } else
      push(kind::other);
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    after_value();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    throw invalid_input(name_ + ": not a JSON document (byte " + std::to_string(position) + "): " + e.what());
  }

  struct device_state {
    torch_trace trace;
    std::unordered_map<std::uint64_t, std::uint64_t> live;  // address -> (buffer id, bytes) index
    std::vector<std::uint64_t> bytes;                       // requested bytes by buffer id - 1
    std::int64_t reserved = 0;
  };
  std::vector<device_state> devices_;
  bool found_ = false;

 private:
  enum class kind { none, root, traces, device, entry, other };
  kind top() const { return stack_.empty() ? kind::none : stack_.back(); }
  void push(kind k) { stack_.push_back(k); }
  bool in_entry_field() const { return top() == kind::entry; }
  bool value() {
    if (top() == kind::root && key_ == "device_traces") throw invalid_input(name_ + ": 'device_traces' is not a list");
    after_value();
    return true;
  }
  bool number(std::uint64_t v) {
    if (in_entry_field()) {
      if (key_ == "addr")
        addr_ = v;
      else if (key_ == "size")
        size_ = v;
      else if (key_ == "action")
        fail_entry("'action' is not a string");
    }
    return value();
  }
  void after_value() {
    if (top() == kind::device) ++index_;
  }
  [[noreturn]] void fail_entry(const std::string& why) const {
    throw invalid_input(name_ + ": device_traces[" + std::to_string(devices_.size() - 1) + "][" +
                        std::to_string(index_) + "]: " + why);
  }
  std::uint64_t need(const std::optional<std::uint64_t>& v, const char* what) const {
    if (!v) fail_entry("'" + action_ + "' entry without '" + what + "'");
    return *v;
  }

  /// The entry's size as a change of `reserved` in direction `sign`; an error
  /// when the running total would leave 64 bits (no real GPU reserves 2^63 bytes).
  std::int64_t segment_size(std::int64_t reserved, int sign) const {
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    const auto size = need(size_, "size");
    const bool fits =
        size <= static_cast<std::uint64_t>(max) && (sign > 0 ? reserved <= max - static_cast<std::int64_t>(size)
                                                             : reserved >= -max + static_cast<std::int64_t>(size));
    if (!fits)
      fail_entry("'" + action_ + "' of " + std::to_string(size) +
                 " bytes takes the reserved total out of 64-bit range; the size is corrupt");
    return static_cast<std::int64_t>(size);
  }

  void finish_entry() {
    auto& d = devices_.back();
    auto& t = d.trace;
    ++t.entries;
    if (action_ == "alloc") {
      const auto addr = need(addr_, "addr");
      const auto size = need(size_, "size");
      const auto id = static_cast<std::uint64_t>(d.bytes.size()) + 1;
      if (!d.live.emplace(addr, id).second)
        fail_entry("alloc at address " + std::to_string(addr) + ", which is already allocated");
      d.bytes.push_back(size);
      t.events.push_back({t.events.size(), action::alloc, device::cuda, buffer_role::temporary, 0, id, size});
    } else if (action_ == "free_completed" || action_ == "free") {
      const auto addr = need(addr_, "addr");
      const auto it = d.live.find(addr);
      if (it == d.live.end())
        fail_entry("'" + action_ + "' of address " + std::to_string(addr) +
                   ", which the trace never allocated; record the history before the run starts, with max_entries "
                   "large enough that the ring buffer does not wrap");
      const auto id = it->second;
      d.live.erase(it);
      t.events.push_back({t.events.size(), action::free, device::cuda, buffer_role::temporary, 0, id, d.bytes[id - 1]});
    } else if (action_ == "segment_alloc" || action_ == "segment_map") {
      d.reserved += segment_size(d.reserved, +1);
      if (d.reserved > 0 && static_cast<std::uint64_t>(d.reserved) > t.recorded_peak_reserved)
        t.recorded_peak_reserved = static_cast<std::uint64_t>(d.reserved);
    } else if (action_ == "segment_free" || action_ == "segment_unmap") {
      d.reserved -= segment_size(d.reserved, -1);
      if (d.reserved < 0) t.recorded_reserved_complete = false;
    } else if (action_ == "oom") {
      if (!t.recorded_oom_event) {
        t.recorded_oom_event = t.events.size();
        t.recorded_oom_bytes = size_.value_or(0);
      }
    } else if (action_ == "free_requested" || action_ == "snapshot") {
      // not a change of the pool
    } else if (action_.empty()) {
      fail_entry("entry without 'action'");
    } else {
      fail_entry("unknown action '" + action_ +
                 "'; expected alloc, free_requested, free_completed, segment_alloc, segment_free, segment_map, "
                 "segment_unmap, oom or snapshot");
    }
  }

  std::string name_;
  std::vector<kind> stack_;
  std::string key_;
  std::string action_;
  std::optional<std::uint64_t> addr_, size_;
  std::uint64_t index_ = 0;
};

}  // namespace detail

/// Reads device_traces from JSON (the snapshot dict, or the bare list of
/// per-GPU lists). `gpu` picks a GPU; without it, the trace must have entries
/// for exactly one GPU. `name` is named in errors.
inline torch_trace read_torch_snapshot(std::istream& in, const std::string& name = "<snapshot>",
                                       std::optional<std::size_t> gpu = {}) {
  detail::snapshot_handler h(name);
  nlohmann::json::sax_parse(in, &h);
  if (!h.found_)
    throw invalid_input(name + ": no 'device_traces' list; expected the JSON export of torch.cuda.memory._snapshot()");
  std::vector<std::size_t> used;
  for (std::size_t i = 0; i < h.devices_.size(); ++i)
    if (h.devices_[i].trace.entries > 0) used.push_back(i);
  std::size_t pick = 0;
  if (gpu) {
    if (*gpu >= h.devices_.size())
      throw invalid_input(name + ": GPU " + std::to_string(*gpu) + " is not in the trace, which has " +
                          std::to_string(h.devices_.size()) + " device traces");
    pick = *gpu;
  } else if (used.size() == 1) {
    pick = used[0];
  } else if (used.empty()) {
    throw invalid_input(name +
                        ": the device traces are empty; record the history with "
                        "torch.cuda.memory._record_memory_history() before the run");
  } else {
    std::string list;
    for (auto i : used) list += (list.empty() ? "" : ", ") + std::to_string(i);
    throw invalid_input(name + ": the trace has entries for GPUs " + list + "; choose one (--gpu N)");
  }
  auto t = std::move(h.devices_[pick].trace);
  t.gpu = pick;
  return t;
}

/// Reads a snapshot file (io_error when it cannot be opened).
inline torch_trace read_torch_snapshot(const std::filesystem::path& path, std::optional<std::size_t> gpu = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error("cannot open snapshot '" + path.string() + "'");
  return read_torch_snapshot(in, path.string(), gpu);
}

}  // namespace dwsr::sim
