#include "jx/compiler/hlo/opcode.h"

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "jx/compiler/hlo/str_util.h"

namespace jx::hlo {
namespace {

struct OpcodeInfo {
  std::string_view name;
  int arity;
  uint32_t properties;
};

constexpr OpcodeInfo kOpcodeInfo[] = {
#define HLO_OPCODE(enum_name, text_name, arity, properties) {text_name, arity, properties},
#include "jx/compiler/hlo/opcode.def"
};
static_assert(sizeof(kOpcodeInfo) / sizeof(kOpcodeInfo[0]) == kHloOpcodeCount);

constexpr uint32_t kUnitBits =
    kOnNone | kOnVector | kOnMatrix | kOnMemory | kOnFusedBody | kOnControlFlow | kOnNetwork;

// Every opcode names exactly one unit (checked at compile time).
constexpr bool EveryOpcodeHasOneUnit() {
  for (const OpcodeInfo& info : kOpcodeInfo) {
    const uint32_t unit = info.properties & kUnitBits;
    if (unit == 0 || (unit & (unit - 1)) != 0) return false;
  }
  return true;
}
static_assert(EveryOpcodeHasOneUnit(), "opcode.def: each opcode needs exactly one kOn* unit");

}  // namespace

std::string_view HloOpcodeString(HloOpcode opcode) {
  return kOpcodeInfo[static_cast<int>(opcode)].name;
}

int HloOpcodeArity(HloOpcode opcode) { return kOpcodeInfo[static_cast<int>(opcode)].arity; }

absl::StatusOr<HloOpcode> StringToHloOpcode(std::string_view name) {
  static const auto* const kByName = [] {
    auto* map = new absl::flat_hash_map<std::string_view, HloOpcode>();
    for (int i = 0; i < kHloOpcodeCount; ++i) {
      map->emplace(kOpcodeInfo[i].name, static_cast<HloOpcode>(i));
    }
    return map;
  }();
  auto it = kByName->find(name);
  if (it == kByName->end()) {
    return absl::InvalidArgumentError(StrCat("unknown opcode \"", name, "\""));
  }
  return it->second;
}

uint32_t HloOpcodeProperties(HloOpcode opcode) {
  return kOpcodeInfo[static_cast<int>(opcode)].properties;
}

ExecutionUnit OpcodeUnit(HloOpcode opcode) {
  switch (HloOpcodeProperties(opcode) & kUnitBits) {
    case kOnVector: return ExecutionUnit::kVector;
    case kOnMatrix: return ExecutionUnit::kMatrix;
    case kOnMemory: return ExecutionUnit::kMemory;
    case kOnFusedBody: return ExecutionUnit::kFusedBody;
    case kOnControlFlow: return ExecutionUnit::kControlFlow;
    case kOnNetwork: return ExecutionUnit::kNetwork;
    default: return ExecutionUnit::kNone;
  }
}

namespace {

struct AsyncOpcodes {
  HloOpcode sync, start, done;
};
constexpr AsyncOpcodes kAsyncOpcodes[] = {
    {HloOpcode::kAllGather, HloOpcode::kAllGatherStart, HloOpcode::kAllGatherDone},
    {HloOpcode::kAllReduce, HloOpcode::kAllReduceStart, HloOpcode::kAllReduceDone},
    {HloOpcode::kAllToAll, HloOpcode::kAllToAllStart, HloOpcode::kAllToAllDone},
    {HloOpcode::kCollectivePermute, HloOpcode::kCollectivePermuteStart, HloOpcode::kCollectivePermuteDone},
    {HloOpcode::kReduceScatter, HloOpcode::kReduceScatterStart, HloOpcode::kReduceScatterDone},
};

}  // namespace

HloOpcode SyncCollectiveOpcode(HloOpcode opcode) {
  for (const AsyncOpcodes& a : kAsyncOpcodes) {
    if (opcode == a.start || opcode == a.done) return a.sync;
  }
  return opcode;
}

std::optional<HloOpcode> AsyncStartOpcode(HloOpcode sync) {
  for (const AsyncOpcodes& a : kAsyncOpcodes) {
    if (sync == a.sync) return a.start;
  }
  return std::nullopt;
}

std::optional<HloOpcode> AsyncDoneOpcode(HloOpcode sync) {
  for (const AsyncOpcodes& a : kAsyncOpcodes) {
    if (sync == a.sync) return a.done;
  }
  return std::nullopt;
}

std::string_view ExecutionUnitName(ExecutionUnit unit) {
  switch (unit) {
    case ExecutionUnit::kNone: return "none";
    case ExecutionUnit::kVector: return "vector";
    case ExecutionUnit::kMatrix: return "matrix";
    case ExecutionUnit::kMemory: return "memory";
    case ExecutionUnit::kFusedBody: return "fused";
    case ExecutionUnit::kControlFlow: return "control-flow";
    case ExecutionUnit::kNetwork: return "network";
  }
  return "none";
}

}  // namespace jx::hlo
