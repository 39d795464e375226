// scan's parameters and the helpers its rules share: scan.cc (abstract eval, impl, jvp, vmap,
// DCE) and scan_partial_eval.cc (partial evaluation and transpose). Internal to lax.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/jaxpr.h"
#include "jx/core/param_map.h"
#include "jx/core/registry.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::lax::internal {

extern const Primitive kScan;

struct ScanParts {
  ClosedJaxpr body;
  int64_t length;
  bool reverse;
  size_t num_consts, num_carry;
  int64_t unroll;
};
ScanParts Parts(const ParamMap& params);

// JAX's scan params, as its jaxprs print them.
ParamMap ScanParams(const ClosedJaxpr& body, size_t num_consts, size_t num_carry, int64_t length, bool reverse,
                    int64_t unroll);

// Binds scan over a traced body whose hoisted consts lead the consts.
Arrays BindScan(const Hoisted& body, absl::Span<const Array> consts, absl::Span<const Array> carry,
                absl::Span<const Array> xs, int64_t length, bool reverse, int64_t unroll);

ShapedArray Unstacked(const ShapedArray& a);
ShapedArray Stacked(const ShapedArray& a, int64_t length);

// Partial evaluation and transpose (scan_partial_eval.cc).
std::optional<PartialEvalSplit> ScanPartialEval(absl::Span<const Array> in, const std::vector<bool>& in_unknown,
                                                const ParamMap& params);
Arrays ScanTranspose(absl::Span<const Array> cts_out, absl::Span<const TransposeArg> args, const ParamMap& params);

}  // namespace jx::lax::internal
