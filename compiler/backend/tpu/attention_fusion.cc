#include "jx/compiler/backend/tpu/attention_fusion.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "jx/compiler/backend/tpu/attention_rows.h"
#include "jx/compiler/backend/tpu/mxu_feed.h"
#include "jx/compiler/backend/tpu/tpu_layout.h"
#include "jx/compiler/backend/tpu/vmem_tiling.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/compiler/passes/hlo_scheduling.h"

namespace jx::tpu {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;
using Grid = std::vector<int64_t>;

// The batch extents of a kernel's dot (they lead the dot's result), or nullopt for a kernel
// without a dot or whose dot has no batch dims.
std::optional<Grid> DotGrid(const HloInstruction& kernel) {
  const HloInstruction* dot = KernelDot(kernel);
  if (dot == nullptr || !dot->shape().IsArray()) return std::nullopt;
  const size_t batch = dot->dot_dimension_numbers().lhs_batch_dims.size();
  if (batch == 0) return std::nullopt;
  absl::Span<const int64_t> dims = dot->shape().dimensions();
  return Grid(dims.begin(), dims.begin() + static_cast<int64_t>(batch));
}

// Kernels that may run inside an attention kernel: dots, the VPU's elementwise and reduce
// work, data movement within a grid point, and the fusions of those.
bool IsCandidate(const HloInstruction& x) {
  if (!x.shape().IsArray()) return false;
  switch (x.opcode()) {
    case HloOpcode::kFusion:
      return x.fusion_kind() != hlo::FusionKind::kCustom;
    case HloOpcode::kDot:
    case HloOpcode::kReduce:
    case HloOpcode::kBroadcast:
    case HloOpcode::kTranspose:
    case HloOpcode::kConvert:
    case HloOpcode::kCopy:
      return true;
    default:
      return x.IsElementwise();
  }
}

// Whether x computes per point of `grid`: its dot's batch extents are the grid, or (no dot)
// its result's leading dims are.
bool OnGrid(const HloInstruction& x, const Grid& grid) {
  if (!IsCandidate(x)) return false;
  if (KernelDot(x) != nullptr) return DotGrid(x) == grid;
  const Shape& s = x.shape();
  return s.rank() > static_cast<int64_t>(grid.size()) &&
         std::equal(grid.begin(), grid.end(), s.dimensions().begin());
}

// Whether x (or a computation it fuses, nested fusions included) has an `op`.
bool Computes(const HloInstruction& x, HloOpcode op) {
  std::vector<const HloInstruction*> stack = {&x};
  while (!stack.empty()) {
    const HloInstruction* instr = stack.back();
    stack.pop_back();
    if (instr->opcode() == op) return true;
    if (instr->opcode() != HloOpcode::kFusion || instr->fused_instructions_computation() == nullptr) continue;
    for (const HloInstruction* fused : instr->fused_instructions_computation()->instructions()) stack.push_back(fused);
  }
  return false;
}

int64_t Points(const Grid& grid) {
  int64_t n = 1;
  for (int64_t d : grid) n *= d;
  return n;
}

// One grid point's share of an array: 1/points of it when it holds a whole number of grid
// points' elements (it is split along the grid), all of it otherwise (read by every point).
int64_t PerPoint(const Shape& shape, int64_t points) {
  if (!shape.IsArray()) return 0;
  const int64_t bytes = PaddedBytes(shape);
  return hlo::ShapeUtil::ElementsIn(shape) % points == 0 ? bytes / points : bytes;
}

// One grid step's share of x's value: its share of a grid point, and of one row block when the
// step runs `blocks` row blocks and x has query rows.
int64_t StepShare(const HloInstruction& x, int64_t points, const QueryRows& rows, int64_t blocks) {
  const Shape& s = x.shape();
  const int64_t dim = blocks > 1 ? rows.RowDim(x) : -1;
  if (dim < 0) return PerPoint(s, points);
  std::vector<int64_t> dims = hlo::SpanToVector(s.dimensions());
  dims[dim] = rows.extent / blocks;
  return PerPoint(Shape(s.element_type(), std::move(dims), s.layout()), points);
}

// VMEM one grid step needs while the kernel runs its members (`order`: operands first) over one
// grid point, or over one of its `blocks` row blocks: the most bytes of its values live at once
// (hlo::FindMemoryPeak over each one's StepShare; `is_output` values stay to the end) in
// `order` or in the list scheduler's order of them, whichever holds less (as HloScheduling picks
// a computation's order: the program's order can compute later tiles' scores before earlier
// tiles are done), plus its output blocks written back from a second buffer and its operand
// blocks double-buffered: for the whole step, or, when the rows are split, those without rows
// (K and V blocks, fetched again for every row block) only from their first reader to their
// last. The sums over rows (the backward's dk and dv) are held through every row block. The
// pass only asks whether a region fits in `enough` bytes, and most fit as they are or by far
// not: when the held blocks and the largest value alone exceed it, that sum is returned (a
// lower bound), and the list order is only tried when the program's order needs more.
int64_t StepBytes(int64_t points, const QueryRows& rows, int64_t blocks, absl::Span<HloInstruction* const> order,
                  absl::FunctionRef<bool(const HloInstruction&)> is_output,
                  absl::Span<const HloInstruction* const> operands, absl::Span<const HloInstruction* const> outputs,
                  int64_t enough = 0) {
  const bool split = blocks > 1;
  auto step = [&](const HloInstruction& x) { return StepShare(x, points, rows, blocks); };
  auto held = [&](const HloInstruction& x) { return split && rows.summed.contains(&x); };
  auto around_readers = [&](const HloInstruction& x) { return split && rows.RowDim(x) < 0; };
  auto share = [&](const HloInstruction& x, const Shape&) { return held(x) ? 0 : step(x); };
  const absl::flat_hash_set<const HloInstruction*> fetched(operands.begin(), operands.end());
  auto operand_share = [&](const HloInstruction& o) {
    return fetched.contains(&o) && around_readers(o) ? 2 * step(o) : 0;
  };
  int64_t bytes = 0;
  int64_t largest = 0;  // held in any order
  for (const HloInstruction* o : operands) {
    bytes += around_readers(*o) ? 0 : 2 * step(*o);
    largest = std::max(largest, operand_share(*o));
  }
  for (const HloInstruction* o : outputs) bytes += step(*o);
  for (const HloInstruction* x : order) {
    bytes += held(*x) ? step(*x) : 0;
    largest = std::max(largest, share(*x, x->shape()));
  }
  if (enough > 0 && bytes + largest > enough) return bytes + largest;
  const int64_t in_order = hlo::FindMemoryPeak(order, is_output, share, operand_share).bytes;
  if (bytes + in_order <= enough) return bytes + in_order;
  const std::vector<HloInstruction*> list = hlo::ListScheduleOrder(order, is_output, share, operand_share);
  return bytes + std::min(in_order, hlo::FindMemoryPeak(list, is_output, share, operand_share).bytes);
}

// The fewest row blocks a grid point's query rows run in so a step fits `vmem_bytes` (the
// largest block_q: a multiple of the MXU's width that divides the rows, as Pallas's flash
// attention takes its blocks), given a step's bytes by `step_bytes(blocks, enough)`; nullopt
// when not even the smallest fits. 1 when the whole query block fits.
std::optional<int64_t> FittingRowBlocks(const QueryRows& rows, int64_t mxu_dim, int64_t vmem_bytes,
                                        absl::FunctionRef<int64_t(int64_t, int64_t)> step_bytes) {
  if (step_bytes(1, vmem_bytes) <= vmem_bytes) return 1;
  for (int64_t blocks = 2; rows.extent > 0 && rows.extent / blocks >= mxu_dim; ++blocks) {
    if (rows.extent % blocks != 0 || (rows.extent / blocks) % mxu_dim != 0) continue;
    if (step_bytes(blocks, vmem_bytes) <= vmem_bytes) return blocks;
  }
  return std::nullopt;
}

struct Region {
  Grid grid;
  std::vector<HloInstruction*> members;  // operands first
  absl::flat_hash_set<const HloInstruction*> in;
};

// The work on a blocked attention's results that instruction fusion put into a loop fusion
// after it, in the fusion's post order: elementwise instructions on the grid whose operands are
// `source` values or such instructions (the gradient accumulators' last adds and converts,
// grouped with the transposes and concatenation of the blocks that follow them). A kernel
// finishes them itself.
struct Tail {
  HloInstruction* consumer = nullptr;  // the loop fusion
  std::vector<HloInstruction*> work;   // instructions of its fused computation
  absl::flat_hash_set<const HloInstruction*> in;
};

Tail TailOf(HloInstruction* consumer, const Grid& grid, absl::FunctionRef<bool(const HloInstruction*)> source) {
  Tail t;
  t.consumer = consumer;
  if (consumer->opcode() != HloOpcode::kFusion || consumer->fusion_kind() != hlo::FusionKind::kLoop) return t;
  HloComputation* body = consumer->fused_instructions_computation();
  for (HloInstruction* x : body->MakeInstructionPostOrder()) {
    if (x == body->root_instruction() || !x->IsElementwise() || !OnGrid(*x, grid)) continue;
    const bool from_source = std::all_of(x->operands().begin(), x->operands().end(), [&](const HloInstruction* o) {
      return t.in.contains(o) ||
             (o->opcode() == HloOpcode::kParameter && source(consumer->operand(o->parameter_number())));
    });
    if (!from_source) continue;
    t.work.push_back(x);
    t.in.insert(x);
  }
  return t;
}

// The values outside its fusion that a tail joins with `value`: those read by the tail's
// instructions connected (through operands and users within the tail) to a read of `value`.
std::vector<HloInstruction*> TailSources(const Tail& t, const HloInstruction* value) {
  auto source_of = [&t](const HloInstruction* o) -> HloInstruction* {
    return o->opcode() == HloOpcode::kParameter && !t.in.contains(o) ? t.consumer->mutable_operand(o->parameter_number())
                                                                     : nullptr;
  };
  std::vector<const HloInstruction*> stack;
  absl::flat_hash_set<const HloInstruction*> connected;
  for (const HloInstruction* x : t.work) {
    const bool reads = std::any_of(x->operands().begin(), x->operands().end(),
                                   [&](const HloInstruction* o) { return source_of(o) == value; });
    if (reads && connected.insert(x).second) stack.push_back(x);
  }
  std::vector<HloInstruction*> sources;
  while (!stack.empty()) {
    const HloInstruction* x = stack.back();
    stack.pop_back();
    for (const HloInstruction* o : x->operands()) {
      if (HloInstruction* source = source_of(o)) sources.push_back(source);
      if (t.in.contains(o) && connected.insert(o).second) stack.push_back(o);
    }
    for (const HloInstruction* u : x->users()) {
      if (t.in.contains(u) && connected.insert(u).second) stack.push_back(u);
    }
  }
  return sources;
}

std::vector<Tail> Tails(const Region& r) {
  std::vector<Tail> tails;
  absl::flat_hash_set<const HloInstruction*> seen;
  for (const HloInstruction* m : r.members) {
    for (HloInstruction* consumer : m->users()) {
      if (r.in.contains(consumer) || !seen.insert(consumer).second) continue;
      Tail t = TailOf(consumer, r.grid, [&r](const HloInstruction* o) { return r.in.contains(o); });
      if (!t.work.empty()) tails.push_back(std::move(t));
    }
  }
  return tails;
}

// The kernels connected to `seed` through values on its grid, or through a tail that reads them.
Region Grow(HloInstruction* seed, const Grid& grid, const absl::flat_hash_set<const HloInstruction*>& taken) {
  Region r{grid, {}, {seed}};
  std::vector<HloInstruction*> stack = {seed};
  absl::flat_hash_map<const HloInstruction*, Tail> tails;  // of the consumers off the grid
  auto joins = [&](const HloInstruction* y) { return !taken.contains(y) && OnGrid(*y, grid); };
  while (!stack.empty()) {
    HloInstruction* x = stack.back();
    stack.pop_back();
    auto visit = [&](HloInstruction* y) {
      if (r.in.contains(y) || !joins(y)) return;
      r.in.insert(y);
      stack.push_back(y);
    };
    for (HloInstruction* operand : x->operands()) visit(operand);
    for (HloInstruction* user : x->users()) {
      if (joins(user) || r.in.contains(user)) {
        visit(user);
      } else {
        auto it = tails.find(user);
        if (it == tails.end()) it = tails.emplace(user, TailOf(user, grid, joins)).first;
        for (HloInstruction* source : TailSources(it->second, x)) visit(source);
      }
    }
  }
  return r;
}

// Whether no path leaves the region and comes back (fusing it would make a cycle). Such a
// path runs between the region's first and last member in post order, so only that span is
// walked (members are in post order: r.members.front() is the first).
bool IsConvex(const std::vector<HloInstruction*>& post_order,
              const absl::flat_hash_map<const HloInstruction*, size_t>& position, const Region& r) {
  absl::flat_hash_set<const HloInstruction*> downstream;  // outside, reached from the region
  const size_t last = position.at(r.members.back());
  for (size_t i = position.at(r.members.front()); i <= last; ++i) {
    const HloInstruction* x = post_order[i];
    const bool member = r.in.contains(x);
    for (const HloInstruction* operand : x->operands()) {
      const bool from_region = r.in.contains(operand) || downstream.contains(operand);
      if (member && !r.in.contains(operand) && downstream.contains(operand)) return false;
      if (!member && from_region) downstream.insert(x);
    }
  }
  return true;
}

bool ReadOutside(const HloInstruction& x, const Region& r) {
  if (x.IsRoot()) return true;
  return std::any_of(x.users().begin(), x.users().end(), [&](const HloInstruction* u) { return !r.in.contains(u); });
}

// The region's values read from outside, in the order its members first read them.
std::vector<HloInstruction*> Inputs(const Region& r) {
  std::vector<HloInstruction*> inputs;
  absl::flat_hash_set<const HloInstruction*> seen;
  for (const HloInstruction* m : r.members) {
    for (HloInstruction* operand : m->operands()) {
      if (!r.in.contains(operand) && seen.insert(operand).second) inputs.push_back(operand);
    }
  }
  return inputs;
}

// Whether a value of a tail is read by the rest of its fusion (the kernel's output then).
bool ReadAfterTail(const HloInstruction& x, const Tail& t) {
  return std::any_of(x.users().begin(), x.users().end(), [&](const HloInstruction* u) { return !t.in.contains(u); });
}

// VMEM of one grid step of the region, its query rows in `blocks` row blocks, and, when it
// finishes them, its tails: the region's values in its order, then the tails' (they read region
// values only: no new operands; held whole: an upper bound). A region value a tail reads counts
// as an output (held to the end, written back), as it is without the tails: an upper bound on
// the kernel with them.
int64_t RegionBytes(const Region& r, const std::vector<Tail>& tails, const QueryRows& rows, int64_t blocks,
                    int64_t enough) {
  std::vector<HloInstruction*> order = r.members;
  std::vector<const HloInstruction*> outputs;
  for (const HloInstruction* m : r.members) {
    if (ReadOutside(*m, r)) outputs.push_back(m);
  }
  for (const Tail& t : tails) {
    for (HloInstruction* x : t.work) {
      order.push_back(x);
      if (ReadAfterTail(*x, t)) outputs.push_back(x);
    }
  }
  const std::vector<HloInstruction*> inputs = Inputs(r);
  const std::vector<const HloInstruction*> operands(inputs.begin(), inputs.end());
  auto is_output = [&](const HloInstruction& x) {
    for (const Tail& t : tails) {
      if (t.in.contains(&x)) return ReadAfterTail(x, t);
    }
    return ReadOutside(x, r);
  };
  return StepBytes(Points(r.grid), rows, blocks, order, is_output, operands, outputs, enough);
}

// Moves a tail out of its loop fusion into `computation`, reading the region's values; the
// fusion reads the tail's results instead of what the tail read (see Tails).
absl::Status HoistTail(HloComputation* computation, const Tail& t) {
  HloInstruction* consumer = t.consumer;
  HloComputation* body = consumer->fused_instructions_computation();
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> operand_of;  // body parameter -> value
  for (HloInstruction* parameter : body->parameter_instructions()) {
    operand_of[parameter] = consumer->mutable_operand(parameter->parameter_number());
  }
  for (HloInstruction* x : t.work) {
    HLO_RETURN_IF_ERROR(computation->MoveInstructionFrom(x));
    for (int64_t i = 0; i < x->operand_count(); ++i) {
      auto it = operand_of.find(x->operand(i));
      if (it != operand_of.end()) HLO_RETURN_IF_ERROR(x->ReplaceOperandWith(i, it->second));
    }
  }
  for (HloInstruction* x : t.work) {
    if (!ReadAfterTail(*x, t)) continue;
    auto parameter = HloInstruction::Create(HloOpcode::kParameter, x->shape(), {});
    parameter->set_parameter_number(body->num_parameters());
    HloInstruction* read = body->AddInstruction(std::move(parameter), hlo::StrCat("param_", body->num_parameters()));
    operand_of[read] = x;
    const hlo::InstructionVector users = x->users();
    for (HloInstruction* user : users) {
      if (!t.in.contains(user)) HLO_RETURN_IF_ERROR(x->ReplaceUseWith(user, read));
    }
  }
  // Parameters only the tail read go (the rest renumber), and the fusion's operands follow.
  const std::vector<HloInstruction*> parameters = body->parameter_instructions();
  for (HloInstruction* parameter : parameters) {
    if (parameter->user_count() == 0) HLO_RETURN_IF_ERROR(body->RemoveInstruction(parameter));
  }
  consumer->DetachFromOperands();
  for (const HloInstruction* parameter : body->parameter_instructions()) consumer->AppendOperand(operand_of.at(parameter));
  return absl::OkStatus();
}

// Whether the region is an attention kernel the chip can hold (see the header), as a whole or
// in row blocks; it takes its tails along when they fit too, in as many row blocks.
absl::StatusOr<bool> Accept(HloComputation* computation, const std::vector<HloInstruction*>& post_order,
                            const absl::flat_hash_map<const HloInstruction*, size_t>& position, Region& r,
                            const TpuTargetOptions& target) {
  int64_t dots = 0;
  bool exp = false;
  for (const HloInstruction* m : r.members) {
    dots += KernelDot(*m) != nullptr ? 1 : 0;
    exp = exp || Computes(*m, HloOpcode::kExp);
  }
  if (dots < 2 || !exp) return false;
  // The region's own test first: on a chip whose VMEM holds no grid step, no span is walked.
  const QueryRows rows = FindQueryRows(r.members, [&r](const HloInstruction* x) { return r.in.contains(x); });
  const std::optional<int64_t> blocks =
      FittingRowBlocks(rows, target.mxu_dim, target.vmem_bytes,
                       [&](int64_t b, int64_t enough) { return RegionBytes(r, {}, rows, b, enough); });
  if (!blocks.has_value() || !IsConvex(post_order, position, r)) return false;
  // A tail reads region values only: it cannot close a cycle.
  const std::vector<Tail> tails = Tails(r);
  if (tails.empty() || RegionBytes(r, tails, rows, *blocks, target.vmem_bytes) > target.vmem_bytes) return true;
  for (const Tail& t : tails) {
    HLO_RETURN_IF_ERROR(HoistTail(computation, t));
    for (HloInstruction* x : t.work) {
      r.members.push_back(x);
      r.in.insert(x);
    }
  }
  return true;
}

// Replaces the region by one kCustom fusion of its members (see the header).
absl::Status Materialize(HloComputation* computation, const Region& r) {
  const std::vector<HloInstruction*> inputs = Inputs(r);
  std::vector<HloInstruction*> outputs;
  for (HloInstruction* m : r.members) {
    if (ReadOutside(*m, r)) outputs.push_back(m);
  }
  HloComputation* fused = computation->parent()->AddComputation("fused_attention");
  std::vector<HloInstruction*> parameters;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto parameter = HloInstruction::Create(HloOpcode::kParameter, inputs[i]->shape(), {});
    parameter->set_parameter_number(static_cast<int64_t>(i));
    parameters.push_back(fused->AddInstruction(std::move(parameter), hlo::StrCat("param_", i)));
  }
  std::vector<Shape> output_shapes;
  for (const HloInstruction* out : outputs) output_shapes.push_back(out->shape());
  const Shape shape = outputs.size() == 1 ? outputs[0]->shape() : hlo::ShapeUtil::MakeTupleShape(output_shapes);
  auto fusion_instr = HloInstruction::Create(HloOpcode::kFusion, shape, inputs);
  fusion_instr->set_fusion_kind(hlo::FusionKind::kCustom);
  fusion_instr->set_backend_config(std::string(kAttentionFusionConfig));
  fusion_instr->set_metadata(r.members.front()->metadata());
  HloInstruction* fusion = computation->AddInstruction(std::move(fusion_instr), "fusion");
  // Readers outside read the fusion (or their element of it).
  for (size_t k = 0; k < outputs.size(); ++k) {
    HloInstruction* out = outputs[k];
    HloInstruction* value = fusion;
    if (outputs.size() > 1) {
      auto element = HloInstruction::Create(HloOpcode::kGetTupleElement, out->shape(), {fusion});
      element->set_tuple_index(static_cast<int64_t>(k));
      value = computation->AddInstruction(std::move(element));
    }
    const hlo::InstructionVector users = out->users();
    for (HloInstruction* user : users) {
      if (!r.in.contains(user)) HLO_RETURN_IF_ERROR(out->ReplaceUseWith(user, value));
    }
    if (out->IsRoot()) computation->set_root_instruction(value);
  }
  // Members read the parameters, then move into the fused computation.
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> parameter_of;
  for (size_t i = 0; i < inputs.size(); ++i) parameter_of[inputs[i]] = parameters[i];
  for (HloInstruction* m : r.members) {
    for (int64_t i = 0; i < m->operand_count(); ++i) {
      auto it = parameter_of.find(m->operand(i));
      if (it != parameter_of.end()) HLO_RETURN_IF_ERROR(m->ReplaceOperandWith(i, it->second));
    }
  }
  for (HloInstruction* m : r.members) HLO_RETURN_IF_ERROR(fused->MoveInstructionFrom(m));
  if (outputs.size() == 1) {
    fused->set_root_instruction(outputs[0]);
  } else {
    fused->set_root_instruction(fused->AddInstruction(HloInstruction::Create(HloOpcode::kTuple, shape, outputs)));
  }
  fusion->set_fused_computation(fused);
  return absl::OkStatus();
}

