#include "jx/compiler/passes/instruction_fusion.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/analysis/hlo_cost_analysis.h"
#include "jx/compiler/hlo/hlo_module.h"
#include "jx/compiler/hlo/instruction_map.h"
#include "jx/compiler/hlo/instruction_prefetch.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

bool IsContraction(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kDot || instr.opcode() == HloOpcode::kConvolution;
}

bool IsScalarConstant(const HloInstruction& instr) {
  return instr.opcode() == HloOpcode::kConstant && instr.shape().IsArray() &&
         instr.shape().rank() == 0;
}

// A reduce that can root an input fusion: constant inits. Variadic reduces too, so that
// argmax's index iota is computed inside the reduce instead of written to memory.
bool IsInputFusionRoot(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kReduce || instr.to_apply() == nullptr ||
      instr.operand_count() % 2 != 0) {
    return false;
  }
  for (int64_t i = instr.operand_count() / 2; i < instr.operand_count(); ++i) {
    if (instr.operand(i)->opcode() != HloOpcode::kConstant) return false;
  }
  return true;
}

// A copy of src (attributes, called computations, metadata) reading new operands. Covers
// the attributes of every op fusion puts into a fused computation.
absl::StatusOr<std::unique_ptr<HloInstruction>> CloneWithOperands(
    const HloInstruction& src, absl::Span<HloInstruction* const> operands) {
  auto c = HloInstruction::Create(src.opcode(), src.shape(), operands);
  for (int a = 0; a < kNumHloAttrs; ++a) {
    const HloAttr attr = static_cast<HloAttr>(a);
    if (!src.HasAttr(attr)) continue;
    switch (attr) {
      case HloAttr::kDirection: c->set_comparison_direction(src.comparison_direction()); break;
      case HloAttr::kCompareType: c->set_comparison_type(src.comparison_type()); break;
      case HloAttr::kDimensions: c->set_dimensions(src.dimensions()); break;
      case HloAttr::kSlice: c->set_slice(src.slice()); break;
      case HloAttr::kPadding: c->set_padding_config(src.padding_config()); break;
      case HloAttr::kIotaDimension: c->set_iota_dimension(src.iota_dimension()); break;
      case HloAttr::kExponentBits:
      case HloAttr::kMantissaBits:
        c->set_reduce_precision_bits(src.exponent_bits(), src.mantissa_bits());
        break;
      case HloAttr::kLhsBatchDims:
      case HloAttr::kRhsBatchDims:
      case HloAttr::kLhsContractingDims:
      case HloAttr::kRhsContractingDims:
        c->set_dot_dimension_numbers(src.dot_dimension_numbers());
        break;
      case HloAttr::kWindow: c->set_window(src.window()); break;
      case HloAttr::kDimLabels:
        c->set_convolution_dimension_numbers(src.convolution_dimension_numbers());
        break;
      case HloAttr::kFeatureGroupCount: c->set_feature_group_count(src.feature_group_count()); break;
      case HloAttr::kBatchGroupCount: c->set_batch_group_count(src.batch_group_count()); break;
      case HloAttr::kOperandPrecision: c->set_precision_config(src.precision_config()); break;
      case HloAttr::kToApply: c->set_to_apply(src.to_apply()); break;
      default:
        return absl::InternalError(StrCat("fusion cannot clone ", src.name(), " (",
                                          HloOpcodeString(src.opcode()), ")"));
    }
  }
  if (src.opcode() == HloOpcode::kConstant) c->set_literal(src.literal());
  c->set_shared_metadata(src.shared_metadata());
  return c;
}

// The lowest unique id of a computation's instructions, for the per-instruction tables below,
// without a walk over them: ids grow in creation order, which the instruction list keeps, so
// the first instruction has it (one moved in from elsewhere with a lower id still works,
// through the table's hash side).
int64_t FirstInstructionId(const HloComputation& computation) {
  for (const HloInstruction* instr : computation.instructions()) return instr->unique_id();
  return -1;
}

// How many instructions ahead of a walk it starts loading them: on a big computation every
// instruction a walk reaches is a cache miss it would otherwise wait for.
constexpr size_t kAhead = kPrefetchAhead;

