#include "jx/compiler/hlo/hlo_instruction.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/hlo_attr_table.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {

std::unique_ptr<HloInstruction> HloInstruction::Create(
    HloOpcode opcode, Shape shape, absl::Span<HloInstruction* const> operands) {
  std::unique_ptr<HloInstruction> instr(new HloInstruction(opcode, std::move(shape)));
  instr->operands_.assign(operands.begin(), operands.end());
  return instr;
}

HloInstruction::~HloInstruction() = default;

std::unique_ptr<HloInstruction> HloInstruction::CloneDetached() const {
  std::unique_ptr<HloInstruction> c(new HloInstruction(opcode_, shape_));
  c->called_ = called_;
  c->attr_mask_ = attr_mask_;
  c->dimensions_ = dimensions_;
  c->int_attr_ = int_attr_;
  c->direction_ = direction_;
  c->comparison_type_ = comparison_type_;
  c->fusion_kind_ = fusion_kind_;
  if (attrs_ != nullptr) c->attrs_ = std::make_unique<Attrs>(*attrs_);
  c->metadata_ = metadata_;
  return c;
}

bool HloInstruction::IsRoot() const {
  return parent_ != nullptr && parent_->root_instruction() == this;
}

bool HloInstruction::IsUserOf(const HloInstruction* operand) const {
  return std::find(operands_.begin(), operands_.end(), operand) != operands_.end();
}

namespace {
// Past this many users, membership goes through user_set_ rather than a scan.
constexpr size_t kUserSetThreshold = 16;
// How many users ahead a walk over a long user list starts loading the user: on a big
// program each is a cache miss.
constexpr size_t kUsersAhead = 8;
}  // namespace

bool HloInstruction::HasUser(const HloInstruction* user) const {
  if (user_set_ != nullptr) return user_set_->contains(user);
  return std::find(users_.begin(), users_.end(), user) != users_.end();
}

void HloInstruction::AddUser(HloInstruction* user) {
  if (HasUser(user)) return;
  users_.push_back(user);
  if (user_set_ != nullptr) {
    user_set_->insert(user);
  } else if (users_.size() > kUserSetThreshold) {
    user_set_ = std::make_unique<absl::flat_hash_set<const HloInstruction*>>(users_.begin(),
                                                                             users_.end());
  }
}

void HloInstruction::RemoveUser(HloInstruction* user) {
  if (user_set_ != nullptr && user_set_->erase(user) == 0) return;
  // Passes mostly drop the newest users first (users before operands), so search from the
  // back: removing a recent user of a widely shared value is then cheap.
  auto it = std::find(users_.rbegin(), users_.rend(), user);
  if (it == users_.rend()) return;
  users_.erase(std::next(it).base());
  if (user_set_ != nullptr && users_.size() <= kUserSetThreshold / 2) user_set_.reset();
}

absl::Status HloInstruction::ReplaceOperandWith(int64_t index, HloInstruction* new_operand) {
  if (index < 0 || index >= operand_count()) {
    return absl::OutOfRangeError(
        StrCat(name_, ": operand index ", index, " out of range [0, ", operand_count(), ")"));
  }
  HloInstruction* old_operand = operands_[index];
  if (old_operand == new_operand) return absl::OkStatus();
  if (!ShapeUtil::Compatible(old_operand->shape(), new_operand->shape())) {
    return absl::InvalidArgumentError(StrCat(
        name_, ": cannot replace operand ", index, " (", old_operand->shape().ToString(),
        ") with ", new_operand->name(), " of incompatible shape ",
        new_operand->shape().ToString()));
  }
  operands_[index] = new_operand;
  if (parent_ != nullptr) {
    parent_->InvalidatePostOrder();
    if (!IsUserOf(old_operand)) old_operand->RemoveUser(this);
    new_operand->AddUser(this);
  }
  return absl::OkStatus();
}

