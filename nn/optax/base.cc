#include "jx/nn/optax/base.h"

#include <string>
#include <utility>

#include "jx/core/str_util.h"
#include "jx/lax/numpy/numpy.h"

namespace jx::optax {

namespace jnp = jx::numpy;

namespace {

std::string FieldNames(const OptState& state) {
  std::string out;
  for (const auto& [key, value] : state.fields) StrAppend(&out, out.empty() ? "" : ", ", key);
  return out;
}

}  // namespace

const std::vector<Array>& OptState::field(std::string_view key) const {
  auto it = fields.find(std::string(key));
  if (it == fields.end()) {
    throw ValueError(StrCat("[optax] ", name.value, " has no field '", key, "' (fields: ",
                            FieldNames(*this).empty() ? "none" : FieldNames(*this), ")"));
  }
  return it->second;
}

const Array& OptState::scalar(std::string_view key) const {
  const std::vector<Array>& values = field(key);
  if (values.size() != 1) {
    throw ValueError(StrCat("[optax] ", name.value, ".", key, " holds ", values.size(),
                            " arrays, not one scalar"));
  }
  return values[0];
}

OptState EmptyState() { return OptState{Static<std::string>{"EmptyState"}, {}, {}}; }

Array Schedule::operator()(const Array& count) const {
  if (!fn_) throw ValueError("[optax] calling an empty Schedule");
  return fn_(count);
}

Array Schedule::Step(int64_t count) { return Array::Scalar(static_cast<double>(count), int32); }

OptState GradientTransformation::init_leaves(const Leaves& params, const tree::TreeDef& def) const {
  return init_(params, def);
}

std::pair<Leaves, OptState> GradientTransformation::update_leaves(Leaves updates, const OptState& state,
                                                                  const Leaves* params,
                                                                  const tree::TreeDef& def) const {
  return update_(std::move(updates), state, params, def);
}

void GradientTransformation::CheckSameStructure(const tree::TreeDef& grads, const tree::TreeDef& params) const {
  if (grads == params) return;
  throw ValueError(StrCat("[optax ", name_, "] update: the updates and params differ in structure at ",
                          tree::FirstDifference(grads, params), " (updates ", grads.ToString(), ", params ",
                          params.ToString(), ")"));
}

Array AddUpdate(const Array& param, const Array& update) { return (param + update).astype(param.dtype()); }

}  // namespace jx::optax
