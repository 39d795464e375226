// Ops that call a scalar computation per element for the reference evaluator: reduce
// (variadic), reduce-window, select-and-scatter, sort (variadic, stable) and map.
#include <algorithm>

#include "jx/compiler/hlo/hlo_evaluator_internal.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo::eval_internal {
namespace {

// Result of an N-output op: the array for N == 1, else the tuple.
Literal PackResults(const Shape& shape, std::vector<Literal> results) {
  if (!shape.IsTuple()) return LiteralWithBytes(shape, results[0].untyped_data());
  return Literal::CreateTuple(std::move(results));
}

std::vector<Literal> MakeResults(const Shape& shape) {
  std::vector<Literal> results;
  if (shape.IsTuple()) {
    for (const Shape& s : shape.tuple_shapes()) results.emplace_back(s);
  } else {
    results.emplace_back(shape);
  }
  return results;
}

// Positions of a window over `base`: for out index `out`, calls fn(base_linear) for every
// window element that lands on a real (not padding, not dilation hole) base element.
class WindowWalker {
 public:
  WindowWalker(const Shape& base, const Window& window)
      : base_(base), window_(window), strides_(RowMajorStrides(base.dimensions())) {
    for (const WindowDim& w : window) sizes_.push_back(w.size);
  }
  template <typename Fn>
  absl::Status ForEach(absl::Span<const int64_t> out, Fn&& fn) const {
    const int64_t rank = base_.rank();
    for (int64_t s : sizes_) {
      if (s == 0) return absl::OkStatus();
    }
    std::vector<int64_t> k(rank, 0);
    do {
      int64_t linear = 0;
      bool valid = true;
      for (int64_t d = 0; d < rank && valid; ++d) {
        const WindowDim& w = window_[d];
        const int64_t pos = out[d] * w.stride + k[d] * w.rhs_dilation - w.pad_low;
        if (pos < 0 || pos % w.lhs_dilation != 0) {
          valid = false;
          break;
        }
        const int64_t b = pos / w.lhs_dilation;
        if (b >= base_.dimensions(d)) valid = false;
        linear += b * strides_[d];
      }
      if (valid) HLO_RETURN_IF_ERROR(fn(linear));
    } while (NextIndex(sizes_, k));
    return absl::OkStatus();
  }

 private:
  const Shape& base_;
  const Window& window_;
  std::vector<int64_t> strides_, sizes_;
};

absl::Status CheckWindow(const Window& window, int64_t rank) {
  if (static_cast<int64_t>(window.size()) != rank) {
    return Invalid("window has ", window.size(), " dims for rank ", rank);
  }
  for (const WindowDim& w : window) {
    if (w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1 || w.size < 0) {
      return Invalid("window strides and dilations must be >= 1");
    }
  }
  return absl::OkStatus();
}

// Stable bottom-up merge sort that never assumes the comparator is consistent.
absl::Status StableSort(std::vector<int64_t>& v,
                        const std::function<absl::StatusOr<bool>(int64_t, int64_t)>& less) {
  std::vector<int64_t> tmp(v.size());
  const size_t n = v.size();
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      const size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      size_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) {
        // Take from the right run only when it is strictly less (keeps ties in order).
        HLO_ASSIGN_OR_RETURN(bool right_first, less(v[j], v[i]));
        tmp[o++] = right_first ? v[j++] : v[i++];
      }
      while (i < mid) tmp[o++] = v[i++];
      while (j < hi) tmp[o++] = v[j++];
    }
    v.swap(tmp);
  }
  return absl::OkStatus();
}