// Starts loading what the planner and the group walks read of an instruction: its first two
// cache lines (opcode, parent, id, operands, users, the shape's element type and dims).
void PrefetchHead(const HloInstruction* instr) {
  __builtin_prefetch(instr);
  __builtin_prefetch(&instr->shape());
}

// A group of instructions of one computation that becomes one fusion. Which groups an
// instruction is in is the planner's to answer (FusionPlanner::InGroup).
struct Group {
  HloInstruction* root;
  FusionKind kind;
  std::vector<HloInstruction*> members;  // the root first, then producers as they join
  bool has_contraction = false;
};

class FusionPlanner {
 public:
  FusionPlanner(const HloComputation& computation, InstructionFusionOptions options)
      : memberships_(FirstInstructionId(computation), computation.instruction_count()),
        options_(options) {}

  // Decides the groups: consumers first, each producer joining its users' groups.
  void Plan(const HloComputation& computation) {
    const std::vector<HloInstruction*> order = computation.MakeInstructionPostOrder();
    for (size_t i = order.size(); i-- > 0;) {
      if (i >= kAhead) PrefetchHead(order[i - kAhead]);
      HloInstruction* instr = order[i];
      if (instr->user_count() == 0 && !instr->IsRoot()) continue;  // dead: DCE's business
      if (TryJoin(instr)) continue;
      if (IsInputFusionRoot(*instr)) {
        StartGroup(instr, FusionKind::kInput);
      } else if (InstructionFusion::IsLoopFusible(*instr)) {
        StartGroup(instr, FusionKind::kLoop);
      }
    }
  }

  const std::vector<Group>& groups() const { return groups_; }

  // Whether instr is a member of group g.
  bool InGroup(const HloInstruction* instr, int g) const { return Find(instr, g) != nullptr; }

  // What building group g does with instr. Groups are built in index order, and a member
  // read by several groups is copied into each but the last: that one's readers are the only
  // ones left (the others read their copies by then), so there it moves as it is.
  enum class Placement { kInput, kCopy, kMove };
  Placement PlacementIn(const HloInstruction* instr, int g) const {
    bool member = false;
    int last = -1;
    for (const Membership& m : memberships_.Get(instr)) {
      member |= m.group == g;
      last = std::max(last, m.group);
    }
    if (!member) return Placement::kInput;
    return last == g ? Placement::kMove : Placement::kCopy;
  }

 private:
  void StartGroup(HloInstruction* root, FusionKind kind) {
    groups_.push_back(Group{root, kind, {root}});
    const int g = static_cast<int>(groups_.size()) - 1;
    memberships_[root].push_back(Membership{g, Indexing{{root}, 1}});
  }

  // XLA's FusionNodeIndexingEvaluation: a fused value is emitted once per distinct index it
  // is read at. Elementwise users of its own shape read it at their own indices (they share
  // their indexing); any other user (a slice, reshape, transpose, ...) indexes it anew, once
  // per index that user is emitted at. Counts multiply through chains of such users: a tree
  // reduction's halving rounds (each round two slices of the last) double them per round,
  // and one fusion of n rounds would emit the first round 2^n times.
  struct Indexing {
    // Members defining distinct indexings, sorted by address (a handful: nearly always one).
    absl::InlinedVector<const HloInstruction*, 2> users;
    int64_t count = 0;  // times the value is emitted
  };
  // XLA's kAllowedCodeDuplication.
  static constexpr int64_t kAllowedCodeDuplication = 15;

  // A group an instruction is in, with its indexing there.
  struct Membership {
    int group;
    Indexing indexing;
  };

  // instr's indexing in group g, or null if it is not a member.
  const Indexing* Find(const HloInstruction* instr, int g) const {
    for (const Membership& m : memberships_.Get(instr)) {
      if (m.group == g) return &m.indexing;
    }
    return nullptr;
  }

