// HloInstruction: one node of an HLO computation: a unique name, an opcode, a result
// shape, operands (with users tracked in reverse), called computations and typed,
// op-specific attributes. Attributes are keyed by HloAttr; the key's text name and its
// print/parse functions live in one table (hlo_attr_table.h), so printer and parser stay
// generic. Instructions are created through HloBuilder (which infers shapes) or the parser,
// and owned by their HloComputation.
//
//   HloInstruction* add = builder.Add(x, y).value();
//   add->ToString();    // "%add.3 = f32[8]{0} add(f32[8]{0} %x, f32[8]{0} %y)"
//   add->users();       // instructions that read add
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/hlo_attributes.h"
#include "jx/compiler/hlo/hlo_tiling_attributes.h"
#include "jx/compiler/hlo/literal.h"
#include "jx/compiler/hlo/opcode.h"
#include "jx/compiler/hlo/shape.h"

namespace jx::hlo {

class HloComputation;
class HloModule;

// Attribute keys, in the order they print. Names are in hlo_attr_table.cc.
enum class HloAttr : uint8_t {
  kDirection, kCompareType, kChannelId, kReplicaGroups, kSourceTargetPairs, kDimensions,
  kUseGlobalDeviceIds, kSlice, kDynamicSliceSizes, kPadding,
  kIotaDimension, kIndex, kExponentBits, kMantissaBits,
  kLhsBatchDims, kLhsContractingDims, kRhsBatchDims, kRhsContractingDims,
  kWindow, kDimLabels, kFeatureGroupCount, kBatchGroupCount, kOperandPrecision,
  kOffsetDims, kCollapsedSliceDims, kStartIndexMap,
  kUpdateWindowDims, kInsertedWindowDims, kScatterDimsToOperandDims,
  kIndexVectorDim, kSliceSizes, kIsStable, kAlgorithm, kFusionKind,
  kCalls, kToApply, kCondition, kBody, kSelect, kScatter, kBranchComputations,
  kMxuTiling, kVmemTiling,
  kCustomCallTarget, kCustomCallHasSideEffect, kBackendConfig,
};
inline constexpr int kNumHloAttrs = static_cast<int>(HloAttr::kBackendConfig) + 1;

struct HloPrintOptions {
  // "add(f32[8]{0} %x, ...)" vs the short "add(%x, ...)".
  bool print_operand_shapes = true;
  bool print_metadata = true;
  static HloPrintOptions ShortParsable() { return {false, true}; }
};

class HloInstruction;
// XLA's InstructionVector: most instructions have one or two operands and users, held
// inside the instruction rather than in a heap block of their own.
using InstructionVector = absl::InlinedVector<HloInstruction*, 2>;
// A while's condition and body, a scatter's select and scatter: at most two but conditionals.
using ComputationVector = absl::InlinedVector<HloComputation*, 2>;

// Cache-line aligned, so the fields walks read (see the members) span two lines, not three.
class alignas(64) HloInstruction {
 public:
  // A detached instruction; HloComputation::AddInstruction adopts it and links users.
  static std::unique_ptr<HloInstruction> Create(HloOpcode opcode, Shape shape,
                                                absl::Span<HloInstruction* const> operands);
  ~HloInstruction();
  // Instructions come from a slab (hlo_instruction_slab.cc): consecutive allocations are
  // adjacent (once the slots freed before are used up), so walks in creation order read
  // memory in sequence.
  static void* operator new(std::size_t size, std::align_val_t alignment);
  static void operator delete(void* p, std::size_t size, std::align_val_t alignment);
  HloInstruction(const HloInstruction&) = delete;
  HloInstruction& operator=(const HloInstruction&) = delete;

  HloOpcode opcode() const { return opcode_; }
  const Shape& shape() const { return shape_; }
  Shape* mutable_shape() { return &shape_; }
  const std::string& name() const { return name_; }
  int64_t unique_id() const { return unique_id_; }
  HloComputation* parent() const { return parent_; }
  bool IsRoot() const;

  const InstructionVector& operands() const { return operands_; }
  HloInstruction* mutable_operand(int64_t i) const { return operands_[i]; }
  const HloInstruction* operand(int64_t i) const { return operands_[i]; }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  // Distinct users, in order of first use.
  const InstructionVector& users() const { return users_; }
  int64_t user_count() const { return static_cast<int64_t>(users_.size()); }
  // Whether user is in users(); constant time however many users there are.
  bool HasUser(const HloInstruction* user) const;
  bool IsUserOf(const HloInstruction* operand) const;

