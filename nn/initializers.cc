#include "jx/nn/initializers.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "jx/core/errors.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/lax/random/random.h"

namespace jx::nn::initializers {
namespace {

namespace jnp = jx::numpy;

// The stddev of a standard normal truncated to [-2, 2] (JAX's constant), by which
// variance_scaling divides so its truncated samples have the asked variance.
constexpr double kTruncatedNormalStddev = .87962566103423978;

void CheckFloating(DType dtype, std::string_view who) {
  JX_CHECK_OP(IsFloating(dtype), TypeError, who, "initializes floating-point arrays, got dtype ", dtype_name(dtype));
}

int64_t CanonicalAxis(int64_t axis, const Shape& shape, std::string_view what) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  JX_CHECK_OP(axis >= -rank && axis < rank, ValueError, "variance_scaling", what, " ", axis,
              " is out of range for shape ", ShapedArray{shape, float32}.str(), " of rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

}  // namespace

Array Initializer::operator()(const Array& key, const Shape& shape, std::optional<DType> dtype) const {
  if (!fn_) throw ValueError("jx::nn::initializers::Initializer: called while empty (default-constructed)");
  return fn_(key, shape, dtype.value_or(default_dtype_));
}

Array zeros(const Array&, const Shape& shape, DType dtype) { return jnp::zeros(shape, dtype); }
Array ones(const Array&, const Shape& shape, DType dtype) { return jnp::ones(shape, dtype); }

Initializer constant(double value, DType dtype) {
  return Initializer([value](const Array&, const Shape& shape, DType d) { return jnp::full(shape, value, d); }, dtype);
}

Initializer normal(double stddev, DType dtype) {
  return Initializer(
      [stddev](const Array& key, const Shape& shape, DType d) {
        CheckFloating(d, "normal");
        return jnp::multiply(jx::random::normal(key, shape, d), stddev);
      },
      dtype);
}

Initializer uniform(double scale, DType dtype) {
  return Initializer(
      [scale](const Array& key, const Shape& shape, DType d) {
        CheckFloating(d, "uniform");
        return jnp::multiply(jx::random::uniform(key, shape, d), scale);
      },
      dtype);
}

Initializer truncated_normal(double stddev, DType dtype, double lower, double upper) {
  return Initializer(
      [stddev, lower, upper](const Array& key, const Shape& shape, DType d) {
        CheckFloating(d, "truncated_normal");
        return jnp::multiply(jx::random::truncated_normal(key, lower, upper, shape, d), stddev);
      },
      dtype);
}

std::pair<double, double> compute_fans(const Shape& shape, int64_t in_axis, int64_t out_axis,
                                       const std::vector<int64_t>& batch_axis) {
  JX_CHECK_OP(shape.size() >= 2, ValueError, "variance_scaling",
              "needs a shape of rank >= 2 to compute fans (in_axis and out_axis), got ",
              ShapedArray{shape, float32}.str());
  const int64_t in = CanonicalAxis(in_axis, shape, "in_axis");
  const int64_t out = CanonicalAxis(out_axis, shape, "out_axis");
  std::vector<int64_t> batch;
  for (int64_t b : batch_axis) batch.push_back(CanonicalAxis(b, shape, "batch_axis"));
  double receptive_field = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i == in || i == out || std::find(batch.begin(), batch.end(), i) != batch.end()) continue;
    receptive_field *= static_cast<double>(shape[i]);
  }
  return {static_cast<double>(shape[in]) * receptive_field, static_cast<double>(shape[out]) * receptive_field};
}

Initializer variance_scaling(double scale, std::string_view mode, std::string_view distribution, int64_t in_axis,
                             int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  JX_CHECK_OP(scale > 0, ValueError, "variance_scaling", "scale must be positive, got ", scale);
  JX_CHECK_OP(mode == "fan_in" || mode == "fan_out" || mode == "fan_avg" || mode == "fan_geo_avg", ValueError,
              "variance_scaling", "invalid mode '", mode, "': expected fan_in, fan_out, fan_avg or fan_geo_avg");
  JX_CHECK_OP(distribution == "truncated_normal" || distribution == "normal" || distribution == "uniform", ValueError,
              "variance_scaling", "invalid distribution '", distribution,
              "': expected truncated_normal, normal or uniform");
  return Initializer(
      [scale, mode = std::string(mode), distribution = std::string(distribution), in_axis, out_axis,
       batch_axis = std::move(batch_axis)](const Array& key, const Shape& shape, DType d) {
        CheckFloating(d, "variance_scaling");
        const auto [fan_in, fan_out] = compute_fans(shape, in_axis, out_axis, batch_axis);
        double denominator = fan_in;
        if (mode == "fan_out") denominator = fan_out;
        if (mode == "fan_avg") denominator = (fan_in + fan_out) / 2;
        if (mode == "fan_geo_avg") denominator = std::sqrt(fan_in * fan_out);
        const double variance = scale / denominator;
        if (distribution == "truncated_normal") {
          const double stddev = std::sqrt(variance) / kTruncatedNormalStddev;
          return jnp::multiply(jx::random::truncated_normal(key, -2.0, 2.0, shape, d), stddev);
        }
        if (distribution == "normal") return jnp::multiply(jx::random::normal(key, shape, d), std::sqrt(variance));
        // JAX's form: uniform on [-1, 1) scaled, so the same key gives JAX's numbers.
        return jnp::multiply(jx::random::uniform(key, shape, d, -1.0, 1.0), std::sqrt(3 * variance));
      },
      dtype);
}

Initializer glorot_uniform(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return variance_scaling(1.0, "fan_avg", "uniform", in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer glorot_normal(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer lecun_uniform(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return variance_scaling(1.0, "fan_in", "uniform", in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer lecun_normal(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer he_uniform(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return variance_scaling(2.0, "fan_in", "uniform", in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer he_normal(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer xavier_uniform(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return glorot_uniform(in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer xavier_normal(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return glorot_normal(in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer kaiming_uniform(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return he_uniform(in_axis, out_axis, std::move(batch_axis), dtype);
}
Initializer kaiming_normal(int64_t in_axis, int64_t out_axis, std::vector<int64_t> batch_axis, DType dtype) {
  return he_normal(in_axis, out_axis, std::move(batch_axis), dtype);
}

}  // namespace jx::nn::initializers
