#include "jx/compiler/hlo/hlo_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/hlo/hlo_verifier.h"

namespace jx::hlo::builder_test {
namespace {

using ::testing::HasSubstr;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

class HloBuilderTest : public ::testing::Test {
 protected:
  HloBuilderTest() : module_("m"), b_(&module_, "main") {}

  HloInstruction* Param(const Shape& shape) {
    return b_.Parameter(next_param_++, shape).value();
  }
  HloComputation* ScalarAdd(PrimitiveType t = F32) {
    HloBuilder add(&module_, "add");
    auto* x = add.Parameter(0, ShapeUtil::MakeScalarShape(t)).value();
    auto* y = add.Parameter(1, ShapeUtil::MakeScalarShape(t)).value();
    return add.Build(add.Add(x, y).value()).value();
  }

  HloModule module_;
  HloBuilder b_;
  int64_t next_param_ = 0;
};

Shape F(std::initializer_list<int64_t> dims) { return ShapeUtil::MakeShape(F32, dims); }

TEST_F(HloBuilderTest, ElementwiseShapes) {
  auto* x = Param(F({2, 3}));
  auto* y = Param(F({2, 3}));
  EXPECT_EQ(b_.Add(x, y).value()->shape(), F({2, 3}));
  EXPECT_EQ(b_.Sin(x).value()->shape(), F({2, 3}));
  auto* lt = b_.Compare(x, y, ComparisonDirection::kLt).value();
  EXPECT_EQ(lt->shape().ToString(), "pred[2,3]{1,0}");
  EXPECT_EQ(b_.Select(lt, x, y).value()->shape(), F({2, 3}));
  EXPECT_EQ(b_.IsFinite(x).value()->shape().element_type(), PRED);
  EXPECT_EQ(b_.Convert(x, S32).value()->shape().ToString(), "s32[2,3]{1,0}");
  auto* zero = b_.Constant(Literal::CreateR0<float>(0)).value();
  EXPECT_EQ(b_.Clamp(zero, x, zero).value()->shape(), F({2, 3}));
  EXPECT_EQ(b_.BitcastConvert(x, U8).value()->shape().ToString(), "u8[2,3,4]{2,1,0}");
}

TEST_F(HloBuilderTest, ElementwiseErrorsNameOpShapesAndProblem) {
  auto* x = Param(F({8}));
  auto* y = Param(F({4}));
  absl::Status st = b_.Add(x, y).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(st), HasSubstr("add(f32[8], f32[4]): operand dimensions differ"));
  auto* i = Param(ShapeUtil::MakeShape(S32, {8}));
  EXPECT_THAT(Msg(b_.Multiply(x, i).status()),
              HasSubstr("multiply(f32[8], s32[8]): operand element types differ"));
  EXPECT_THAT(Msg(b_.Sin(i).status()), HasSubstr("sine(s32[8]): operand must be floating-point"));
  EXPECT_THAT(Msg(b_.ShiftLeft(x, x).status()), HasSubstr("shift-left(f32[8], f32[8])"));
  EXPECT_THAT(Msg(b_.Select(x, x, x).status()), HasSubstr("predicate must be pred"));
  // A failed op adds nothing.
  EXPECT_EQ(b_.computation()->instruction_count(), 3);
}

TEST_F(HloBuilderTest, DotShapesAndErrors) {
  auto* a = Param(F({2, 3}));
  auto* b = Param(F({3, 4}));
  DotDimensionNumbers mm;
  mm.lhs_contracting_dims = {1};
  mm.rhs_contracting_dims = {0};
  EXPECT_EQ(b_.Dot(a, b, mm).value()->shape(), F({2, 4}));
  auto* c = Param(F({4, 5}));
  absl::Status st = b_.Dot(a, c, mm).status();
  EXPECT_THAT(Msg(st), HasSubstr("dot(f32[2,3], f32[4,5]): lhs_contracting_dims={1} (size 3) "
                                 "does not match rhs_contracting_dims={0} (size 4)"));
  DotDimensionNumbers batched;
  batched.lhs_batch_dims = {0};
  batched.rhs_batch_dims = {0};
  batched.lhs_contracting_dims = {2};
  batched.rhs_contracting_dims = {1};
  auto* x = Param(F({7, 2, 3}));
  auto* y = Param(F({7, 3, 5}));
  EXPECT_EQ(b_.Dot(x, y, batched).value()->shape(), F({7, 2, 5}));
  EXPECT_EQ(b_.Dot(x, y, batched, F64).value()->shape().element_type(), F64);
  batched.lhs_contracting_dims = {3};
  EXPECT_THAT(Msg(b_.Dot(x, y, batched).status()), HasSubstr("out of range for rank 3"));
}

TEST_F(HloBuilderTest, BroadcastReshapeTransposeSlice) {
  auto* x = Param(F({3}));
  EXPECT_EQ(b_.Broadcast(x, {2, 3}, {1}).value()->shape(), F({2, 3}));
  EXPECT_THAT(Msg(b_.Broadcast(x, {2, 3}, {0}).status()),
              HasSubstr("broadcast(f32[3]): dimensions={0}: operand dimension 0 (size 3) does "
                        "not match result dimension 0 (size 2)"));
  auto* m = Param(F({2, 6}));
  EXPECT_EQ(b_.Reshape(m, {3, 4}).value()->shape(), F({3, 4}));
  EXPECT_THAT(Msg(b_.Reshape(m, {5}).status()), HasSubstr("keep element type and count"));
  EXPECT_EQ(b_.Transpose(m, {1, 0}).value()->shape(), F({6, 2}));
  EXPECT_THAT(Msg(b_.Transpose(m, {0, 0}).status()), HasSubstr("dimension 0 repeated"));
  EXPECT_EQ(b_.Slice(m, {0, 1}, {2, 6}, {1, 2}).value()->shape(), F({2, 3}));
  EXPECT_THAT(Msg(b_.Slice(m, {0, 0}, {3, 6}, {1, 1}).status()),
              HasSubstr("slice={[0:3], [0:6]}: dimension 0 [0:3:1] is out of bounds for size 2"));
  EXPECT_EQ(b_.Reverse(m, {0}).value()->shape(), F({2, 6}));
  EXPECT_EQ(b_.Concatenate({m, m}, 1).value()->shape(), F({2, 12}));
  EXPECT_THAT(Msg(b_.Concatenate({m, x}, 0).status()), HasSubstr("does not match operand 0"));
  auto* zero = b_.Constant(Literal::CreateR0<float>(0)).value();
  EXPECT_EQ(b_.Pad(m, zero, {{1, 0, 0}, {0, 2, 1}}).value()->shape(), F({3, 13}));
  auto* i = b_.Constant(Literal::CreateR0<int32_t>(0)).value();
  EXPECT_EQ(b_.DynamicSlice(m, {i, i}, {1, 2}).value()->shape(), F({1, 2}));
  EXPECT_THAT(Msg(b_.DynamicSlice(m, {i}, {1, 2}).status()),
              HasSubstr("expected 2 start indices, got 1"));
  auto* upd = Param(F({1, 2}));
  EXPECT_EQ(b_.DynamicUpdateSlice(m, upd, {i, i}).value()->shape(), F({2, 6}));
}

TEST_F(HloBuilderTest, ReduceAndReducerSignature) {
  HloComputation* add = ScalarAdd();
  auto* x = Param(F({8, 4}));
  auto* zero = b_.Constant(Literal::CreateR0<float>(0)).value();
  EXPECT_EQ(b_.Reduce(x, zero, {1}, add).value()->shape(), F({8}));
  EXPECT_EQ(b_.Reduce(x, zero, {0, 1}, add).value()->shape(), F({}));
  HloComputation* add_int = ScalarAdd(S32);
  EXPECT_THAT(Msg(b_.Reduce(x, zero, {1}, add_int).status()),
              HasSubstr("to_apply parameter 0 is s32[], expected f32[]"));
  EXPECT_THAT(Msg(b_.Reduce(x, zero, {2}, add).status()),
              HasSubstr("dimensions={2}: dimension 2 out of range for rank 2"));
  EXPECT_THAT(Msg(b_.Reduce(x, x, {1}, add).status()), HasSubstr("init value 0 must be a f32 scalar"));
  Window w(2);
  w[0] = {2, 2, 0, 0, 1, 1};
  w[1] = {3, 1, 1, 1, 1, 1};
  EXPECT_EQ(b_.ReduceWindow({x}, {zero}, w, add).value()->shape(), F({4, 4}));
}

TEST_F(HloBuilderTest, ConvolutionShapesAndErrors) {
  auto* in = Param(F({1, 8, 8, 3}));
  auto* k = Param(F({3, 3, 3, 16}));
  auto dnums = ParseConvolutionDimensionNumbers("b01f_01io->b01f").value();
  Window w(2, WindowDim{3, 1, 1, 1, 1, 1});
  EXPECT_EQ(b_.Convolution(in, k, w, dnums).value()->shape(), F({1, 8, 8, 16}));
  Window strided(2, WindowDim{3, 2, 0, 0, 1, 1});
  EXPECT_EQ(b_.Convolution(in, k, strided, dnums).value()->shape(), F({1, 3, 3, 16}));
  auto* k2 = Param(F({3, 3, 4, 16}));
  EXPECT_THAT(Msg(b_.Convolution(in, k2, w, dnums).status()),
              HasSubstr("dim_labels=b01f_01io->b01f: input feature size 3 must equal kernel "
                        "input feature size 4 times feature_group_count=1"));
  auto* dw = Param(F({3, 3, 1, 3}));
  EXPECT_EQ(b_.Convolution(in, dw, w, dnums, /*feature_group_count=*/3).value()->shape(),
            F({1, 8, 8, 3}));
}

TEST_F(HloBuilderTest, GatherScatterSort) {
  auto* operand = Param(F({5, 3}));
  auto* indices = Param(ShapeUtil::MakeShape(S32, {2, 1}));
  GatherDimensionNumbers g;
  g.offset_dims = {1};
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  EXPECT_EQ(b_.Gather(operand, indices, g, {1, 3}).value()->shape(), F({2, 3}));
  EXPECT_THAT(Msg(b_.Gather(operand, indices, g, {2, 3}).status()),
              HasSubstr("collapsed_slice_dims={0}: dimension 0 has slice size 2"));
  HloComputation* add = ScalarAdd();
  auto* updates = Param(F({2, 3}));
  ScatterDimensionNumbers s;
  s.update_window_dims = {1};
  s.inserted_window_dims = {0};
  s.scatter_dims_to_operand_dims = {0};
  s.index_vector_dim = 1;
  EXPECT_EQ(b_.Scatter({operand}, indices, {updates}, s, add).value()->shape(), F({5, 3}));
  auto* bad_updates = Param(F({3, 3}));
  EXPECT_THAT(Msg(b_.Scatter({operand}, indices, {bad_updates}, s, add).status()),
              HasSubstr("does not match the scatter batch dims"));
  HloBuilder cmp(&module_, "lt");
  auto* p = cmp.Parameter(0, F({})).value();
  auto* q = cmp.Parameter(1, F({})).value();
  HloComputation* lt = cmp.Build(cmp.Compare(p, q, ComparisonDirection::kLt).value()).value();
  EXPECT_EQ(b_.Sort({operand}, 1, lt, true).value()->shape(), F({5, 3}));
  EXPECT_THAT(Msg(b_.Sort({operand, operand}, 1, lt).status()),
              HasSubstr("to_apply must compare two scalars of each operand's type"));
}

TEST_F(HloBuilderTest, ControlFlowSignatures) {
  Shape state = ShapeUtil::MakeTupleShape({ShapeUtil::MakeScalarShape(S32), F({4})});
  HloBuilder cond(&module_, "cond");
  auto* s = cond.Parameter(0, state).value();
  auto* i = cond.GetTupleElement(s, 0).value();
  auto* n = cond.Constant(Literal::CreateR0<int32_t>(10)).value();
  HloComputation* c = cond.Build(cond.Compare(i, n, ComparisonDirection::kLt).value()).value();
  HloBuilder body(&module_, "body");
  HloComputation* bd = body.Build(body.Parameter(0, state).value()).value();
  auto* init = Param(state);
  EXPECT_EQ(b_.While(c, bd, init).value()->shape(), state);
  // A condition that returns s32 is rejected.
  HloBuilder bad(&module_, "bad_cond");
  auto* bs = bad.Parameter(0, state).value();
  HloComputation* bc = bad.Build(bad.GetTupleElement(bs, 0).value()).value();
  EXPECT_THAT(Msg(b_.While(bc, bd, init).status()), HasSubstr("condition must return pred[]"));
  // Fusion parameters must match the operands.
  HloBuilder fused(&module_, "fused");
  auto* fp = fused.Parameter(0, F({4})).value();
  HloComputation* fc = fused.Build(fused.Sin(fp).value()).value();
  auto* v = Param(F({4}));
  auto* w = Param(F({5}));
  EXPECT_THAT(Msg(b_.Fusion(FusionKind::kLoop, {w}, fc).status()),
              HasSubstr("operand 0 f32[5] does not match calls parameter 0 f32[4]"));
  EXPECT_FALSE(fc->IsFusionComputation());  // a rejected fusion leaves no mark
  auto* fusion = b_.Fusion(FusionKind::kLoop, {v}, fc).value();
  EXPECT_EQ(fusion->shape(), F({4}));
  EXPECT_EQ(fc->FusionInstruction(), fusion);
  auto* pred = Param(ShapeUtil::MakeScalarShape(PRED));
  EXPECT_EQ(b_.Conditional(pred, {fc, fc}, {v, v}).value()->shape(), F({4}));
  EXPECT_THAT(Msg(b_.Conditional(pred, {fc, fc}, {v, w}).status()),
              HasSubstr("operand 0 f32[5] does not match branch_computations[1] parameter 0"));
}

TEST_F(HloBuilderTest, BuildChecksParameterNumbering) {
  HloBuilder gap(&module_, "gap");
  auto* p1 = gap.Parameter(1, F({})).value();
  EXPECT_THAT(Msg(gap.Build(p1).status()), HasSubstr("parameter 0 is missing"));
  EXPECT_THAT(Msg(gap.Parameter(1, F({})).status()), HasSubstr("already exists"));
}

TEST_F(HloBuilderTest, OperandsMustComeFromTheSameComputation) {
  HloBuilder other(&module_, "other");
  auto* foreign = other.Parameter(0, F({})).value();
  EXPECT_THAT(Msg(b_.Negate(foreign).status()), HasSubstr("does not belong to computation main"));
}

TEST_F(HloBuilderTest, NamesAndMetadata) {
  auto* x = b_.Parameter(0, F({2}), "x").value();
  EXPECT_EQ(x->name(), "x");
  b_.set_metadata({"sin", "jit(f)/sin", "f.cc", 3});
  auto* s = b_.Sin(x).value();
  EXPECT_EQ(s->name().rfind("sine.", 0), 0u);
  EXPECT_EQ(s->metadata().op_name, "jit(f)/sin");
  auto* y = b_.Parameter(1, F({2}), "x").value();  // taken: uniquified
  EXPECT_NE(y->name(), "x");
  EXPECT_NE(s->unique_id(), y->unique_id());
  module_.set_entry_computation(b_.Build(s).value());
  EXPECT_TRUE(VerifyHloModule(module_).ok()) << VerifyHloModule(module_);
}

TEST_F(HloBuilderTest, EqualMetadataIsSharedNotCopied) {
  // A lowered program sets the metadata of each equation; the same primitive at the same
  // place, set again, must not cost every instruction its own copy.
  auto* x = b_.Parameter(0, F({2}), "x").value();
  b_.set_metadata({"sin", "jit(f)/sin", "", 0});
  auto* s1 = b_.Sin(x).value();
  b_.set_metadata({"mul", "jit(f)/mul", "", 0});
  auto* m = b_.Binary(HloOpcode::kMultiply, s1, x).value();
  b_.set_metadata({"sin", "jit(f)/sin", "", 0});
  auto* s2 = b_.Sin(m).value();
  EXPECT_EQ(s1->shared_metadata(), s2->shared_metadata());
  EXPECT_NE(s1->shared_metadata(), m->shared_metadata());
  EXPECT_EQ(m->metadata().op_name, "jit(f)/mul");
  // Empty metadata is none at all; an instruction without metadata reads as empty.
  b_.set_metadata({});
  auto* s3 = b_.Sin(s2).value();
  EXPECT_EQ(s3->shared_metadata(), nullptr);
  EXPECT_TRUE(s3->metadata().empty());
  EXPECT_EQ(x->shared_metadata(), nullptr);
  // A copy set from another instruction's shares it too.
  b_.set_shared_metadata(m->shared_metadata());
  auto* s4 = b_.Sin(s3).value();
  EXPECT_EQ(s4->shared_metadata(), m->shared_metadata());
  module_.set_entry_computation(b_.Build(s4).value());
  // The module's clone shares its original's metadata, and prints the same.
  auto clone = module_.Clone();
  ASSERT_TRUE(clone.ok()) << clone.status();
  const HloInstruction* s1_copy = (*clone)->entry_computation()->GetInstructionWithName(s1->name());
  ASSERT_NE(s1_copy, nullptr);
  EXPECT_EQ(s1_copy->shared_metadata(), s1->shared_metadata());
  EXPECT_EQ((*clone)->ToString(), module_.ToString());
}

}  // namespace
}  // namespace jx::hlo::builder_test