absl::StatusOr<bool> RunOnComputation(HloComputation* computation, const TpuTargetOptions& target) {
  const std::vector<HloInstruction*> post_order = computation->MakeInstructionPostOrder();
  absl::flat_hash_set<const HloInstruction*> taken;  // in an accepted region, or tried as a seed
  absl::flat_hash_map<const HloInstruction*, size_t> position;
  for (size_t i = 0; i < post_order.size(); ++i) position[post_order[i]] = i;
  std::vector<Region> regions;
  for (HloInstruction* seed : post_order) {
    if (taken.contains(seed)) continue;
    const std::optional<Grid> grid = DotGrid(*seed);
    if (!grid.has_value() || !IsCandidate(*seed)) continue;
    Region r = Grow(seed, *grid, taken);
    // In post order, without walking all of it (Grow reached every member through the graph).
    for (const HloInstruction* m : r.in) r.members.push_back(post_order[position.at(m)]);
    std::sort(r.members.begin(), r.members.end(),
              [&](const HloInstruction* a, const HloInstruction* b) { return position.at(a) < position.at(b); });
    HLO_ASSIGN_OR_RETURN(const bool accepted, Accept(computation, post_order, position, r, target));
    for (const HloInstruction* m : r.members) {
      if (accepted || DotGrid(*m) == grid) taken.insert(m);  // a rejected chain is not retried
    }
    if (accepted) regions.push_back(std::move(r));
  }
  for (const Region& r : regions) HLO_RETURN_IF_ERROR(Materialize(computation, r));
  return !regions.empty();
}