  // Operand edits keep users consistent and require a compatible shape.
  absl::Status ReplaceOperandWith(int64_t index, HloInstruction* new_operand);
  // Points every user (and the computation root, if this is it) at new_producer.
  absl::Status ReplaceAllUsesWith(HloInstruction* new_producer);
  absl::Status ReplaceUseWith(HloInstruction* user, HloInstruction* new_producer);
  void AppendOperand(HloInstruction* operand);
  // Drops all operand edges (before removal).
  void DetachFromOperands();

  bool IsElementwise() const { return IsElementwiseOpcode(opcode_); }
  // Instructions DCE must keep even when unused.
  bool HasSideEffect() const;

  // --- Attributes. Setters mark the attribute present, so it prints. ---
  bool HasAttr(HloAttr attr) const { return (attr_mask_ >> static_cast<int>(attr)) & 1; }
  void ClearAttr(HloAttr attr) { attr_mask_ &= ~(uint64_t{1} << static_cast<int>(attr)); }

  // broadcast/reduce/transpose/reverse/concatenate/sort/map dimensions.
  absl::Span<const int64_t> dimensions() const { return dimensions_; }
  int64_t dimensions(int64_t i) const { return dimensions_[i]; }
  void set_dimensions(absl::Span<const int64_t> dims);
  int64_t concatenate_dimension() const { return dimensions_.at(0); }
  int64_t sort_dimension() const { return dimensions_.at(0); }

  int64_t parameter_number() const { return int_attr_; }
  void set_parameter_number(int64_t n) { int_attr_ = n; }
  int64_t tuple_index() const { return int_attr_; }
  void set_tuple_index(int64_t i);
  int64_t iota_dimension() const { return int_attr_; }
  void set_iota_dimension(int64_t d);

  const Literal& literal() const { return attrs().literal; }
  void set_literal(Literal literal) { mutable_attrs().literal = std::move(literal); }

  ComparisonDirection comparison_direction() const { return direction_; }
  void set_comparison_direction(ComparisonDirection d);
  ComparisonType comparison_type() const { return comparison_type_; }
  void set_comparison_type(ComparisonType t);

  const SliceConfig& slice() const { return attrs().slice; }
  const std::vector<int64_t>& slice_starts() const { return attrs().slice.starts; }
  const std::vector<int64_t>& slice_limits() const { return attrs().slice.limits; }
  const std::vector<int64_t>& slice_strides() const { return attrs().slice.strides; }
  void set_slice(SliceConfig slice);

  const std::vector<int64_t>& dynamic_slice_sizes() const { return attrs().dynamic_slice_sizes; }
  void set_dynamic_slice_sizes(std::vector<int64_t> sizes);

  const PaddingConfig& padding_config() const { return attrs().padding; }
  void set_padding_config(PaddingConfig padding);

  const DotDimensionNumbers& dot_dimension_numbers() const { return attrs().dot; }
  void set_dot_dimension_numbers(DotDimensionNumbers dnums);

  const Window& window() const { return attrs().window; }
  void set_window(Window window);
  const ConvolutionDimensionNumbers& convolution_dimension_numbers() const {
    return attrs().conv;
  }
  void set_convolution_dimension_numbers(ConvolutionDimensionNumbers dnums);
  int64_t feature_group_count() const { return attrs().feature_group_count; }
  void set_feature_group_count(int64_t n);
  int64_t batch_group_count() const { return attrs().batch_group_count; }
  void set_batch_group_count(int64_t n);
  // dot/convolution: per-operand precision; printed only when not all default.
  const PrecisionConfig& precision_config() const { return attrs().precision_config; }
  void set_precision_config(PrecisionConfig config);

  const GatherDimensionNumbers& gather_dimension_numbers() const { return attrs().gather; }
  void set_gather_dimension_numbers(GatherDimensionNumbers dnums);
  const std::vector<int64_t>& gather_slice_sizes() const { return attrs().gather_slice_sizes; }
  void set_gather_slice_sizes(std::vector<int64_t> sizes);
  const ScatterDimensionNumbers& scatter_dimension_numbers() const { return attrs().scatter; }
  void set_scatter_dimension_numbers(ScatterDimensionNumbers dnums);

