// jx::nn: jax.nn's functions, Equinox-style modules, initializers, losses, Optax-style
// optimizers (jx::optax), data loading and checkpoints.
#pragma once

#include "jx/nn/functions.h"
#include "jx/nn/initializers.h"
#include "jx/nn/losses.h"
#include "jx/nn/layers.h"
#include "jx/nn/conv.h"
#include "jx/nn/pooling.h"
#include "jx/nn/batch_norm.h"
#include "jx/nn/attention.h"
#include "jx/nn/flash_attention.h"
#include "jx/nn/optax/optax.h"
#include "jx/nn/data/data.h"
#include "jx/nn/checkpoint.h"
#include "jx/nn/progress.h"
