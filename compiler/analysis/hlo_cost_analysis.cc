#include "jx/compiler/analysis/hlo_cost_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

constexpr double kFmaFlops = 2;

double Bytes(const Shape& shape) {
  return shape.IsArray() || shape.IsTuple() ? static_cast<double>(ShapeUtil::ByteSizeOf(shape))
                                            : 0;
}

// Elements of an array; of the first element for tuple results (variadic reduce, sort).
double Elements(const Shape& shape) {
  if (shape.IsArray()) return static_cast<double>(ShapeUtil::ElementsIn(shape));
  if (shape.IsTuple() && shape.tuple_shapes_size() > 0) return Elements(shape.tuple_shapes(0));
  return 0;
}

double ElementsRecursive(const Shape& shape) {
  if (shape.IsArray()) return static_cast<double>(ShapeUtil::ElementsIn(shape));
  double n = 0;
  for (const Shape& s : shape.tuple_shapes()) n += ElementsRecursive(s);
  return n;
}

int64_t Dim(const Shape& shape, int64_t i) {
  return i >= 0 && i < shape.rank() ? shape.dimensions(i) : 0;
}

int64_t WindowElements(const Window& window) {
  int64_t n = 1;
  for (const WindowDim& d : window) n *= d.size;
  return n;
}

// How many operand slots of `user` hold `value`.
int64_t UseCount(const HloInstruction& user, const HloInstruction* value) {
  return std::count(user.operands().begin(), user.operands().end(), value);
}

// The integer value of a one-element constant, looking through broadcast/reshape/copy/convert.
std::optional<int64_t> ScalarInt(const HloInstruction* x) {
  if (!x->shape().IsArray() || ShapeUtil::ElementsIn(x->shape()) != 1) return std::nullopt;
  while (x->operand_count() == 1 &&
         (x->opcode() == HloOpcode::kBroadcast || x->opcode() == HloOpcode::kReshape ||
          x->opcode() == HloOpcode::kCopy || x->opcode() == HloOpcode::kConvert)) {
    x = x->operand(0);
  }
  if (x->opcode() != HloOpcode::kConstant || !IsIntegralType(x->shape().element_type()) ||
      ShapeUtil::ElementsIn(x->shape()) != 1) {
    return std::nullopt;
  }
  return x->literal().GetAsInt64(0);
}

// Tuple index k when x is get-tuple-element(param, k).
std::optional<int64_t> TupleIndexOf(const HloInstruction* x, const HloInstruction* param) {
  if (x->opcode() != HloOpcode::kGetTupleElement || x->operand(0) != param) return std::nullopt;
  return x->tuple_index();
}

// Iterations of `for (iv = start; iv <dir> bound; iv += step)`, nullopt when unbounded.
std::optional<int64_t> CountIterations(__int128 start, __int128 step, __int128 bound,
                                       ComparisonDirection dir) {
  switch (dir) {
    case ComparisonDirection::kLe: return CountIterations(start, step, bound + 1, ComparisonDirection::kLt);
    case ComparisonDirection::kGe: return CountIterations(start, step, bound - 1, ComparisonDirection::kGt);
    case ComparisonDirection::kLt:
      if (start >= bound) return 0;
      if (step <= 0) return std::nullopt;
      return static_cast<int64_t>((bound - start + step - 1) / step);
    case ComparisonDirection::kGt:
      if (start <= bound) return 0;
      if (step >= 0) return std::nullopt;
      return static_cast<int64_t>((start - bound - step - 1) / -step);
    case ComparisonDirection::kNe:
      if (start == bound) return 0;
      if (step == 0 || (bound - start) % step != 0 || (bound - start) / step < 0) {
        return std::nullopt;
      }
      return static_cast<int64_t>((bound - start) / step);
    case ComparisonDirection::kEq:
      if (start != bound) return 0;
      return step != 0 ? std::optional<int64_t>(1) : std::nullopt;
  }
  return std::nullopt;
}

ComparisonDirection Swapped(ComparisonDirection d) {
  switch (d) {
    case ComparisonDirection::kLt: return ComparisonDirection::kGt;
    case ComparisonDirection::kLe: return ComparisonDirection::kGe;
    case ComparisonDirection::kGt: return ComparisonDirection::kLt;
    case ComparisonDirection::kGe: return ComparisonDirection::kLe;
    default: return d;
  }
}

