// HloOpcode: the enum generated from opcode.def, with XLA's text names, arities and the
// properties passes and analyses read instead of keeping opcode lists of their own.
//
//   HloOpcodeString(HloOpcode::kAdd);       // "add"
//   StringToHloOpcode("dynamic-slice");     // HloOpcode::kDynamicSlice
//   HloOpcodeArity(HloOpcode::kSelect);     // 3 (-1 for variadic)
//   IsTranscendentalOpcode(HloOpcode::kExp) // true
//   OpcodeUnit(HloOpcode::kDot);            // ExecutionUnit::kMatrix
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"

namespace jx::hlo {

enum class HloOpcode : uint8_t {
#define HLO_OPCODE(enum_name, text_name, arity, properties) enum_name,
#include "jx/compiler/hlo/opcode.def"
};

inline constexpr int kHloOpcodeCount = 0
#define HLO_OPCODE(enum_name, text_name, arity, properties) +1
#include "jx/compiler/hlo/opcode.def"
    ;

inline constexpr int kVariadic = -1;

std::string_view HloOpcodeString(HloOpcode opcode);
// Operand count, or kVariadic.
int HloOpcodeArity(HloOpcode opcode);
absl::StatusOr<HloOpcode> StringToHloOpcode(std::string_view name);

// Opcode properties: the fourth column of opcode.def, a bit set.
inline constexpr uint32_t kOpElementwise = 1u << 0;     // applied independently per element
inline constexpr uint32_t kOpTranscendental = 1u << 1;  // exp, log, sin, ...: not a plain flop
inline constexpr uint32_t kOpExpensive = 1u << 2;       // too costly to compute twice
inline constexpr uint32_t kOpNoArithmetic = 1u << 3;    // moves or reinterprets data only
inline constexpr uint32_t kOpNoCode = 1u << 4;          // forwards values; no kernel runs
inline constexpr uint32_t kOpLoopFusible = 1u << 5;     // a shape op loop fusion may contain
inline constexpr uint32_t kOpAsyncStart = 1u << 6;      // begins an asynchronous collective
inline constexpr uint32_t kOpAsyncDone = 1u << 7;       // waits for its operand, a start
// The unit an op runs on (exactly one per opcode).
inline constexpr uint32_t kOnNone = 1u << 8;
inline constexpr uint32_t kOnVector = 1u << 9;
inline constexpr uint32_t kOnMatrix = 1u << 10;
inline constexpr uint32_t kOnMemory = 1u << 11;
inline constexpr uint32_t kOnFusedBody = 1u << 12;
inline constexpr uint32_t kOnControlFlow = 1u << 13;
inline constexpr uint32_t kOnNetwork = 1u << 14;

// Where an op's work happens. A target names the units (a TPU's VPU, MXU and DMA engines).
enum class ExecutionUnit : uint8_t {
  kNone,         // no code runs (parameter, tuple, bitcast, ...)
  kVector,       // elementwise arithmetic, reductions, sorting
  kMatrix,       // dot and convolution
  kMemory,       // data movement: copies, transposes, slices, gathers, ...
  kFusedBody,    // a fusion: the units its fused computation uses
  kControlFlow,  // call, while, conditional: the kernels of the computations they run
  kNetwork,      // collectives: data exchanged with other devices (a TPU's ICI links)
};
inline constexpr int kNumExecutionUnits = 7;

uint32_t HloOpcodeProperties(HloOpcode opcode);
ExecutionUnit OpcodeUnit(HloOpcode opcode);
std::string_view ExecutionUnitName(ExecutionUnit unit);  // "vector", "matrix", ...

// Ops applied independently to each element (the loop-fusible ones).
inline bool IsElementwiseOpcode(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & kOpElementwise) != 0;
}
// Elementwise ops that count a transcendental per element instead of a flop.
inline bool IsTranscendentalOpcode(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & kOpTranscendental) != 0;
}
// Ops too costly to compute twice (XLA's IsExpensive): fusion never duplicates them.
inline bool IsExpensiveOpcode(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & kOpExpensive) != 0;
}
// Ops that do no arithmetic (flops 0): they move, broadcast or reinterpret data.
inline bool IsNoArithmeticOpcode(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & kOpNoArithmetic) != 0;
}
// Ops that run no code: parameter, constant, tuple, get-tuple-element, bitcast, opt-barrier.
inline bool IsNoCodeOpcode(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & kOpNoCode) != 0;
}
// Ops a loop fusion may contain: elementwise ops and the shape ops marked kOpLoopFusible.
inline bool IsLoopFusibleOpcode(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & (kOpElementwise | kOpLoopFusible)) != 0;
}

// all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute (and their
// asynchronous start/done pairs): the ops that exchange data between the partitions of an
// SPMD program.
inline bool IsCollectiveOpcode(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & kOnNetwork) != 0;
}
// all-reduce-start, all-gather-start, ...: an asynchronous collective's start.
inline bool IsAsyncCollectiveStart(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & kOpAsyncStart) != 0;
}
// all-reduce-done, all-gather-done, ...: waits for the start that is its operand.
inline bool IsAsyncCollectiveDone(HloOpcode opcode) {
  return (HloOpcodeProperties(opcode) & kOpAsyncDone) != 0;
}
// The synchronous collective a start or done runs asynchronously (kAllReduceStart ->
// kAllReduce); any other opcode is returned as is.
HloOpcode SyncCollectiveOpcode(HloOpcode opcode);
// The start and done opcodes of a synchronous collective (kAllReduce -> kAllReduceStart,
// kAllReduceDone); nullopt for other opcodes (partition-id, non-collectives).
std::optional<HloOpcode> AsyncStartOpcode(HloOpcode sync);
std::optional<HloOpcode> AsyncDoneOpcode(HloOpcode sync);

}  // namespace jx::hlo
