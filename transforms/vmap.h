// Vectorizing map: the batch interpreter carries (value, batch dimension) pairs and applies
// each primitive's batching rule, so f written for one example runs on a batch without a loop.
//
//   Arrays ys = jx::VmapCall(f, {x, w}, /*in_axes=*/{0, kNotMapped}, /*out_axes=*/{0});
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jx/core/interpreter.h"

namespace jx {

// Which mapped arguments of vmap a batched value depends on, for ConcretizationError:
// sorted indices into vmap's argument labels. Shared between tracers, so most equations only
// copy a pointer.
struct BatchSourceSet {
  std::shared_ptr<const std::vector<std::string>> labels;
  std::vector<int> indices;
};
using BatchSources = std::shared_ptr<const BatchSourceSet>;

class BatchTracer final : public Tracer {
 public:
  BatchTracer(ShapedArray aval, const Interpreter& owner, Array value, int64_t batch_dim, BatchSources sources)
      : Tracer(std::move(aval), owner), value_(std::move(value)), batch_dim_(batch_dim), sources_(std::move(sources)) {}
  const Array& value() const { return value_; }
  int64_t batch_dim() const { return batch_dim_; }
  const BatchSources& sources() const { return sources_; }
  std::string Provenance() const override;

 private:
  Array value_;
  int64_t batch_dim_;
  BatchSources sources_;
};

class BatchInterpreter final : public Interpreter {
 public:
  explicit BatchInterpreter(int64_t axis_size) : axis_size_(axis_size) {}
  Arrays Process(Primitive p, absl::Span<const Array> inputs, const ParamMap& params) override;
  std::string name() const override { return "vmap"; }
  int64_t axis_size() const { return axis_size_; }

  // A tracer for value batched along batch_dim (kNotMapped: returned as is).
  Array Wrap(Array value, int64_t batch_dim, BatchSources sources) const;

  // (value, batch dim) of x; values of other interpreters are unbatched.
  std::pair<Array, int64_t> Unwrap(const Array& x) const;

 private:
  int64_t axis_size_;
};

// Calls fn with args[i] mapped over in_axes[i] (kNotMapped: passed whole; negative axes
// count from the end) and stacks output i along out_axes[i]. axis_size is needed only when
// no argument is mapped.
Arrays VmapCall(const std::function<Arrays(absl::Span<const Array>)>& fn, absl::Span<const Array> args,
                const std::vector<int64_t>& in_axes, const std::vector<int64_t>& out_axes,
                std::optional<int64_t> axis_size = std::nullopt);
// out_axes resolved after fn has run, one per output leaf (or one for all), with the output
// leaves' key paths for error messages ("out_axes is None for output at [0].w"); without key
// paths, errors say "output leaf i" (its index among the flattened outputs). The key paths
// are computed only when an error needs them, not on every call.
struct VmapOutAxes {
  std::vector<int64_t> axes;
  std::function<std::vector<std::string>()> key_paths;  // may be empty
  VmapOutAxes(std::vector<int64_t> a, std::function<std::vector<std::string>()> paths = nullptr)
      : axes(std::move(a)), key_paths(std::move(paths)) {}
  VmapOutAxes(std::vector<int64_t> a, std::vector<std::string> paths)
      : axes(std::move(a)), key_paths([p = std::move(paths)] { return p; }) {}
};
// The same with out_axes computed after fn has run (vmap resolves a pytree prefix of the
// output against the structure fn returned). arg_labels name the arguments in errors
// ("argument 0 at .w"; empty: "input i").
Arrays VmapCallDeferredOutAxes(const std::function<Arrays(absl::Span<const Array>)>& fn, absl::Span<const Array> args,
                const std::vector<int64_t>& in_axes, const std::function<VmapOutAxes()>& out_axes_after_call,
                std::optional<int64_t> axis_size = std::nullopt, std::vector<std::string> arg_labels = {});

}  // namespace jx
