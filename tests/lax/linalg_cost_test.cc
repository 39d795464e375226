// compiled.cost_analysis() counts the linalg custom-calls' flops: LAPACK's operation counts
// (LAPACK Working Note 41; Golub & Van Loan table 8.6.1), where XLA's analysis sees an opaque
// custom-call. JAX's page: https://docs.jax.dev/en/latest/aot.html ("Debug information and
// analyses": compiled.cost_analysis()).
#include <cstdint>
#include <functional>

#include <gtest/gtest.h>
#include <jx/jx.h>

#include "jx/lax/kernels/linalg.h"

namespace jx::linalg_cost_test {
namespace {

namespace linalg = jx::lax::linalg;
using lax::kernels::LinalgCall;
using lax::kernels::LinalgFlops;
using lax::kernels::LinalgOp;

double CompiledFlops(const std::function<Array(const Array&)>& f, Shape shape) {
  return jit(f).lower(ShapeDtypeStruct{std::move(shape), float32}).compile().cost_analysis().flops;
}

TEST(LinalgCostAnalysis, CompiledCholeskyCountsPotrf) {
  const double n = 64;
  const double flops = CompiledFlops([](const Array& a) { return linalg::cholesky(a, /*symmetrize_input=*/false); },
                                     {64, 64});
  EXPECT_DOUBLE_EQ(flops, n * n * n / 3 + n * n / 2 + n / 6);
  // A batch multiplies it.
  EXPECT_DOUBLE_EQ(CompiledFlops([](const Array& a) { return linalg::cholesky(a, false); }, {3, 64, 64}),
            3 * (n * n * n / 3 + n * n / 2 + n / 6));
}

TEST(LinalgCostAnalysis, CompiledQrAndSvdCount) {
  const double m = 48, n = 32;
  const double qr = CompiledFlops([](const Array& a) { return linalg::qr(a, /*full_matrices=*/false).first; }, {48, 32});
  // geqrf + orgqr forming the 48 x 32 Q.
  EXPECT_DOUBLE_EQ(qr, (2 * m * n * n - 2 * n * n * n / 3 + m * n + n * n + 14 * n / 3) +
                    (4 * m * n * n - 2 * (m + n) * n * n + 4 * n * n * n / 3));
  const double s = CompiledFlops([](const Array& a) { return linalg::svd(a, false, /*compute_uv=*/false).s; }, {48, 32});
  EXPECT_DOUBLE_EQ(s, 4 * m * n * n - 4 * n * n * n / 3);
}

TEST(LinalgCostAnalysis, LapackCounts) {
  auto flops = [](LinalgOp op, std::vector<Shape> shapes, LinalgCall call = {}) {
    call.op = op;
    return LinalgFlops(call, shapes);
  };
  const double n = 100;
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kLu, {{100, 100}}), 2 * n * n * n / 3 - n * n / 2 + 5 * n / 6);
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kLu, {{30, 100}}), flops(LinalgOp::kLu, {{100, 30}}));
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kEigh, {{2, 100, 100}}), 2 * 9 * n * n * n);
  LinalgCall left;
  left.left_side = true;
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kTriangularSolve, {{100, 100}, {100, 7}}, left), n * n * 7);
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kTriangularSolve, {{7, 7}, {100, 7}}), 7.0 * 7 * 100);
  left.unit_diagonal = true;
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kTriangularSolve, {{100, 100}, {100, 7}}, left), n * n * 7 - n * 7);
  LinalgCall full;
  full.full_matrices = true;
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kSvd, {{100, 40}}, full), 4 * n * n * 40 + 8 * n * 40 * 40 + 9 * 40.0 * 40 * 40);
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kSvd, {{40, 100}}, full), flops(LinalgOp::kSvd, {{100, 40}}, full));
  EXPECT_DOUBLE_EQ(flops(LinalgOp::kSvd, {{100, 40}}), 14 * n * 40 * 40 + 8 * 40.0 * 40 * 40);
}

}  // namespace
}  // namespace jx::linalg_cost_test
