#include "jx/compiler/lower/lower_jaxpr.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "jx/core/str_util.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/lower/literal_convert.h"
#include "jx/compiler/lower/lower_context.h"
#include "jx/compiler/lower/lowerer.h"
#include "jx/core/registry.h"

namespace jx {
namespace lower_internal {
namespace {

absl::StatusOr<hlo::HloInstruction*> ConstantOf(hlo::HloBuilder& builder, const Array& value, std::string_view what) {
  if (!value.is_concrete()) {
    return absl::InvalidArgumentError(StrCat("lowering: ", what, " of type ", value.aval().str(),
                                                   " is a tracer, not a concrete value"));
  }
  return builder.Constant(ArrayToLiteral(value));
}

// Whether shape is the array shape aval lowers to (ShapeUtil::Compatible with
// LowerContext::ShapeOf(aval), without building that shape for every output).
bool HasShapeOf(const hlo::Shape& shape, const ShapedArray& aval) {
  return shape.element_type() == LowerContext::TypeOf(aval.dtype) &&
         std::ranges::equal(shape.dimensions(), aval.shape);
}

std::string AvalsString(AvalSpan avals) {
  std::string out;
  for (const ShapedArray& a : avals) StrAppend(&out, out.empty() ? "" : ", ", a.str());
  return out;
}

}  // namespace

absl::StatusOr<std::vector<hlo::HloInstruction*>> Lowerer::Emit(hlo::HloBuilder& builder, const ClosedJaxpr& closed,
                                                                absl::Span<hlo::HloInstruction* const> args,
                                                                const std::string& name_stack,
                                                                absl::Span<hlo::HloInstruction* const> const_args) {
  const Jaxpr& jaxpr = *closed.jaxpr;
  if (args.size() != jaxpr.invars.size()) {
    return absl::InvalidArgumentError(
        StrCat("lowering: the jaxpr takes ", jaxpr.invars.size(), " inputs, got ", args.size()));
  }
  std::vector<hlo::HloInstruction*> env(jaxpr.num_vars(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) env[jaxpr.invars[i].index] = args[i];
  if (!const_args.empty()) {
    if (const_args.size() != jaxpr.constvars.size()) {
      return absl::InvalidArgumentError("lowering: one argument per constvar expected");
    }
    for (size_t i = 0; i < const_args.size(); ++i) env[jaxpr.constvars[i].index] = const_args[i];
  } else {
    if (closed.consts.size() != jaxpr.constvars.size()) {
      return absl::InvalidArgumentError("lowering: the closed jaxpr has one const per constvar");
    }
    builder.set_metadata(hlo::OpMetadata{});
    for (size_t i = 0; i < closed.consts.size(); ++i) {
      HLO_ASSIGN_OR_RETURN(env[jaxpr.constvars[i].index], ConstantOf(builder, closed.consts[i], "a closed-over constant"));
    }
  }
  auto read = [&](const Atom& atom) -> absl::StatusOr<hlo::HloInstruction*> {
    if (const Var* v = std::get_if<Var>(&atom)) {
      if (env[v->index] == nullptr) return absl::InternalError("lowering: a variable is used before its definition");
      return env[v->index];
    }
    return ConstantOf(builder, std::get<Literal>(atom).value, "a literal");
  };
  const Registry& registry = GlobalRegistry();
  // The driver's own per-equation work allocates nothing in the steady state (the rule and
  // the instructions it emits still do): one metadata per primitive shared by its
  // equations' instructions, and the operand and aval buffers reused from equation to
  // equation (the avals as pointers into the jaxpr).
  absl::flat_hash_map<Primitive, std::shared_ptr<const hlo::OpMetadata>> metadata_of;
  std::vector<hlo::HloInstruction*> operands;
  std::vector<const ShapedArray*> in_avals, out_avals;
  for (const Eqn& eqn : jaxpr.eqns) {
    const PrimitiveRules* rules = registry.Find(eqn.primitive);
    const LowerRule* rule = rules != nullptr ? &rules->LowerFor(platform_) : nullptr;
    if (rule == nullptr || !*rule) {
      std::string why;
      if (rules != nullptr) {
        auto it = rules->unsupported.find("lower");
        if (it != rules->unsupported.end()) why = StrCat(": ", it->second);
      }
      return absl::UnimplementedError(StrCat("lowering: primitive '", eqn.primitive.name(),
                                             "' has no lowering rule for platform '", platform_, "'", why));
    }
    std::shared_ptr<const hlo::OpMetadata>& metadata = metadata_of[eqn.primitive];
    if (metadata == nullptr) {
      const std::string prim(eqn.primitive.name());
      metadata = std::make_shared<const hlo::OpMetadata>(hlo::OpMetadata{prim, StrCat(name_stack, "/", prim), "", 0});
    }
    // Set before the inputs are read: a literal input emits its constant with it.
    builder.set_shared_metadata(metadata);
    operands.resize(eqn.inputs.size());
    in_avals.resize(eqn.inputs.size());
    for (size_t i = 0; i < eqn.inputs.size(); ++i) {
      in_avals[i] = &jaxpr.aval(eqn.inputs[i]);
      HLO_ASSIGN_OR_RETURN(operands[i], read(eqn.inputs[i]));
    }
    out_avals.resize(eqn.outputs.size());
    for (size_t i = 0; i < eqn.outputs.size(); ++i) out_avals[i] = &jaxpr.aval(eqn.outputs[i]);
    LowerContext ctx(*this, builder, eqn, operands, AvalSpan(in_avals), AvalSpan(out_avals), name_stack);
    absl::Status status;
    try {
      status = (*rule)(ctx);
    } catch (const std::exception& e) {
      status = absl::InternalError(e.what());
    }
    if (!status.ok()) {
      return absl::Status(status.code(), StrCat("lowering ", eqn.primitive.name(), " (", ctx.op_name(), ") on (",
                                                AvalsString(ctx.in_avals()), "): ", status.message()));
    }
    const std::vector<hlo::HloInstruction*>& outs = ctx.outputs();
    if (outs.size() != eqn.outputs.size()) {
      return absl::InternalError(StrCat("lowering ", eqn.primitive.name(), ": the rule set ", outs.size(),
                                        " outputs, expected ", eqn.outputs.size()));
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i] == nullptr || !HasShapeOf(outs[i]->shape(), *out_avals[i])) {
        return absl::InternalError(StrCat("lowering ", eqn.primitive.name(), ": output ", i, " is ",
                                          outs[i] ? outs[i]->shape().ToString() : "null", ", expected ",
                                          LowerContext::ShapeOf(*out_avals[i]).ToString()));
      }
      env[eqn.outputs[i].index] = outs[i];
    }
  }
  builder.clear_metadata();
  std::vector<hlo::HloInstruction*> results;
  for (const Atom& a : jaxpr.outvars) {
    HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * x, read(a));
    results.push_back(x);
  }
  return results;
}

}  // namespace lower_internal

