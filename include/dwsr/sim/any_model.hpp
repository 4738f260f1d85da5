#pragma once
/// \file A type-erased allocator model, built from text such as
/// "torch_cuda_caching:max_split_size_mb:128,expandable_segments:True": the
/// model's name, then optionally ':' and its settings in the syntax of
/// PYTORCH_CUDA_ALLOC_CONF. This is what `dwsr replay --allocator` takes.
///
/// Cost: every member is one virtual call. on_events feeds a whole batch with
/// one call (the loop runs on the concrete model); on_event, and the
/// accessors, pay one call per event. replay.hpp feeds its models event by
/// event, since it reads allocated and reserved after each event: about four
/// virtual calls per event and model.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dwsr/error.hpp"
#include "dwsr/sim/allocator_model.hpp"
#include "dwsr/sim/cupy_pool.hpp"
#include "dwsr/sim/exact.hpp"
#include "dwsr/sim/host_malloc.hpp"
#include "dwsr/sim/host_pages.hpp"
#include "dwsr/sim/rmm_pool.hpp"
#include "dwsr/sim/torch_cuda_caching.hpp"

namespace dwsr::sim {

/// Any AllocatorModel behind one value type (move-only).
class any_model {
 public:
  static constexpr std::string_view name = "any";

  /// Wraps a model.
  template <AllocatorModel M>
  requires(!std::same_as<M, any_model>) explicit any_model(M model, std::string spec = std::string(M::name))
      : self_(std::make_unique<holder<M>>(std::move(model))), spec_(std::move(spec)) {}

  void on_event(const event& e) { self_->on_event(e); }
  /// Feeds a batch of events in order.
  void on_events(std::span<const event> events) { self_->on_events(events); }
  bool alloc(std::uint64_t id, std::uint64_t bytes) { return self_->alloc(id, bytes); }
  /// Releases the model's cached memory where the model has a cache to release
  /// (torch.cuda.empty_cache()); nothing for other models.
  void empty_cache() { self_->empty_cache(); }
  void free(std::uint64_t id, std::uint64_t bytes) { self_->free(id, bytes); }
  std::uint64_t allocated() const { return self_->allocated(); }
  std::uint64_t reserved() const { return self_->reserved(); }
  bool oom() const { return self_->oom(); }
  model_stats stats() const { return self_->stats(); }
  /// The model's name ("torch_cuda_caching").
  std::string_view model_name() const { return self_->model_name(); }
  /// The text the model was built from (name and settings).
  const std::string& spec() const noexcept { return spec_; }

 private:
  struct base {
    virtual ~base() = default;
    virtual void on_event(const event&) = 0;
    virtual void on_events(std::span<const event>) = 0;
    virtual bool alloc(std::uint64_t, std::uint64_t) = 0;
    virtual void empty_cache() = 0;
    virtual void free(std::uint64_t, std::uint64_t) = 0;
    virtual std::uint64_t allocated() const = 0;
    virtual std::uint64_t reserved() const = 0;
    virtual bool oom() const = 0;
    virtual model_stats stats() const = 0;
    virtual std::string_view model_name() const = 0;
  };
  template <class M>
  struct holder final : base {
    explicit holder(M m) : model(std::move(m)) {}
    void on_event(const event& e) override { model.on_event(e); }
    void on_events(std::span<const event> events) override { feed(model, events); }
    bool alloc(std::uint64_t id, std::uint64_t bytes) override { return model.alloc(id, bytes); }
    void empty_cache() override {
      if constexpr (requires { model.empty_cache(); }) model.empty_cache();
    }
    void free(std::uint64_t id, std::uint64_t bytes) override { model.free(id, bytes); }
    std::uint64_t allocated() const override { return model.allocated(); }
    std::uint64_t reserved() const override { return model.reserved(); }
    bool oom() const override { return model.oom(); }
    model_stats stats() const override { return model.stats(); }
    std::string_view model_name() const override { return M::name; }
    M model;
  };

  std::unique_ptr<base> self_;
  std::string spec_;
};

/// The names make_model knows, with a one-line description each.
inline const std::vector<std::pair<std::string_view, std::string_view>>& model_catalogue() {
  static const std::vector<std::pair<std::string_view, std::string_view>> names{
      {exact_model::name, "requested bytes, nothing else"},
      {host_pages_model::name, "dwsr's host context: every live buffer mapped in whole 4 KiB pages"},
      {host_malloc_model::name, "glibc malloc: mmap threshold, page rounding, heap-top trimming; reserved = resident"},
      {torch_cuda_caching_model::name, "PyTorch's CUDA caching allocator; settings as in PYTORCH_CUDA_ALLOC_CONF"},
      {cupy_pool_model::name, "CuPy's MemoryPool"},
      {rmm_pool_model::name, "RMM's pool_memory_resource"},
  };
  return names;
}

/// Builds a model from "name" or "name:settings" with an optional capacity in
/// bytes. Throws invalid_input naming an unknown model or setting.
inline any_model make_model(std::string_view spec, std::optional<std::uint64_t> capacity = {}) {
  const auto colon = spec.find(':');
  const auto model = spec.substr(0, colon);
  const auto settings = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  const std::string text(spec);
  if (model == exact_model::name) {
    if (!settings.empty())
      throw invalid_input("allocator model 'exact' takes no settings, got '" + std::string(settings) + "'");
    return any_model(exact_model(capacity), text);
  }
  if (model == host_pages_model::name) {
    if (!settings.empty())
      throw invalid_input("allocator model 'host_pages' takes no settings, got '" + std::string(settings) + "'");
    return any_model(host_pages_model(capacity), text);
  }
  if (model == host_malloc_model::name) return any_model(host_malloc_model(settings, capacity), text);
  if (model == torch_cuda_caching_model::name) return any_model(torch_cuda_caching_model(settings, capacity), text);
  if (model == cupy_pool_model::name) return any_model(cupy_pool_model(settings, capacity), text);
  if (model == rmm_pool_model::name) return any_model(rmm_pool_model(settings, capacity), text);
  std::string known;
  for (const auto& [n, _] : model_catalogue()) known += (known.empty() ? "" : ", ") + std::string(n);
  throw invalid_input("unknown allocator model '" + std::string(model) + "'; known models: " + known);
}

}  // namespace dwsr::sim
