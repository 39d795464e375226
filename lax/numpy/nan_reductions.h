// jnp's NaN-ignoring reductions (https://numpy.org/doc/stable/reference/routines.statistics.html
// and routines.math.html#sums-products-differences), with JAX's semantics: NaNs are replaced
// through `where` before reducing, so they are differentiable (the NaN entries get zero
// gradient) and trace under jit and vmap. Integer and bool inputs have no NaNs and reduce as
// the plain functions. All-NaN slices give NaN (nanmax, nanmin, nanmean, nanvar, nanstd,
// nanmedian, nanquantile) and -1 for nanargmax/nanargmin (where NumPy raises).
//
//   jnp::nansum(jnp::array({1.f, NAN, 2.f}));     // 3
//   jnp::nanmean(x, 0);
//   jnp::nanargmax(x, 1);
//   jnp::nanquantile(x, 0.9, 1);
#pragma once

#include <optional>
#include <string_view>

#include "jx/core/array.h"
#include "jx/lax/numpy/promotion.h"

namespace jx::numpy {

Array nansum(const Array& a, const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
Array nanprod(const Array& a, const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
Array nanmax(const Array& a, const Axis& axis = {}, bool keepdims = false);
Array nanmin(const Array& a, const Axis& axis = {}, bool keepdims = false);
Array nanmean(const Array& a, const Axis& axis = {}, bool keepdims = false, std::optional<DType> dtype = std::nullopt);
Array nanvar(const Array& a, const Axis& axis = {}, bool keepdims = false, int64_t ddof = 0,
             std::optional<DType> dtype = std::nullopt);
Array nanstd(const Array& a, const Axis& axis = {}, bool keepdims = false, int64_t ddof = 0,
             std::optional<DType> dtype = std::nullopt);
Array nanargmax(const Array& a, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array nanargmin(const Array& a, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array nancumsum(const Array& a, std::optional<int64_t> axis = std::nullopt, std::optional<DType> dtype = std::nullopt);
Array nancumprod(const Array& a, std::optional<int64_t> axis = std::nullopt, std::optional<DType> dtype = std::nullopt);
Array nanmedian(const Array& a, const Axis& axis = {}, bool keepdims = false);
Array nanquantile(const Array& a, const ArrayLike& q, const Axis& axis = {}, std::string_view method = "linear",
                  bool keepdims = false);
Array nanpercentile(const Array& a, const ArrayLike& q, const Axis& axis = {}, std::string_view method = "linear",
                    bool keepdims = false);

}  // namespace jx::numpy
