// The jaxpr IR: a typed, first-order program of primitive applications, as in JAX.
//
//   { lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }
//
// A Jaxpr owns its variables (Var is an index into var_avals); constvars are bound to the
// consts of a ClosedJaxpr; a Literal is a concrete 0-d value written inline. Sub-jaxprs of
// higher-order primitives (cond, scan, pjit) live in params as ClosedJaxpr objects.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "jx/core/array.h"
#include "jx/core/param_map.h"
#include "jx/core/primitive.h"
#include "jx/core/shape.h"

namespace jx {

struct Var {
  uint32_t index = 0;
  friend bool operator==(Var a, Var b) { return a.index == b.index; }
};

// A concrete constant used inline (scalars); printed as 2.0:f32[].
struct Literal {
  Array value;
};

using Atom = std::variant<Var, Literal>;

// Inputs and outputs are stored inline for the common arities (most equations read one or
// two values and write one): a traced equation costs no separate allocations for them.
struct Eqn {
  Primitive primitive;
  absl::InlinedVector<Atom, 2> inputs;
  absl::InlinedVector<Var, 1> outputs;
  ParamMap params;
};

class Jaxpr {
 public:
  // A new variable of the given aval.
  Var NewVar(ShapedArray aval);
  const ShapedArray& aval(Var v) const { return var_avals_[v.index]; }
  const ShapedArray& aval(const Atom& a) const;
  size_t num_vars() const { return var_avals_.size(); }

  std::vector<Var> constvars, invars;
  // A deque: appending never moves the equations already traced (a vector's doublings copied
  // and page-faulted tens of MB per 100k-equation trace).
  std::deque<Eqn> eqns;
  std::vector<Atom> outvars;

  std::vector<ShapedArray> in_avals() const;
  std::vector<ShapedArray> out_avals() const;

  // JAX's text form; wraps to one equation per line past 80 columns.
  std::string ToString() const;
  // Checks that every variable is defined before use, once, and that every equation's
  // output avals match its primitive's abstract evaluation. Throws InternalError.
  void TypeCheck() const;

 private:
  std::vector<ShapedArray> var_avals_;
};

// A jaxpr with its constants bound (consts[i] feeds jaxpr->constvars[i]). Consts may be
// tracers of an enclosing transformation (a closure over a traced value).
struct ClosedJaxpr {
  std::shared_ptr<const Jaxpr> jaxpr;
  std::vector<Array> consts;
  std::string ToString() const { return jaxpr->ToString(); }
};

std::ostream& operator<<(std::ostream& os, const Jaxpr& j);
std::ostream& operator<<(std::ostream& os, const ClosedJaxpr& j);

// Called after each equation EvalJaxpr binds, with its inputs and outputs (debug checks).
using EqnObserver = std::function<void(const Eqn& eqn, size_t index, absl::Span<const Array> in,
                                       absl::Span<const Array> out)>;

// Evaluates a jaxpr on args by binding each equation through the current interpreter (so
// evaluating under a transformation transforms it).
Arrays EvalJaxpr(const Jaxpr& jaxpr, absl::Span<const Array> consts, absl::Span<const Array> args,
                 const EqnObserver& observer = nullptr);

// A ClosedJaxpr as a primitive parameter (cond branches, scan bodies).
class JaxprParam final : public ParamObject {
 public:
  explicit JaxprParam(ClosedJaxpr j) : closed_(std::move(j)) {}
  const ClosedJaxpr& closed() const { return closed_; }
  size_t Hash() const override;
  bool Equals(const ParamObject& other) const override;
  std::string ToString() const override { return closed_.ToString(); }

 private:
  ClosedJaxpr closed_;
};

}  // namespace jx