// The extents of the first batched dot an attention kernel runs (its grid).
std::optional<Grid> FusionGrid(const HloComputation& fused) {
  for (const HloInstruction* x : fused.MakeInstructionPostOrder()) {
    if (std::optional<Grid> grid = DotGrid(*x)) return grid;
  }
  return std::nullopt;
}

}  // namespace

bool IsAttentionFusion(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kFusion && instr.fusion_kind() == hlo::FusionKind::kCustom &&
         instr.backend_config() == kAttentionFusionConfig && instr.fused_instructions_computation() != nullptr;
}

std::optional<hlo::VmemTiling> PlanAttentionKernel(const HloInstruction& fusion, int64_t vmem_bytes,
                                                   int64_t mxu_dim) {
  if (!IsAttentionFusion(fusion)) return std::nullopt;
  const HloComputation& fused = *fusion.fused_instructions_computation();
  const std::optional<Grid> grid = FusionGrid(fused);
  if (!grid.has_value()) return std::nullopt;
  std::vector<HloInstruction*> order;  // the members in the order the region had them
  for (HloInstruction* x : fused.MakeInstructionPostOrder()) {
    if (x->opcode() != HloOpcode::kParameter) order.push_back(x);
  }
  const std::vector<HloInstruction*>& parameters = fused.parameter_instructions();
  const std::vector<const HloInstruction*> operands(parameters.begin(), parameters.end());
  const HloInstruction* root = fused.root_instruction();
  std::vector<const HloInstruction*> outputs = {root};
  if (root->opcode() == HloOpcode::kTuple) outputs.assign(root->operands().begin(), root->operands().end());
  const QueryRows rows =
      FindQueryRows(order, [](const HloInstruction* x) { return x->opcode() != HloOpcode::kParameter; });
  const int64_t points = Points(*grid);
  auto step_bytes = [&](int64_t blocks, int64_t enough) {
    return StepBytes(points, rows, blocks, order, [root](const HloInstruction& x) { return &x == root; }, operands,
                     outputs, enough);
  };
  const int64_t blocks = FittingRowBlocks(rows, mxu_dim, vmem_bytes, step_bytes).value_or(1);
  hlo::VmemTiling plan;
  plan.grid = *grid;
  plan.block = Grid(grid->size(), 1);
  if (blocks > 1) {
    plan.grid.push_back(blocks);
    plan.block.push_back(rows.extent / blocks);
  }
  plan.steps = points * blocks;
  plan.vmem_bytes = step_bytes(blocks, 0);
  // Operands read once; those without query rows (K, V) once per row block.
  double hbm = 0;
  for (const HloInstruction* p : parameters) {
    const HloInstruction* operand = fusion.operand(p->parameter_number());
    if (!operand->shape().IsArray()) continue;
    const double reads = blocks > 1 && rows.RowDim(*p) < 0 ? static_cast<double>(blocks) : 1.0;
    hbm += reads * static_cast<double>(hlo::ShapeUtil::ElementsIn(operand->shape())) * MxuFeedBytesPerElement(*operand);
  }
  hbm += static_cast<double>(PaddedBytes(fusion.shape()));
  plan.hbm_bytes = static_cast<int64_t>(hbm);
  return plan;
}

absl::StatusOr<bool> AttentionFusion::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->MakeComputationPostOrder()) {
    if (computation->IsFusionComputation()) continue;
    HLO_ASSIGN_OR_RETURN(const bool c, RunOnComputation(computation, options_));
    changed |= c;
  }
  return changed;
}

}  // namespace jx::tpu
