#include "jx/core/jaxpr.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_join.h"
#include "jx/core/errors.h"
#include "jx/core/interpreter.h"
#include "jx/core/str_util.h"

namespace jx {

Var Jaxpr::NewVar(ShapedArray aval) {
  var_avals_.push_back(std::move(aval));
  return Var{static_cast<uint32_t>(var_avals_.size() - 1)};
}

const ShapedArray& Jaxpr::aval(const Atom& a) const {
  if (const Var* v = std::get_if<Var>(&a)) return aval(*v);
  return std::get<Literal>(a).value.aval();
}

std::vector<ShapedArray> Jaxpr::in_avals() const {
  std::vector<ShapedArray> out;
  for (Var v : invars) out.push_back(aval(v));
  return out;
}

std::vector<ShapedArray> Jaxpr::out_avals() const {
  std::vector<ShapedArray> out;
  for (const Atom& a : outvars) out.push_back(aval(a));
  return out;
}

namespace {

constexpr size_t kLineWidth = 80;

// JAX's variable names: a..z, then ba, bb, ... (base 26 with letters as digits).
std::string VarName(uint32_t n) {
  std::string s;
  do {
    s += static_cast<char>('a' + n % 26);
    n /= 26;
  } while (n > 0);
  std::reverse(s.begin(), s.end());
  return s;
}

// Names variables in order of first appearance, as JAX's printer does. One Namer serves a
// jaxpr and every sub-jaxpr in its params, so inner names continue the outer sequence.
class Namer {
 public:
  std::string Name(const Jaxpr& j, Var v) {
    auto [it, inserted] = names_.try_emplace(std::pair{&j, v.index}, "");
    if (inserted) it->second = VarName(next_++);
    return it->second;
  }

 private:
  absl::flat_hash_map<std::pair<const Jaxpr*, uint32_t>, std::string> names_;
  uint32_t next_ = 0;
};

// Positions are absolute columns: `line_start` is where the line the jaxpr opens on starts
// (its equations are indented from there), `column` where its `{` is. A jaxpr prints on one
// line only when that line fits from `column` to the width, as JAX's pretty printer decides
// (so a sub-jaxpr deep in a broken equation breaks where the same text at the top would not).
std::string JaxprStr(const Jaxpr& j, Namer& n, size_t line_start, size_t column);

std::string TypeStr(const ShapedArray& a) { return a.str(); }

// Literals print as Python's repr of the scalar (2.0, 0.5, 1e-05, True, 3), then the type.
std::string LiteralStr(const Array& v) {
  std::string s;
  if (v.dtype() == DType::kBool) {
    s = v.item<bool>() ? "True" : "False";
  } else if (IsFloating(v.dtype())) {
    // The scalar's str in its own dtype: 10000.0, 0.1 (not float32 0.1's double expansion),
    // 1e-05, as JAX prints NumPy scalars.
    s = v.str();
  } else {
    s = v.str();
  }
  return StrCat(s, ":", TypeStr(v.aval()));
}

std::string AtomStr(const Jaxpr& j, const Atom& a, Namer& n) {
  if (const Var* v = std::get_if<Var>(&a)) return n.Name(j, *v);
  return LiteralStr(std::get<Literal>(a).value);
}

std::string Binder(const Jaxpr& j, Var v, Namer& n) { return StrCat(n.Name(j, v), ":", TypeStr(j.aval(v))); }

// Indents every line after the first by `indent` spaces.
std::string IndentTail(const std::string& s, int indent) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out.append(static_cast<size_t>(indent), ' ');
  }
  return out;
}

// A param value; sub-jaxprs are named by the enclosing printer's Namer and placed as above.
std::string ParamStr(const Param& value, Namer& n, size_t line_start, size_t column) {
  if (const auto* obj = std::get_if<std::shared_ptr<const ParamObject>>(&value.value)) {
    if (const auto* sub = dynamic_cast<const JaxprParam*>(obj->get())) {
      return JaxprStr(*sub->closed().jaxpr, n, line_start, column);
    }
  }
  return value.ToString();
}

