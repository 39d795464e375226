// Jaxpr utilities for higher-order primitives (cond, while, scan, custom_jvp/vjp, checkpoint):
// tracing callables into closed-over-free jaxprs, partial evaluation of a jaxpr into known
// and unknown parts, and transposing a jaxpr in some of its inputs. Every sub-jaxpr such a
// primitive carries has no constvars: values a function closes over are hoisted into
// explicit leading operands, so outer transformations see them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jx/core/jaxpr.h"
#include "jx/core/registry.h"
#include "jx/transforms/ad.h"

namespace jx {

// A traced function: jaxpr takes (consts..., args...); consts are the values it closed over
// (tracers of enclosing transformations or concrete arrays).
struct Hoisted {
  ClosedJaxpr jaxpr;  // consts is empty
  std::vector<Array> consts;
};
Hoisted TraceHoisted(const ArraysFn& fn, absl::Span<const ShapedArray> avals, const std::string& name);
// The jaxpr with its constvars turned into leading invars, and the values they stood for.
Hoisted HoistConsts(ClosedJaxpr c);

// A jaxpr (no consts) evaluated as a function through the current interpreter.
Arrays Apply(const ClosedJaxpr& j, absl::Span<const Array> args);

// Parameter helpers.
Param JaxprParamOf(ClosedJaxpr j);
const ClosedJaxpr& GetJaxpr(const ParamMap& params, std::string_view name);

std::vector<ShapedArray> AvalsOf(absl::Span<const Array> xs);
// "f32[3], i32[]" for messages.
std::string AvalsStr(absl::Span<const ShapedArray> avals);
// Same shape and dtype (weak types may differ: they join to strong).
bool SameShapeDType(const ShapedArray& a, const ShapedArray& b);

// Partial evaluation of a jaxpr (no consts) whose inputs are partly unknown:
//   known(known inputs...) -> (known outputs..., residuals...)
//   unknown(residuals..., unknown inputs...) -> unknown outputs
// out_unknown[k] says which list output k lands in.
struct PartialEvalResult {
  Hoisted known;
  ClosedJaxpr unknown;  // consts empty; takes residuals first
  std::vector<ShapedArray> residual_avals;
  std::vector<bool> out_unknown;
};
PartialEvalResult PartialEvalJaxpr(const ClosedJaxpr& j, const std::vector<bool>& in_unknown,
                                   const std::vector<bool>& force_out_unknown);

// Cotangents of the linear inputs of f (a jaxpr over inputs where `linear` marks the linear
// ones; the others are given in `known`, in order), for cotangents of its outputs: runs the
// backward pass of f with the known values fixed. Undefined cotangents come back as zeros.
Arrays TransposeJaxpr(const ClosedJaxpr& f, const std::vector<bool>& linear, absl::Span<const Array> known,
                      absl::Span<const Array> cts_out);


// Branch or body functions traced separately, joined so each takes every function's hoisted
// consts first (its own used, the others ignored), then the shared arguments.
std::vector<ClosedJaxpr> JoinHoisted(const std::vector<Hoisted>& traced, absl::Span<const ShapedArray> arg_avals,
                                     std::vector<Array>* consts);

// A jaxpr as an ArraysFn.
ArraysFn AsFn(const ClosedJaxpr& j);

// Concatenation of spans of arrays.
Arrays Cat(std::initializer_list<absl::Span<const Array>> parts);

}  // namespace jx
