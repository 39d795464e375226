// Losses with Optax's names and semantics (optax.losses): each returns the loss per example
// (the batch shape, the class axis reduced); average it yourself, as with Optax. accuracy is
// the usual classification metric.
//
//   Array loss = jnp::mean(nn::softmax_cross_entropy_with_integer_labels(logits, labels));
//   // optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
//   Array mse = jnp::mean(nn::squared_error(predictions, targets));
//   Array acc = nn::accuracy(logits, labels);                  // f32 scalar in [0, 1]
#pragma once

#include <optional>

#include "jx/core/array.h"

namespace jx::nn {

// logsumexp(logits) - logits[label] along the last axis; labels are integers of logits' shape
// without its last axis (a ShapeError otherwise, a TypeError for float labels). Stable for
// large logits. Labels outside [0, num_classes) give NaN (JAX's take_along_axis fill).
Array softmax_cross_entropy_with_integer_labels(const Array& logits, const Array& labels);
// -sum(labels * log_softmax(logits)) along the last axis; labels are probabilities (one-hot or
// soft) of logits' shape. A zero label contributes 0 even where log_softmax is -inf.
Array softmax_cross_entropy(const Array& logits, const Array& labels);
// -labels * log_sigmoid(logits) - (1 - labels) * log_sigmoid(-logits), elementwise; stable for
// large |logits|.
Array sigmoid_binary_cross_entropy(const Array& logits, const Array& labels);
// (predictions - targets)^2, elementwise; targets absent means 0 (optax.squared_error).
Array squared_error(const Array& predictions, const std::optional<Array>& targets = std::nullopt);
// 0.5 * squared_error (optax.l2_loss).
Array l2_loss(const Array& predictions, const std::optional<Array>& targets = std::nullopt);
// mean(squared_error) over every element: the MSE as one scalar.
Array mean_squared_error(const Array& predictions, const Array& targets);
// The fraction of rows whose argmax over the last axis equals the integer label (f32 scalar).
Array accuracy(const Array& logits, const Array& labels);

}  // namespace jx::nn