  bool is_stable() const { return attrs().is_stable; }
  void set_is_stable(bool stable);
  int32_t exponent_bits() const { return attrs().exponent_bits; }
  int32_t mantissa_bits() const { return attrs().mantissa_bits; }
  void set_reduce_precision_bits(int32_t exponent_bits, int32_t mantissa_bits);
  RandomAlgorithm rng_algorithm() const { return attrs().rng_algorithm; }
  void set_rng_algorithm(RandomAlgorithm algorithm);
  FusionKind fusion_kind() const { return fusion_kind_; }
  void set_fusion_kind(FusionKind kind);

  const std::string& custom_call_target() const { return attrs().custom_call_target; }
  void set_custom_call_target(std::string target);
  bool custom_call_has_side_effect() const { return attrs().custom_call_has_side_effect; }
  void set_custom_call_has_side_effect(bool v);
  // Opaque per-backend configuration (custom-call options, fusion tiling, ...).
  const std::string& backend_config() const { return attrs().backend_config; }
  void set_backend_config(std::string config);

  // TPU tiling plans (hlo_tiling_attributes.h): how a dot/conv maps onto the MXUs, how a
  // kernel is split into VMEM-sized grid steps. They plan, never change the values.
  bool has_mxu_tiling() const { return HasAttr(HloAttr::kMxuTiling); }
  const MxuTiling& mxu_tiling() const { return attrs().mxu_tiling; }
  void set_mxu_tiling(MxuTiling tiling);
  bool has_vmem_tiling() const { return HasAttr(HloAttr::kVmemTiling); }
  const VmemTiling& vmem_tiling() const { return attrs().vmem_tiling; }
  void set_vmem_tiling(VmemTiling tiling);

  // Collectives (all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute).
  // channel_id: set on cross-partition collectives (XLA's channel); printed when set.
  bool has_channel_id() const { return HasAttr(HloAttr::kChannelId); }
  int64_t channel_id() const { return attrs().channel_id; }
  void set_channel_id(int64_t id);
  // The partition groups; empty: one group of every partition.
  const ReplicaGroups& replica_groups() const { return attrs().replica_groups; }
  void set_replica_groups(ReplicaGroups groups);
  // Whether replica_groups hold global device (partition) ids; printed when true.
  bool use_global_device_ids() const { return attrs().use_global_device_ids; }
  void set_use_global_device_ids(bool v);
  const SourceTargetPairs& source_target_pairs() const { return attrs().source_target_pairs; }
  void set_source_target_pairs(SourceTargetPairs pairs);
  // all-gather / reduce-scatter / all-to-all: the one dimension they gather, scatter or split.
  int64_t collective_dimension() const { return dimensions_.at(0); }

  // Metadata is shared, not copied: the instructions of one equation, an instruction's
  // clones and fusion's copies all point at one OpMetadata.
  const OpMetadata& metadata() const;
  void set_metadata(OpMetadata metadata);
  const std::shared_ptr<const OpMetadata>& shared_metadata() const { return metadata_; }
  // Null or empty: no metadata.
  void set_shared_metadata(std::shared_ptr<const OpMetadata> metadata);

  // --- Called computations. Slots by role: to_apply/calls/condition/select -> 0,
  // body/scatter -> 1, branch_computations -> all. ---
  const ComputationVector& called_computations() const { return called_; }
  HloComputation* to_apply() const { return CalledAt(0); }
  void set_to_apply(HloComputation* c) { SetCalled(HloAttr::kToApply, 0, c); }
  HloComputation* while_condition() const { return CalledAt(0); }
  void set_while_condition(HloComputation* c) { SetCalled(HloAttr::kCondition, 0, c); }
  HloComputation* while_body() const { return CalledAt(1); }
  void set_while_body(HloComputation* c) { SetCalled(HloAttr::kBody, 1, c); }
  HloComputation* select() const { return CalledAt(0); }
  void set_select(HloComputation* c) { SetCalled(HloAttr::kSelect, 0, c); }
  HloComputation* scatter() const { return CalledAt(1); }
  void set_scatter(HloComputation* c) { SetCalled(HloAttr::kScatter, 1, c); }
  const ComputationVector& branch_computations() const { return called_; }
  void set_branch_computations(std::vector<HloComputation*> branches);
  HloComputation* fused_instructions_computation() const { return CalledAt(0); }
  // Also marks the computation as this fusion's body.
  void set_fused_computation(HloComputation* c);
  // Retargets every reference to `old_computation` (used when cloning or merging).
  void ReplaceCalledComputation(HloComputation* old_computation, HloComputation* replacement);

