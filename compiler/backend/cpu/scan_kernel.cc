// The scan kernel: a reduce-window whose window covers a whole axis with n-1 padding on one
// side (hlo::AsScanWindow) is a running prefix or suffix scan along that axis: each line is
// folded once, O(n), instead of each output reducing its own window (O(n^2)).
//   - add/multiply/maximum/minimum on any type but pred (how cumsum, cumprod, cummax and
//     cummin lower): the kernel library's scan (lax/kernels/cumulative.h), the code eager
//     runs, so jit and eager agree bit for bit. Float sums and products accumulate in f64
//     (f64 sums Neumaier-compensated), rounded once: this deliberately differs from the
//     evaluator's fold in the element type. A widened-window fusion (convert -> f64 scan ->
//     convert, how f16/bf16/f32 cumsum and cumprod lower; widened_window_fusion.h) runs as
//     the library's scan in the narrow type: one pass, eager's bits;
//   - and/or/xor and pred reducers: the evaluator's fold (scalar_semantics.h Step), so its
//     bits;
//   - the log-add-exp reducer cumlogsumexp lowers to (named "logaddexp_reducer" by
//     lax/reduction_lowering.cc and checked op by op): the reducer's own operations in its
//     order, so again the evaluator's bits.
#include <algorithm>
#include <cmath>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/backend/cpu/widened_window_fusion.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/shape.h"
#include "jx/lax/kernels/cumulative.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// Lines per work item when lines are strided (inner > 1): their running values stay in L1
// and a step of the item is one pass over contiguous elements.
constexpr int64_t kLaneBlock = 512;
// Work below this many elements per chunk is not worth a task.
constexpr int64_t kMinChunkElements = 16384;

// A running value: Reset(init), then Add(x) per element returns the output for it.
template <typename E, HloOpcode kOp>
struct FoldRun {
  using C = typename E::Compute;
  C s;
  void Reset(C init) { s = init; }
  C Add(C x) { return s = Step<E, kOp>(s, x); }
};

// logaddexp_reducer(acc, x) = max(acc, x) + log1p(exp(acc == x ? 0 : -|acc - x|)), each op
// as the evaluator computes it (16-bit floats rounded after every op).
template <typename E>
struct LogAddExpRun {
  using C = typename E::Compute;
  C s;
  void Reset(C init) { s = init; }
  C Add(C x) {
    const C m = Combine<E, HloOpcode::kMaximum>(s, x);
    const C d = s == x ? C(0) : -E::Round(std::fabs(E::Round(s - x)));
    return s = E::Round(m + E::Round(std::log1p(E::Round(std::exp(d)))));
  }
};

// Scans `lanes` lines (lanes <= kLaneBlock) of `steps` elements from init: line j's element
// s is x[s * step + j] (step in elements, negative for a suffix scan); out likewise.
using ScanLinesFn = void (*)(const void* x, void* out, int64_t steps, int64_t step,
                             int64_t lanes, const void* init);

template <typename E, typename R>
void ScanLines(const void* x, void* out, int64_t steps, int64_t step, int64_t lanes,
               const void* init) {
  const typename E::Compute init_value = E::Load(init, 0);
  if (lanes == 1) {
    R r;
    r.Reset(init_value);
    for (int64_t s = 0; s < steps; ++s) E::Store(out, s * step, r.Add(E::Load(x, s * step)));
    return;
  }
  R run[kLaneBlock];
  for (int64_t j = 0; j < lanes; ++j) run[j].Reset(init_value);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t base = s * step;
    for (int64_t j = 0; j < lanes; ++j) E::Store(out, base + j, run[j].Add(E::Load(x, base + j)));
  }
}

class ScanKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    if (outer_ * len_ * inner_ == 0) return absl::OkStatus();
    const uint8_t* x = static_cast<const uint8_t*>(operands[0]);
    const void* init = operands[1];
    uint8_t* out = static_cast<uint8_t*>(results[0]);
    // Line (o, i) starts at element (o * len + first) * inner + i and steps by +-inner.
    const int64_t first = reverse_ ? len_ - 1 : 0;
    const int64_t step = reverse_ ? -inner_ : inner_;
    const int64_t blocks = (inner_ + kLaneBlock - 1) / kLaneBlock;
    const int64_t item_elements = len_ * std::min(inner_, kLaneBlock);
    const int64_t grain = std::max<int64_t>(1, kMinChunkElements / item_elements);
    ParallelChunks(outer_ * blocks, grain, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / blocks, i0 = (item % blocks) * kLaneBlock;
        const int64_t lanes = std::min(kLaneBlock, inner_ - i0);
        const int64_t start = ((o * len_ + first) * inner_ + i0) * esize_;
        scan_(x + start, out + start, len_, step, lanes, init);
      }
    });
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "scan"; }

  ScanLinesFn scan_ = nullptr;
  int64_t esize_ = 0, outer_ = 0, len_ = 0, inner_ = 0;
  bool reverse_ = false;
};

