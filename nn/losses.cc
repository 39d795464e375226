#include "jx/nn/losses.h"

#include "jx/core/errors.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/nn/functions.h"

namespace jx::nn {

namespace jnp = jx::numpy;

namespace {

// logits [..., classes] and integer labels [...]: the checks both integer-label functions share.
void CheckIntegerLabels(const Array& logits, const Array& labels, std::string_view op) {
  JX_CHECK_OP(IsInteger(labels.dtype()), TypeError, op, "labels must be integer class ids, got ", labels.aval().str(),
              " (for probabilities use softmax_cross_entropy)");
  JX_CHECK_OP(logits.ndim() >= 1, ShapeError, op, "logits must have a class axis, got ", logits.aval().str());
  const Shape batch(logits.shape().begin(), logits.shape().end() - 1);
  JX_CHECK_OP(labels.shape() == batch, ShapeError, op, "labels ", labels.aval().str(),
              " must have the shape of logits ", logits.aval().str(), " without its last (class) axis");
}

void CheckSameShape(const Array& a, const Array& b, std::string_view op, std::string_view a_name,
                    std::string_view b_name) {
  JX_CHECK_OP(a.shape() == b.shape(), ShapeError, op, a_name, " ", a.aval().str(), " and ", b_name, " ",
              b.aval().str(), " must have the same shape");
}

}  // namespace

Array softmax_cross_entropy_with_integer_labels(const Array& logits, const Array& labels) {
  constexpr std::string_view kOp = "softmax_cross_entropy_with_integer_labels";
  CheckIntegerLabels(logits, labels, kOp);
  const Array label_logits = jnp::squeeze(jnp::take_along_axis(logits, lax::expand_dims(labels, {-1}), -1), -1);
  return jnp::subtract(logsumexp(logits, -1), label_logits);
}

Array softmax_cross_entropy(const Array& logits, const Array& labels) {
  CheckSameShape(logits, labels, "softmax_cross_entropy", "logits", "labels");
  const Array log_probs = log_softmax(logits, -1);
  // 0 * -inf would be NaN: a class with zero probability contributes nothing.
  const Array terms = jnp::where(jnp::equal(labels, 0), 0.0, jnp::multiply(labels, log_probs));
  return jnp::negative(jnp::sum(terms, -1));
}

Array sigmoid_binary_cross_entropy(const Array& logits, const Array& labels) {
  CheckSameShape(logits, labels, "sigmoid_binary_cross_entropy", "logits", "labels");
  const Array log_p = log_sigmoid(logits);
  const Array log_not_p = log_sigmoid(jnp::negative(logits));
  return jnp::subtract(jnp::negative(jnp::multiply(labels, log_p)),
                       jnp::multiply(jnp::subtract(1.0, labels), log_not_p));
}

Array squared_error(const Array& predictions, const std::optional<Array>& targets) {
  if (!targets.has_value()) return jnp::square(predictions);
  CheckSameShape(predictions, *targets, "squared_error", "predictions", "targets");
  return jnp::square(jnp::subtract(predictions, *targets));
}

Array l2_loss(const Array& predictions, const std::optional<Array>& targets) {
  return jnp::multiply(0.5, squared_error(predictions, targets));
}

Array mean_squared_error(const Array& predictions, const Array& targets) {
  return jnp::mean(squared_error(predictions, targets));
}

Array accuracy(const Array& logits, const Array& labels) {
  CheckIntegerLabels(logits, labels, "accuracy");
  const Array predicted = jnp::argmax(logits, -1);
  return jnp::mean(jnp::equal(predicted, labels.astype(predicted.dtype())).astype(float32));
}

}  // namespace jx::nn