// `eqn_start`: the absolute column of the equation's line; broken params start two further.
std::string ParamsStr(const ParamMap& params, int indent, Namer& n, size_t eqn_start) {
  if (params.empty()) return "";
  std::vector<std::string> parts;
  bool multiline = false;
  for (const auto& [name, value] : params) {
    std::string v;
    // A list of sub-jaxprs (cond's branches) prints one per line, as JAX does.
    if (const auto* list = std::get_if<ParamList>(&value.value);
        list != nullptr && !list->empty() &&
        std::holds_alternative<std::shared_ptr<const ParamObject>>(list->front().value)) {
      v = "(\n";
      for (const Param& item : *list) {
        StrAppend(&v, "  ", IndentTail(ParamStr(item, n, eqn_start + 4, eqn_start + 4), 2), "\n");
      }
      v += ")";
    } else {
      v = ParamStr(value, n, eqn_start + 2, eqn_start + 2 + name.size() + 1);
      // A parameter object that prints as nothing stays out of the text (a collective's
      // mesh, which JAX keeps in the tracing context rather than in the equation).
      if (v.empty() && std::holds_alternative<std::shared_ptr<const ParamObject>>(value.value)) continue;
    }
    if (v.find('\n') != std::string::npos || v.size() > kLineWidth / 2) multiline = true;
    parts.push_back(StrCat(name, "=", v));
  }
  if (parts.empty()) return "";
  std::string joined = absl::StrJoin(parts, " ");
  if (!multiline && joined.size() + indent < kLineWidth) return StrCat("[", joined, "]");
  std::string out = "[\n";
  for (const std::string& p : parts) {
    out += std::string(static_cast<size_t>(indent + 2), ' ') + IndentTail(p, indent + 2) + "\n";
  }
  return out + std::string(static_cast<size_t>(indent), ' ') + "]";
}

// An output nothing reads prints as `_` and takes no name (JAX's DropVar: to_jaxpr drops the
// outputs no equation or jaxpr output reads; pe.dce_jaxpr drops them from equations it keeps).
std::string EqnStr(const Jaxpr& j, const Eqn& e, Namer& n, int indent, size_t eqn_start,
                   const std::vector<bool>& read) {
  std::vector<std::string> outs, ins;
  for (Var v : e.outputs) outs.push_back(read[v.index] ? Binder(j, v, n) : StrCat("_:", TypeStr(j.aval(v))));
  for (const Atom& a : e.inputs) ins.push_back(AtomStr(j, a, n));
  std::string rhs = StrCat(e.primitive.name(), ParamsStr(e.params, indent, n, eqn_start), ins.empty() ? "" : " ",
                           absl::StrJoin(ins, " "));
  // An equation with no outputs (an effect: debug_callback) prints without a binder, as JAX's.
  if (outs.empty()) return rhs;
  return StrCat(absl::StrJoin(outs, " "), " = ", rhs);
}

std::string JaxprStr(const Jaxpr& j, Namer& n, size_t line_start, size_t column) {
  std::vector<std::string> consts, ins, eqn_strs, outs;
  for (Var v : j.constvars) consts.push_back(Binder(j, v, n));
  for (Var v : j.invars) ins.push_back(Binder(j, v, n));
  std::vector<bool> read(j.num_vars(), false);
  for (const Eqn& e : j.eqns) {
    for (const Atom& a : e.inputs) {
      if (const Var* v = std::get_if<Var>(&a)) read[v->index] = true;
    }
  }
  for (const Atom& a : j.outvars) {
    if (const Var* v = std::get_if<Var>(&a)) read[v->index] = true;
  }
  for (const Eqn& e : j.eqns) eqn_strs.push_back(EqnStr(j, e, n, 4, line_start + 4, read));
  for (const Atom& a : j.outvars) outs.push_back(AtomStr(j, a, n));
  std::string head = StrCat("{ lambda ", absl::StrJoin(consts, " "), consts.empty() ? "" : "", "; ",
                            absl::StrJoin(ins, " "), ". let");
  std::string tail = StrCat("in (", absl::StrJoin(outs, ", "), outs.size() == 1 ? "," : "", ") }");
  std::string flat = head;
  bool fits = true;
  for (const std::string& e : eqn_strs) {
    if (e.find('\n') != std::string::npos) fits = false;
    flat += " " + e + ";";
  }
  if (!eqn_strs.empty()) flat.pop_back();
  flat += " " + tail;
  if (fits && column + flat.size() <= kLineWidth) return flat;
  std::string out = head + "\n";
  for (const std::string& e : eqn_strs) out += "    " + e + "\n";
  return out + "  " + tail;
}

}  // namespace