// The trip count when the loop is `for (iv = init[k]; iv <dir> bound; iv = iv + step)` with
// iv = get-tuple-element(cond_param, k).
std::optional<int64_t> TripCountFor(const HloInstruction& init, const HloInstruction& cond_param,
                                    const HloInstruction& body_root,
                                    const HloInstruction& body_param, const HloInstruction* iv,
                                    const HloInstruction* bound, ComparisonDirection dir) {
  const std::optional<int64_t> k = TupleIndexOf(iv, &cond_param);
  if (!k || *k >= init.operand_count() || *k >= body_root.operand_count() ||
      !iv->shape().IsArray() || !IsIntegralType(iv->shape().element_type())) {
    return std::nullopt;
  }
  // The bound: a constant, or a tuple element the body passes through unchanged.
  std::optional<int64_t> limit = ScalarInt(bound);
  if (!limit) {
    const std::optional<int64_t> j = TupleIndexOf(bound, &cond_param);
    if (!j || *j == *k || *j >= init.operand_count() || *j >= body_root.operand_count() ||
        TupleIndexOf(body_root.operand(*j), &body_param) != j) {
      return std::nullopt;
    }
    limit = ScalarInt(init.operand(*j));
  }
  const std::optional<int64_t> start = ScalarInt(init.operand(*k));
  if (!limit || !start) return std::nullopt;

  // The step: iv + s, s + iv or iv - s.
  const HloInstruction* next = body_root.operand(*k);
  std::optional<int64_t> step;
  if (next->opcode() == HloOpcode::kAdd) {
    if (TupleIndexOf(next->operand(0), &body_param) == k) step = ScalarInt(next->operand(1));
    else if (TupleIndexOf(next->operand(1), &body_param) == k) step = ScalarInt(next->operand(0));
  } else if (next->opcode() == HloOpcode::kSubtract &&
             TupleIndexOf(next->operand(0), &body_param) == k) {
    if (const std::optional<int64_t> s = ScalarInt(next->operand(1))) step = -*s;
  }
  if (!step) return std::nullopt;
  return CountIterations(*start, *step, *limit, dir);
}

// 2 * batch * output features * input features per group * the valid (output, kernel tap)
// pairs per spatial dim: taps that fall on padding or between dilated inputs do no work.
double ConvolutionFlops(const HloInstruction& conv) {
  const Shape& lhs = conv.operand(0)->shape();
  const Shape& rhs = conv.operand(1)->shape();
  const Shape& out = conv.shape();
  const ConvolutionDimensionNumbers& d = conv.convolution_dimension_numbers();
  const Window& window = conv.window();
  double positions = 1;
  const size_t spatial = std::min(window.size(), d.input_spatial_dimensions.size());
  for (size_t s = 0; s < spatial && s < d.kernel_spatial_dimensions.size() &&
                     s < d.output_spatial_dimensions.size();
       ++s) {
    const WindowDim& w = window[s];
    const int64_t kernel = Dim(rhs, d.kernel_spatial_dimensions[s]);
    const int64_t output = Dim(out, d.output_spatial_dimensions[s]);
    const int64_t input = Dim(lhs, d.input_spatial_dimensions[s]);
    int64_t count = 0;
    for (int64_t k = 0; k < kernel; ++k) {
      // Output o reads dilated input position o * stride + offset.
      const int64_t offset = k * w.rhs_dilation - w.pad_low;
      if (w.lhs_dilation == 1 && w.stride > 0) {
        // 0 <= o * stride + offset < input, in closed form.
        const int64_t lo = offset >= 0 ? 0 : (-offset + w.stride - 1) / w.stride;
        const int64_t last = input - 1 - offset;
        const int64_t hi = last < 0 ? -1 : std::min(output - 1, last / w.stride);
        count += std::max<int64_t>(0, hi - lo + 1);
        continue;
      }
      for (int64_t o = 0; o < output; ++o) {
        const int64_t at = o * w.stride + offset;
        if (at < 0 || at % w.lhs_dilation != 0 || at / w.lhs_dilation >= input) continue;
        ++count;
      }
    }
    positions *= static_cast<double>(count);
  }
  const double batch = static_cast<double>(Dim(lhs, d.input_batch_dimension));
  const double in_features = static_cast<double>(Dim(lhs, d.input_feature_dimension));
  const double out_features = static_cast<double>(Dim(out, d.output_feature_dimension));
  return kFmaFlops * (in_features / static_cast<double>(conv.feature_group_count())) *
         out_features * (batch / static_cast<double>(conv.batch_group_count())) * positions;
}

double DotFlops(const HloInstruction& dot) {
  double contracted = 1;
  for (int64_t dim : dot.dot_dimension_numbers().lhs_contracting_dims) {
    contracted *= static_cast<double>(Dim(dot.operand(0)->shape(), dim));
  }
  return kFmaFlops * Elements(dot.shape()) * contracted;
}

// True when x's value leaves the fused computation (it is the root or a root tuple element):
// a dynamic-update-slice there updates the fusion's output buffer in place.
bool IsFusionOutput(const HloInstruction& x) {
  if (x.IsRoot()) return true;
  if (x.user_count() == 0) return false;
  for (const HloInstruction* user : x.users()) {
    if (user->opcode() != HloOpcode::kTuple || !user->IsRoot()) return false;
  }
  return true;
}

// Bytes a fusion reads through one fused parameter: the whole value once, or only the
// sliced parts when every user is a slice, or nothing when it only seeds an in-place update.
double FusedParameterReadBytes(const HloInstruction& param) {
  const double full = Bytes(param.shape());
  if (param.IsRoot()) return full;
  double sliced = 0;
  for (const HloInstruction* user : param.users()) {
    const bool only_operand0 = user->operand(0) == &param && UseCount(*user, &param) == 1;
    switch (user->opcode()) {
      case HloOpcode::kSlice:
        sliced += Bytes(user->shape());
        break;
      case HloOpcode::kDynamicSlice:
        if (!only_operand0) return full;
        sliced += Bytes(user->shape());
        break;
      case HloOpcode::kDynamicUpdateSlice:
        if (!only_operand0 || !IsFusionOutput(*user)) return full;
        break;
      default:
        return full;
    }
  }
  return std::min(full, sliced);
}