  // The indexing of producer inside group g, from its users there (all members of g).
  Indexing IndexingIn(const HloInstruction& producer, int g) const {
    Indexing out;
    for (const HloInstruction* user : producer.users()) {
      const Indexing* in_user = Find(user, g);
      if (in_user == nullptr) continue;  // a user in another group
      if (user->IsElementwise() && ShapeUtil::SameDimensions(user->shape(), producer.shape())) {
        out.users.insert(out.users.end(), in_user->users.begin(), in_user->users.end());
      } else {
        out.users.push_back(user);
      }
    }
    std::sort(out.users.begin(), out.users.end());
    out.users.erase(std::unique(out.users.begin(), out.users.end()), out.users.end());
    for (const HloInstruction* u : out.users) out.count += Find(u, g)->count;
    return out;
  }

  // Whether producer may be computed inside user's group as part of computing user.
  static bool CanFuseThrough(const HloInstruction& user, const HloInstruction& producer) {
    if (IsContraction(user)) return false;  // dot/conv operands stay outside (GEMM inputs)
    if (user.opcode() == HloOpcode::kReduce) {
      // Only the reduced inputs fuse; the init values stay plain (constant) operands.
      for (int64_t i = user.operand_count() / 2; i < user.operand_count(); ++i) {
        if (user.operand(i) == &producer) return false;
      }
    }
    return true;
  }

  // True if everything in the group downstream of the contraction is elementwise over the
  // contraction's own shape, so the epilogue can run per output tile.
  bool IsEpilogue(int g, const HloInstruction* contraction) const {
    std::vector<const HloInstruction*> worklist(contraction->users().begin(),
                                                contraction->users().end());
    absl::flat_hash_set<const HloInstruction*> seen;
    while (!worklist.empty()) {
      const HloInstruction* instr = worklist.back();
      worklist.pop_back();
      if (!seen.insert(instr).second) continue;
      if (!instr->IsElementwise() ||
          !ShapeUtil::SameDimensions(instr->shape(), contraction->shape())) {
        return false;
      }
      for (HloInstruction* user : instr->users()) {
        if (InGroup(user, g)) worklist.push_back(user);
      }
    }
    return true;
  }

  // True for a computed (elementwise) producer that a broadcast reads to make more elements
  // than it has. Fused there, it would run once per broadcast element (a [256] update
  // recomputed 65536 times for an outer product); a value computed in another group anyway
  // is cheaper written once and read through the broadcast.
  static bool FeedsExpandingBroadcast(const HloInstruction& producer) {
    if (!producer.IsElementwise() || !producer.shape().IsArray()) return false;
    const int64_t elements = ShapeUtil::ElementsIn(producer.shape());
    for (const HloInstruction* user : producer.users()) {
      if (user->opcode() == HloOpcode::kBroadcast &&
          ShapeUtil::ElementsIn(user->shape()) > elements) {
        return true;
      }
    }
    return false;
  }

  static bool IsFreeToDuplicate(const HloInstruction& instr) {
    return instr.opcode() == HloOpcode::kConstant || instr.opcode() == HloOpcode::kIota ||
           instr.opcode() == HloOpcode::kBroadcast;
  }

  // Whether a user of producer already joined several groups (is computed more than once).
  bool FeedsDuplicatedMember(const HloInstruction& producer) const {
    for (const HloInstruction* user : producer.users()) {
      if (memberships_.Get(user).size() > 1) return true;
    }
    return false;
  }

  // True for a cheap elementwise op over a contraction's own shape that is the contraction's
  // only user: the contraction's epilogue (InstructionFusionOptions::prefer_output_fusion).
  static bool IsSoleEpilogueOfContraction(const HloInstruction& producer) {
    if (!producer.IsElementwise()) return false;
    for (const HloInstruction* operand : producer.operands()) {
      if (IsContraction(*operand) && operand->user_count() == 1 &&
          ShapeUtil::SameDimensions(operand->shape(), producer.shape())) {
        return true;
      }
    }
    return false;
  }

  // Whether group g reads the result of a collective (or of an asynchronous one's done) that
  // the contraction `contraction` does not read itself.
  bool ReadsCollectiveTheContractionDoesNot(int g, const HloInstruction& contraction) const {
    const Group& group = groups_[static_cast<size_t>(g)];
    for (const HloInstruction* member : group.members) {
      for (const HloInstruction* operand : member->operands()) {
        if (IsCollectiveOpcode(operand->opcode()) && !InGroup(operand, g) &&
            std::find(contraction.operands().begin(), contraction.operands().end(), operand) ==
                contraction.operands().end()) {
          return true;
        }
      }
    }
    return false;
  }

