#include "jx/sharding/spmd/collective_matmul.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "absl/strings/str_format.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/sharding/collectives.h"

namespace jx::spmd {
namespace {

namespace jnp = jx::numpy;

// Block `block` (a traced int32 position) of x along dim: x[..., block*size:(block+1)*size, ...].
Array Block(const Array& x, int64_t dim, const Array& block, int64_t steps) {
  const int64_t size = x.shape()[static_cast<size_t>(dim)] / steps;
  std::vector<Array> starts;
  for (int64_t d = 0; d < x.ndim(); ++d) starts.push_back(d == dim ? block * size : jnp::zeros({}, int32));
  Shape sizes = x.shape();
  sizes[static_cast<size_t>(dim)] = size;
  return lax::dynamic_slice(x, starts, sizes);
}

// Pairs (j, j+shift mod n): every device sends to its neighbour `shift` along the ring.
std::vector<std::pair<int64_t, int64_t>> RingShift(int64_t n, int64_t shift) {
  std::vector<std::pair<int64_t, int64_t>> perm;
  for (int64_t j = 0; j < n; ++j) perm.emplace_back(j, ((j + shift) % n + n) % n);
  return perm;
}

void CheckOperands(std::string_view what, size_t num_operands, size_t num_dims) {
  if (num_operands != 2 || num_dims != 2) {
    throw InternalError(StrCat(what, ": a dot_general has 2 operands; got ", num_operands, " operands and ", num_dims,
                               " operand dims"));
  }
}

}  // namespace

CollectiveMatmulMode CollectiveMatmulModeFromEnv() {
  const char* v = std::getenv("JX_COLLECTIVE_MATMUL");
  if (v == nullptr || std::string_view(v).empty() || std::string_view(v) == "auto") return CollectiveMatmulMode::kAuto;
  if (std::string_view(v) == "on") return CollectiveMatmulMode::kOn;
  if (std::string_view(v) == "off") return CollectiveMatmulMode::kOff;
  throw ValueError(StrCat("JX_COLLECTIVE_MATMUL='", v, "': expected auto, on or off"));
}

double CollectiveMatmulCost::loop_seconds() const {
  return std::max(compute_seconds, loop_permute_seconds) +
         2 * loop_permute_seconds / static_cast<double>(std::max<int64_t>(steps, 1));
}

std::string CollectiveMatmulCost::ToString() const {
  return absl::StrFormat("max(Tc %.3g s, Tm*m %.3g s) + 2*Tm*m/%d = %.3g s %s Tc + Tm %.3g s (Tm %.3g s, m %.2f)",
                         compute_seconds, loop_permute_seconds, steps, loop_seconds(), pays() ? "<" : ">=",
                         plain_seconds(), one_shot_seconds, multiplier());
}

Array AllGatherMatmul(const GatherLoop& loop, absl::Span<const Array> operands, const DotFn& dot,
                      const std::vector<int64_t>& result_shape, DType result_dtype) {
  CheckOperands("collective matmul (all-gather)", operands.size(), loop.dims.size());
  const int64_t n = loop.steps;
  const Array idx = lax::axis_index(loop.axis);
  // Device i receives from i+1, so at step s it holds the shard of position (i+s) mod n.
  const auto from_next = RingShift(n, -1);
  Arrays held(operands.begin(), operands.end());
  Array result;
  for (int64_t s = 0; s < n; ++s) {
    // The next step's shards start moving before this step's dot (they are independent).
    Arrays next = held;
    if (s + 1 < n) {
      for (size_t k = 0; k < held.size(); ++k) {
        if (loop.looped[k]) next[k] = lax::ppermute(held[k], loop.axis, from_next);
      }
    }
    const Array position = (idx + s) % n;
    Arrays ins = held;
    for (size_t k = 0; k < ins.size(); ++k) {
      if (!loop.looped[k] && loop.dims[k] >= 0) ins[k] = Block(operands[k], loop.dims[k], position, n);
    }
    const Array partial = dot(ins[0], ins[1]);
    if (loop.result_dim < 0) {
      result = s == 0 ? partial : result + partial;
    } else {
      if (s == 0) result = lax::pvary(jnp::zeros(result_shape, result_dtype), loop.axis);
      const int64_t size = partial.shape()[static_cast<size_t>(loop.result_dim)];
      std::vector<Array> starts;
      for (int64_t d = 0; d < partial.ndim(); ++d) {
        starts.push_back(d == loop.result_dim ? position * size : jnp::zeros({}, int32));
      }
      result = lax::dynamic_update_slice(result, partial, starts);
    }
    held = std::move(next);
  }
  return result;
}

Array ReduceScatterMatmul(const ScatterLoop& loop, absl::Span<const Array> operands, const DotFn& dot) {
  CheckOperands("collective matmul (reduce-scatter)", operands.size(), loop.dims.size());
  const int64_t n = loop.steps;
  const Array idx = lax::axis_index(loop.axis);
  // The partial sum of block b starts on device b+1 and moves one device on per step, so at
  // step s device i adds its partial product for block (i-1-s) mod n and ends with block i.
  const auto to_next = RingShift(n, 1);
  auto partial = [&](int64_t s) {
    const Array block = (idx + (n - 1 - s)) % n;
    Arrays ins(operands.begin(), operands.end());
    for (size_t k = 0; k < ins.size(); ++k) {
      if (loop.dims[k] >= 0) ins[k] = Block(operands[k], loop.dims[k], block, n);
    }
    return dot(ins[0], ins[1]);
  };
  Array acc = partial(0);
  for (int64_t s = 1; s < n; ++s) {
    const Array moved = lax::ppermute(acc, loop.axis, to_next);  // overlaps the next dot
    acc = moved + partial(s);
  }
  return acc;
}

}  // namespace jx::spmd
