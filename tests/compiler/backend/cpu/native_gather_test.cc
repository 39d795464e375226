// The native gather kernel (the kernel library's gather) against the evaluator, bit for bit:
// every element type, index type, dimension numbers, out-of-bounds starts (XLA clamps them).
#include <gtest/gtest.h>

#include <string>

#include "jx/compiler/hlo/str_util.h"
#include "tests/compiler/backend/cpu/native_kernel_test_util.h"

namespace jx::cpu::native_gather_test {
namespace {

using testing::ExactOptions;
using testing::ExpectExact;

std::string GatherModule(const std::string& t, const std::string& operand, const std::string& it,
                         const std::string& indices, const std::string& out, const std::string& dnums) {
  const std::string o = hlo::StrCat(t, "[", operand, "]"), i = hlo::StrCat(it, "[", indices, "]"),
                    r = hlo::StrCat(t, "[", out, "]");
  return hlo::StrCat("HloModule g\nENTRY %main (x: ", o, ", i: ", i, ") -> ", r, " {\n  %x = ", o,
                     " parameter(0)\n  %i = ", i, " parameter(1)\n  ROOT %g = ", r, " gather(%x, %i), ",
                     dnums, "\n}\n");
}

TEST(GatherKernelTest, TypesIndexTypesAndDimensionNumbers) {
  struct Case {
    const char *operand, *indices, *out, *dnums;
  };
  const Case cases[] = {
      // Rows of a matrix (jnp.take along axis 0), indices -3..12 on 10 rows: clamped.
      {"10,6", "30,1", "30,6",
       "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
       "slice_sizes={1,6}"},
      // Columns (take along axis 1): a strided slice per index.
      {"10,6", "7,1", "10,7",
       "offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, "
       "slice_sizes={10,1}"},
      // Elements by 2-d index with batch dims [5,4].
      {"10,6", "5,4,2", "5,4",
       "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=2, "
       "slice_sizes={1,1}"},
      // 3x2 windows at 2-d starts, start_index_map reversed, index vector dim first.
      {"10,6", "2,9", "9,3,2",
       "offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={1,0}, index_vector_dim=0, "
       "slice_sizes={3,2}"},
      // Scalar indices (index_vector_dim == rank), windows leading in the output.
      {"10,6", "9", "4,6,9",
       "offset_dims={0,1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, "
       "slice_sizes={4,6}"},
      // Empty indices.
      {"10,6", "0,1", "0,6",
       "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
       "slice_sizes={1,6}"},
  };
  for (const char* t : {"f32", "f64", "f16", "bf16", "s8", "s32", "u64", "pred"}) {
    for (const char* it : {"s32", "u8", "s64", "u32"}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(hlo::StrCat(t, " ", it, " ", c.dnums));
        ExactOptions o{-3, 12};
        o.special = 0.1;
        ExpectExact(GatherModule(t, c.operand, it, c.indices, c.out, c.dnums), "g", "gather", o);
      }
    }
  }
}

TEST(GatherKernelTest, LargeRowsAndExtremeIndices) {
  // Parallel row copies; s64 indices at int64's extremes and u64 past them clamp.
  ExpectExact(GatherModule("f32", "5000,64", "s32", "4096,1", "4096,64",
                           "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                           "index_vector_dim=1, slice_sizes={1,64}"),
              "g", "gather", ExactOptions{-100, 5100});
  for (const char* it : {"s64", "u64"}) {
    ExpectExact(GatherModule("s16", "7,3", it, "500,1", "500,3",
                             "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                             "index_vector_dim=1, slice_sizes={1,3}"),
                "g", "gather", ExactOptions{-9.2e18, 9.2e18});
  }
}

TEST(GatherKernelTest, FloatIndicesStayOffTheNativeKernel) {
  const std::string text = GatherModule("f32", "10,6", "f32", "3,1", "3,6",
                                        "offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, "
                                        "index_vector_dim=1, slice_sizes={1,6}");
  auto parsed = hlo::ParseHloModule(text);
  if (!parsed.ok()) GTEST_SKIP() << "the verifier rejects float indices: " << parsed.status();
  CpuCompileOptions o;
  o.allow_evaluator_fallback = false;
  auto exe = CompileForCpu(*std::move(parsed), o);
  EXPECT_FALSE(exe.ok());
}

}  // namespace
}  // namespace jx::cpu::native_gather_test
