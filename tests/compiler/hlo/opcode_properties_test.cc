// opcode.def's properties: the one place passes and analyses learn what an opcode is.
#include <gtest/gtest.h>

#include <set>

#include "jx/compiler/hlo/opcode.h"

namespace jx::hlo::opcode_properties_test {
namespace {

std::set<HloOpcode> All(bool (*pred)(HloOpcode)) {
  std::set<HloOpcode> out;
  for (int i = 0; i < kHloOpcodeCount; ++i) {
    if (pred(static_cast<HloOpcode>(i))) out.insert(static_cast<HloOpcode>(i));
  }
  return out;
}

TEST(OpcodePropertiesTest, TranscendentalsAreXlasList) {
  using O = HloOpcode;
  EXPECT_EQ(All(IsTranscendentalOpcode),
            (std::set<HloOpcode>{O::kExp, O::kExpm1, O::kLog, O::kLog1p, O::kLogistic, O::kTanh,
                                 O::kSin, O::kCos, O::kTan, O::kAtan2, O::kPower, O::kSqrt,
                                 O::kRsqrt, O::kCbrt, O::kErf}));
}

TEST(OpcodePropertiesTest, ExpensiveOpsAreTranscendentalsDivisionsContractionsAndReduce) {
  using O = HloOpcode;
  std::set<HloOpcode> expected = All(IsTranscendentalOpcode);
  expected.insert({O::kDivide, O::kRemainder, O::kDot, O::kConvolution, O::kReduce});
  EXPECT_EQ(All(IsExpensiveOpcode), expected);
}

TEST(OpcodePropertiesTest, ElementwiseAndLoopFusible) {
  using O = HloOpcode;
  for (HloOpcode op : All(IsTranscendentalOpcode)) EXPECT_TRUE(IsElementwiseOpcode(op));
  EXPECT_TRUE(IsElementwiseOpcode(O::kCopy));
  EXPECT_TRUE(IsElementwiseOpcode(O::kSelect));
  EXPECT_FALSE(IsElementwiseOpcode(O::kBitcastConvert));
  EXPECT_FALSE(IsElementwiseOpcode(O::kBroadcast));
  std::set<HloOpcode> fusible = All(IsElementwiseOpcode);
  fusible.insert({O::kBroadcast, O::kIota, O::kReshape, O::kTranspose, O::kSlice, O::kReverse,
                  O::kPad, O::kConcatenate});
  EXPECT_EQ(All(IsLoopFusibleOpcode), fusible);
}

TEST(OpcodePropertiesTest, NoCodeOpsAndUnits) {
  using O = HloOpcode;
  EXPECT_EQ(All(IsNoCodeOpcode),
            (std::set<HloOpcode>{O::kParameter, O::kConstant, O::kTuple, O::kGetTupleElement,
                                 O::kBitcast, O::kOptimizationBarrier}));
  for (HloOpcode op : All(IsNoCodeOpcode)) EXPECT_EQ(OpcodeUnit(op), ExecutionUnit::kNone);
  EXPECT_EQ(OpcodeUnit(O::kDot), ExecutionUnit::kMatrix);
  EXPECT_EQ(OpcodeUnit(O::kConvolution), ExecutionUnit::kMatrix);
  EXPECT_EQ(OpcodeUnit(O::kAdd), ExecutionUnit::kVector);
  EXPECT_EQ(OpcodeUnit(O::kReduce), ExecutionUnit::kVector);
  EXPECT_EQ(OpcodeUnit(O::kTranspose), ExecutionUnit::kMemory);
  EXPECT_EQ(OpcodeUnit(O::kCopy), ExecutionUnit::kMemory);
  EXPECT_EQ(OpcodeUnit(O::kFusion), ExecutionUnit::kFusedBody);
  EXPECT_EQ(OpcodeUnit(O::kWhile), ExecutionUnit::kControlFlow);
  EXPECT_EQ(ExecutionUnitName(ExecutionUnit::kMatrix), "matrix");
  // Ops that compute arithmetic are never marked no-arithmetic.
  for (HloOpcode op : All(IsNoArithmeticOpcode)) {
    EXPECT_FALSE(IsTranscendentalOpcode(op)) << HloOpcodeString(op);
    EXPECT_NE(OpcodeUnit(op), ExecutionUnit::kVector) << HloOpcodeString(op);
  }
}

}  // namespace
}  // namespace jx::hlo::opcode_properties_test
