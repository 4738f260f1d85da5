#pragma once
/// \file Reads the JSON form of a PyTorch memory snapshot with a SAX handler:
/// device_traces entries go to a torch_trace_builder one by one, `segments`
/// and `allocator_settings` are kept, frames and other keys are skipped while
/// reading, without building a document in memory.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dwsr/error.hpp"
#include "dwsr/sim/detail/torch_trace_builder.hpp"

namespace dwsr::sim::detail {

/// The SAX handler (see the file comment).
class torch_snapshot_json {
 public:
  using json = nlohmann::json;
  torch_snapshot_json(std::string name, torch_trace_builder& out) : name_(std::move(name)), out_(out) {}

  bool null() { return value({}); }
  bool boolean(bool v) { return value({kind::boolean, v}); }
  bool number_integer(json::number_integer_t v) {
    scalar s{kind::integer};
    s.integer = v;
    return value(s);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    scalar s{kind::unsigned_integer};
    s.unsigned_integer = v;
    return value(s);
  }
  bool number_float(json::number_float_t v, const json::string_t&) {
    scalar s{kind::real};
    s.real = v;
    return value(s);
  }
  bool string(json::string_t& v) {
    scalar s{kind::text};
    s.text = &v;
    return value(s);
  }
  bool binary(json::binary_t&) { return value({kind::other}); }
  bool key(json::string_t& k) {
    key_ = k;
    return true;
  }
  bool start_object(std::size_t) {
    const auto parent = top();
    if (stack_.empty())
      push(level::root);
    else if (parent == level::device) {
      push(level::entry);
      entry_ = {};
      action_.clear();
    } else if (parent == level::segments) {
      push(level::segment);
      segment_ = {};
    } else if (parent == level::blocks) {
      push(level::block);
      block_ = {};
      block_.address = next_block_;
      state_.clear();
    } else if (parent == level::root && key_ == "allocator_settings")
      push(level::settings);
    else
      push(level::other);
    return true;
  }
  bool end_object() {
    const auto done = top();
    stack_.pop_back();
    if (done == level::entry) {
      entry_.action = action_;
      out_.entry(entry_);
    } else if (done == level::segment) {
      out_.segment(std::move(segment_));
      ++segments_seen_;
    } else if (done == level::block) {
      block_.allocated = state_ == "active_allocated" || state_ == "active_pending_free";
      next_block_ = block_.address + block_.size;
      segment_.blocks.push_back(block_);
    }
    return true;
  }
  bool start_array(std::size_t) {
    const auto parent = top();
    if (stack_.empty() || (parent == level::root && key_ == "device_traces")) {
      push(level::traces);
      found_ = true;
    } else if (parent == level::traces) {
      push(level::device);
      out_.begin_device();
    } else if (parent == level::root && key_ == "segments") {
      push(level::segments);
      out_.segments_present();
    } else if (parent == level::segment && key_ == "blocks") {
      push(level::blocks);
      next_block_ = segment_.address;
    } else if (parent == level::segment && key_ == "segment_pool_id") {
      push(level::pool_id);
    } else {
      push(level::other);
    }
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    throw invalid_input(name_ + ": not a JSON document (byte " + std::to_string(position) + "): " + e.what());
  }

  /// Whether a device_traces list was found.
  bool found() const noexcept { return found_; }

 private:
  enum class level { none, root, traces, device, entry, segments, segment, blocks, block, pool_id, settings, other };
  enum class kind { null, boolean, integer, unsigned_integer, real, text, other };
  struct scalar {
    kind k = kind::null;
    bool flag = false;
    std::int64_t integer = 0;
    std::uint64_t unsigned_integer = 0;
    double real = 0;
    const std::string* text = nullptr;
  };