// Bytes a fusion writes: an in-place dynamic-update-slice output writes only its update.
double FusionOutputBytes(const HloInstruction& root) {
  auto written = [](const HloInstruction* x) {
    return x->opcode() == HloOpcode::kDynamicUpdateSlice ? Bytes(x->operand(1)->shape())
                                                         : Bytes(x->shape());
  };
  if (root.opcode() != HloOpcode::kTuple) return written(&root);
  double bytes = 0;
  for (const HloInstruction* element : root.operands()) bytes += written(element);
  return bytes;
}

// The role of a computation called by `caller`: fusion bodies run inside the fusion's
// kernel, while/call/conditional bodies are sequences of kernels, and everything else
// (reducers, comparators, map/scatter bodies) is scalar code applied per element.
HloCostAnalysis::Role CalleeRole(const HloInstruction& caller) {
  switch (OpcodeUnit(caller.opcode())) {
    case ExecutionUnit::kFusedBody: return HloCostAnalysis::Role::kFused;
    case ExecutionUnit::kControlFlow: return HloCostAnalysis::Role::kKernel;
    default: return HloCostAnalysis::Role::kPerElement;
  }
}

// Start loading what a walk reads of an instruction: listing callees reads the computations
// it calls; costing it reads those and its first fields (opcode, operands) through its shape.
void PrefetchCallees(const HloInstruction* instr) { __builtin_prefetch(&instr->called_computations()); }
void PrefetchCostInputs(const HloInstruction* instr) {
  const char* begin = reinterpret_cast<const char*>(instr);
  const char* end = reinterpret_cast<const char*>(&instr->shape() + 1);
  for (const char* line = begin; line < end; line += 64) __builtin_prefetch(line);
  PrefetchCallees(instr);
}

}  // namespace

void TargetCost::Add(const TargetCost& other, double times) {
  hbm_bytes += other.hbm_bytes * times;
  onchip_bytes += other.onchip_bytes * times;
  for (int u = 0; u < kNumExecutionUnits; ++u) unit_seconds[u] += other.unit_seconds[u] * times;
  compute_seconds += other.compute_seconds * times;
  memory_seconds += other.memory_seconds * times;
  overhead_seconds += other.overhead_seconds * times;
  seconds += other.seconds * times;
  matrix_flops += other.matrix_flops * times;
  matrix_useful_flops += other.matrix_useful_flops * times;
  emulated = emulated || other.emulated;
}

void TargetCost::Max(const TargetCost& other) {
  hbm_bytes = std::max(hbm_bytes, other.hbm_bytes);
  onchip_bytes = std::max(onchip_bytes, other.onchip_bytes);
  for (int u = 0; u < kNumExecutionUnits; ++u) {
    unit_seconds[u] = std::max(unit_seconds[u], other.unit_seconds[u]);
  }
  compute_seconds = std::max(compute_seconds, other.compute_seconds);
  memory_seconds = std::max(memory_seconds, other.memory_seconds);
  overhead_seconds = std::max(overhead_seconds, other.overhead_seconds);
  seconds = std::max(seconds, other.seconds);
  matrix_flops = std::max(matrix_flops, other.matrix_flops);
  matrix_useful_flops = std::max(matrix_useful_flops, other.matrix_useful_flops);
  emulated = emulated || other.emulated;
}

HloCostAnalysis::HloCostAnalysis() { InstallDefaultHandlers(); }
HloCostAnalysis::~HloCostAnalysis() = default;

void HloCostAnalysis::SetHandler(HloOpcode opcode, Handler handler) {
  handlers_[static_cast<int>(opcode)] = std::move(handler);
}

void HloCostAnalysis::AppendHandler(HloOpcode opcode, Handler hook) {
  Handler& slot = handlers_[static_cast<int>(opcode)];
  slot = [first = std::move(slot), then = std::move(hook)](const HloInstruction& instr,
                                                            HloCost* cost) {
    first(instr, cost);
    then(instr, cost);
  };
}