// Scans through the kernel library (the init operand is read at run time).
class LibraryScanKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    try {
      lax::kernels::Cumulative(dtype_, op_, operands[0], results[0], outer_, len_, inner_, reverse_,
                               identity_init_ ? nullptr : operands[1]);
    } catch (const std::exception& e) {
      return absl::InternalError(std::string("scan: ") + e.what());
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "scan"; }

  DType dtype_ = DType::kFloat32;
  lax::kernels::CumulativeOp op_ = lax::kernels::CumulativeOp::kSum;
  int64_t outer_ = 0, len_ = 0, inner_ = 0;
  bool reverse_ = false;
  // A widened-window fusion: one operand, the init is the op's identity.
  bool identity_init_ = false;
};

std::optional<lax::kernels::CumulativeOp> LibraryOp(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd: return lax::kernels::CumulativeOp::kSum;
    case HloOpcode::kMultiply: return lax::kernels::CumulativeOp::kProd;
    case HloOpcode::kMaximum: return lax::kernels::CumulativeOp::kMax;
    case HloOpcode::kMinimum: return lax::kernels::CumulativeOp::kMin;
    default: return std::nullopt;
  }
}

bool IsParameterPair(const HloInstruction* a, const HloInstruction* b) {
  return a->opcode() == HloOpcode::kParameter && b->opcode() == HloOpcode::kParameter &&
         a != b;
}

bool IsZeroConstant(const HloInstruction* c) {
  return c->opcode() == HloOpcode::kConstant && c->shape().rank() == 0 &&
         c->literal().GetAsDouble(0) == 0;
}

bool IsLogAddExpReducer(const HloComputation& c) {
  // The name marks intent (passes keep it; the module may suffix it), the ops are checked
  // one by one in every form rewrites may leave them: commutative operands in either order,
  // the select as eq ? 0 : d or ne ? d : 0, the difference either way round (|a-b| == |b-a|).
  if (!std::string_view(c.name()).starts_with("logaddexp_reducer") ||
      c.num_parameters() != 2) {
    return false;
  }
  const HloInstruction* root = c.root_instruction();
  const hlo::PrimitiveType type = root->shape().element_type();
  if (root->opcode() != HloOpcode::kAdd || root->shape().rank() != 0 ||
      !hlo::IsFloatingPointType(type)) {
    return false;
  }
  for (int64_t p = 0; p < 2; ++p) {
    const hlo::Shape& s = c.parameter_instruction(p)->shape();
    if (!s.IsArray() || s.rank() != 0 || s.element_type() != type) return false;
  }
  for (int k = 0; k < 2; ++k) {
    const HloInstruction* m = root->operand(k);
    const HloInstruction* l = root->operand(1 - k);
    if (m->opcode() != HloOpcode::kMaximum || !IsParameterPair(m->operand(0), m->operand(1)) ||
        l->opcode() != HloOpcode::kLog1p || l->operand(0)->opcode() != HloOpcode::kExp) {
      continue;
    }
    const HloInstruction* sel = l->operand(0)->operand(0);
    if (sel->opcode() != HloOpcode::kSelect) return false;
    const HloInstruction* cmp = sel->operand(0);
    if (cmp->opcode() != HloOpcode::kCompare ||
        cmp->comparison_type() == hlo::ComparisonType::kTotalOrder ||
        !IsParameterPair(cmp->operand(0), cmp->operand(1))) {
      return false;
    }
    const HloInstruction *zero, *neg;
    if (cmp->comparison_direction() == hlo::ComparisonDirection::kEq) {
      zero = sel->operand(1), neg = sel->operand(2);
    } else if (cmp->comparison_direction() == hlo::ComparisonDirection::kNe) {
      zero = sel->operand(2), neg = sel->operand(1);
    } else {
      return false;
    }
    if (!IsZeroConstant(zero) || neg->opcode() != HloOpcode::kNegate) return false;
    const HloInstruction* abs = neg->operand(0);
    if (abs->opcode() != HloOpcode::kAbs) return false;
    const HloInstruction* sub = abs->operand(0);
    return sub->opcode() == HloOpcode::kSubtract &&
           IsParameterPair(sub->operand(0), sub->operand(1));
  }
  return false;
}

// The lines a running-scan reduce-window folds: [outer, len, inner] around the scanned axis.
struct ScanLayout {
  int64_t outer = 1, len = 1, inner = 1;
  bool reverse = false;
};

