#pragma once
/// \file An owning handle to memory obtained from an execution context. Freeing
/// happens in the destructor, so free events follow C++ scope order: the same
/// in the real and the meta execution, and exception-safe.

#include <cstdint>
#include <span>
#include <utility>

#include "dwsr/memory/event.hpp"

namespace dwsr {

/// Memory owned through context Ctx: `count` elements of T (data() is null under
/// the meta context). Move-only.
template <class T, class Ctx>
class buffer {
 public:
  buffer() = default;
  buffer(Ctx& ctx, T* data, std::uint64_t count, const event& allocated) noexcept
      : ctx_(&ctx), data_(data), count_(count), event_(allocated) {}
  buffer(buffer&& o) noexcept
      : ctx_(std::exchange(o.ctx_, nullptr)),
        data_(std::exchange(o.data_, nullptr)),
        count_(std::exchange(o.count_, 0)),
        event_(o.event_) {}
  buffer& operator=(buffer&& o) noexcept {
    if (this != &o) {
      reset();
      ctx_ = std::exchange(o.ctx_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      count_ = std::exchange(o.count_, 0);
      event_ = o.event_;
    }
    return *this;
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  ~buffer() { reset(); }

  /// Frees the memory now (emits the free event); a no-op on an empty buffer.
  void reset() noexcept {
    if (ctx_) std::exchange(ctx_, nullptr)->release(data_, event_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data() const noexcept { return data_; }
  std::uint64_t size() const noexcept { return count_; }
  std::span<T> span() const noexcept { return {data_, data_ ? count_ : 0}; }
  T& operator[](std::uint64_t i) const noexcept { return data_[i]; }
  /// The alloc event that created this buffer (id, bytes, role, node).
  const event& allocation() const noexcept { return event_; }
  explicit operator bool() const noexcept { return ctx_ != nullptr; }

 private:
  Ctx* ctx_ = nullptr;
  T* data_ = nullptr;
  std::uint64_t count_ = 0;
  event event_{};
};

}  // namespace dwsr
