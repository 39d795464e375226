// Typed attributes of HLO instructions, with their XLA text forms:
//   ComparisonDirection  "LT"              FusionKind   "kLoop"
//   PaddingConfig        "0_1_0x2_0_1"     (low_high[_interior] per dim, 'x' between dims)
//   Window               "{size=3x3 stride=1x1 pad=1_1x1_1 lhs_dilate=2x2 rhs_dilate=1x1}"
//   ConvolutionDimensionNumbers  "b01f_01io->b01f"
//   OpMetadata           "{op_type=\"sin\" op_name=\"jit(f)/sin\" source_file=\"f.cc\" source_line=3}"
//   PrecisionConfig      "{highest,default}"  (operand_precision of dot and convolution)
//   ReplicaGroups        "{{0,1},{2,3}}"   or XLA's iota form "[1152,16]<=[18432]"
//   SourceTargetPairs    "{{0,1},{1,0}}"   (collective-permute's sends)
// Each Parse* reads exactly what the matching *ToString writes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jx/compiler/hlo/replica_groups.h"

namespace jx::hlo {

enum class ComparisonDirection : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
std::string_view ComparisonDirectionToString(ComparisonDirection d);  // "EQ"
absl::StatusOr<ComparisonDirection> ParseComparisonDirection(std::string_view s);

// How compare orders values; kDefault means "derived from the element type".
enum class ComparisonType : uint8_t { kDefault, kFloat, kTotalOrder, kSigned, kUnsigned };
std::string_view ComparisonTypeToString(ComparisonType t);  // "TOTALORDER"
absl::StatusOr<ComparisonType> ParseComparisonType(std::string_view s);

enum class FusionKind : uint8_t { kLoop, kInput, kOutput, kCustom };
std::string_view FusionKindToString(FusionKind k);  // "kLoop"
absl::StatusOr<FusionKind> ParseFusionKind(std::string_view s);

enum class RandomAlgorithm : uint8_t { kDefault, kThreeFry, kPhilox };
std::string_view RandomAlgorithmToString(RandomAlgorithm a);  // "rng_three_fry"
absl::StatusOr<RandomAlgorithm> ParseRandomAlgorithm(std::string_view s);

// How precisely a dot or convolution multiplies an operand (XLA's PrecisionConfig::Precision).
// On a TPU, f32 operands go through the bf16 MXU: kDefault in one bf16 pass, kHigh in three,
// kHighest in six (f32-accurate). Targets that multiply in f32 (the CPU) ignore it.
enum class Precision : uint8_t { kDefault, kHigh, kHighest };
std::string_view PrecisionToString(Precision p);  // "highest", as XLA prints it
absl::StatusOr<Precision> ParsePrecision(std::string_view s);

// The per-operand precisions of a dot or convolution (lhs, rhs). All-default is the
// absent attribute: XLA omits `operand_precision=` then.
struct PrecisionConfig {
  std::array<Precision, 2> operand_precision = {Precision::kDefault, Precision::kDefault};
  bool IsDefault() const {
    return operand_precision[0] == Precision::kDefault &&
           operand_precision[1] == Precision::kDefault;
  }
  friend bool operator==(const PrecisionConfig&, const PrecisionConfig&) = default;
};
std::string PrecisionConfigToString(const PrecisionConfig& p);  // "{highest,highest}"
absl::StatusOr<PrecisionConfig> ParsePrecisionConfig(std::string_view s);

struct SliceConfig {
  std::vector<int64_t> starts, limits, strides;
  friend bool operator==(const SliceConfig&, const SliceConfig&) = default;
};
// "{[0:4], [1:3]}", strides printed only when one differs from 1: "{[0:4:2]}".
std::string SliceConfigToString(const SliceConfig& s);
absl::StatusOr<SliceConfig> ParseSliceConfig(std::string_view s);

struct PaddingDim {
  int64_t low = 0, high = 0, interior = 0;
  friend bool operator==(const PaddingDim&, const PaddingDim&) = default;
};
using PaddingConfig = std::vector<PaddingDim>;
std::string PaddingConfigToString(const PaddingConfig& p);
absl::StatusOr<PaddingConfig> ParsePaddingConfig(std::string_view s);

struct DotDimensionNumbers {
  std::vector<int64_t> lhs_batch_dims, rhs_batch_dims;
  std::vector<int64_t> lhs_contracting_dims, rhs_contracting_dims;
  friend bool operator==(const DotDimensionNumbers&, const DotDimensionNumbers&) = default;
};

struct WindowDim {
  int64_t size = 1, stride = 1, pad_low = 0, pad_high = 0;
  int64_t lhs_dilation = 1, rhs_dilation = 1;
  friend bool operator==(const WindowDim&, const WindowDim&) = default;
};
using Window = std::vector<WindowDim>;
// Fields that are trivial in every dim are left out, as XLA does.
std::string WindowToString(const Window& w);
absl::StatusOr<Window> ParseWindow(std::string_view s);

// A window that makes reduce-window a running scan along one axis (how cumulative ops lower):
// size n over an axis of n elements, stride 1, n-1 padding on one side, trivial elsewhere.
// Output i then reduces the prefix [0, i] (or, reversed, the suffix [i, n)), so evaluators
// can fold it in O(n) instead of O(n^2).
struct ScanWindow {
  int64_t axis = 0;
  bool reverse = false;
};
std::optional<ScanWindow> AsScanWindow(const Window& w, absl::Span<const int64_t> base_dims);

struct ConvolutionDimensionNumbers {
  int64_t input_batch_dimension = 0, input_feature_dimension = 0;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 0, kernel_output_feature_dimension = 0;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0, output_feature_dimension = 0;
  std::vector<int64_t> output_spatial_dimensions;
  friend bool operator==(const ConvolutionDimensionNumbers&,
                         const ConvolutionDimensionNumbers&) = default;
};
// "b01f_01io->b01f": for each dim of input/kernel/output, its role ('b', 'f', 'i', 'o', or
// the spatial index).
std::string ConvolutionDimensionNumbersToString(const ConvolutionDimensionNumbers& d);
absl::StatusOr<ConvolutionDimensionNumbers> ParseConvolutionDimensionNumbers(std::string_view s);

struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  int64_t index_vector_dim = 0;
  friend bool operator==(const GatherDimensionNumbers&, const GatherDimensionNumbers&) = default;
};

struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  friend bool operator==(const ScatterDimensionNumbers&,
                         const ScatterDimensionNumbers&) = default;
};

struct OpMetadata {
  std::string op_type, op_name, source_file;
  int64_t source_line = 0;
  bool empty() const { return op_type.empty() && op_name.empty() && source_file.empty(); }
  friend bool operator==(const OpMetadata&, const OpMetadata&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const OpMetadata& m) {
    return H::combine(std::move(h), m.op_type, m.op_name, m.source_file, m.source_line);
  }
};
std::string OpMetadataToString(const OpMetadata& m);  // "{op_name=\"...\"}"
absl::StatusOr<OpMetadata> ParseOpMetadata(std::string_view s);

// The groups of partitions a collective runs over (replica_groups.h): each group exchanges
// data among its members, in the listed order (all-gather concatenates in that order). Empty:
// one group of every partition.
// "{{0,1},{2,3}}"; groups of more than 64 ids in the iota form print in XLA's iota form,
// "[576,16]<=[9216]" or "[144,64]<=[9,64,16]T(0,2,1)".
std::string ReplicaGroupsToString(const ReplicaGroups& groups);
// Reads "{{0,1},{2,3}}", "{}" and the iota form "[G,S]<=[d0,d1,...]" optionally followed by
// "T(perm)": iota over prod(d) ids reshaped to d, transposed by perm, then split into G groups
// of S (kept compact: no id is listed).
absl::StatusOr<ReplicaGroups> ParseReplicaGroups(std::string_view s);

// collective-permute's (source, target) partition pairs.
using SourceTargetPairs = std::vector<std::pair<int64_t, int64_t>>;
std::string SourceTargetPairsToString(const SourceTargetPairs& pairs);  // "{{0,1},{1,0}}"
absl::StatusOr<SourceTargetPairs> ParseSourceTargetPairs(std::string_view s);

// Integer lists as XLA writes them: "{1,0}".
std::string IntListToString(absl::Span<const int64_t> values);
absl::StatusOr<std::vector<int64_t>> ParseIntList(std::string_view s);
// A quoted, C-escaped string: "\"a\\nb\"".
std::string QuoteString(std::string_view s);
absl::StatusOr<std::string> ParseQuotedString(std::string_view s);

}  // namespace jx::hlo
