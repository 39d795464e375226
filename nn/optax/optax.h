// jx::optax: Optax for jx. Gradient transformations over any pytree (base.h), their building
// blocks (transforms.h), the popular optimizers (alias.h) and learning-rate schedules
// (schedules.h), with Optax's names, defaults and update formulas.
//
//   auto opt = jx::optax::adam(1e-3);
//   auto state = opt.init(params);
//   auto step = jx::jit([&](Params params, jx::optax::OptState state, Batch batch) {
//     auto [loss, grads] = jx::value_and_grad(loss_fn)(params, batch);
//     auto [updates, new_state] = opt.update(grads, state, params);
//     return std::tuple{jx::optax::apply_updates(params, updates), new_state, loss};
//   }, jx::donate_argnums{0, 1});
#pragma once

#include "jx/nn/optax/alias.h"
#include "jx/nn/optax/base.h"
#include "jx/nn/optax/schedules.h"
#include "jx/nn/optax/transforms.h"