std::string Jaxpr::ToString() const {
  Namer n;
  return JaxprStr(*this, n, 0, 0);
}

void Jaxpr::TypeCheck() const {
  std::vector<bool> defined(var_avals_.size(), false);
  auto define = [&](Var v, std::string_view what) {
    if (v.index >= defined.size()) throw InternalError(StrCat("jaxpr: ", what, " uses an unknown variable"));
    if (defined[v.index]) throw InternalError(StrCat("jaxpr: variable ", VarName(v.index), " defined twice"));
    defined[v.index] = true;
  };
  auto use = [&](const Atom& a, std::string_view what) {
    if (const Var* v = std::get_if<Var>(&a); v && (v->index >= defined.size() || !defined[v->index])) {
      throw InternalError(StrCat("jaxpr: ", what, " uses a variable before its definition"));
    }
  };
  for (Var v : constvars) define(v, "constvar");
  for (Var v : invars) define(v, "invar");
  for (const Eqn& e : eqns) {
    absl::InlinedVector<const ShapedArray*, 4> in;
    for (const Atom& a : e.inputs) {
      use(a, e.primitive.name());
      in.push_back(&aval(a));
    }
    Avals want = AbstractEval(e.primitive, in, e.params);
    if (want.size() != e.outputs.size()) {
      throw InternalError(StrCat("jaxpr: ", e.primitive.name(), " has ", e.outputs.size(),
                                 " outputs, abstract evaluation gives ", want.size()));
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const ShapedArray& got = aval(e.outputs[i]);
      if (got.shape != want[i].shape || got.dtype != want[i].dtype) {
        throw InternalError(StrCat("jaxpr: ", e.primitive.name(), " output ", i, " is typed ", got.str(),
                                   " but abstract evaluation gives ", want[i].str()));
      }
      define(e.outputs[i], e.primitive.name());
    }
  }
  for (const Atom& a : outvars) use(a, "outvars");
}

std::ostream& operator<<(std::ostream& os, const Jaxpr& j) { return os << j.ToString(); }
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j) { return os << j.ToString(); }

Arrays EvalJaxpr(const Jaxpr& jaxpr, absl::Span<const Array> consts, absl::Span<const Array> args,
                 const EqnObserver& observer) {
  if (consts.size() != jaxpr.constvars.size() || args.size() != jaxpr.invars.size()) {
    throw InternalError(StrCat("EvalJaxpr: expected ", jaxpr.constvars.size(), " consts and ",
                               jaxpr.invars.size(), " args, got ", consts.size(), " and ", args.size()));
  }
  std::vector<Array> env(jaxpr.num_vars());
  for (size_t i = 0; i < consts.size(); ++i) env[jaxpr.constvars[i].index] = consts[i];
  for (size_t i = 0; i < args.size(); ++i) env[jaxpr.invars[i].index] = args[i];
  auto read = [&](const Atom& a) -> const Array& {
    if (const Var* v = std::get_if<Var>(&a)) return env[v->index];
    return std::get<Literal>(a).value;
  };
  Arrays in;
  for (size_t k = 0; k < jaxpr.eqns.size(); ++k) {
    const Eqn& e = jaxpr.eqns[k];
    in.clear();
    for (const Atom& a : e.inputs) in.push_back(read(a));
    Arrays out = Bind(e.primitive, in, e.params);
    if (observer) observer(e, k, in, out);
    for (size_t i = 0; i < e.outputs.size(); ++i) env[e.outputs[i].index] = std::move(out[i]);
  }
  Arrays result;
  for (const Atom& a : jaxpr.outvars) result.push_back(read(a));
  return result;
}

size_t JaxprParam::Hash() const { return absl::HashOf(closed_.jaxpr.get()); }

bool JaxprParam::Equals(const ParamObject& other) const {
  const auto* o = dynamic_cast<const JaxprParam*>(&other);
  return o && o->closed_.jaxpr == closed_.jaxpr && o->closed_.consts.size() == closed_.consts.size() &&
         std::equal(closed_.consts.begin(), closed_.consts.end(), o->closed_.consts.begin(),
                    [](const Array& a, const Array& b) { return a.impl() == b.impl(); });
}

}  // namespace jx