// Defaults from opcode.def's properties; the ops with rules of their own override them.
void HloCostAnalysis::InstallDefaultHandlers() {
  auto bind = [this](void (HloCostAnalysis::*method)(const HloInstruction&, HloCost*)) {
    return [this, method](const HloInstruction& instr, HloCost* cost) { (this->*method)(instr, cost); };
  };
  for (int i = 0; i < kHloOpcodeCount; ++i) {
    const HloOpcode opcode = static_cast<HloOpcode>(i);
    if (IsNoCodeOpcode(opcode)) {
      handlers_[i] = bind(&HloCostAnalysis::HandleNoCode);
    } else if (IsElementwiseOpcode(opcode)) {
      handlers_[i] = bind(&HloCostAnalysis::HandleElementwise);
    } else {
      // iota, bitcast-convert, broadcast, reshape, transpose, reverse, pad, concatenate,
      // custom-call: data moves without arithmetic.
      handlers_[i] = bind(&HloCostAnalysis::HandleMovesData);
    }
  }
  SetHandler(HloOpcode::kCustomCall, bind(&HloCostAnalysis::HandleCustomCall));
  SetHandler(HloOpcode::kSlice, bind(&HloCostAnalysis::HandleReadsOutputSizedPart));
  SetHandler(HloOpcode::kDynamicSlice, bind(&HloCostAnalysis::HandleReadsOutputSizedPart));
  SetHandler(HloOpcode::kGather, bind(&HloCostAnalysis::HandleReadsOutputSizedPart));
  SetHandler(HloOpcode::kDynamicUpdateSlice, bind(&HloCostAnalysis::HandleDynamicUpdateSlice));
  SetHandler(HloOpcode::kScatter, bind(&HloCostAnalysis::HandleScatter));
  SetHandler(HloOpcode::kDot, bind(&HloCostAnalysis::HandleDot));
  SetHandler(HloOpcode::kConvolution, bind(&HloCostAnalysis::HandleConvolution));
  SetHandler(HloOpcode::kReduce, bind(&HloCostAnalysis::HandleReduce));
  SetHandler(HloOpcode::kReduceWindow, bind(&HloCostAnalysis::HandleReduceWindow));
  SetHandler(HloOpcode::kSelectAndScatter, bind(&HloCostAnalysis::HandleSelectAndScatter));
  SetHandler(HloOpcode::kMap, bind(&HloCostAnalysis::HandleMap));
  SetHandler(HloOpcode::kSort, bind(&HloCostAnalysis::HandleSort));
  SetHandler(HloOpcode::kRngBitGenerator, bind(&HloCostAnalysis::HandleRngBitGenerator));
  SetHandler(HloOpcode::kFusion, bind(&HloCostAnalysis::HandleFusion));
  SetHandler(HloOpcode::kCall, bind(&HloCostAnalysis::HandleCall));
  SetHandler(HloOpcode::kWhile, bind(&HloCostAnalysis::HandleWhile));
  SetHandler(HloOpcode::kConditional, bind(&HloCostAnalysis::HandleConditional));
}

const ComputationCost* HloCostAnalysis::CalleeCost(const HloComputation* c) const {
  auto it = cache_.find(c);
  return it == cache_.end() ? nullptr : &it->second;
}

void HloCostAnalysis::ListCallees(const HloComputation& c,
                                  std::vector<HloComputation*>* callees) {
  ForEachInStorageOrder(c, PrefetchCallees, [&](const HloInstruction* instr) {
    for (HloComputation* callee : instr->called_computations()) {
      if (callee == nullptr) continue;
      roles_.try_emplace(callee, CalleeRole(*instr));
      callees->push_back(callee);
    }
    return true;
  });
}

void HloCostAnalysis::Ensure(absl::Span<HloComputation* const> roots) {
  struct Frame {
    const HloComputation* computation;
    bool expanded;
  };
  std::vector<Frame> stack;
  absl::flat_hash_set<const HloComputation*> in_progress;  // cycle guard
  for (const HloComputation* c : roots) {
    if (c != nullptr && !cache_.contains(c)) stack.push_back({c, false});
  }
  std::vector<HloComputation*> callees;
  while (!stack.empty()) {
    const Frame frame = stack.back();
    if (cache_.contains(frame.computation)) {
      stack.pop_back();
      continue;
    }
    if (!frame.expanded) {
      // A computation whose callees are summed already (a fused computation calls none) is
      // summed in one walk, without listing them first.
      if (std::optional<ComputationCost> total =
              Sum(*frame.computation, nullptr, /*only_if_callees_summed=*/true)) {
        cache_[frame.computation] = *std::move(total);
        stack.pop_back();
        continue;
      }
      stack.back().expanded = true;
      in_progress.insert(frame.computation);
      callees.clear();
      ListCallees(*frame.computation, &callees);
      for (const HloComputation* callee : callees) {
        if (!cache_.contains(callee) && !in_progress.contains(callee)) {
          stack.push_back({callee, false});
        }
      }
      continue;
    }
    stack.pop_back();
    in_progress.erase(frame.computation);
    cache_[frame.computation] = *Sum(*frame.computation, nullptr);
  }
}

namespace {

// Sums of whole numbers up to 2^53 are exact, so their order cannot change them.
constexpr double kExactIntegers = 9007199254740992.0;  // 2^53

bool IsWhole(double x) { return x >= 0 && x <= kExactIntegers && x == std::floor(x); }

bool IsWhole(const TargetCost& t) {
  bool whole = IsWhole(t.hbm_bytes) && IsWhole(t.onchip_bytes) && IsWhole(t.compute_seconds) &&
               IsWhole(t.memory_seconds) && IsWhole(t.overhead_seconds) && IsWhole(t.seconds) &&
               IsWhole(t.matrix_flops) && IsWhole(t.matrix_useful_flops);
  for (double s : t.unit_seconds) whole = whole && IsWhole(s);
  return whole;
}

// Whether every field Sum adds up is a non-negative whole number (a target's seconds are not).
bool IsWhole(const HloCost& cost) {
  bool whole = IsWhole(cost.flops) && IsWhole(cost.transcendentals) &&
               IsWhole(cost.bytes_accessed) && IsWhole(cost.target);
  for (double b : cost.operand_bytes) whole = whole && IsWhole(b);
  return whole;
}

// Whether every total is at most 2^53: then so was each partial sum of non-negative whole
// numbers, and each addition was exact.
bool IsExact(const ComputationCost& total) {
  bool exact = IsWhole(total.flops) && IsWhole(total.transcendentals) &&
               IsWhole(total.bytes_accessed) && IsWhole(total.target);
  for (double b : total.parameter_bytes) exact = exact && IsWhole(b);
  return exact;
}

}  // namespace