absl::Status HloInstruction::ReplaceUseWith(HloInstruction* user, HloInstruction* new_producer) {
  for (int64_t i = 0; i < user->operand_count(); ++i) {
    if (user->operands_[i] == this) {
      if (absl::Status st = user->ReplaceOperandWith(i, new_producer); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

absl::Status HloInstruction::ReplaceAllUsesWith(HloInstruction* new_producer) {
  if (new_producer == this) return absl::OkStatus();
  if (!ShapeUtil::Compatible(shape_, new_producer->shape())) {
    return absl::InvalidArgumentError(StrCat(
        "cannot replace uses of ", name_, " (", shape_.ToString(), ") with ",
        new_producer->name(), " of incompatible shape ", new_producer->shape().ToString()));
  }
  // Every user's operands are rewired in one walk, and the two user lists are edited once
  // at the end, not a hash-set edit per user: a value a whole program reads (a parameter
  // fusion passes in, a shared constant) has tens of thousands of users. The result is the
  // same as ReplaceUseWith per user in user order.
  InstructionVector kept;   // users that still read this: new_producer itself (x -> f(x)),
                            // and any not in a computation (their edges are not tracked)
  InstructionVector moved;  // users that now read new_producer instead
  const size_t n = users_.size();
  moved.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (i + kUsersAhead < n) __builtin_prefetch(users_[i + kUsersAhead]);
    HloInstruction* user = users_[i];
    if (user == new_producer) {
      kept.push_back(user);
      continue;
    }
    bool read = false;
    for (HloInstruction*& operand : user->operands_) {
      if (operand != this) continue;
      operand = new_producer;
      read = true;
    }
    if (!read || user->parent_ == nullptr) {
      kept.push_back(user);
      continue;
    }
    user->parent_->InvalidatePostOrder();
    moved.push_back(user);
  }
  if (!moved.empty()) {
    if (new_producer->users_.empty()) {
      // Distinct users (users_ holds each once) onto an empty list: no membership checks.
      new_producer->users_ = std::move(moved);
      if (new_producer->users_.size() > kUserSetThreshold) {
        new_producer->user_set_ = std::make_unique<absl::flat_hash_set<const HloInstruction*>>(
            new_producer->users_.begin(), new_producer->users_.end());
      }
    } else {
      for (HloInstruction* user : moved) new_producer->AddUser(user);
    }
    // As RemoveUser per user would leave it: the set dropped once the list is short.
    const bool had_set = user_set_ != nullptr;
    users_ = std::move(kept);
    user_set_.reset();
    if (had_set && users_.size() > kUserSetThreshold / 2) {
      user_set_ = std::make_unique<absl::flat_hash_set<const HloInstruction*>>(users_.begin(),
                                                                             users_.end());
    }
  }
  if (IsRoot()) parent_->set_root_instruction(new_producer);
  return absl::OkStatus();
}

void HloInstruction::AppendOperand(HloInstruction* operand) {
  operands_.push_back(operand);
  if (parent_ != nullptr) {
    parent_->InvalidatePostOrder();
    operand->AddUser(this);
  }
}

void HloInstruction::DetachFromOperands() {
  if (parent_ != nullptr) {
    parent_->InvalidatePostOrder();
    for (HloInstruction* operand : operands_) operand->RemoveUser(this);
  }
  operands_.clear();
}

bool HloInstruction::HasSideEffect() const {
  return opcode_ == HloOpcode::kCustomCall && custom_call_has_side_effect();
}

const OpMetadata& HloInstruction::metadata() const {
  static const OpMetadata* const kNone = new OpMetadata();
  return metadata_ != nullptr ? *metadata_ : *kNone;
}

void HloInstruction::set_metadata(OpMetadata metadata) {
  set_shared_metadata(metadata.empty() ? nullptr : std::make_shared<const OpMetadata>(std::move(metadata)));
}

void HloInstruction::set_shared_metadata(std::shared_ptr<const OpMetadata> metadata) {
  if (metadata != nullptr && metadata->empty()) metadata = nullptr;
  metadata_ = std::move(metadata);
}

const HloInstruction::Attrs& HloInstruction::attrs() const {
  static const Attrs* const kEmpty = new Attrs();
  return attrs_ ? *attrs_ : *kEmpty;
}

HloInstruction::Attrs& HloInstruction::mutable_attrs() {
  if (!attrs_) attrs_ = std::make_unique<Attrs>();
  return *attrs_;
}

void HloInstruction::set_dimensions(absl::Span<const int64_t> dims) {
  dimensions_.assign(dims.begin(), dims.end());
  MarkAttr(HloAttr::kDimensions);
}

void HloInstruction::set_tuple_index(int64_t i) {
  int_attr_ = i;
  MarkAttr(HloAttr::kIndex);
}

void HloInstruction::set_iota_dimension(int64_t d) {
  int_attr_ = d;
  MarkAttr(HloAttr::kIotaDimension);
}

void HloInstruction::set_comparison_direction(ComparisonDirection d) {
  direction_ = d;
  MarkAttr(HloAttr::kDirection);
}

void HloInstruction::set_comparison_type(ComparisonType t) {
  comparison_type_ = t;
  if (t == ComparisonType::kDefault) {
    ClearAttr(HloAttr::kCompareType);
  } else {
    MarkAttr(HloAttr::kCompareType);
  }
}

void HloInstruction::set_slice(SliceConfig slice) {
  mutable_attrs().slice = std::move(slice);
  MarkAttr(HloAttr::kSlice);
}

void HloInstruction::set_dynamic_slice_sizes(std::vector<int64_t> sizes) {
  mutable_attrs().dynamic_slice_sizes = std::move(sizes);
  MarkAttr(HloAttr::kDynamicSliceSizes);
}

void HloInstruction::set_padding_config(PaddingConfig padding) {
  mutable_attrs().padding = std::move(padding);
  MarkAttr(HloAttr::kPadding);
}

void HloInstruction::set_dot_dimension_numbers(DotDimensionNumbers dnums) {
  // As XLA prints: contracting dims always, batch dims only when there are some.
  const bool lhs_batch = !dnums.lhs_batch_dims.empty() || HasAttr(HloAttr::kLhsBatchDims);
  const bool rhs_batch = !dnums.rhs_batch_dims.empty() || HasAttr(HloAttr::kRhsBatchDims);
  mutable_attrs().dot = std::move(dnums);
  MarkAttr(HloAttr::kLhsContractingDims);
  MarkAttr(HloAttr::kRhsContractingDims);
  if (lhs_batch) MarkAttr(HloAttr::kLhsBatchDims);
  if (rhs_batch) MarkAttr(HloAttr::kRhsBatchDims);
}

void HloInstruction::set_window(Window window) {
  mutable_attrs().window = std::move(window);
  MarkAttr(HloAttr::kWindow);
}

void HloInstruction::set_convolution_dimension_numbers(ConvolutionDimensionNumbers dnums) {
  mutable_attrs().conv = std::move(dnums);
  MarkAttr(HloAttr::kDimLabels);
}

void HloInstruction::set_feature_group_count(int64_t n) {
  mutable_attrs().feature_group_count = n;
  if (n != 1) MarkAttr(HloAttr::kFeatureGroupCount);
}

void HloInstruction::set_batch_group_count(int64_t n) {
  mutable_attrs().batch_group_count = n;
  if (n != 1) MarkAttr(HloAttr::kBatchGroupCount);
}

void HloInstruction::set_precision_config(PrecisionConfig config) {
  mutable_attrs().precision_config = config;
  if (config.IsDefault()) {
    ClearAttr(HloAttr::kOperandPrecision);
  } else {
    MarkAttr(HloAttr::kOperandPrecision);
  }
}

void HloInstruction::set_gather_dimension_numbers(GatherDimensionNumbers dnums) {
  mutable_attrs().gather = std::move(dnums);
  MarkAttr(HloAttr::kOffsetDims);
  MarkAttr(HloAttr::kCollapsedSliceDims);
  MarkAttr(HloAttr::kStartIndexMap);
  MarkAttr(HloAttr::kIndexVectorDim);
}

void HloInstruction::set_gather_slice_sizes(std::vector<int64_t> sizes) {
  mutable_attrs().gather_slice_sizes = std::move(sizes);
  MarkAttr(HloAttr::kSliceSizes);
}

void HloInstruction::set_scatter_dimension_numbers(ScatterDimensionNumbers dnums) {
  mutable_attrs().scatter = std::move(dnums);
  MarkAttr(HloAttr::kUpdateWindowDims);
  MarkAttr(HloAttr::kInsertedWindowDims);
  MarkAttr(HloAttr::kScatterDimsToOperandDims);
  MarkAttr(HloAttr::kIndexVectorDim);
}

void HloInstruction::set_is_stable(bool stable) {
  mutable_attrs().is_stable = stable;
  if (stable) {
    MarkAttr(HloAttr::kIsStable);
  } else {
    ClearAttr(HloAttr::kIsStable);
  }
}

void HloInstruction::set_reduce_precision_bits(int32_t exponent_bits, int32_t mantissa_bits) {
  mutable_attrs().exponent_bits = exponent_bits;
  mutable_attrs().mantissa_bits = mantissa_bits;
  MarkAttr(HloAttr::kExponentBits);
  MarkAttr(HloAttr::kMantissaBits);
}

void HloInstruction::set_rng_algorithm(RandomAlgorithm algorithm) {
  mutable_attrs().rng_algorithm = algorithm;
  MarkAttr(HloAttr::kAlgorithm);
}

void HloInstruction::set_fusion_kind(FusionKind kind) {
  fusion_kind_ = kind;
  MarkAttr(HloAttr::kFusionKind);
}

void HloInstruction::set_custom_call_target(std::string target) {
  mutable_attrs().custom_call_target = std::move(target);
  MarkAttr(HloAttr::kCustomCallTarget);
}

void HloInstruction::set_custom_call_has_side_effect(bool v) {
  mutable_attrs().custom_call_has_side_effect = v;
  if (v) {
    MarkAttr(HloAttr::kCustomCallHasSideEffect);
  } else {
    ClearAttr(HloAttr::kCustomCallHasSideEffect);
  }
}

void HloInstruction::set_backend_config(std::string config) {
  mutable_attrs().backend_config = std::move(config);
  if (attrs_->backend_config.empty()) {
    ClearAttr(HloAttr::kBackendConfig);
  } else {
    MarkAttr(HloAttr::kBackendConfig);
  }
}

void HloInstruction::set_channel_id(int64_t id) {
  mutable_attrs().channel_id = id;
  MarkAttr(HloAttr::kChannelId);
}

void HloInstruction::set_replica_groups(ReplicaGroups groups) {
  mutable_attrs().replica_groups = std::move(groups);
  MarkAttr(HloAttr::kReplicaGroups);
}

void HloInstruction::set_use_global_device_ids(bool v) {
  mutable_attrs().use_global_device_ids = v;
  if (v) {
    MarkAttr(HloAttr::kUseGlobalDeviceIds);
  } else {
    ClearAttr(HloAttr::kUseGlobalDeviceIds);
  }
}

void HloInstruction::set_source_target_pairs(SourceTargetPairs pairs) {
  mutable_attrs().source_target_pairs = std::move(pairs);
  MarkAttr(HloAttr::kSourceTargetPairs);
}

void HloInstruction::set_mxu_tiling(MxuTiling tiling) {
  mutable_attrs().mxu_tiling = std::move(tiling);
  MarkAttr(HloAttr::kMxuTiling);
}

void HloInstruction::set_vmem_tiling(VmemTiling tiling) {
  mutable_attrs().vmem_tiling = std::move(tiling);
  MarkAttr(HloAttr::kVmemTiling);
}

void HloInstruction::SetCalled(HloAttr attr, size_t slot, HloComputation* c) {
  if (called_.size() <= slot) called_.resize(slot + 1, nullptr);
  called_[slot] = c;
  MarkAttr(attr);
  if (parent_ != nullptr) parent_->CallGraphChanged();
}

void HloInstruction::set_branch_computations(std::vector<HloComputation*> branches) {
  called_.assign(branches.begin(), branches.end());
  MarkAttr(HloAttr::kBranchComputations);
  if (parent_ != nullptr) parent_->CallGraphChanged();
}

void HloInstruction::set_fused_computation(HloComputation* c) {
  SetCalled(HloAttr::kCalls, 0, c);
  if (c != nullptr) c->SetFusionInstruction(this);
}

void HloInstruction::ReplaceCalledComputation(HloComputation* old_computation,
                                              HloComputation* replacement) {
  for (HloComputation*& c : called_) {
    if (c == old_computation) c = replacement;
  }
  if (opcode_ == HloOpcode::kFusion && replacement != nullptr) {
    replacement->SetFusionInstruction(this);
  }
  if (parent_ != nullptr) parent_->CallGraphChanged();
}

bool HloInstruction::IdenticalIgnoringOperands(const HloInstruction& other) const {
  if (opcode_ != other.opcode_ || !(shape_ == other.shape_) ||
      attr_mask_ != other.attr_mask_ || called_ != other.called_ ||
      operand_count() != other.operand_count()) {
    return false;
  }
  if (opcode_ == HloOpcode::kParameter) return int_attr_ == other.int_attr_;
  if (opcode_ == HloOpcode::kConstant && !(literal() == other.literal())) return false;
  // Attribute by attribute, stopping at the first difference; a collective's device lists are
  // compared as data: printing a pod-wide collective's replica groups or source-target pairs
  // (18432 devices on a v7 pod) for every comparison was most of CSE's time in planning it.
  for (int a = 0; a < kNumHloAttrs; ++a) {
    const HloAttr attr = static_cast<HloAttr>(a);
    if (!HasAttr(attr)) continue;
    if (attr == HloAttr::kReplicaGroups) {
      if (replica_groups() != other.replica_groups()) return false;
    } else if (attr == HloAttr::kSourceTargetPairs) {
      if (source_target_pairs() != other.source_target_pairs()) return false;
    } else {
      const HloAttrInfo& info = GetHloAttrInfo(attr);
      if (info.print(*this) != info.print(other)) return false;
    }
  }
  return true;
}

}  // namespace jx::hlo
