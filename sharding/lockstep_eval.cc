#include "jx/sharding/lockstep_eval.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"
#include "jx/devices/device_put.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"
#include "jx/sharding/collective_eval.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/eager_collective_clock.h"
#include "jx/transforms/ad_util.h"
#include "jx/transforms/jaxpr_util.h"

namespace jx::shard_map_internal {
namespace {

const Primitive kJitPrimitive = Primitive::Intern("jit");
const Primitive kCheckpointPrimitive = Primitive::Intern("checkpoint");

bool ParamHasCollective(const Param& p);

bool JaxprHasCollective(const Jaxpr& j) {
  for (const Eqn& e : j.eqns) {
    if (lax::IsCollective(e.primitive)) return true;
    for (const auto& [name, value] : e.params) {
      if (ParamHasCollective(value)) return true;
    }
  }
  return false;
}

bool ParamHasCollective(const Param& p) {
  if (const auto* obj = std::get_if<std::shared_ptr<const ParamObject>>(&p.value)) {
    const auto* sub = dynamic_cast<const JaxprParam*>(obj->get());
    return sub != nullptr && JaxprHasCollective(*sub->closed().jaxpr);
  }
  if (const auto* list = std::get_if<ParamList>(&p.value)) {
    for (const Param& item : *list) {
      if (ParamHasCollective(item)) return true;
    }
  }
  return false;
}

Array OnDevice(const Array& x, const Device* device) {
  return x.committed_device() == device ? x : device_put(x, device);
}

std::vector<PerDevice> EvalJaxprLockstep(const Jaxpr& j, const std::vector<PerDevice>& args,
                                         const std::vector<const Device*>& devices);

// A closed sub-jaxpr run in lockstep: its consts enter replicated, ahead of args.
std::vector<PerDevice> EvalClosedLockstep(const ClosedJaxpr& sub, const std::vector<PerDevice>& args,
                                          const std::vector<const Device*>& devices) {
  if (sub.consts.empty()) return EvalJaxprLockstep(*sub.jaxpr, args, devices);
  std::vector<PerDevice> all;
  for (const Array& c : sub.consts) all.push_back(PerDevice(devices.size(), c));
  all.insert(all.end(), args.begin(), args.end());
  return EvalJaxprLockstep(*HoistConsts(sub).jaxpr.jaxpr, all, devices);
}

std::vector<PerDevice> Slice(const std::vector<PerDevice>& xs, size_t begin, size_t end) {
  return std::vector<PerDevice>(xs.begin() + static_cast<ptrdiff_t>(begin), xs.begin() + static_cast<ptrdiff_t>(end));
}

// The value every device agrees on (a loop predicate or a branch index): devices that differ
// would run different collectives, which cannot line up.
int64_t Agreed(const PerDevice& values, std::string_view op, std::string_view what) {
  const int64_t first = values[0].item<int64_t>();
  for (size_t d = 1; d < values.size(); ++d) {
    const int64_t v = values[d].item<int64_t>();
    if (v != first) {
      ThrowOpError<ValueError>(op, "inside shard_map holds collectives but its ", what, " differs across devices (",
                               first, " on device 0, ", v, " on device ", d, "); every device must take the same ",
                               "path through collectives (compute the ", what, " from psum'd or replicated values)");
    }
  }
  return first;
}

// scan whose body communicates: one lockstep run of the body per iteration.
std::vector<PerDevice> ScanLockstep(const Eqn& e, const std::vector<PerDevice>& ins,
                                    const std::vector<const Device*>& devices) {
  const ClosedJaxpr& body = GetJaxpr(e.params, "jaxpr");
  const size_t nc = static_cast<size_t>(e.params.GetInt("num_consts"));
  const size_t ncarry = static_cast<size_t>(e.params.GetInt("num_carry"));
  const int64_t length = e.params.GetInt("length");
  const bool reverse = e.params.GetBool("reverse");
  const size_t num = devices.size();
  std::vector<PerDevice> carry = Slice(ins, nc, nc + ncarry);
  const size_t ny = body.jaxpr->outvars.size() - ncarry;
  std::vector<std::vector<PerDevice>> ys(ny, std::vector<PerDevice>(num));  // [y][device][iteration]
  for (int64_t it = 0; it < length; ++it) {
    const int64_t i = reverse ? length - 1 - it : it;
    std::vector<PerDevice> args = Slice(ins, 0, nc);
    args.insert(args.end(), carry.begin(), carry.end());
    for (size_t k = nc + ncarry; k < ins.size(); ++k) {
      PerDevice x(num);
      for (size_t d = 0; d < num; ++d) {
        const Array& xs = ins[k][d];
        std::vector<int64_t> start(xs.shape().size(), 0), limit(xs.shape().begin(), xs.shape().end());
        start[0] = i;
        limit[0] = i + 1;
        x[d] = lax::squeeze(lax::slice(xs, start, limit), {0});
      }
      args.push_back(std::move(x));
    }
    std::vector<PerDevice> outs = EvalClosedLockstep(body, args, devices);
    carry = Slice(outs, 0, ncarry);
    for (size_t k = 0; k < ny; ++k) {
      for (size_t d = 0; d < num; ++d) ys[k][d].push_back(lax::expand_dims(outs[ncarry + k][d], {0}));
    }
  }
  std::vector<PerDevice> results = carry;
  for (size_t k = 0; k < ny; ++k) {
    PerDevice stacked(num);
    for (size_t d = 0; d < num; ++d) {
      std::vector<Array>& parts = ys[k][d];
      if (reverse) std::reverse(parts.begin(), parts.end());
      if (parts.empty()) {
        ShapedArray aval = body.jaxpr->aval(body.jaxpr->outvars[ncarry + k]);
        aval.shape.insert(aval.shape.begin(), 0);
        stacked[d] = OnDevice(Zeros(aval), devices[d]);
      } else {
        stacked[d] = lax::concatenate(parts, 0);
      }
    }
    results.push_back(std::move(stacked));
  }
  return results;
}

// while whose cond or body communicates: the predicate must agree across devices.
std::vector<PerDevice> WhileLockstep(const Eqn& e, const std::vector<PerDevice>& ins,
                                     const std::vector<const Device*>& devices) {
  const ClosedJaxpr& cond = GetJaxpr(e.params, "cond_jaxpr");
  const ClosedJaxpr& body = GetJaxpr(e.params, "body_jaxpr");
  const size_t cc = static_cast<size_t>(e.params.GetInt("cond_nconsts"));
  const size_t bc = static_cast<size_t>(e.params.GetInt("body_nconsts"));
  std::vector<PerDevice> carry = Slice(ins, cc + bc, ins.size());
  while (true) {
    std::vector<PerDevice> cond_args = Slice(ins, 0, cc);
    cond_args.insert(cond_args.end(), carry.begin(), carry.end());
    if (Agreed(EvalClosedLockstep(cond, cond_args, devices)[0], "while", "loop predicate") == 0) break;
    std::vector<PerDevice> body_args = Slice(ins, cc, cc + bc);
    body_args.insert(body_args.end(), carry.begin(), carry.end());
    carry = EvalClosedLockstep(body, body_args, devices);
  }
  return carry;
}

// cond whose branches communicate: every device takes the same branch.
std::vector<PerDevice> CondLockstep(const Eqn& e, const std::vector<PerDevice>& ins,
                                    const std::vector<const Device*>& devices) {
  const ParamList& branches = e.params.GetList("branches");
  const int64_t index = std::clamp<int64_t>(Agreed(ins[0], "cond", "branch index"), 0,
                                            static_cast<int64_t>(branches.size()) - 1);
  const auto& branch = static_cast<const JaxprParam&>(
      *std::get<std::shared_ptr<const ParamObject>>(branches[static_cast<size_t>(index)].value));
  return EvalClosedLockstep(branch.closed(), Slice(ins, 1, ins.size()), devices);
}

// The jaxpr param of a call that runs its body inline, or nullptr.
const char* CallJaxprParam(Primitive p) {
  static const Primitive kCustomJvp = Primitive::Intern("custom_jvp_call");
  static const Primitive kCustomVjp = Primitive::Intern("custom_vjp_call");
  if (p == kJitPrimitive || p == kCheckpointPrimitive) return "jaxpr";
  if (p == kCustomJvp || p == kCustomVjp) return "call_jaxpr";
  return nullptr;
}

std::vector<PerDevice> EvalJaxprLockstep(const Jaxpr& j, const std::vector<PerDevice>& args,
                                         const std::vector<const Device*>& devices) {
  const size_t num = devices.size();
  if (!j.constvars.empty()) throw InternalError("shard_map: the body's jaxpr has unhoisted consts");
  std::vector<PerDevice> env(j.num_vars());
  for (size_t i = 0; i < j.invars.size(); ++i) env[j.invars[i].index] = args[i];
  auto read = [&](const Atom& a) -> PerDevice {
    if (const Var* v = std::get_if<Var>(&a)) return env[v->index];
    return PerDevice(num, std::get<Literal>(a).value);
  };
  for (const Eqn& e : j.eqns) {
    std::vector<PerDevice> ins;
    for (const Atom& a : e.inputs) ins.push_back(read(a));
    std::vector<PerDevice> outs(e.outputs.size(), PerDevice(num));
    bool nested = false;  // a call or loop whose body communicates
    for (const auto& [name, value] : e.params) nested = nested || ParamHasCollective(value);
    if (lax::IsCollective(e.primitive)) {
      // One collective of all its operands (psum/pmax/pmin/pvary take several), on the
      // clocks once with all their bytes.
      const std::vector<PerDevice> operands = ins.empty() ? std::vector<PerDevice>{PerDevice()} : ins;
      for (size_t k = 0; k < operands.size(); ++k) {
        std::vector<Array> result = EvalCollective(e.primitive, operands[k], e.params);
        for (size_t d = 0; d < num; ++d) outs[k][d] = OnDevice(result[d], devices[d]);
      }
      AdvanceClocksForCollective(e.primitive, e.params, operands, devices);
    } else if (nested) {
      // Collectives inside a loop, a branch or a call: its body runs in lockstep too.
      if (e.primitive.name() == "scan") {
        outs = ScanLockstep(e, ins, devices);
      } else if (e.primitive.name() == "while") {
        outs = WhileLockstep(e, ins, devices);
      } else if (e.primitive.name() == "cond") {
        outs = CondLockstep(e, ins, devices);
      } else if (const char* param = CallJaxprParam(e.primitive)) {
        outs = EvalClosedLockstep(GetJaxpr(e.params, param), ins, devices);
      } else {
        ThrowOpError<ValueError>(e.primitive.name(), "inside shard_map contains collectives; shard_map evaluates "
                                 "collectives eagerly at the top of its body and inside scan, while, cond, jit, "
                                 "checkpoint and custom_jvp/vjp calls (jit the shard_map to run it as one program "
                                 "per chip)");
      }
    } else {
      for (size_t d = 0; d < num; ++d) {
        Arrays in_d;
        for (const PerDevice& x : ins) in_d.push_back(x[d]);
        Arrays o = Bind(e.primitive, in_d, e.params);
        for (size_t k = 0; k < o.size(); ++k) outs[k][d] = std::move(o[k]);
      }
    }
    for (size_t k = 0; k < e.outputs.size(); ++k) env[e.outputs[k].index] = std::move(outs[k]);
  }
  std::vector<PerDevice> results;
  for (const Atom& a : j.outvars) results.push_back(read(a));
  return results;
}

}  // namespace

std::vector<PerDevice> EvalLockstep(const ClosedJaxpr& closed, const std::vector<PerDevice>& args,
                                    const std::vector<const Device*>& devices) {
  return EvalClosedLockstep(closed, args, devices);
}

bool IsOneTpuSlice(const std::vector<const Device*>& devices) {
  if (devices.empty()) return false;
  const Client* client = &devices.front()->client();
  for (const Device* d : devices) {
    if (d->platform() != "tpu" || &d->client() != client) return false;
  }
  return true;
}

}  // namespace jx::shard_map_internal
