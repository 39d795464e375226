// jx::PromoteWeak against JAX's binary promotion table, cell by cell.
//
// The table is JAX's "Type promotion semantics" page,
//   https://docs.jax.dev/en/latest/type_promotion.html
//   (source: jax-ml/jax docs/type_promotion.rst, generated from dtypes._lattice_result_type),
// restricted to jx's dtypes (the complex rows and columns c8, c16, c* are dropped).
// Names: b1 bool, uN/iN N-byte ints, bf bfloat16, f2/f4/f8 float16/32/64, i* a weak int
// (a C++ integer scalar), f* a weak float (a C++ floating scalar).
//
// How a cell maps to jx: jx keeps explicit 64-bit types (like JAX with jax_enable_x64) while
// its weak defaults are 32-bit, so a weak result i* is {int32, weak} and f* is
// {float32, weak}. One exception: a cell where both operands are strong and the join is f*
// (uint64 with a signed int) has no weak operand to take a width from; JAX (x64) returns
// dtype(float) = float64 with weak_type=True (_lattice_result_type sets out_weak_type when the
// join is a weak node), so that is what the table means there.
#include <array>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "jx/core/dtype.h"

namespace jx::promotion_test {
namespace {

constexpr int kN = 15;
constexpr std::array<const char*, kN> kNames = {"b1", "u1", "u2", "u4", "u8", "i1", "i2", "i4",
                                                "i8", "bf", "f2", "f4", "f8", "i*", "f*"};

// JAX's table: row = first operand, column = second operand, in kNames order.
constexpr const char* kTable[kN] = {
    /* b1 */ "b1 u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 i* f*",
    /* u1 */ "u1 u1 u2 u4 u8 i2 i2 i4 i8 bf f2 f4 f8 u1 f*",
    /* u2 */ "u2 u2 u2 u4 u8 i4 i4 i4 i8 bf f2 f4 f8 u2 f*",
    /* u4 */ "u4 u4 u4 u4 u8 i8 i8 i8 i8 bf f2 f4 f8 u4 f*",
    /* u8 */ "u8 u8 u8 u8 u8 f* f* f* f* bf f2 f4 f8 u8 f*",
    /* i1 */ "i1 i2 i4 i8 f* i1 i2 i4 i8 bf f2 f4 f8 i1 f*",
    /* i2 */ "i2 i2 i4 i8 f* i2 i2 i4 i8 bf f2 f4 f8 i2 f*",
    /* i4 */ "i4 i4 i4 i8 f* i4 i4 i4 i8 bf f2 f4 f8 i4 f*",
    /* i8 */ "i8 i8 i8 i8 f* i8 i8 i8 i8 bf f2 f4 f8 i8 f*",
    /* bf */ "bf bf bf bf bf bf bf bf bf bf f4 f4 f8 bf bf",
    /* f2 */ "f2 f2 f2 f2 f2 f2 f2 f2 f2 f4 f2 f4 f8 f2 f2",
    /* f4 */ "f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 f8 f4 f4",
    /* f8 */ "f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 f8",
    /* i* */ "i* u1 u2 u4 u8 i1 i2 i4 i8 bf f2 f4 f8 i* f*",
    /* f* */ "f* f* f* f* f* f* f* f* f* bf f2 f4 f8 f* f*",
};

// The jx operand a table name stands for.
TypeAndWeak Operand(const std::string& name) {
  if (name == "b1") return {bool_, false};
  if (name == "u1") return {uint8, false};
  if (name == "u2") return {uint16, false};
  if (name == "u4") return {uint32, false};
  if (name == "u8") return {uint64, false};
  if (name == "i1") return {int8, false};
  if (name == "i2") return {int16, false};
  if (name == "i4") return {int32, false};
  if (name == "i8") return {int64, false};
  if (name == "bf") return {bfloat16, false};
  if (name == "f2") return {float16, false};
  if (name == "f4") return {float32, false};
  if (name == "f8") return {float64, false};
  if (name == "i*") return {int32, true};
  if (name == "f*") return {float32, true};
  ADD_FAILURE() << "bad table entry " << name;
  return {bool_, false};
}

std::vector<std::string> Split(const std::string& row) {
  std::istringstream in(row);
  std::vector<std::string> out;
  for (std::string s; in >> s;) out.push_back(s);
  return out;
}

std::string Str(TypeAndWeak t) { return std::string(dtype_name(t.dtype)) + (t.weak ? " (weak)" : ""); }

TEST(PromotionTest, TableIsSymmetric) {
  for (int i = 0; i < kN; ++i) {
    const std::vector<std::string> row = Split(kTable[i]);
    ASSERT_EQ(row.size(), kN) << kNames[i];
    for (int j = 0; j < kN; ++j) EXPECT_EQ(row[j], Split(kTable[j])[i]) << kNames[i] << " x " << kNames[j];
  }
}

// Cells where two strong operands join at f*: uint64 with a signed int.
bool StrongJoinAtWeakFloat(const std::string& a, const std::string& b, const std::string& cell) {
  return cell == "f*" && a != "i*" && a != "f*" && b != "i*" && b != "f*";
}

void CheckCells(bool strong_weak_float_cells) {
  for (int i = 0; i < kN; ++i) {
    const std::vector<std::string> row = Split(kTable[i]);
    for (int j = 0; j < kN; ++j) {
      if (StrongJoinAtWeakFloat(kNames[i], kNames[j], row[j]) != strong_weak_float_cells) continue;
      const TypeAndWeak a = Operand(kNames[i]);
      const TypeAndWeak b = Operand(kNames[j]);
      TypeAndWeak want = Operand(row[j]);
      if (strong_weak_float_cells) want = {float64, true};  // see the file comment
      const TypeAndWeak got = PromoteWeak(a, b);
      EXPECT_EQ(got, want) << kNames[i] << " x " << kNames[j] << ": JAX " << row[j] << " = " << Str(want)
                           << ", jx " << Str(got);
    }
  }
}

// Every cell except the 8 below.
TEST(PromotionTest, PromoteWeakMatchesJaxTable) { CheckCells(false); }

// u8 x {i1, i2, i4, i8} and back (8 cells): JAX with x64 returns float64 *weakly typed*.
TEST(PromotionTest, Uint64WithSignedIntIsWeakFloat64) { CheckCells(true); }

// promote_types (strong operands only) is the strong part of the same table.
TEST(PromotionTest, PromoteTypesOnStrongTypes) {
  EXPECT_EQ(promote_types(int8, uint8), int16);
  EXPECT_EQ(promote_types(bfloat16, float16), float32);
  EXPECT_EQ(promote_types(uint32, int32), int64);
  EXPECT_EQ(promote_types(int64, bfloat16), bfloat16);
  EXPECT_EQ(promote_types(bool_, bool_), bool_);
  EXPECT_EQ(promote_types(uint64, int8), float64);
}

// Weakness of same-dtype pairs: weak only if both are weak (JAX's trivial-promotion case).
TEST(PromotionTest, SameDTypeWeakness) {
  EXPECT_EQ(PromoteWeak({float32, true}, {float32, false}), (TypeAndWeak{float32, false}));
  EXPECT_EQ(PromoteWeak({float32, true}, {float32, true}), (TypeAndWeak{float32, true}));
  EXPECT_EQ(PromoteWeak({int32, true}, {int32, true}), (TypeAndWeak{int32, true}));
  // A weak int meeting a strong int32 keeps int32 strong.
  EXPECT_EQ(PromoteWeak({int32, true}, {int32, false}), (TypeAndWeak{int32, false}));
}

}  // namespace
}  // namespace jx::promotion_test
