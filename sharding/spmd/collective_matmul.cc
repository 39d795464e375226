#include "jx/sharding/spmd/collective_matmul.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "jx/core/errors.h"
#include "jx/core/str_util.h"
#include "jx/lax/control_flow.h"
#include "jx/lax/lax.h"
#include "jx/lax/numpy/numpy.h"
#include "jx/sharding/collectives.h"
#include "jx/transforms/optimization_barrier.h"

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

// What a step of the gather loop does (AllGatherMatmul).
struct GatherStep {
  bool first = false;           // its dot starts the result
  bool shift_forward = false;   // the forward shards move on for the next step
  bool shift_backward = false;  // the backward shards move on
  bool backward_dot = false;    // the backward shards are multiplied too
  friend bool operator==(const GatherStep&, const GatherStep&) = default;
};

// What a step of the reduce-scatter loop does (ReduceScatterMatmul).
struct ScatterStep {
  bool first = false;  // its partial products start the sums (nothing to shift yet)
  friend bool operator==(const ScatterStep&, const ScatterStep&) = default;
};

// Steps 0..count-1 of a collective matmul, rolled: step s does what step_at(s) says, as
// run(step, s, state) -> state with s an int32 scalar. Each run of two or more equal steps is
// one loop (lax::fori_loop: a while loop of known trip count whose body is one step, so the
// program does not grow with the ring and the pod step costs it per trip); a step unlike its
// neighbours (the first, a last one without shifts) is emitted on its own.
template <typename Step, typename StepAt, typename Run>
std::vector<Array> RunSteps(int64_t count, const StepAt& step_at, const Run& run, std::vector<Array> state) {
  for (int64_t s = 0; s < count;) {
    const Step step = step_at(s);
    int64_t end = s + 1;
    while (end < count && step_at(end) == step) ++end;
    if (end - s == 1) {
      state = run(step, Array::Scalar(static_cast<double>(s), int32), state);
    } else {
      state = lax::fori_loop(
          s, end, [&](const Array& i, const std::vector<Array>& carry) { return run(step, i, carry); }, state);
    }
    s = end;
  }
  return state;
}

// Step s of the gather loop (AllGatherMatmul).
GatherStep GatherStepAt(const GatherLoop& loop, int64_t s) {
  const int64_t rounds = ShiftRounds(loop);
  auto backward = [&](int64_t t) { return loop.bidirectional && 2 * t < loop.steps; };
  return GatherStep{.first = s == 0,
                    .shift_forward = s < rounds,
                    .shift_backward = s < rounds && backward(s + 1),
                    .backward_dot = s > 0 && backward(s)};
}

ScatterStep ScatterStepAt(int64_t s) { return ScatterStep{.first = s == 0}; }