  level top() const { return stack_.empty() ? level::none : stack_.back(); }
  void push(level l) { stack_.push_back(l); }

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw invalid_input(name_ + ": " + where + ": " + why);
  }
  std::string entry_where() const {
    return "device_traces[" + std::to_string(out_.devices() - 1) + "][" +
           std::to_string(out_.entries(out_.devices() - 1)) + "]";
  }
  // A whole number >= 0, or an error naming where it is.
  std::uint64_t whole(const scalar& s, const std::string& where) const {
    if (s.k == kind::unsigned_integer) return s.unsigned_integer;
    if (s.k == kind::integer && s.integer >= 0) return static_cast<std::uint64_t>(s.integer);
    if (s.k == kind::integer) fail(where, "'" + key_ + "' is negative");
    if (s.k == kind::real) fail(where, "'" + key_ + "' is not a whole number");
    fail(where, "'" + key_ + "' is not a number");
  }
  std::int64_t signed_whole(const scalar& s) const {
    if (s.k == kind::integer) return s.integer;
    if (s.k == kind::unsigned_integer) return static_cast<std::int64_t>(s.unsigned_integer);
    return 0;
  }

  bool value(const scalar& s) {
    switch (top()) {
      case level::root:
        if (key_ == "device_traces") throw invalid_input(name_ + ": 'device_traces' is not a list");
        break;
      case level::entry: {
        if (key_ == "action") {
          if (s.k != kind::text) fail(entry_where(), "'action' is not a string");
          action_ = *s.text;
        } else if (key_ == "addr") {
          entry_.addr = whole(s, entry_where());
        } else if (key_ == "size") {
          entry_.size = whole(s, entry_where());
        } else if (key_ == "device_free") {
          entry_.device_free = whole(s, entry_where());
        } else if (key_ == "stream") {
          entry_.stream = signed_whole(s);
        }
        break;
      }
      case level::segment: {
        const auto where = "segments[" + std::to_string(segment_index()) + "]";
        if (key_ == "address")
          segment_.address = whole(s, where);
        else if (key_ == "total_size")
          segment_.total_size = whole(s, where);
        else if (key_ == "device")
          segment_.device = whole(s, where);
        else if (key_ == "stream")
          segment_.stream = signed_whole(s);
        else if (key_ == "segment_type")
          segment_.large = !(s.k == kind::text && *s.text == "small");
        else if (key_ == "is_expandable")
          segment_.expandable = s.k == kind::boolean && s.flag;
        break;
      }
      case level::block: {
        const auto where =
            "segments[" + std::to_string(segment_index()) + "].blocks[" + std::to_string(segment_.blocks.size()) + "]";
        if (key_ == "address")
          block_.address = whole(s, where);
        else if (key_ == "size")
          block_.size = whole(s, where);
        else if (key_ == "requested_size")
          block_.requested = whole(s, where);
        else if (key_ == "state" && s.k == kind::text)
          state_ = *s.text;
        break;
      }
      case level::pool_id:
        if (signed_whole(s) != 0) segment_.private_pool = true;
        break;
      case level::settings:
        if (key_ == "PYTORCH_CUDA_ALLOC_CONF" && s.k == kind::text)
          out_.settings.conf = *s.text;
        else if (key_ == "max_split_size" && (s.k == kind::integer || s.k == kind::unsigned_integer))
          out_.settings.max_split_size = signed_whole(s);
        else if (key_ == "garbage_collection_threshold" && s.k == kind::real)
          out_.settings.garbage_collection_threshold = s.real;
        else if (key_ == "expandable_segments" && s.k == kind::boolean)
          out_.settings.expandable_segments = s.flag;
        break;
      default: break;
    }
    return true;
  }
  std::size_t segment_index() const noexcept { return segments_seen_; }

  std::string name_;
  torch_trace_builder& out_;
  std::vector<level> stack_;
  std::string key_, action_, state_;
  torch_entry entry_;
  torch_snapshot_segment segment_;
  torch_snapshot_block block_;
  std::uint64_t next_block_ = 0;
  std::size_t segments_seen_ = 0;
  bool found_ = false;
};

}  // namespace dwsr::sim::detail