std::optional<ScanLayout> ScanLayoutOf(const HloInstruction& instr) {
  const hlo::Shape& in = instr.operand(0)->shape();
  std::optional<hlo::ScanWindow> scan = hlo::AsScanWindow(instr.window(), in.dimensions());
  // A window of one element everywhere (a cumulative op over an axis of length 1, or a
  // rank-0 operand) folds init with each element: a scan of lines of length 1.
  const bool trivial = std::all_of(instr.window().begin(), instr.window().end(), [](const hlo::WindowDim& d) {
    return d.size == 1 && d.stride == 1 && d.pad_low == 0 && d.pad_high == 0 && d.lhs_dilation == 1 &&
           d.rhs_dilation == 1;
  });
  if (!scan && trivial && static_cast<int64_t>(instr.window().size()) == in.rank()) {
    scan = hlo::ScanWindow{in.rank(), false};  // past the last dim: every element its own line
  }
  if (!scan) return std::nullopt;
  ScanLayout l;
  for (int64_t d = scan->axis + 1; d < in.rank(); ++d) l.inner *= in.dimensions(d);
  for (int64_t d = 0; d < std::min(scan->axis, in.rank()); ++d) l.outer *= in.dimensions(d);
  l.len = scan->axis < in.rank() ? in.dimensions(scan->axis) : 1;
  l.reverse = scan->reverse;
  return l;
}

std::unique_ptr<LibraryScanKernel> MakeLibraryScan(DType dtype, lax::kernels::CumulativeOp op,
                                                   const ScanLayout& l) {
  auto kernel = std::make_unique<LibraryScanKernel>();
  kernel->dtype_ = dtype;
  kernel->op_ = op;
  kernel->outer_ = l.outer;
  kernel->len_ = l.len;
  kernel->inner_ = l.inner;
  kernel->reverse_ = l.reverse;
  return kernel;
}

// A widened-window fusion (widened_window_fusion.h) whose window is a running scan: the
// library's scan in the narrow type (f64 accumulator), as eager cumsum/cumprod run it.
absl::StatusOr<std::unique_ptr<Kernel>> MakeWidenedScanKernel(const HloInstruction& fusion,
                                                              const HloInstruction& window) {
  const std::optional<ScanLayout> layout = ScanLayoutOf(window);
  if (!layout) return absl::UnimplementedError("window is not a running scan");
  const std::optional<DType> dtype = KernelDTypeOf(fusion.shape().element_type());
  const std::optional<HloOpcode> op = SimpleBinaryReducer(*window.to_apply());
  const std::optional<lax::kernels::CumulativeOp> library_op = op ? LibraryOp(*op) : std::nullopt;
  if (!dtype || !library_op || !lax::kernels::CumulativeAccepts(*library_op, *dtype)) {
    return absl::UnimplementedError("widened scan outside the kernel library");
  }
  std::unique_ptr<LibraryScanKernel> kernel = MakeLibraryScan(*dtype, *library_op, *layout);
  kernel->identity_init_ = true;
  return kernel;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeScanKernel(const HloInstruction& instr) {
  if (const HloInstruction* window = WidenedReduceWindow(instr)) {
    return MakeWidenedScanKernel(instr, *window);
  }
  if (instr.opcode() != HloOpcode::kReduceWindow || instr.operand_count() != 2 ||
      !instr.shape().IsArray()) {
    return absl::UnimplementedError("not a single-output reduce-window");
  }
  const hlo::Shape& in = instr.operand(0)->shape();
  const std::optional<ScanLayout> layout = ScanLayoutOf(instr);
  if (!layout) return absl::UnimplementedError("window is not a running scan");
  const hlo::PrimitiveType type = instr.shape().element_type();
  if (in.element_type() != type || instr.operand(1)->shape().element_type() != type ||
      instr.shape().dimensions() != in.dimensions()) {
    return absl::UnimplementedError("mixed types");
  }
  const HloComputation& reducer = *instr.to_apply();
  const bool logaddexp = IsLogAddExpReducer(reducer);
  const std::optional<HloOpcode> op = SimpleBinaryReducer(reducer);
  const std::optional<DType> dtype = KernelDTypeOf(type);
  const std::optional<lax::kernels::CumulativeOp> library_op =
      op && !logaddexp ? LibraryOp(*op) : std::nullopt;
  if (dtype && library_op && lax::kernels::CumulativeAccepts(*library_op, *dtype)) {
    return MakeLibraryScan(*dtype, *library_op, *layout);
  }
  ScanLinesFn fn = nullptr;
  VisitType(type, [&](auto e) {
    using E = decltype(e);
    if (logaddexp) {
      if constexpr (E::kIsFloat) fn = &ScanLines<E, LogAddExpRun<E>>;
      return;
    }
    if (!op) return;
    VisitReducer<E>(*op, [&](auto kop) { fn = &ScanLines<E, FoldRun<E, decltype(kop)::value>>; });
  });
  if (fn == nullptr) return absl::UnimplementedError("reducer without a native scan");
  auto kernel = std::make_unique<ScanKernel>();
  kernel->scan_ = fn;
  kernel->esize_ = hlo::ByteSizeOfPrimitiveType(type);
  kernel->reverse_ = layout->reverse;
  kernel->len_ = layout->len;
  kernel->inner_ = layout->inner;
  kernel->outer_ = layout->outer;
  return kernel;
}

}  // namespace jx::cpu::internal