bool HloCostAnalysis::CalleesSummed(const HloInstruction& instr) const {
  for (const HloComputation* callee : instr.called_computations()) {
    if (callee != nullptr && !cache_.contains(callee)) return false;
  }
  return true;
}

std::optional<ComputationCost> HloCostAnalysis::Sum(const HloComputation& c, std::vector<InstructionRow>* rows,
                                                    bool only_if_callees_summed) {
  auto role = roles_.find(&c);
  role_ = role == roles_.end() ? Role::kKernel : role->second;
  // Reads of a parameter are its readers' operand bytes, following get-tuple-element (which
  // reads nothing): each such element's parameter number. No cost outlives its instruction
  // here, so a fused computation of 100k instructions keeps no table of their costs.
  absl::flat_hash_map<const HloInstruction*, int64_t> element_of;
  for (int64_t p = 0; p < c.num_parameters(); ++p) {
    std::vector<const HloInstruction*> values = {c.parameter_instruction(p)};
    while (!values.empty() && values.back() != nullptr) {
      const HloInstruction* value = values.back();
      values.pop_back();
      for (const HloInstruction* user : value->users()) {
        if (user->opcode() != HloOpcode::kGetTupleElement) continue;
        element_of.emplace(user, p);
        values.push_back(user);
      }
    }
  }
  auto parameter_of = [&](const HloInstruction* value) -> int64_t {
    if (value->opcode() == HloOpcode::kParameter) return value->parameter_number();
    if (value->opcode() != HloOpcode::kGetTupleElement) return -1;
    auto it = element_of.find(value);
    return it == element_of.end() ? -1 : it->second;
  };
  ComputationCost total;
  bool whole = true;  // every cost added is a non-negative whole number
  auto add = [&](const HloInstruction* instr) {
    HloCost cost = CostWithCallees(*instr);
    whole = whole && IsWhole(cost);
    total.flops += cost.flops;
    total.transcendentals += cost.transcendentals;
    total.bytes_accessed += cost.bytes_accessed;
    total.target.Add(cost.target, 1);
    if (instr == c.root_instruction()) total.root_output_bytes = cost.output_bytes;
    if (instr->opcode() == HloOpcode::kConstant && instr->shape().IsArray() &&
        ShapeUtil::ElementsIn(instr->shape()) > 1) {
      total.constant_array_bytes += Bytes(instr->shape());
    }
    if (instr->opcode() != HloOpcode::kGetTupleElement) {
      const int64_t n = std::min<int64_t>(instr->operand_count(),
                                          static_cast<int64_t>(cost.operand_bytes.size()));
      for (int64_t i = 0; i < n; ++i) {
        if (const int64_t p = parameter_of(instr->operand(i)); p >= 0 && p < c.num_parameters()) {
          total.parameter_bytes[p] += cost.operand_bytes[i];
        }
      }
    }
    return cost;
  };
  auto start = [&] {
    total = ComputationCost();
    total.parameter_bytes.assign(static_cast<size_t>(c.num_parameters()), 0.0);
    whole = true;
  };
  // Without rows, in storage order: it reads the instructions in sequence, where a post order
  // of a 100k-instruction fused computation is a walk of dependent cache misses. Whole-number
  // sums (every cost of the target-independent analysis) come out as a post-order sum would;
  // at the first fractional cost (a target's seconds) the sum starts again in post order, so
  // it rounds as it always did.
  bool unsummed_callee = false;
  if (rows == nullptr) {
    start();
    ForEachInStorageOrder(c, PrefetchCostInputs, [&](const HloInstruction* instr) {
      unsummed_callee = only_if_callees_summed && !CalleesSummed(*instr);
      if (!unsummed_callee) add(instr);
      return whole && !unsummed_callee;
    });
    if (unsummed_callee) {
      role_ = Role::kKernel;
      return std::nullopt;
    }
    if (whole && IsExact(total)) {
      role_ = Role::kKernel;
      return total;
    }
  }
  start();
  const std::vector<HloInstruction*> order = c.MakeInstructionPostOrder();
  if (rows != nullptr) rows->reserve(order.size());
  for (const HloInstruction* instr : order) {
    if (only_if_callees_summed && !CalleesSummed(*instr)) {
      role_ = Role::kKernel;
      return std::nullopt;
    }
    HloCost cost = add(instr);
    if (rows != nullptr) rows->emplace_back(instr, std::move(cost));
  }
  role_ = Role::kKernel;
  return total;
}

// Operand counts up to which duplicates are found by comparing pairs rather than hashing.
constexpr int64_t kLinearDuplicateScan = 16;

