// Internal helpers of jx::optax's transformations: building and checking OptStates, step
// counts and Optax's moment and bias-correction formulas over leaves. Not part of the API.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "jx/core/dtype.h"
#include "jx/nn/optax/base.h"

namespace jx::optax {

OptState MakeState(std::string name, std::map<std::string, Leaves> fields);

// Throws ValueError when the state was not made by a transformation of this kind (a state
// of another optimizer, or of another transformation in a chain).
void CheckStateName(const OptState& state, std::string_view expected, std::string_view op);
void CheckInnerCount(const OptState& state, size_t expected, std::string_view op);
// The field `key`, checked to hold one leaf per update leaf.
const Leaves& Moment(const OptState& state, std::string_view key, size_t num_leaves, std::string_view op);

// An int32 0 step count, and count + 1 saturating at the int32 maximum (numerics.safe_increment).
Array ZeroCount();
Array SafeIncrement(const Array& count);

Leaves ZerosLike(const Leaves& leaves, std::optional<DType> dtype = std::nullopt);

// (1 - decay) * g^order + decay * moment, order 1 or 2 (tree_update_moment and its
// per-element-norm form for real leaves).
Leaves UpdateMoment(const Leaves& updates, const Leaves& moments, double decay, int order);
// moment / (1 - decay^count), the correction computed in float32 (float64 for float64 leaves)
// and cast to each leaf's dtype (tree_bias_correction).
Leaves BiasCorrection(const Leaves& moments, double decay, const Array& count);

}  // namespace jx::optax