// Whether each of `count` steps falls in a run of two or more equal steps (RunSteps rolls
// those into one loop).
template <typename StepAt>
std::vector<bool> Rolled(int64_t count, const StepAt& step_at) {
  std::vector<bool> rolled(static_cast<size_t>(count), false);
  for (int64_t s = 0; s < count;) {
    int64_t end = s + 1;
    while (end < count && step_at(end) == step_at(s)) ++end;
    for (int64_t t = s; t < end; ++t) rolled[static_cast<size_t>(t)] = end - s > 1;
    s = end;
  }
  return rolled;
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

double CollectiveMatmulCost::xla_loop_seconds() const {
  return std::max(compute_seconds, loop_permute_seconds) +
         2 * loop_permute_seconds / static_cast<double>(std::max<int64_t>(steps, 1));
}

double CollectiveMatmulCost::scheduled_seconds() const {
  using PerDirection = std::array<double, 2>;
  auto at = [](const std::vector<PerDirection>& v, size_t s) { return s < v.size() ? v[s] : PerDirection{0, 0}; };
  double chip = 0;             // when the chip's kernels so far end
  double lane = 0;             // when the collective-permute in flight ends
  PerDirection arrived{0, 0};  // when the value a direction's kernels of this step wait for arrives
  PerDirection ready{0, 0};    // reduce-scatter: when the sum a direction's next shift sends is done
  // Shift `shift` of each direction starts once the lane is free and its value is `from`.
  auto run_shifts = [&](const PerDirection& shift, const PerDirection& from) {
    for (size_t d = 0; d < 2; ++d) {
      if (shift[d] <= 0) continue;
      lane = std::max(lane, from[d]) + shift[d];
      arrived[d] = lane;
    }
  };
  for (size_t s = 0; s < before_seconds.size(); ++s) {
    const PerDirection after = at(after_seconds, s), shift = at(shift_seconds, s);
    if (!chained_shifts) {
      run_shifts(shift, ready);  // the sums step s-1 ended with
      // The run adds them after the step's last shift, both ways round.
      arrived.fill(std::max(arrived[0], arrived[1]));
    }
    chip += before_seconds[s];
    for (size_t d = 0; d < 2; ++d) {
      if (after[d] > 0) chip = std::max(chip, arrived[d]) + after[d];
      ready[d] = chip;
    }
    // Gather: step s's shifts forward what arrived for it, to step s+1.
    if (chained_shifts) run_shifts(shift, arrived);
  }
  return chip;
}

double CollectiveMatmulCost::total_kernel_seconds() const {
  double total = 0;
  for (double s : before_seconds) total += s;
  for (const auto& a : after_seconds) total += a[0] + a[1];
  return total;
}

double CollectiveMatmulCost::total_shift_seconds() const {
  double total = 0;
  for (const auto& a : shift_seconds) total += a[0] + a[1];
  return total;
}

std::string CollectiveMatmulCost::ToString() const {
  return absl::StrFormat("max(Tc %.3g s, Tm*m %.3g s) + 2*Tm*m/%d = %.3g s %s Tc + Tm %.3g s (Tm %.3g s, m %.2f)",
                         compute_seconds, loop_permute_seconds, steps, xla_loop_seconds(), xla_pays() ? "<" : ">=",
                         plain_seconds(), one_shot_seconds, multiplier());
}

int64_t ShiftRounds(const GatherLoop& loop) { return loop.bidirectional ? loop.steps / 2 : loop.steps - 1; }

std::vector<bool> RolledSteps(const GatherLoop& loop) {
  return Rolled(ShiftRounds(loop) + 1, [&](int64_t s) { return GatherStepAt(loop, s); });
}

std::vector<bool> RolledSteps(const ScatterLoop& loop) { return Rolled(loop.steps, ScatterStepAt); }

Array AllGatherMatmul(const GatherLoop& loop, absl::Span<const Array> operands, const DotFn& dot,
                      const std::vector<int64_t>& result_shape, DType result_dtype) {
  CheckOperands("collective matmul (all-gather)", operands.size(), loop.dims.size());
  const int64_t n = loop.steps;
  const Array idx = lax::axis_index(loop.axis);
  // Receiving from i+1 (forward), device i holds after s shifts the shard of position
  // (i+s) mod n; receiving from i-1 (backward), that of position (i-s) mod n.
  const auto from_next = RingShift(n, -1), from_prev = RingShift(n, 1);
  const int64_t rounds = ShiftRounds(loop);
  std::vector<size_t> looped;  // the operands that travel
  for (size_t k = 0; k < operands.size(); ++k) {
    if (loop.looped[k]) looped.push_back(k);
  }
  const size_t m = looped.size();
  // The result with the partial product of `held` (the operands at `position`) added.
  auto accumulate = [&](std::optional<Array> result, const Arrays& held, const Array& position) {
    Arrays ins = held;
    for (size_t k = 0; k < ins.size(); ++k) {
      if (!loop.looped[k] && loop.dims[k] >= 0) ins[k] = Block(operands[k], loop.dims[k], position, n);
    }
    const Array partial = dot(ins[0], ins[1]);
    if (loop.result_dim < 0) return result ? *result + partial : partial;
    if (!result) result = lax::pvary(jnp::zeros(result_shape, result_dtype), loop.axis);
    const int64_t size = partial.shape()[static_cast<size_t>(loop.result_dim)];
    std::vector<Array> starts;
    for (int64_t d = 0; d < partial.ndim(); ++d) {
      starts.push_back(d == loop.result_dim ? position * size : jnp::zeros({}, int32));
    }
    return lax::dynamic_update_slice(*result, partial, starts);
  };
  // Step s: the dots of the shards held (forward, and backward from the second on) while the
  // next step's shards move (they are independent, so the shifts overlap the dots). The
  // state: the forward shards, the backward ones, then the result (from step 1 on).
  auto step_at = [&](int64_t s) { return GatherStepAt(loop, s); };
  auto run = [&](const GatherStep& step, const Array& s, const std::vector<Array>& state) {
    Arrays fwd(operands.begin(), operands.end()), bwd = fwd;
    for (size_t i = 0; i < m; ++i) {
      fwd[looped[i]] = state[i];
      if (loop.bidirectional) bwd[looped[i]] = state[m + i];
    }
    std::vector<Array> next;
    for (size_t i = 0; i < m; ++i) {
      next.push_back(step.shift_forward ? lax::ppermute(state[i], loop.axis, from_next) : state[i]);
    }
    if (loop.bidirectional) {
      for (size_t i = 0; i < m; ++i) {
        next.push_back(step.shift_backward ? lax::ppermute(state[m + i], loop.axis, from_prev) : state[m + i]);
      }
    }
    std::optional<Array> result;
    if (!step.first) result = state.back();
    result = accumulate(result, fwd, (idx + s) % n);
    if (step.backward_dot) result = accumulate(result, bwd, (idx - s + n) % n);
    next.push_back(*result);
    return next;
  };
  std::vector<Array> state;
  for (int pass = 0; pass < (loop.bidirectional ? 2 : 1); ++pass) {
    for (size_t k : looped) state.push_back(operands[k]);
  }
  return RunSteps<GatherStep>(rounds + 1, step_at, run, std::move(state)).back();
}

Array ReduceScatterMatmul(const ScatterLoop& loop, absl::Span<const Array> operands, const DotFn& dot) {
  CheckOperands("collective matmul (reduce-scatter)", operands.size(), loop.dims.size());
  const int64_t n = loop.steps;
  const Array idx = lax::axis_index(loop.axis);
  // Going forward (to i+1), the partial sum of block b starts on device b+1, so at step s
  // device i adds its partial product for block (i-1-s) mod n and ends with block i; going
  // backward (to i-1) it starts on b-1: block (i+1+s) mod n. Both ways round, forward carries
  // each block's first half and backward its second.
  const int64_t directions = loop.bidirectional ? 2 : 1;
  auto partial = [&](const Array& s, int64_t direction) {
    const Array block = direction == 0 ? (idx - s + (n - 1)) % n : (idx + s + 1) % n;
    const Array piece = directions == 1 ? block : block * 2 + direction;
    Arrays ins(operands.begin(), operands.end());
    for (size_t k = 0; k < ins.size(); ++k) {
      if (loop.dims[k] >= 0) ins[k] = Block(operands[k], loop.dims[k], piece, n * directions);
    }
    // Fenced: fusion would otherwise take the addition of the shifted sum as the dot's
    // epilogue (one kernel), and the partial dot would wait for the shift it is to hide.
    return OptimizationBarrier({dot(ins[0], ins[1])})[0];
  };
  // Step 0 starts each direction's sum; every later step shifts it (overlapping the step's
  // partial dots, which do not depend on it) and adds its own.
  auto run = [&](const ScatterStep& step, const Array& s, const std::vector<Array>& acc) {
    std::vector<Array> next;
    for (int64_t dir = 0; dir < directions; ++dir) {
      const Array mine = partial(s, dir);
      if (step.first) {
        next.push_back(mine);
      } else {
        next.push_back(lax::ppermute(acc[static_cast<size_t>(dir)], loop.axis, RingShift(n, dir == 0 ? 1 : -1)) + mine);
      }
    }
    return next;
  };
  const std::vector<Array> acc =
      RunSteps<ScatterStep>(n, ScatterStepAt, run, {});
  return directions == 1 ? acc[0] : jnp::concatenate(acc, loop.result_dim);
}

}  // namespace jx::spmd
