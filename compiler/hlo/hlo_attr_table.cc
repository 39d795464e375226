#include "jx/compiler/hlo/hlo_attr_table.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

absl::Status BadValue(std::string_view what, std::string_view value) {
  return absl::InvalidArgumentError(StrCat("bad ", what, " \"", value, "\""));
}

absl::StatusOr<int64_t> ParseInt(std::string_view s, std::string_view what) {
  int64_t v;
  if (!SimpleAtoi(StripAsciiWhitespace(s), &v)) return BadValue(what, s);
  return v;
}

absl::StatusOr<bool> ParseBool(std::string_view s, std::string_view what) {
  s = StripAsciiWhitespace(s);
  if (s == "true") return true;
  if (s == "false") return false;
  return BadValue(what, s);
}

std::string ComputationRef(const HloComputation* c) {
  return c == nullptr ? "%<null>" : StrCat("%", c->name());
}

// Table rows built from small lambdas; `+[]` makes them plain function pointers.
#define HLO_INT_LIST_ATTR(key, getter, setter_body)                                        \
  {key, +[](const HloInstruction& i) { return IntListToString(getter); },                 \
   +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {      \
     absl::StatusOr<std::vector<int64_t>> list = ParseIntList(v);                          \
     if (!list.ok()) return list.status();                                                 \
     setter_body;                                                                          \
     return absl::OkStatus();                                                              \
   }}

#define HLO_COMPUTATION_ATTR(key, getter, setter)                                          \
  {key, +[](const HloInstruction& i) { return ComputationRef(i.getter()); },              \
   +[](std::string_view v, HloInstruction* i, ComputationResolver resolve) -> absl::Status { \
     absl::StatusOr<HloComputation*> c = resolve(StripAsciiWhitespace(v));          \
     if (!c.ok()) return c.status();                                                       \
     i->setter(*c);                                                                        \
     return absl::OkStatus();                                                              \
   }}

