#include "jx/sharding/spmd/regions.h"

#include "jx/core/primitive.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::spmd {
namespace {

const Primitive kScan = Primitive::Intern("scan");
const Primitive kWhile = Primitive::Intern("while");
const Primitive kCond = Primitive::Intern("cond");

// A body fed by consecutive operands [first, first + n) and giving results [0, m).
Region Straight(ClosedJaxpr body, int first_operand) {
  Region r;
  r.body = std::move(body);
  const Jaxpr& j = *r.body.jaxpr;
  for (size_t k = 0; k < j.invars.size(); ++k) r.invar_operand.push_back(first_operand + static_cast<int>(k));
  r.invar_stacked.assign(j.invars.size(), false);
  for (size_t k = 0; k < j.outvars.size(); ++k) r.outvar_result.push_back(static_cast<int>(k));
  r.outvar_stacked.assign(j.outvars.size(), false);
  return r;
}

Regions ScanRegions(const Eqn& e) {
  const int nc = static_cast<int>(e.params.GetInt("num_consts"));
  const int ncarry = static_cast<int>(e.params.GetInt("num_carry"));
  Region r = Straight(GetJaxpr(e.params, "jaxpr"), 0);
  for (size_t k = static_cast<size_t>(nc + ncarry); k < r.invar_stacked.size(); ++k) r.invar_stacked[k] = true;
  for (size_t k = static_cast<size_t>(ncarry); k < r.outvar_stacked.size(); ++k) r.outvar_stacked[k] = true;
  for (int k = 0; k < ncarry; ++k) r.carried.emplace_back(k, nc + k);
  return Regions{Regions::Kind::kScan, {std::move(r)}};
}

Regions WhileRegions(const Eqn& e) {
  const int cc = static_cast<int>(e.params.GetInt("cond_nconsts"));
  const int bc = static_cast<int>(e.params.GetInt("body_nconsts"));
  // cond(cond consts..., carry...) -> pred; body(body consts..., carry...) -> carry.
  Region cond;
  cond.body = GetJaxpr(e.params, "cond_jaxpr");
  const size_t ncarry = e.inputs.size() - static_cast<size_t>(cc + bc);
  for (int k = 0; k < cc; ++k) cond.invar_operand.push_back(k);
  for (size_t k = 0; k < ncarry; ++k) cond.invar_operand.push_back(cc + bc + static_cast<int>(k));
  cond.invar_stacked.assign(cond.invar_operand.size(), false);
  cond.outvar_result = {-1};
  cond.outvar_stacked = {false};
  Region body;
  body.body = GetJaxpr(e.params, "body_jaxpr");
  for (int k = 0; k < bc; ++k) body.invar_operand.push_back(cc + k);
  for (size_t k = 0; k < ncarry; ++k) body.invar_operand.push_back(cc + bc + static_cast<int>(k));
  body.invar_stacked.assign(body.invar_operand.size(), false);
  for (size_t k = 0; k < ncarry; ++k) {
    body.outvar_result.push_back(static_cast<int>(k));
    body.carried.emplace_back(static_cast<int>(k), bc + static_cast<int>(k));
  }
  body.outvar_stacked.assign(ncarry, false);
  return Regions{Regions::Kind::kWhile, {std::move(cond), std::move(body)}};
}

Regions CondRegions(const Eqn& e) {
  Regions out{Regions::Kind::kCond, {}};
  for (const Param& p : e.params.GetList("branches")) {
    const auto& jp = static_cast<const JaxprParam&>(*std::get<std::shared_ptr<const ParamObject>>(p.value));
    out.regions.push_back(Straight(jp.closed(), /*first_operand=*/1));  // operand 0 is the index
  }
  return out;
}

// The calls that lower inline, and the param holding the called jaxpr (it takes every
// operand, in order).
const char* CallJaxprParam(const Primitive& p) {
  static const Primitive kJit = Primitive::Intern("jit");
  static const Primitive kCheckpoint = Primitive::Intern("checkpoint");
  static const Primitive kCustomJvp = Primitive::Intern("custom_jvp_call");
  static const Primitive kCustomVjp = Primitive::Intern("custom_vjp_call");
  if (p == kJit || p == kCheckpoint) return "jaxpr";
  if (p == kCustomJvp || p == kCustomVjp) return "call_jaxpr";
  return nullptr;
}

}  // namespace

std::optional<Regions> RegionsOf(const Eqn& eqn) {
  if (eqn.primitive == kScan) return ScanRegions(eqn);
  if (eqn.primitive == kWhile) return WhileRegions(eqn);
  if (eqn.primitive == kCond) return CondRegions(eqn);
  if (const char* param = CallJaxprParam(eqn.primitive)) {
    return Regions{Regions::Kind::kCall, {Straight(GetJaxpr(eqn.params, param), 0)}};
  }
  return std::nullopt;
}

DimShardings StackedSharding(const DimShardings& s) {
  if (s.empty()) return {};
  DimShardings out{{}};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

DimShardings SliceSharding(const DimShardings& s) {
  if (s.size() <= 1) return {};
  DimShardings out(s.begin() + 1, s.end());
  for (const auto& d : out) {
    if (!d.empty()) return out;
  }
  return {};
}

}  // namespace jx::spmd
