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
};

constexpr OpcodeInfo kOpcodeInfo[] = {
#define HLO_OPCODE(enum_name, text_name, arity) {text_name, arity},
#include "jx/compiler/hlo/opcode.def"
};
static_assert(sizeof(kOpcodeInfo) / sizeof(kOpcodeInfo[0]) == kHloOpcodeCount);

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

bool IsElementwiseOpcode(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAbs: case HloOpcode::kCbrt: case HloOpcode::kCeil:
    case HloOpcode::kClz: case HloOpcode::kCos: case HloOpcode::kErf:
    case HloOpcode::kExp: case HloOpcode::kExpm1: case HloOpcode::kFloor:
    case HloOpcode::kIsFinite: case HloOpcode::kLog: case HloOpcode::kLog1p:
    case HloOpcode::kLogistic: case HloOpcode::kNegate: case HloOpcode::kNot:
    case HloOpcode::kPopulationCount: case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kRoundNearestEven: case HloOpcode::kRsqrt: case HloOpcode::kSign:
    case HloOpcode::kSin: case HloOpcode::kSqrt: case HloOpcode::kTan:
    case HloOpcode::kTanh: case HloOpcode::kCopy: case HloOpcode::kConvert:
    case HloOpcode::kReducePrecision:
    case HloOpcode::kAdd: case HloOpcode::kAnd: case HloOpcode::kAtan2:
    case HloOpcode::kCompare: case HloOpcode::kDivide: case HloOpcode::kMaximum:
    case HloOpcode::kMinimum: case HloOpcode::kMultiply: case HloOpcode::kOr:
    case HloOpcode::kPower: case HloOpcode::kRemainder: case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic: case HloOpcode::kShiftRightLogical:
    case HloOpcode::kSubtract: case HloOpcode::kXor: case HloOpcode::kClamp:
    case HloOpcode::kSelect:
      return true;
    default:
      return false;
  }
}

}  // namespace jx::hlo
