#include "jx/lax/precision.h"

#include <memory>
#include <string>

#include "absl/hash/hash.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"

namespace jx::lax {
namespace {

// The precision param's value: printed as JAX prints the canonical tuple.
class PrecisionPairParam final : public ParamObject {
 public:
  explicit PrecisionPairParam(PrecisionPair p) : p_(p) {}
  const PrecisionPair& value() const { return p_; }
  size_t Hash() const override {
    return absl::HashOf(static_cast<int>(p_[0]), static_cast<int>(p_[1]));
  }
  bool Equals(const ParamObject& other) const override {
    const auto* o = dynamic_cast<const PrecisionPairParam*>(&other);
    return o != nullptr && o->p_ == p_;
  }
  std::string ToString() const override {
    return StrCat("(Precision.", PrecisionName(p_[0]), ", Precision.", PrecisionName(p_[1]), ")");
  }

 private:
  PrecisionPair p_;
};

}  // namespace

std::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kDefault: return "DEFAULT";
    case Precision::kHigh: return "HIGH";
    case Precision::kHighest: return "HIGHEST";
  }
  return "?";
}

Precision ParsePrecision(std::string_view name) {
  if (name == "default" || name == "bfloat16" || name == "fastest") return Precision::kDefault;
  if (name == "high" || name == "tensorfloat32") return Precision::kHigh;
  if (name == "highest" || name == "float32") return Precision::kHighest;
  throw ValueError(StrCat("precision: unknown name '", name,
                          "'; expected one of 'default', 'high', 'highest', 'bfloat16', "
                          "'tensorfloat32', 'float32' or 'fastest'"));
}

namespace internal {

std::optional<PrecisionPair> CanonicalizePrecision(const PrecisionLike& precision) {
  if (precision.value()) return precision.value();
  const int8_t scoped = CurrentTraceContext().default_matmul_precision;
  if (scoped < 0) return std::nullopt;
  const auto p = static_cast<Precision>(scoped);
  return PrecisionPair{p, p};
}

Param PrecisionParam(const std::optional<PrecisionPair>& precision) {
  if (!precision) return Param(ParamNone{});
  return Param(std::shared_ptr<const ParamObject>(std::make_shared<PrecisionPairParam>(*precision)));
}

std::optional<PrecisionPair> GetPrecision(const ParamMap& params) {
  const Param* p = params.Find("precision");
  if (p == nullptr || p->is_none()) return std::nullopt;
  const auto* pair = dynamic_cast<const PrecisionPairParam*>(params.GetObject("precision").get());
  if (pair == nullptr) throw InternalError("the precision param has the wrong type");
  return pair->value();
}

}  // namespace internal
}  // namespace jx::lax

namespace jx {

TraceContext default_matmul_precision::With(lax::Precision precision) {
  TraceContext next = CurrentTraceContext();
  next.default_matmul_precision = static_cast<int8_t>(precision);
  return next;
}

default_matmul_precision::default_matmul_precision(std::string_view name)
    : scope_(With(lax::ParsePrecision(name))) {}

default_matmul_precision::default_matmul_precision(lax::Precision precision) : scope_(With(precision)) {}

}  // namespace jx
