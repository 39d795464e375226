// Matmul precision, as JAX's lax.Precision: how precisely dot_general and conv_general_dilated
// multiply their operands on targets whose matrix units round (a TPU's MXU multiplies bf16:
// DEFAULT is one bf16 pass, HIGH three, HIGHEST six, f32-accurate). The CPU multiplies in the
// operands' own type whatever the precision, so on the CPU it changes no numbers; it is kept
// in the jaxpr (`precision=(Precision.HIGHEST, Precision.HIGHEST)`) and on the HLO dot and
// convolution (`operand_precision={highest,highest}`), where a TPU target reads it.
//
//   lax::dot_general(a, b, dn, lax::Precision::kHighest);              // both operands
//   lax::dot_general(a, b, dn, {lax::Precision::kHigh, lax::Precision::kDefault});
//   lax::dot_general(a, b, dn, "float32");                            // JAX's string names
//   {
//     jx::default_matmul_precision scope("highest");  // dots traced here without a precision
//     auto y = jx::jit(f)(x);                          // get HIGHEST; part of jit's cache key
//   }
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "jx/core/param_map.h"
#include "jx/core/trace_context.h"

namespace jx::lax {

enum class Precision : uint8_t { kDefault, kHigh, kHighest };
// "DEFAULT", "HIGH", "HIGHEST" (JAX's Precision.name).
std::string_view PrecisionName(Precision p);
// JAX's accepted names: "default", "high", "highest", and by the float format they give
// "bfloat16" (DEFAULT), "tensorfloat32" (HIGH), "float32" (HIGHEST); "fastest" is DEFAULT.
// Throws ValueError naming the accepted names otherwise.
Precision ParsePrecision(std::string_view name);

// One precision per operand (lhs, rhs): JAX's canonical form.
using PrecisionPair = std::array<Precision, 2>;

// What `precision=` accepts (JAX's PrecisionLike): nothing (None: the default_matmul_precision
// scope's, else the backend's default), one Precision or name for both operands, or a pair.
class PrecisionLike {
 public:
  PrecisionLike() = default;
  PrecisionLike(Precision both) : value_(PrecisionPair{both, both}) {}
  PrecisionLike(Precision lhs, Precision rhs) : value_(PrecisionPair{lhs, rhs}) {}
  PrecisionLike(std::pair<Precision, Precision> p) : value_(PrecisionPair{p.first, p.second}) {}
  // A canonical value as stored in params (rules pass an equation's precision on this way).
  PrecisionLike(const std::optional<PrecisionPair>& p) : value_(p) {}
  PrecisionLike(const char* name) : PrecisionLike(ParsePrecision(name)) {}
  PrecisionLike(std::string_view name) : PrecisionLike(ParsePrecision(name)) {}
  const std::optional<PrecisionPair>& value() const { return value_; }

 private:
  std::optional<PrecisionPair> value_;
};

namespace internal {
// JAX's canonicalize_precision: the explicit precision, else the current
// default_matmul_precision scope's, else none.
std::optional<PrecisionPair> CanonicalizePrecision(const PrecisionLike& precision);
// The `precision` param: None, or the pair printed as JAX prints it,
// "(Precision.HIGHEST, Precision.HIGHEST)".
Param PrecisionParam(const std::optional<PrecisionPair>& precision);
// The pair stored in params' "precision" (nullopt for None).
std::optional<PrecisionPair> GetPrecision(const ParamMap& params);
}  // namespace internal

}  // namespace jx::lax

namespace jx {

// JAX's jax.default_matmul_precision: while alive, dot_general and conv_general_dilated
// calls on this thread that give no precision get this one (so do jnp.dot, matmul, einsum
// and the dots of their derivatives). It is part of jit's cache key: a function traced under
// one setting is traced again under another. Accepts lax::ParsePrecision's names.
class default_matmul_precision {
 public:
  explicit default_matmul_precision(std::string_view name);
  explicit default_matmul_precision(lax::Precision precision);
  default_matmul_precision(const default_matmul_precision&) = delete;
  default_matmul_precision& operator=(const default_matmul_precision&) = delete;

 private:
  static TraceContext With(lax::Precision precision);
  TraceContextScope scope_;
};

}  // namespace jx
