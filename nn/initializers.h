// jax.nn.initializers: an initializer is a callable (key, shape, dtype) -> Array, with JAX's
// names, distributions and fan computation. The factories (normal(stddev), glorot_uniform(),
// variance_scaling(...)) return an Initializer; zeros and ones are initializers themselves.
//
//   namespace init = jx::nn::initializers;
//   init::Initializer w_init = init::glorot_uniform();        // jax.nn.initializers.glorot_uniform()
//   Array w = w_init(key, {784, 128});                        // f32; a dtype may follow the shape
//   Array k = init::he_normal()(key, {3, 3, 16, 32});         // a conv kernel in HWIO
//   Array b = init::zeros(key, {128});
//   auto v = init::variance_scaling(2.0, "fan_out", "truncated_normal", /*in_axis=*/-2, /*out_axis=*/-1);
//
// Fans (JAX's _compute_fans): fan_in = shape[in_axis] * receptive field, fan_out =
// shape[out_axis] * receptive field, where the receptive field is the product of the other
// dimensions except batch_axis (the kernel's spatial size for HWIO conv kernels).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "jx/core/array.h"
#include "jx/core/dtype.h"
#include "jx/core/shape.h"

namespace jx::nn::initializers {

// A (key, shape, dtype) -> Array function. The dtype of a call defaults to the one its factory
// was given (float32 unless named), as JAX's `def init(key, shape, dtype=dtype)`.
class Initializer {
 public:
  using Fn = std::function<Array(const Array& key, const Shape& shape, DType dtype)>;
  Initializer() = default;
  template <typename F>
    requires std::is_invocable_r_v<Array, F&, const Array&, const Shape&, DType>
  Initializer(F f, DType default_dtype = float32)  // NOLINT: any such callable is an initializer
      : fn_(std::move(f)), default_dtype_(default_dtype) {}
  Array operator()(const Array& key, const Shape& shape, std::optional<DType> dtype = std::nullopt) const;
  explicit operator bool() const { return static_cast<bool>(fn_); }

 private:
  Fn fn_;
  DType default_dtype_ = float32;
};

// Constants (the key is unused).
Array zeros(const Array& key, const Shape& shape, DType dtype = float32);
Array ones(const Array& key, const Shape& shape, DType dtype = float32);
Initializer constant(double value, DType dtype = float32);

// Plain distributions, as JAX's: N(0, stddev^2); U[0, scale); stddev * N(0, 1) truncated to
// [lower, upper] (no rescaling of the stddev, unlike variance_scaling's).
Initializer normal(double stddev = 1e-2, DType dtype = float32);
Initializer uniform(double scale = 1e-2, DType dtype = float32);
Initializer truncated_normal(double stddev = 1e-2, DType dtype = float32, double lower = -2.0, double upper = 2.0);

// Samples with variance scale / fan, fan per mode ("fan_in", "fan_out", "fan_avg",
// "fan_geo_avg"); distribution "truncated_normal" (the stddev corrected for the truncation
// to [-2, 2]), "normal" or "uniform" (on [-sqrt(3 * variance), +sqrt(3 * variance)]).
// A bad mode or distribution is a ValueError naming it; so is a shape of rank < 2 or an axis
// outside it.
Initializer variance_scaling(double scale, std::string_view mode, std::string_view distribution, int64_t in_axis = -2,
                             int64_t out_axis = -1, std::vector<int64_t> batch_axis = {}, DType dtype = float32);

// (fan_in, fan_out) of a shape, as variance_scaling computes them.
std::pair<double, double> compute_fans(const Shape& shape, int64_t in_axis = -2, int64_t out_axis = -1,
                                       const std::vector<int64_t>& batch_axis = {});

// The named schemes: variance_scaling(scale, mode, distribution).
Initializer glorot_uniform(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                           DType dtype = float32);  // 1, fan_avg, uniform
Initializer glorot_normal(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                          DType dtype = float32);  // 1, fan_avg, truncated_normal
Initializer lecun_uniform(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                          DType dtype = float32);  // 1, fan_in, uniform
Initializer lecun_normal(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                         DType dtype = float32);  // 1, fan_in, truncated_normal
Initializer he_uniform(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                       DType dtype = float32);  // 2, fan_in, uniform
Initializer he_normal(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                      DType dtype = float32);  // 2, fan_in, truncated_normal
// JAX's aliases (same arguments).
Initializer xavier_uniform(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                           DType dtype = float32);
Initializer xavier_normal(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                          DType dtype = float32);
Initializer kaiming_uniform(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                            DType dtype = float32);
Initializer kaiming_normal(int64_t in_axis = -2, int64_t out_axis = -1, std::vector<int64_t> batch_axis = {},
                           DType dtype = float32);

}  // namespace jx::nn::initializers
