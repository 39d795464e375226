#include "jx/compiler/lower/lower_jaxpr.h"

#include <exception>
#include <utility>
#include <variant>

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

std::string AvalsString(absl::Span<const ShapedArray> avals) {
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
  for (const Eqn& eqn : jaxpr.eqns) {
    const std::string prim(eqn.primitive.name());
    const PrimitiveRules* rules = registry.Find(eqn.primitive);
    const LowerRule* rule = rules != nullptr ? &rules->LowerFor(platform_) : nullptr;
    if (rule == nullptr || !*rule) {
      std::string why;
      if (rules != nullptr) {
        auto it = rules->unsupported.find("lower");
        if (it != rules->unsupported.end()) why = StrCat(": ", it->second);
      }
      return absl::UnimplementedError(
          StrCat("lowering: primitive '", prim, "' has no lowering rule for platform '", platform_, "'", why));
    }
    std::vector<hlo::HloInstruction*> operands;
    std::vector<ShapedArray> in_avals, out_avals;
    bool literal_metadata_set = false;
    for (const Atom& a : eqn.inputs) {
      in_avals.push_back(jaxpr.aval(a));
      // Only a literal input emits an instruction (its constant): set the equation's
      // metadata for it once, not an interned string pair per input of every equation.
      if (!literal_metadata_set && std::holds_alternative<Literal>(a)) {
        builder.set_metadata(hlo::OpMetadata{prim, StrCat(name_stack, "/", prim), "", 0});
        literal_metadata_set = true;
      }
      HLO_ASSIGN_OR_RETURN(hlo::HloInstruction * x, read(a));
      operands.push_back(x);
    }
    for (Var v : eqn.outputs) out_avals.push_back(jaxpr.aval(v));
    LowerContext ctx(*this, builder, eqn, std::move(operands), std::move(in_avals), std::move(out_avals), name_stack);
    builder.set_metadata(ctx.metadata());
    absl::Status status;
    try {
      status = (*rule)(ctx);
    } catch (const std::exception& e) {
      status = absl::InternalError(e.what());
    }
    if (!status.ok()) {
      return absl::Status(status.code(), StrCat("lowering ", prim, " (", ctx.op_name(), ") on (",
                                                      AvalsString(ctx.in_avals()), "): ", status.message()));
    }
    const std::vector<hlo::HloInstruction*>& outs = ctx.outputs();
    if (outs.size() != eqn.outputs.size()) {
      return absl::InternalError(StrCat("lowering ", prim, ": the rule set ", outs.size(), " outputs, expected ",
                                              eqn.outputs.size()));
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      const hlo::Shape want = LowerContext::ShapeOf(ctx.out_aval(i));
      if (outs[i] == nullptr || !hlo::ShapeUtil::Compatible(outs[i]->shape(), want)) {
        return absl::InternalError(StrCat("lowering ", prim, ": output ", i, " is ",
                                                outs[i] ? outs[i]->shape().ToString() : "null", ", expected ",
                                                want.ToString()));
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