// A prefix (or suffix) reduce-window folded as one running accumulation per line along the
// axis: O(n) reducer calls instead of O(n^2). The prefix order matches the window walk
// exactly; the suffix order differs only by commutativity, which reduce-window's
// implementation-defined reduction order already assumes of its reducer.
absl::Status RunningScan(const ScanWindow& scan, const Shape& shape, Operands ops, ScalarCaller& f,
                         std::vector<Literal>& acc, std::vector<Literal>& results) {
  const int64_t n = static_cast<int64_t>(acc.size());
  const int64_t len = shape.dimensions(scan.axis);
  const int64_t inner = RowMajorStrides(shape.dimensions())[scan.axis];
  const int64_t outer = ShapeUtil::ElementsIn(shape) / (len * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < n; ++k) CopyElement(*ops[n + k], 0, acc[k], 0);
      for (int64_t step = 0; step < len; ++step) {
        const int64_t pos = scan.reverse ? len - 1 - step : step;
        const int64_t linear = (o * len + pos) * inner + i;
        for (int64_t k = 0; k < n; ++k) {
          f.SetArg(k, acc[k], 0);
          f.SetArg(n + k, *ops[k], linear);
        }
        HLO_RETURN_IF_ERROR(f.Call());
        for (int64_t k = 0; k < n; ++k) {
          CopyElement(f.Result(k), 0, acc[k], 0);
          CopyElement(acc[k], 0, results[k], linear);
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Literal> EvalReduce(const HloInstruction& instr, Operands ops,
                                   HloEvaluator& evaluator) {
  if (ops.empty() || ops.size() % 2 != 0) return Invalid("expects N inputs and N inits");
  const int64_t n = static_cast<int64_t>(ops.size()) / 2;
  const Shape& in_shape = ops[0]->shape();
  const int64_t rank = in_shape.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t d : instr.dimensions()) {
    if (d < 0 || d >= rank) return Invalid("dimensions=", IntListToString(instr.dimensions()));
    reduced[d] = true;
  }
  ScalarCaller f(evaluator, instr.to_apply());
  HLO_RETURN_IF_ERROR(f.status());
  if (f.num_params() != 2 * n) return Invalid("to_apply must take ", 2 * n, " scalars");

  // Offsets (in the input) of every element of one reduction, in row-major order.
  const std::vector<int64_t> strides = RowMajorStrides(in_shape.dimensions());
  std::vector<int64_t> reduced_dims, kept_dims;
  for (int64_t d = 0; d < rank; ++d) {
    (reduced[d] ? reduced_dims : kept_dims).push_back(d);
  }
  std::vector<int64_t> reduced_sizes, offsets;
  for (int64_t d : reduced_dims) reduced_sizes.push_back(in_shape.dimensions(d));
  int64_t reduced_count = 1;
  for (int64_t s : reduced_sizes) reduced_count *= s;
  if (reduced_count > 0) {
    std::vector<int64_t> r(reduced_dims.size(), 0);
    do {
      int64_t off = 0;
      for (size_t j = 0; j < reduced_dims.size(); ++j) off += r[j] * strides[reduced_dims[j]];
      offsets.push_back(off);
    } while (NextIndex(reduced_sizes, r));
  }

  std::vector<Literal> results = MakeResults(instr.shape());
  const Shape& out_shape = results[0].shape();
  if (results[0].element_count() == 0) return PackResults(instr.shape(), std::move(results));
  std::vector<int64_t> out_idx(out_shape.rank(), 0);
  std::vector<Literal> acc;
  for (int64_t k = 0; k < n; ++k) acc.push_back(*ops[n + k]);
  int64_t o = 0;
  do {
    int64_t base = 0;
    for (size_t j = 0; j < kept_dims.size(); ++j) base += out_idx[j] * strides[kept_dims[j]];
    for (int64_t k = 0; k < n; ++k) CopyElement(*ops[n + k], 0, acc[k], 0);
    for (int64_t off : offsets) {
      for (int64_t k = 0; k < n; ++k) {
        f.SetArg(k, acc[k], 0);
        f.SetArg(n + k, *ops[k], base + off);
      }
      HLO_RETURN_IF_ERROR(f.Call());
      for (int64_t k = 0; k < n; ++k) CopyElement(f.Result(k), 0, acc[k], 0);
    }
    for (int64_t k = 0; k < n; ++k) CopyElement(acc[k], 0, results[k], o);
    ++o;
  } while (NextIndex(out_shape.dimensions(), out_idx));
  return PackResults(instr.shape(), std::move(results));
}

absl::StatusOr<Literal> EvalReduceWindow(const HloInstruction& instr, Operands ops,
                                         HloEvaluator& evaluator) {
  if (ops.empty() || ops.size() % 2 != 0) return Invalid("expects N inputs and N inits");
  const int64_t n = static_cast<int64_t>(ops.size()) / 2;
  const Shape& in_shape = ops[0]->shape();
  HLO_RETURN_IF_ERROR(CheckWindow(instr.window(), in_shape.rank()));
  ScalarCaller f(evaluator, instr.to_apply());
  HLO_RETURN_IF_ERROR(f.status());
  if (f.num_params() != 2 * n) return Invalid("to_apply must take ", 2 * n, " scalars");
  std::vector<Literal> results = MakeResults(instr.shape());
  const Shape& out_shape = results[0].shape();
  if (results[0].element_count() == 0) return PackResults(instr.shape(), std::move(results));
  std::vector<Literal> acc;
  for (int64_t k = 0; k < n; ++k) acc.push_back(*ops[n + k]);
  if (const std::optional<ScanWindow> scan = AsScanWindow(instr.window(), in_shape.dimensions())) {
    HLO_RETURN_IF_ERROR(RunningScan(*scan, in_shape, ops, f, acc, results));
    return PackResults(instr.shape(), std::move(results));
  }
  WindowWalker walker(in_shape, instr.window());
  std::vector<int64_t> out_idx(out_shape.rank(), 0);
  int64_t o = 0;
  do {
    for (int64_t k = 0; k < n; ++k) CopyElement(*ops[n + k], 0, acc[k], 0);
    HLO_RETURN_IF_ERROR(walker.ForEach(out_idx, [&](int64_t src) -> absl::Status {
      for (int64_t k = 0; k < n; ++k) {
        f.SetArg(k, acc[k], 0);
        f.SetArg(n + k, *ops[k], src);
      }
      HLO_RETURN_IF_ERROR(f.Call());
      for (int64_t k = 0; k < n; ++k) CopyElement(f.Result(k), 0, acc[k], 0);
      return absl::OkStatus();
    }));
    for (int64_t k = 0; k < n; ++k) CopyElement(acc[k], 0, results[k], o);
    ++o;
  } while (NextIndex(out_shape.dimensions(), out_idx));
  return PackResults(instr.shape(), std::move(results));
}

absl::StatusOr<Literal> EvalSelectAndScatter(const HloInstruction& instr, Operands ops,
                                             HloEvaluator& evaluator) {
  const Literal &operand = *ops[0], &source = *ops[1], &init = *ops[2];
  HLO_RETURN_IF_ERROR(CheckWindow(instr.window(), operand.shape().rank()));
  ScalarCaller select(evaluator, instr.select());
  ScalarCaller scatter(evaluator, instr.scatter());
  HLO_RETURN_IF_ERROR(select.status());
  HLO_RETURN_IF_ERROR(scatter.status());
  if (select.num_params() != 2 || scatter.num_params() != 2) {
    return Invalid("select and scatter must take 2 scalars");
  }
  Literal out(instr.shape());
  for (int64_t i = 0; i < out.element_count(); ++i) CopyElement(init, 0, out, i);
  if (source.element_count() == 0) return out;
  WindowWalker walker(operand.shape(), instr.window());
  std::vector<int64_t> s_idx(source.shape().rank(), 0);
  int64_t s = 0;
  do {
    int64_t selected = -1;
    HLO_RETURN_IF_ERROR(walker.ForEach(s_idx, [&](int64_t candidate) -> absl::Status {
      if (selected < 0) {
        selected = candidate;
        return absl::OkStatus();
      }
      // select(current, candidate) true keeps the current selection.
      select.SetArg(0, operand, selected);
      select.SetArg(1, operand, candidate);
      HLO_ASSIGN_OR_RETURN(bool keep, select.CallPredicate());
      if (!keep) selected = candidate;
      return absl::OkStatus();
    }));
    if (selected >= 0) {
      scatter.SetArg(0, out, selected);
      scatter.SetArg(1, source, s);
      HLO_RETURN_IF_ERROR(scatter.Call());
      CopyElement(scatter.Result(0), 0, out, selected);
    }
    ++s;
  } while (NextIndex(source.shape().dimensions(), s_idx));
  return out;
}

absl::StatusOr<Literal> EvalSort(const HloInstruction& instr, Operands ops,
                                 HloEvaluator& evaluator) {
  const int64_t n = static_cast<int64_t>(ops.size());
  const Shape& shape = ops[0]->shape();
  const int64_t dim = instr.sort_dimension();
  if (dim < 0 || dim >= shape.rank()) return Invalid("bad sort dimension ", dim);
  ScalarCaller less(evaluator, instr.to_apply());
  HLO_RETURN_IF_ERROR(less.status());
  if (less.num_params() != 2 * n) return Invalid("comparator must take ", 2 * n, " scalars");
  std::vector<Literal> results;
  for (const Literal* op : ops) results.push_back(*op);
  const std::vector<int64_t> strides = RowMajorStrides(shape.dimensions());
  const int64_t len = shape.dimensions(dim);
  // Iterate over every slice along `dim`: all indices with idx[dim] == 0.
  std::vector<int64_t> outer_dims = SpanToVector(shape.dimensions());
  outer_dims[dim] = 1;
  if (ShapeUtil::ElementsIn(shape) > 0) {
    std::vector<int64_t> idx(shape.rank(), 0), perm(len);
    do {
      const int64_t base = LinearIndex(idx, strides);
      for (int64_t i = 0; i < len; ++i) perm[i] = i;
      auto cmp = [&](int64_t a, int64_t b) -> absl::StatusOr<bool> {
        for (int64_t k = 0; k < n; ++k) {
          less.SetArg(2 * k, *ops[k], base + a * strides[dim]);
          less.SetArg(2 * k + 1, *ops[k], base + b * strides[dim]);
        }
        return less.CallPredicate();
      };
      HLO_RETURN_IF_ERROR(StableSort(perm, cmp));
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t i = 0; i < len; ++i) {
          CopyElement(*ops[k], base + perm[i] * strides[dim], results[k], base + i * strides[dim]);
        }
      }
    } while (NextIndex(outer_dims, idx));
  }
  if (!instr.shape().IsTuple()) return LiteralWithBytes(instr.shape(), results[0].untyped_data());
  return Literal::CreateTuple(std::move(results));
}

absl::StatusOr<Literal> EvalMap(const HloInstruction& instr, Operands ops,
                                HloEvaluator& evaluator) {
  ScalarCaller f(evaluator, instr.to_apply());
  HLO_RETURN_IF_ERROR(f.status());
  if (f.num_params() != static_cast<int64_t>(ops.size())) {
    return Invalid("to_apply must take ", ops.size(), " scalars");
  }
  Literal out(instr.shape());
  for (int64_t i = 0; i < out.element_count(); ++i) {
    for (size_t k = 0; k < ops.size(); ++k) f.SetArg(static_cast<int64_t>(k), *ops[k], i);
    HLO_RETURN_IF_ERROR(f.Call());
    CopyElement(f.Result(0), 0, out, i);
  }
  return out;
}

}  // namespace jx::hlo::eval_internal