void HloCostAnalysis::FinishBoundaryBytes(const HloInstruction& instr, HloCost* cost,
                                          double extra) {
  // An operand read twice is counted once, at its larger read, in its first slot.
  auto merge_into_first = [&](int64_t first, int64_t i) {
    double& kept = cost->operand_bytes[first];
    kept = std::max(kept, cost->operand_bytes[i]);
    cost->operand_bytes[i] = 0;
  };
  const int64_t n = instr.operand_count();
  if (n > kLinearDuplicateScan) {
    absl::flat_hash_map<const HloInstruction*, int64_t> first;
    for (int64_t i = 0; i < n; ++i) {
      auto [it, inserted] = first.emplace(instr.operand(i), i);
      if (!inserted) merge_into_first(it->second, i);
    }
  } else {
    // Few operands (every elementwise op): compare with the earlier ones, no allocation.
    for (int64_t i = 1; i < n; ++i) {
      for (int64_t j = 0; j < i; ++j) {
        if (instr.operand(j) == instr.operand(i)) {
          merge_into_first(j, i);
          break;
        }
      }
    }
  }
  cost->bytes_accessed = cost->output_bytes + extra;
  for (double b : cost->operand_bytes) cost->bytes_accessed += b;
}

void HloCostAnalysis::AddCallee(const ComputationCost* callee, double times, HloCost* cost) {
  if (callee == nullptr) return;
  cost->flops += callee->flops * times;
  cost->transcendentals += callee->transcendentals * times;
  cost->target.Add(callee->target, times);
}

HloCost HloCostAnalysis::CostWithCallees(const HloInstruction& instr) {
  HloCost cost;
  const int64_t n = instr.operand_count();
  cost.operand_bytes.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) cost.operand_bytes[i] = Bytes(instr.operand(i)->shape());
  cost.output_bytes = Bytes(instr.shape());
  handlers_[static_cast<int>(instr.opcode())](instr, &cost);
  return cost;
}

HloCost HloCostAnalysis::Cost(const HloInstruction& instr) {
  Ensure(instr.called_computations());
  return CostWithCallees(instr);
}

bool HloCostAnalysis::IsExpensiveToDuplicate(const HloInstruction& instr) {
  if (IsExpensiveOpcode(instr.opcode())) return true;
  const HloCost cost = Cost(instr);
  return cost.transcendentals > 0 || cost.flops > Elements(instr.shape());
}

absl::StatusOr<ModuleCost> HloCostAnalysis::Analyze(const HloModule& module) {
  const HloComputation* entry = module.entry_computation();
  if (entry == nullptr || entry->root_instruction() == nullptr) {
    return absl::InvalidArgumentError(
        StrCat("cost analysis: module ", module.name(), " has no entry computation"));
  }
  // The callees' totals first; the entry is summed here, the one computation whose
  // per-instruction costs are kept (ModuleCost lists them).
  std::vector<HloComputation*> callees;
  ListCallees(*entry, &callees);
  Ensure(callees);
  std::vector<InstructionRow> rows;
  const ComputationCost total = *Sum(*entry, &rows);
  ModuleCost cost;
  cost.flops = total.flops;
  cost.transcendentals = total.transcendentals;
  cost.bytes_accessed = total.bytes_accessed;
  cost.target = total.target;
  cost.bytes_accessed_per_parameter = total.parameter_bytes;
  cost.bytes_accessed_output = Bytes(entry->root_instruction()->shape());
  cost.per_instruction.reserve(rows.size());
  for (auto& [instr, c] : rows) cost.per_instruction.emplace_back(instr->name(), std::move(c));
  return cost;
}