  // The contraction a producer would bring into a group as its epilogue: the producer itself,
  // or the contraction whose sole epilogue it is (that contraction then follows it).
  static const HloInstruction* ContractionOf(const HloInstruction& producer) {
    if (IsContraction(producer)) return &producer;
    if (!IsSoleEpilogueOfContraction(producer)) return nullptr;
    for (const HloInstruction* operand : producer.operands()) {
      if (IsContraction(*operand) && operand->user_count() == 1) return operand;
    }
    return nullptr;
  }

  bool TryJoin(HloInstruction* producer) {
    if (producer->IsRoot() || producer->user_count() == 0) return false;
    const bool contraction = IsContraction(*producer);
    if (!contraction && !InstructionFusion::IsLoopFusible(*producer)) return false;
    absl::InlinedVector<int, 2> targets;
    for (HloInstruction* user : producer->users()) {
      const auto& user_groups = memberships_.Get(user);
      if (user_groups.empty() || !CanFuseThrough(*user, *producer)) return false;
      for (const Membership& m : user_groups) {
        if (std::find(targets.begin(), targets.end(), m.group) == targets.end()) {
          targets.push_back(m.group);
        }
      }
    }
    // A contraction (or its sole epilogue, which the contraction would follow) does not join
    // a group that reads a collective's result the contraction does not read: the kernel
    // would wait for that collective (run asynchronously after fusion) where the contraction
    // alone need not. A collective matmul's reduce-scatter loop adds the partial sum the ring
    // shift brings to its own partial product; fused as the dot's epilogue, the dot waited
    // for the shift it is meant to overlap. The contraction and its own epilogue stay one
    // kernel, the add a kernel of its own.
    if (const HloInstruction* c = ContractionOf(*producer); c != nullptr) {
      for (int g : targets) {
        if (ReadsCollectiveTheContractionDoesNot(g, *c)) return false;
      }
    }
    // Joining several groups computes the producer once per group: the cost analysis
    // judges whether that is cheaper than writing and re-reading its value. A producer of a
    // value that is itself duplicated is not duplicated again unless it is free (a constant,
    // an iota, a broadcast): chains of cheap ops (a residual stream's adds, each read by its
    // layer) would otherwise be copied into every later consumer, quadratic in depth.
    if (targets.size() > 1 && (contraction || cost_analysis_.IsExpensiveToDuplicate(*producer) ||
                               (options_.prefer_output_fusion && IsSoleEpilogueOfContraction(*producer)) ||
                               FeedsExpandingBroadcast(*producer) ||
                               (!IsFreeToDuplicate(*producer) && FeedsDuplicatedMember(*producer)))) {
      return false;
    }
    // Fused into a group that would emit it more than kAllowedCodeDuplication times, the
    // producer stays outside, written once (XLA's CodeDuplicationTooHigh; broadcasts, and
    // here constants and iotas, are free to emit again and exempt).
    absl::InlinedVector<Membership, 1> memberships;
    for (int g : targets) {
      memberships.push_back(Membership{g, IndexingIn(*producer, g)});
      if (!IsFreeToDuplicate(*producer) &&
          memberships.back().indexing.count > kAllowedCodeDuplication) {
        return false;
      }
    }
    if (contraction) {
      Group& group = groups_[targets[0]];
      if (group.kind != FusionKind::kLoop || group.has_contraction ||
          !IsEpilogue(targets[0], producer)) {
        return false;
      }
      group.kind = FusionKind::kOutput;
      group.has_contraction = true;
    }
    for (int g : targets) groups_[g].members.push_back(producer);
    memberships_[producer] = std::move(memberships);
    return true;
  }

  std::vector<Group> groups_;
  // Per instruction, the groups it joined (one, or several for a duplicated producer).
  InstructionMap<absl::InlinedVector<Membership, 1>> memberships_;
  HloCostAnalysis cost_analysis_;
  InstructionFusionOptions options_;
};