const HloAttrInfo kAttrTable[] = {
    {"direction",
     +[](const HloInstruction& i) {
       return std::string(ComparisonDirectionToString(i.comparison_direction()));
     },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<ComparisonDirection> d = ParseComparisonDirection(v);
       if (!d.ok()) return d.status();
       i->set_comparison_direction(*d);
       return absl::OkStatus();
     }},
    {"type",
     +[](const HloInstruction& i) {
       return std::string(ComparisonTypeToString(i.comparison_type()));
     },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<ComparisonType> t = ParseComparisonType(v);
       if (!t.ok()) return t.status();
       i->set_comparison_type(*t);
       return absl::OkStatus();
     }},
    {"channel_id", +[](const HloInstruction& i) { return StrCat(i.channel_id()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<int64_t> id = ParseInt(v, "channel_id");
       if (!id.ok()) return id.status();
       i->set_channel_id(*id);
       return absl::OkStatus();
     }},
    {"replica_groups", +[](const HloInstruction& i) { return ReplicaGroupsToString(i.replica_groups()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<ReplicaGroups> g = ParseReplicaGroups(v);
       if (!g.ok()) return g.status();
       i->set_replica_groups(*std::move(g));
       return absl::OkStatus();
     }},
    {"source_target_pairs",
     +[](const HloInstruction& i) { return SourceTargetPairsToString(i.source_target_pairs()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<SourceTargetPairs> p = ParseSourceTargetPairs(v);
       if (!p.ok()) return p.status();
       i->set_source_target_pairs(*std::move(p));
       return absl::OkStatus();
     }},
    HLO_INT_LIST_ATTR("dimensions", i.dimensions(), i->set_dimensions(*std::move(list))),
    {"use_global_device_ids",
     +[](const HloInstruction& i) { return std::string(i.use_global_device_ids() ? "true" : "false"); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<bool> b = ParseBool(v, "use_global_device_ids");
       if (!b.ok()) return b.status();
       i->set_use_global_device_ids(*b);
       return absl::OkStatus();
     }},
    {"slice", +[](const HloInstruction& i) { return SliceConfigToString(i.slice()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<SliceConfig> s = ParseSliceConfig(v);
       if (!s.ok()) return s.status();
       i->set_slice(*std::move(s));
       return absl::OkStatus();
     }},
    HLO_INT_LIST_ATTR("dynamic_slice_sizes", i.dynamic_slice_sizes(),
                      i->set_dynamic_slice_sizes(*std::move(list))),
    {"padding", +[](const HloInstruction& i) { return PaddingConfigToString(i.padding_config()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<PaddingConfig> p = ParsePaddingConfig(v);
       if (!p.ok()) return p.status();
       i->set_padding_config(*std::move(p));
       return absl::OkStatus();
     }},
    {"iota_dimension", +[](const HloInstruction& i) { return StrCat(i.iota_dimension()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<int64_t> d = ParseInt(v, "iota_dimension");
       if (!d.ok()) return d.status();
       i->set_iota_dimension(*d);
       return absl::OkStatus();
     }},
    {"index", +[](const HloInstruction& i) { return StrCat(i.tuple_index()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<int64_t> d = ParseInt(v, "index");
       if (!d.ok()) return d.status();
       i->set_tuple_index(*d);
       return absl::OkStatus();
     }},
    {"exponent_bits", +[](const HloInstruction& i) { return StrCat(i.exponent_bits()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<int64_t> d = ParseInt(v, "exponent_bits");
       if (!d.ok()) return d.status();
       i->set_reduce_precision_bits(static_cast<int32_t>(*d), i->mantissa_bits());
       return absl::OkStatus();
     }},
    {"mantissa_bits", +[](const HloInstruction& i) { return StrCat(i.mantissa_bits()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<int64_t> d = ParseInt(v, "mantissa_bits");
       if (!d.ok()) return d.status();
       i->set_reduce_precision_bits(i->exponent_bits(), static_cast<int32_t>(*d));
       return absl::OkStatus();
     }},
    // Dot dims parse one list at a time into the instruction's dimension numbers.
    HLO_INT_LIST_ATTR("lhs_batch_dims", i.dot_dimension_numbers().lhs_batch_dims, {
      DotDimensionNumbers d = i->dot_dimension_numbers();
      d.lhs_batch_dims = *std::move(list);
      i->set_dot_dimension_numbers(std::move(d));
    }),
    HLO_INT_LIST_ATTR("lhs_contracting_dims", i.dot_dimension_numbers().lhs_contracting_dims, {
      DotDimensionNumbers d = i->dot_dimension_numbers();
      d.lhs_contracting_dims = *std::move(list);
      i->set_dot_dimension_numbers(std::move(d));
    }),
    HLO_INT_LIST_ATTR("rhs_batch_dims", i.dot_dimension_numbers().rhs_batch_dims, {
      DotDimensionNumbers d = i->dot_dimension_numbers();
      d.rhs_batch_dims = *std::move(list);
      i->set_dot_dimension_numbers(std::move(d));
    }),
    HLO_INT_LIST_ATTR("rhs_contracting_dims", i.dot_dimension_numbers().rhs_contracting_dims, {
      DotDimensionNumbers d = i->dot_dimension_numbers();
      d.rhs_contracting_dims = *std::move(list);
      i->set_dot_dimension_numbers(std::move(d));
    }),
    {"window", +[](const HloInstruction& i) { return WindowToString(i.window()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<Window> w = ParseWindow(v);
       if (!w.ok()) return w.status();
       i->set_window(*std::move(w));
       return absl::OkStatus();
     }},
    {"dim_labels",
     +[](const HloInstruction& i) {
       return ConvolutionDimensionNumbersToString(i.convolution_dimension_numbers());
     },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<ConvolutionDimensionNumbers> d = ParseConvolutionDimensionNumbers(v);
       if (!d.ok()) return d.status();
       i->set_convolution_dimension_numbers(*std::move(d));
       return absl::OkStatus();
     }},
    {"feature_group_count",
     +[](const HloInstruction& i) { return StrCat(i.feature_group_count()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<int64_t> n = ParseInt(v, "feature_group_count");
       if (!n.ok()) return n.status();
       i->set_feature_group_count(*n);
       return absl::OkStatus();
     }},
    {"batch_group_count",
     +[](const HloInstruction& i) { return StrCat(i.batch_group_count()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<int64_t> n = ParseInt(v, "batch_group_count");
       if (!n.ok()) return n.status();
       i->set_batch_group_count(*n);
       return absl::OkStatus();
     }},
    {"operand_precision",
     +[](const HloInstruction& i) { return PrecisionConfigToString(i.precision_config()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       if (i->opcode() != HloOpcode::kDot && i->opcode() != HloOpcode::kConvolution) {
         return absl::InvalidArgumentError(StrCat("operand_precision on ",
                                                  HloOpcodeString(i->opcode()),
                                                  "; only dot and convolution have one"));
       }
       absl::StatusOr<PrecisionConfig> p = ParsePrecisionConfig(v);
       if (!p.ok()) return p.status();
       i->set_precision_config(*p);
       return absl::OkStatus();
     }},
    HLO_INT_LIST_ATTR("offset_dims", i.gather_dimension_numbers().offset_dims, {
      GatherDimensionNumbers d = i->gather_dimension_numbers();
      d.offset_dims = *std::move(list);
      i->set_gather_dimension_numbers(std::move(d));
    }),
    HLO_INT_LIST_ATTR("collapsed_slice_dims", i.gather_dimension_numbers().collapsed_slice_dims, {
      GatherDimensionNumbers d = i->gather_dimension_numbers();
      d.collapsed_slice_dims = *std::move(list);
      i->set_gather_dimension_numbers(std::move(d));
    }),
    HLO_INT_LIST_ATTR("start_index_map", i.gather_dimension_numbers().start_index_map, {
      GatherDimensionNumbers d = i->gather_dimension_numbers();
      d.start_index_map = *std::move(list);
      i->set_gather_dimension_numbers(std::move(d));
    }),
    HLO_INT_LIST_ATTR("update_window_dims", i.scatter_dimension_numbers().update_window_dims, {
      ScatterDimensionNumbers d = i->scatter_dimension_numbers();
      d.update_window_dims = *std::move(list);
      i->set_scatter_dimension_numbers(std::move(d));
    }),
    HLO_INT_LIST_ATTR("inserted_window_dims", i.scatter_dimension_numbers().inserted_window_dims,
                      {
                        ScatterDimensionNumbers d = i->scatter_dimension_numbers();
                        d.inserted_window_dims = *std::move(list);
                        i->set_scatter_dimension_numbers(std::move(d));
                      }),
    HLO_INT_LIST_ATTR("scatter_dims_to_operand_dims",
                      i.scatter_dimension_numbers().scatter_dims_to_operand_dims, {
                        ScatterDimensionNumbers d = i->scatter_dimension_numbers();
                        d.scatter_dims_to_operand_dims = *std::move(list);
                        i->set_scatter_dimension_numbers(std::move(d));
                      }),
    // Shared by gather and scatter; the opcode says whose dimension numbers it belongs to.
    {"index_vector_dim",
     +[](const HloInstruction& i) {
       return StrCat(i.opcode() == HloOpcode::kScatter
                               ? i.scatter_dimension_numbers().index_vector_dim
                               : i.gather_dimension_numbers().index_vector_dim);
     },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<int64_t> n = ParseInt(v, "index_vector_dim");
       if (!n.ok()) return n.status();
       if (i->opcode() == HloOpcode::kScatter) {
         ScatterDimensionNumbers d = i->scatter_dimension_numbers();
         d.index_vector_dim = *n;
         i->set_scatter_dimension_numbers(std::move(d));
       } else {
         GatherDimensionNumbers d = i->gather_dimension_numbers();
         d.index_vector_dim = *n;
         i->set_gather_dimension_numbers(std::move(d));
       }
       return absl::OkStatus();
     }},
    HLO_INT_LIST_ATTR("slice_sizes", i.gather_slice_sizes(),
                      i->set_gather_slice_sizes(*std::move(list))),
    {"is_stable", +[](const HloInstruction& i) { return std::string(i.is_stable() ? "true" : "false"); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<bool> b = ParseBool(v, "is_stable");
       if (!b.ok()) return b.status();
       i->set_is_stable(*b);
       return absl::OkStatus();
     }},
    {"algorithm",
     +[](const HloInstruction& i) { return std::string(RandomAlgorithmToString(i.rng_algorithm())); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<RandomAlgorithm> a = ParseRandomAlgorithm(v);
       if (!a.ok()) return a.status();
       i->set_rng_algorithm(*a);
       return absl::OkStatus();
     }},
    {"kind", +[](const HloInstruction& i) { return std::string(FusionKindToString(i.fusion_kind())); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<FusionKind> k = ParseFusionKind(v);
       if (!k.ok()) return k.status();
       i->set_fusion_kind(*k);
       return absl::OkStatus();
     }},
    HLO_COMPUTATION_ATTR("calls", fused_instructions_computation, set_fused_computation),
    HLO_COMPUTATION_ATTR("to_apply", to_apply, set_to_apply),
    HLO_COMPUTATION_ATTR("condition", while_condition, set_while_condition),
    HLO_COMPUTATION_ATTR("body", while_body, set_while_body),
    HLO_COMPUTATION_ATTR("select", select, set_select),
    HLO_COMPUTATION_ATTR("scatter", scatter, set_scatter),
    {"branch_computations",
     +[](const HloInstruction& i) {
       std::vector<std::string> names;
       for (const HloComputation* c : i.branch_computations()) names.push_back(ComputationRef(c));
       return StrCat("{", absl::StrJoin(names, ", "), "}");
     },
     +[](std::string_view v, HloInstruction* i, ComputationResolver resolve) -> absl::Status {
       std::string_view body = StripAsciiWhitespace(v);
       if (!ConsumePrefix(&body, "{") || !ConsumeSuffix(&body, "}")) {
         return BadValue("branch_computations", v);
       }
       std::vector<HloComputation*> branches;
       for (std::string_view name : StrSplit(body, ',', /*skip_empty=*/true)) {
         absl::StatusOr<HloComputation*> c = resolve(StripAsciiWhitespace(name));
         if (!c.ok()) return c.status();
         branches.push_back(*c);
       }
       i->set_branch_computations(std::move(branches));
       return absl::OkStatus();
     }},
    {"mxu_tiling", +[](const HloInstruction& i) { return MxuTilingToString(i.mxu_tiling()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<MxuTiling> t = ParseMxuTiling(v);
       if (!t.ok()) return t.status();
       i->set_mxu_tiling(*std::move(t));
       return absl::OkStatus();
     }},
    {"vmem_tiling", +[](const HloInstruction& i) { return VmemTilingToString(i.vmem_tiling()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<VmemTiling> t = ParseVmemTiling(v);
       if (!t.ok()) return t.status();
       i->set_vmem_tiling(*std::move(t));
       return absl::OkStatus();
     }},
    {"custom_call_target", +[](const HloInstruction& i) { return QuoteString(i.custom_call_target()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<std::string> s = ParseQuotedString(v);
       if (!s.ok()) return s.status();
       i->set_custom_call_target(*std::move(s));
       return absl::OkStatus();
     }},
    {"custom_call_has_side_effect",
     +[](const HloInstruction& i) {
       return std::string(i.custom_call_has_side_effect() ? "true" : "false");
     },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<bool> b = ParseBool(v, "custom_call_has_side_effect");
       if (!b.ok()) return b.status();
       i->set_custom_call_has_side_effect(*b);
       return absl::OkStatus();
     }},
    {"backend_config", +[](const HloInstruction& i) { return QuoteString(i.backend_config()); },
     +[](std::string_view v, HloInstruction* i, ComputationResolver) -> absl::Status {
       absl::StatusOr<std::string> s = ParseQuotedString(v);
       if (!s.ok()) return s.status();
       i->set_backend_config(*std::move(s));
       return absl::OkStatus();
     }},
};
static_assert(sizeof(kAttrTable) / sizeof(kAttrTable[0]) == kNumHloAttrs,
              "one table row per HloAttr, in enum order");

#undef HLO_INT_LIST_ATTR
#undef HLO_COMPUTATION_ATTR

}  // namespace

const HloAttrInfo& GetHloAttrInfo(HloAttr attr) { return kAttrTable[static_cast<int>(attr)]; }

std::optional<HloAttr> FindHloAttr(std::string_view key) {
  for (int i = 0; i < kNumHloAttrs; ++i) {
    if (kAttrTable[i].key == key) return static_cast<HloAttr>(i);
  }
  return std::nullopt;
}

}  // namespace jx::hlo