// No code runs: values are forwarded by reference.
void HloCostAnalysis::HandleNoCode(const HloInstruction& instr, HloCost* cost) {
  std::fill(cost->operand_bytes.begin(), cost->operand_bytes.end(), 0.0);
  cost->output_bytes = 0;
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleElementwise(const HloInstruction& instr, HloCost* cost) {
  if (!IsNoArithmeticOpcode(instr.opcode())) {
    const double elements = Elements(instr.shape());
    if (IsTranscendentalOpcode(instr.opcode())) {
      cost->transcendentals = elements;
    } else {
      cost->flops = elements;
    }
  }
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleMovesData(const HloInstruction& instr, HloCost* cost) {
  FinishBoundaryBytes(instr, cost);
}

namespace {

struct CustomCallCosts {
  std::mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<const HloCostAnalysis::CustomCallCost>> rules;
};

CustomCallCosts& GlobalCustomCallCosts() {
  static auto* costs = new CustomCallCosts;
  return *costs;
}

}  // namespace

void HloCostAnalysis::RegisterCustomCallCost(std::string target, CustomCallCost rule) {
  CustomCallCosts& costs = GlobalCustomCallCosts();
  std::lock_guard<std::mutex> lock(costs.mu);
  costs.rules[std::move(target)] = std::make_shared<const CustomCallCost>(std::move(rule));
}

void HloCostAnalysis::HandleCustomCall(const HloInstruction& instr, HloCost* cost) {
  std::shared_ptr<const CustomCallCost> rule;
  {
    CustomCallCosts& costs = GlobalCustomCallCosts();
    std::lock_guard<std::mutex> lock(costs.mu);
    if (auto it = costs.rules.find(instr.custom_call_target()); it != costs.rules.end()) rule = it->second;
  }
  if (rule) (*rule)(instr, cost);
  FinishBoundaryBytes(instr, cost);
}

// slice, dynamic-slice, gather: only the output-sized part of operand 0 is read.
void HloCostAnalysis::HandleReadsOutputSizedPart(const HloInstruction& instr, HloCost* cost) {
  if (!cost->operand_bytes.empty()) cost->operand_bytes[0] = cost->output_bytes;
  FinishBoundaryBytes(instr, cost);
}

// Updates operand 0's buffer in place: only the update is read and written.
void HloCostAnalysis::HandleDynamicUpdateSlice(const HloInstruction& instr, HloCost* cost) {
  const int64_t n = instr.operand_count();
  if (n > 0) cost->operand_bytes[0] = 0;
  cost->output_bytes = n > 1 ? cost->operand_bytes[1] : 0;
  FinishBoundaryBytes(instr, cost);
}

// (operands..., indices, updates...), in place: touches update-sized parts only.
void HloCostAnalysis::HandleScatter(const HloInstruction& instr, HloCost* cost) {
  const int64_t n = instr.operand_count();
  const int64_t k = (n - 1) / 2;
  double updates = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double u = Bytes(instr.operand(k + 1 + i)->shape());
    cost->operand_bytes[i] = u;
    updates += u;
  }
  cost->output_bytes = updates;
  if (k > 0 && instr.to_apply() != nullptr) {
    AddCallee(CalleeCost(instr.to_apply()), Elements(instr.operand(k + 1)->shape()), cost);
  }
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleDot(const HloInstruction& instr, HloCost* cost) {
  cost->flops = DotFlops(instr);
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleConvolution(const HloInstruction& instr, HloCost* cost) {
  cost->flops = ConvolutionFlops(instr);
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleReduce(const HloInstruction& instr, HloCost* cost) {
  if (instr.operand_count() > 0) {
    AddCallee(CalleeCost(instr.to_apply()),
              Elements(instr.operand(0)->shape()) - Elements(instr.shape()), cost);
  }
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleReduceWindow(const HloInstruction& instr, HloCost* cost) {
  // A running scan (how cumulative ops lower) runs as one fold per element, O(n), not
  // one window of n per output.
  const bool scan = instr.operand_count() > 0 && instr.operand(0)->shape().IsArray() &&
                    hlo::AsScanWindow(instr.window(), instr.operand(0)->shape().dimensions()).has_value();
  const double applications =
      scan ? Elements(instr.shape())
           : static_cast<double>(WindowElements(instr.window()) - 1) * Elements(instr.shape());
  AddCallee(CalleeCost(instr.to_apply()), applications, cost);
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleSelectAndScatter(const HloInstruction& instr, HloCost* cost) {
  if (instr.operand_count() > 1) {
    const double source = Elements(instr.operand(1)->shape());
    AddCallee(CalleeCost(instr.select()),
              source * static_cast<double>(WindowElements(instr.window()) - 1), cost);
    AddCallee(CalleeCost(instr.scatter()), source, cost);
  }
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleMap(const HloInstruction& instr, HloCost* cost) {
  AddCallee(CalleeCost(instr.to_apply()), Elements(instr.shape()), cost);
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleSort(const HloInstruction& instr, HloCost* cost) {
  if (instr.operand_count() > 0) {
    // A comparison sort: n * ceil(log2 n) comparisons.
    const double elements = Elements(instr.operand(0)->shape());
    int64_t log2 = 0;
    while ((int64_t{1} << log2) < static_cast<int64_t>(elements)) ++log2;
    cost->flops = elements * static_cast<double>(log2);
  }
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleRngBitGenerator(const HloInstruction& instr, HloCost* cost) {
  cost->transcendentals = ElementsRecursive(instr.shape());
  FinishBoundaryBytes(instr, cost);
}

void HloCostAnalysis::HandleFusion(const HloInstruction& instr, HloCost* cost) {
  const HloComputation* fused = instr.fused_instructions_computation();
  if (fused == nullptr || fused->root_instruction() == nullptr) {
    FinishBoundaryBytes(instr, cost);
    return;
  }
  const ComputationCost* callee = CalleeCost(fused);
  AddCallee(callee, 1, cost);
  // Only the boundary touches memory, plus constant arrays the kernel reads.
  const double constants = callee != nullptr ? callee->constant_array_bytes : 0;
  std::fill(cost->operand_bytes.begin(), cost->operand_bytes.end(), 0.0);
  for (const HloInstruction* param : fused->parameter_instructions()) {
    if (param != nullptr && param->parameter_number() < instr.operand_count()) {
      cost->operand_bytes[param->parameter_number()] = FusedParameterReadBytes(*param);
    }
  }
  cost->output_bytes = FusionOutputBytes(*fused->root_instruction());
  FinishBoundaryBytes(instr, cost, constants);
}

// Callee totals; operand bytes are what each callee reads from its parameter.
namespace {
double ParamBytes(const ComputationCost* c, size_t i) {
  return c != nullptr && i < c->parameter_bytes.size() ? c->parameter_bytes[i] : 0.0;
}
void ClearBoundary(HloCost* cost) {
  std::fill(cost->operand_bytes.begin(), cost->operand_bytes.end(), 0.0);
  cost->output_bytes = 0;
}
}  // namespace

void HloCostAnalysis::HandleCall(const HloInstruction& instr, HloCost* cost) {
  ClearBoundary(cost);
  const ComputationCost* callee = CalleeCost(instr.to_apply());
  if (callee == nullptr) return;
  AddCallee(callee, 1, cost);
  cost->bytes_accessed = callee->bytes_accessed;
  for (int64_t i = 0; i < instr.operand_count(); ++i) cost->operand_bytes[i] = ParamBytes(callee, i);
  cost->output_bytes = callee->root_output_bytes;
}

void HloCostAnalysis::HandleWhile(const HloInstruction& instr, HloCost* cost) {
  ClearBoundary(cost);
  const ComputationCost* body = CalleeCost(instr.while_body());
  const ComputationCost* cond = CalleeCost(instr.while_condition());
  const std::optional<int64_t> trips = ConstantWhileTripCount(instr);
  const double body_runs = trips ? static_cast<double>(*trips) : 1;
  const double cond_runs = trips ? static_cast<double>(*trips) + 1 : 1;
  AddCallee(body, body_runs, cost);
  AddCallee(cond, cond_runs, cost);
  cost->bytes_accessed = (body ? body->bytes_accessed * body_runs : 0) +
                         (cond ? cond->bytes_accessed * cond_runs : 0);
  if (instr.operand_count() > 0) {
    cost->operand_bytes[0] = ParamBytes(body, 0) * body_runs + ParamBytes(cond, 0) * cond_runs;
  }
  cost->output_bytes = body ? body->root_output_bytes * body_runs : 0;
}

// Either branch may run: the maximum of each property, plus reading the index.
void HloCostAnalysis::HandleConditional(const HloInstruction& instr, HloCost* cost) {
  ClearBoundary(cost);
  const int64_t n = instr.operand_count();
  const ComputationVector& branches = instr.branch_computations();
  double bytes = 0;
  for (size_t b = 0; b < branches.size(); ++b) {
    const ComputationCost* branch = CalleeCost(branches[b]);
    if (branch == nullptr) continue;
    cost->flops = std::max(cost->flops, branch->flops);
    cost->transcendentals = std::max(cost->transcendentals, branch->transcendentals);
    cost->target.Max(branch->target);
    bytes = std::max(bytes, branch->bytes_accessed);
    cost->output_bytes = std::max(cost->output_bytes, branch->root_output_bytes);
    if (static_cast<int64_t>(b) + 1 < n) cost->operand_bytes[b + 1] = ParamBytes(branch, 0);
  }
  if (n > 0) cost->operand_bytes[0] = Bytes(instr.operand(0)->shape());
  cost->bytes_accessed = bytes + (n > 0 ? cost->operand_bytes[0] : 0);
}

namespace {
}  // namespace

std::optional<int64_t> ConstantWhileTripCount(const HloInstruction& loop) {
  const HloComputation* cond = loop.while_condition();
  const HloComputation* body = loop.while_body();
  if (loop.opcode() != HloOpcode::kWhile || cond == nullptr || body == nullptr ||
      loop.operand_count() != 1 || cond->num_parameters() != 1 || body->num_parameters() != 1) {
    return std::nullopt;
  }
  const HloInstruction* init = loop.operand(0);
  const HloInstruction* cond_param = cond->parameter_instruction(0);
  const HloInstruction* body_param = body->parameter_instruction(0);
  const HloInstruction* compare = cond->root_instruction();
  const HloInstruction* body_root = body->root_instruction();
  if (init->opcode() != HloOpcode::kTuple || compare == nullptr || body_root == nullptr ||
      compare->opcode() != HloOpcode::kCompare || body_root->opcode() != HloOpcode::kTuple) {
    return std::nullopt;
  }

  // Either compare operand may be the induction variable.
  const ComparisonDirection dir = compare->comparison_direction();
  if (std::optional<int64_t> trips =
          TripCountFor(*init, *cond_param, *body_root, *body_param, compare->operand(0),
                       compare->operand(1), dir)) {
    return trips;
  }
  return TripCountFor(*init, *cond_param, *body_root, *body_param, compare->operand(1),
                      compare->operand(0), Swapped(dir));
}

HloCost CostOf(const HloInstruction& instruction) { return HloCostAnalysis().Cost(instruction); }

absl::StatusOr<ModuleCost> AnalyzeCost(const HloModule& module) {
  return HloCostAnalysis().Analyze(module);
}

std::vector<std::pair<std::string, double>> ModuleCost::ToProperties() const {
  std::vector<std::pair<std::string, double>> props = {
      {"flops", flops}, {"transcendentals", transcendentals}, {"bytes accessed", bytes_accessed}};
  for (size_t i = 0; i < bytes_accessed_per_parameter.size(); ++i) {
    props.emplace_back(StrCat("bytes accessed", i, "{}"), bytes_accessed_per_parameter[i]);
  }
  props.emplace_back("bytes accessedout{}", bytes_accessed_output);
  return props;
}

}  // namespace jx::hlo