// The group's members, operands first, whether each moves into the fused computation as it
// is (else it is copied), and the values it reads from outside in the order a left-to-right
// walk from the root first meets them (the fusion's operand order), with how many moving
// members read each.
struct GroupOrder {
  std::vector<HloInstruction*> members;
  std::vector<bool> moving;
  std::vector<HloInstruction*> inputs;
  std::vector<int64_t> moving_readers;  // per input: moving members reading it, each once
};

// Per instruction, the last group whose OrderGroup reached it (g + 1; 0: none yet) and, for
// an input of that group, its index in GroupOrder::inputs. One table serves every group of a
// computation: a table per group would cost the computation's size each time.
struct VisitMark {
  int group = 0;
  int input = -1;
};
using VisitMarks = InstructionMap<VisitMark>;

GroupOrder OrderGroup(const FusionPlanner& planner, int g, VisitMarks& visited_in) {
  using Placement = FusionPlanner::Placement;
  const Group& group = planner.groups()[g];
  GroupOrder out;
  out.members.reserve(group.members.size());
  out.moving.reserve(group.members.size());
  // A frame keeps the first two operands of its member (most have at most two), read when it
  // is pushed: the walk comes back to a frame after the operand's whole subtree (a chain's
  // is the rest of the chain), when the member has left the cache.
  struct Frame {
    HloInstruction* instr;
    HloInstruction* first[2];
    uint32_t operand_count;
    uint32_t next;
    bool moves;
    HloInstruction* operand(uint32_t k) const {
      return k < 2 ? first[k] : instr->mutable_operand(k);
    }
  };
  auto frame_of = [](HloInstruction* instr, bool moves) {
    const auto& operands = instr->operands();
    const auto count = static_cast<uint32_t>(operands.size());
    return Frame{instr, {count > 0 ? operands[0] : nullptr, count > 1 ? operands[1] : nullptr},
                 count, 0, moves};
  };
  // The walk meets the members in about the order they joined (the planner went from the
  // root towards producers): loading the ones that joined a little later ahead of the walk
  // hides most of its cache misses on a big group.
  size_t reached = 0;
  auto prefetch_ahead = [&] {
    if (++reached + kAhead < group.members.size()) {
      PrefetchHead(group.members[reached + kAhead]);
    }
  };
  visited_in[group.root] = VisitMark{g + 1, -1};
  std::vector<Frame> stack = {frame_of(group.root, true)};  // the root's users read the fusion
  for (size_t i = 1; i <= kAhead && i < group.members.size(); ++i) {
    PrefetchHead(group.members[i]);
  }
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (frame.next < frame.operand_count) {
      const uint32_t k = frame.next++;
      HloInstruction* operand = frame.operand(k);
      VisitMark& mark = visited_in[operand];
      if (mark.group != g + 1) {
        mark.group = g + 1;
        mark.input = -1;
        const Placement placement = planner.PlacementIn(operand, g);
        if (placement != Placement::kInput) {
          const bool moves = placement == Placement::kMove;
          stack.push_back(frame_of(operand, moves));  // frame is not used after this
          prefetch_ahead();
          continue;
        }
        mark.input = static_cast<int>(out.inputs.size());
        out.inputs.push_back(operand);
        out.moving_readers.push_back(0);
      }
      if (mark.input >= 0 && frame.moves) {
        uint32_t j = 0;
        while (j < k && frame.operand(j) != operand) ++j;
        if (j == k) ++out.moving_readers[static_cast<size_t>(mark.input)];  // first read here
      }
      continue;
    }
    out.members.push_back(frame.instr);
    out.moving.push_back(frame.moves);
    stack.pop_back();
  }
  return out;
}

// Names new instructions as XLA does: `base`, then base.1, base.2, ... (the first free one).
class SequentialNamer {
 public:
  absl::StatusOr<HloInstruction*> Add(HloComputation* computation,
                                      const std::function<std::unique_ptr<HloInstruction>()>& make,
                                      const std::string& base) {
    int64_t& n = next_[base];
    while (true) {
      const std::string name = n == 0 ? base : StrCat(base, ".", n);
      ++n;
      absl::StatusOr<HloInstruction*> added =
          computation->AddInstructionWithExactName(make(), name);
      if (added.ok() || !absl::IsAlreadyExists(added.status())) return added;
    }
  }