namespace {

std::string DefaultNameStack(const std::string& module_name) {
  if (module_name.rfind("jit_", 0) == 0) return StrCat("jit(", module_name.substr(4), ")");
  return module_name;
}

}  // namespace

absl::StatusOr<std::unique_ptr<hlo::HloModule>> LowerJaxpr(const ClosedJaxpr& closed, std::string module_name,
                                                           const LowerOptions& options) {
  auto module = std::make_unique<hlo::HloModule>(module_name);
  const Jaxpr& jaxpr = *closed.jaxpr;
  hlo::HloBuilder builder(module.get(), "main");
  std::vector<hlo::HloInstruction*> const_params, params;
  int64_t number = 0;
  if (options.consts_as_parameters) {
    for (size_t i = 0; i < jaxpr.constvars.size(); ++i) {
      HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * p, builder.Parameter(number++, LowerContext::ShapeOf(jaxpr.aval(jaxpr.constvars[i])),
                                                                      StrCat("Const_", i)));
      const_params.push_back(p);
    }
  }
  for (size_t i = 0; i < jaxpr.invars.size(); ++i) {
    HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * p, builder.Parameter(number++, LowerContext::ShapeOf(jaxpr.aval(jaxpr.invars[i])),
                                                                    StrCat("Arg_", i)));
    params.push_back(p);
  }
  lower_internal::Lowerer lowerer(module.get(), options.platform);
  const std::string name_stack = options.name_stack.empty() ? DefaultNameStack(module_name) : options.name_stack;
  HLO_ASSIGN_OR_RETURN(std::vector<hlo::HloInstruction*> outs,
                       lowerer.Emit(builder, closed, params, name_stack, const_params));
  hlo::HloInstruction* root;
  if (outs.size() == 1 && !options.tuple_result) {
    root = outs[0];
  } else {
    HLO_ASSIGN_OR_RETURN(root, builder.Tuple(outs));
  }
  HLO_ASSIGN_OR_RETURN(hlo::HloComputation * entry, builder.Build(root));
  module->set_entry_computation(entry);
  return module;
}

}  // namespace jx