  // "%name = shape opcode(operands), attrs"; ROOT-prefixed when it is its computation's root.
  std::string ToString(const HloPrintOptions& options = {}) const;
  // "f32[8]{0} %x" or "%x".
  std::string OperandsToString(const HloPrintOptions& options) const;
  // The ", key=value" attribute list (metadata included when asked).
  std::vector<std::string> ExtraAttributesToString(const HloPrintOptions& options) const;
  // Same opcode, shape and attributes (operands not compared): the CSE test.
  bool IdenticalIgnoringOperands(const HloInstruction& other) const;

 private:
  friend class HloComputation;
  friend class HloModule;  // Clone
  // The attributes few opcodes have, allocated on first set, so the fields every
  // instruction carries stay few.
  struct Attrs {
    Literal literal;
    SliceConfig slice;
    std::vector<int64_t> dynamic_slice_sizes;
    PaddingConfig padding;
    DotDimensionNumbers dot;
    Window window;
    ConvolutionDimensionNumbers conv;
    GatherDimensionNumbers gather;
    std::vector<int64_t> gather_slice_sizes;
    ScatterDimensionNumbers scatter;
    std::string custom_call_target, backend_config;
    ReplicaGroups replica_groups;
    SourceTargetPairs source_target_pairs;
    MxuTiling mxu_tiling;
    VmemTiling vmem_tiling;
    int64_t feature_group_count = 1;
    int64_t batch_group_count = 1;
    int64_t channel_id = 0;
    int32_t exponent_bits = 0;
    int32_t mantissa_bits = 0;
    RandomAlgorithm rng_algorithm = RandomAlgorithm::kDefault;
    PrecisionConfig precision_config;
    bool is_stable = false;
    bool custom_call_has_side_effect = false;
    bool use_global_device_ids = false;
  };

  HloInstruction(HloOpcode opcode, Shape shape) : opcode_(opcode), shape_(std::move(shape)) {}
  // A detached copy of opcode, shape, attributes and metadata: no name, id, parent, operand
  // or user edges, and the called computations still the original's (HloModule::Clone
  // remaps them).
  std::unique_ptr<HloInstruction> CloneDetached() const;
  const Attrs& attrs() const;
  Attrs& mutable_attrs();
  void MarkAttr(HloAttr attr) { attr_mask_ |= uint64_t{1} << static_cast<int>(attr); }
  HloComputation* CalledAt(size_t slot) const {
    return slot < called_.size() ? called_[slot] : nullptr;
  }
  void SetCalled(HloAttr attr, size_t slot, HloComputation* c);
  void AddUser(HloInstruction* user);
  void RemoveUser(HloInstruction* user);

  // What graph walks read first, then the rest: on a big module every field a walk
  // touches beyond the first cache lines is a miss. Bytes 0-119 (two lines) hold the
  // opcode, position, parent, id, operands, users and the shape's element type and dims;
  // the layout, attributes, called computations, name and metadata follow.
  HloOpcode opcode_;
  FusionKind fusion_kind_ = FusionKind::kLoop;
  ComparisonDirection direction_ = ComparisonDirection::kEq;
  ComparisonType comparison_type_ = ComparisonType::kDefault;
  uint32_t position_ = 0;  // slot in parent_'s instruction list
  HloComputation* parent_ = nullptr;
  int64_t unique_id_ = -1;
  InstructionVector operands_;
  InstructionVector users_;
  Shape shape_;
  uint64_t attr_mask_ = 0;
  int64_t int_attr_ = 0;  // parameter_number, tuple_index or iota_dimension
  ComputationVector called_;
  // Broadcast, reduce and transpose dims of rank <= 2 programs stay inline.
  absl::InlinedVector<int64_t, 2> dimensions_;
  std::string name_;
  // users_ as a set once it is long (a constant or broadcast shared by a whole program), so
  // adding, finding and removing users stays cheap; null while users_ is short.
  std::unique_ptr<absl::flat_hash_set<const HloInstruction*>> user_set_;
  std::unique_ptr<Attrs> attrs_;
  std::shared_ptr<const OpMetadata> metadata_;  // null: none
};

}  // namespace jx::hlo