 private:
  absl::flat_hash_map<std::string, int64_t> next_;
};

// Builds the fused computation and the fusion instruction for one group, points the
// root's users at the fusion, and removes what no one reads any more.
absl::Status Materialize(HloComputation* computation, const FusionPlanner& planner, int g,
                         VisitMarks& visited_in, SequentialNamer& namer) {
  HloModule* module = computation->parent();
  const Group& group = planner.groups()[g];
  const GroupOrder order = OrderGroup(planner, g, visited_in);
  HloComputation* fused = module->AddComputation("fused_computation");
  // The values inside the fused computation of the inputs (parameters, cloned constants) and
  // of the members that are copied: a few, where nearly every member moves as it is. Every
  // operand of a member is an input or a member (OrderGroup), so an operand missing here
  // is a moving member, its own value.
  absl::flat_hash_map<const HloInstruction*, HloInstruction*> fused_values;
  fused_values.reserve(order.inputs.size());
  auto fused_of = [&](HloInstruction* instr) {
    auto it = fused_values.find(instr);
    return it == fused_values.end() ? instr : it->second;
  };
  std::vector<HloInstruction*> fusion_operands;
  std::vector<HloInstruction*> cloned_constants;
  for (size_t k = 0; k < order.inputs.size(); ++k) {
    HloInstruction* input = order.inputs[k];
    HloInstruction* value;
    if (IsScalarConstant(*input)) {
      // Cheaper to rematerialize than to pass in.
      HLO_ASSIGN_OR_RETURN(std::unique_ptr<HloInstruction> constant,
                           CloneWithOperands(*input, {}));
      value = fused->AddInstruction(std::move(constant), input->name());
      cloned_constants.push_back(input);
    } else {
      const int64_t number = static_cast<int64_t>(fusion_operands.size());
      auto make_parameter = [&] {
        auto parameter = HloInstruction::Create(HloOpcode::kParameter, input->shape(), {});
        parameter->set_parameter_number(number);
        return parameter;
      };
      HLO_ASSIGN_OR_RETURN(value, namer.Add(fused, make_parameter, StrCat("param_", number)));
      fusion_operands.push_back(input);
    }
    // An input read only by members that move (the program's input a whole chain reads) is
    // rewired to its fused value in one edit of both user lists, before the fusion reads it;
    // any other is rewired member by member below.
    if (order.moving_readers[k] == input->user_count() && !input->IsRoot()) {
      HLO_RETURN_IF_ERROR(input->ReplaceAllUsesWith(value));
    } else {
      fused_values[input] = value;
    }
  }
  // The fusion replaces the root first, so the root's users read the fusion and every
  // member the group alone reads can move into the fused computation as it is (no copy, no
  // new name). A member also read by a group not yet built is copied.
  auto make_fusion = [&] {
    auto fusion =
        HloInstruction::Create(HloOpcode::kFusion, group.root->shape(), fusion_operands);
    fusion->set_fusion_kind(group.kind);
    fusion->set_shared_metadata(group.root->shared_metadata());
    return fusion;
  };
  HLO_ASSIGN_OR_RETURN(HloInstruction * fusion_instr,
                       namer.Add(computation, make_fusion, "fusion"));
  HLO_RETURN_IF_ERROR(group.root->ReplaceAllUsesWith(fusion_instr));
  // Which members move, by their index in order.members: the walks below skip or pick them
  // without reading each member again (on a big group every read is a cache miss).
  const size_t n = order.members.size();
  const std::vector<bool>& moving = order.moving;
  // Copies first: a copy reads only inputs and other copies (a member a copy reads is read
  // outside the group, so it does not move either).
  for (size_t i = 0; i < n; ++i) {
    if (moving[i]) continue;
    HloInstruction* member = order.members[i];
    std::vector<HloInstruction*> operands;
    for (HloInstruction* operand : member->operands()) operands.push_back(fused_of(operand));
    HLO_ASSIGN_OR_RETURN(std::unique_ptr<HloInstruction> clone,
                         CloneWithOperands(*member, operands));
    fused_values[member] = fused->AddInstruction(std::move(clone), member->name());
  }
  // The moving members read parameters and copies instead of the remaining inputs and the
  // originals, users first: an input many members read then drops its newest user each time
  // (cheap; oldest first would shift its user list once per member). A copied member is
  // removed in the same walk once its users are (they come before it), unless a group not
  // yet built reads it. Nothing left to rewire (no copies, every input rewired above): no walk.
  for (size_t i = fused_values.empty() ? 0 : n; i-- > 0;) {
    HloInstruction* member = order.members[i];
    if (!moving[i]) {
      if (member->user_count() == 0 && !member->IsRoot()) HLO_RETURN_IF_ERROR(computation->RemoveInstruction(member));
      continue;
    }
    for (int64_t k = member->operand_count() - 1; k >= 0; --k) {
      HloInstruction* operand = member->mutable_operand(k);
      HloInstruction* fused_operand = fused_of(operand);
      if (fused_operand != operand) HLO_RETURN_IF_ERROR(member->ReplaceOperandWith(k, fused_operand));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      const HloInstruction* ahead = order.members[i + kAhead];
      __builtin_prefetch(ahead, /*rw=*/1);                          // parent and position
      __builtin_prefetch(&ahead->called_computations());  // whether the call graph changes
    }
    if (moving[i]) HLO_RETURN_IF_ERROR(fused->MoveInstructionFrom(order.members[i]));
  }
  fused->set_root_instruction(group.root);
  fusion_instr->set_fused_computation(fused);

  for (HloInstruction* constant : cloned_constants) {
    if (constant->user_count() == 0 && !constant->IsRoot()) {
      HLO_RETURN_IF_ERROR(computation->RemoveInstruction(constant));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// The cost analysis decides (from opcode.def's properties and the op's costed work), so
// fusion and the cost model classify an op in one place.
bool InstructionFusion::IsExpensive(const HloInstruction& instr) {
  return HloCostAnalysis().IsExpensiveToDuplicate(instr);
}

// opcode.def's property, the table the cost analysis reads too.
bool InstructionFusion::IsLoopFusible(const HloInstruction& instr) {
  return IsLoopFusibleOpcode(instr.opcode());
}

absl::StatusOr<bool> InstructionFusion::RunOnComputation(HloComputation* computation,
                                                         InstructionFusionOptions options) {
  SequentialNamer namer;
  FusionPlanner planner(*computation, options);
  planner.Plan(*computation);
  VisitMarks visited_in(FirstInstructionId(*computation), computation->instruction_count());
  bool changed = false;
  for (int g = 0; g < static_cast<int>(planner.groups().size()); ++g) {
    if (planner.groups()[g].members.size() < 2) continue;
    HLO_RETURN_IF_ERROR(Materialize(computation, planner, g, visited_in, namer));
    changed = true;
  }
  return changed;
}

absl::StatusOr<bool> InstructionFusion::Run(HloModule* module) {
  // Computations applied per element (reducers, comparators, map/scatter bodies) are scalar
  // code; fused computations are already fused.
  absl::flat_hash_set<const HloComputation*> skip;
  std::vector<HloComputation*> computations = module->MakeComputationPostOrder();
  for (const HloComputation* computation : computations) {
    if (computation->IsFusionComputation()) skip.insert(computation);
    if (computations.size() == 1) break;  // it calls nothing: its instructions are not read
    for (const HloInstruction* instr : computation->instructions()) {
      const HloOpcode op = instr->opcode();
      if (op == HloOpcode::kWhile || op == HloOpcode::kConditional || op == HloOpcode::kCall ||
          op == HloOpcode::kFusion) {
        continue;
      }
      for (const HloComputation* callee : instr->called_computations()) skip.insert(callee);
    }
  }
  bool changed = false;
  for (HloComputation* computation : computations) {
    if (skip.contains(computation)) continue;
    HLO_ASSIGN_OR_RETURN(bool c_changed, RunOnComputation(computation, options_));
    changed |= c_changed;
  }
  return changed;
}

}  // namespace jx::hlo
