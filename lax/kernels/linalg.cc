// Dense linear algebra with Eigen: each matrix of a batch is mapped row-major, factored with
// Eigen's LLT / triangular solves / HouseholderQR / SelfAdjointEigenSolver / JacobiSVD (LU is
// LAPACK's getf2 partial pivoting, which also covers rectangular matrices), and the batch is
// spread over the TBB arena.
#include "jx/lax/kernels/linalg.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>

#include "jx/core/errors.h"
#include "jx/core/parallel.h"

namespace jx::lax::kernels {
namespace {

template <typename T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MapIn = Eigen::Map<const RowMatrix<T>>;
template <typename T>
using MapOut = Eigen::Map<RowMatrix<T>>;

// Calls f(T{}) for float32 / float64.
template <typename F>
void DispatchFloat(DType dtype, F&& f) {
  if (dtype == float32) {
    f(float{});
  } else if (dtype == float64) {
    f(double{});
  } else {
    throw TypeError(StrCat("linalg kernels support float32 and float64, got ", dtype_name(dtype)));
  }
}

// Matrices of a batch are independent: one per task once they are worth a thread.
template <typename F>
void ForEachMatrix(int64_t batch, int64_t flops_per_matrix, F&& f) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, flops_per_matrix));
  ParallelFor(batch, grain, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) f(b);
  });
}

template <typename T>
void CholeskyT(const T* a, T* l, int64_t batch, int64_t n) {
  if (n == 0) return;
  ForEachMatrix(batch, n * n * n, [&](int64_t b) {
    MapIn<T> A(a + b * n * n, n, n);
    MapOut<T> L(l + b * n * n, n, n);
    Eigen::LLT<RowMatrix<T>, Eigen::Lower> llt(A);
    if (llt.info() != Eigen::Success) {
      L.setConstant(std::numeric_limits<T>::quiet_NaN());
      return;
    }
    L = llt.matrixL();
  });
}

// x := op(a)^-1 x (left) or x op(a)^-1 (right), with op(a)'s triangle `lower` after transposing.
template <typename T, int Mode>
void SolveInPlace(const RowMatrix<T>& a, MapOut<T>& x, bool left_side) {
  if (left_side) {
    a.template triangularView<Mode>().solveInPlace(x);
  } else {
    a.template triangularView<Mode>().template solveInPlace<Eigen::OnTheRight>(x);
  }
}

template <typename T>
void TriangularSolveT(const T* a, const T* bm, T* x, int64_t batch, int64_t m, int64_t n, bool left_side,
                      bool lower, bool transpose_a, bool unit_diagonal) {
  const int64_t k = left_side ? m : n;
  if (m == 0 || n == 0) return;
  ForEachMatrix(batch, k * k * (left_side ? n : m), [&](int64_t b) {
    MapIn<T> A(a + b * k * k, k, k);
    MapOut<T> X(x + b * m * n, m, n);
    X = MapIn<T>(bm + b * m * n, m, n);
    const RowMatrix<T> opa = transpose_a ? RowMatrix<T>(A.transpose()) : RowMatrix<T>(A);
    const bool op_lower = lower != transpose_a;
    if (op_lower) {
      unit_diagonal ? SolveInPlace<T, Eigen::UnitLower>(opa, X, left_side)
                    : SolveInPlace<T, Eigen::Lower>(opa, X, left_side);
    } else {
      unit_diagonal ? SolveInPlace<T, Eigen::UnitUpper>(opa, X, left_side)
                    : SolveInPlace<T, Eigen::Upper>(opa, X, left_side);
    }
  });
}

// LAPACK's getf2: column by column, the largest magnitude below the diagonal is the pivot
// (the first of equals), its row swapped up, the column scaled and the trailing block updated.
template <typename T>
void LuT(const T* a, T* lu, int32_t* pivots, int32_t* permutation, int64_t batch, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n);
  ForEachMatrix(batch, m * n * k, [&](int64_t b) {
    MapOut<T> A(lu + b * m * n, m, n);
    A = MapIn<T>(a + b * m * n, m, n);
    int32_t* piv = pivots + b * k;
    int32_t* perm = permutation + b * m;
    for (int64_t i = 0; i < m; ++i) perm[i] = static_cast<int32_t>(i);
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = j;
      T best = std::abs(A(j, j));
      for (int64_t i = j + 1; i < m; ++i) {
        if (std::abs(A(i, j)) > best) {
          best = std::abs(A(i, j));
          p = i;
        }
      }
      piv[j] = static_cast<int32_t>(p);
      if (p != j) {
        A.row(j).swap(A.row(p));
        std::swap(perm[j], perm[p]);
      }
      const int64_t below = m - j - 1, right = n - j - 1;
      if (A(j, j) != T(0) && below > 0) A.col(j).tail(below) /= A(j, j);
      if (below > 0 && right > 0) {
        A.block(j + 1, j + 1, below, right).noalias() -= A.col(j).tail(below) * A.row(j).tail(right);
      }
    }
  });
}

template <typename T>
void QrT(const T* a, T* q, T* r, int64_t batch, int64_t m, int64_t n, bool full_matrices) {
  const int64_t k = std::min(m, n);
  const int64_t qcols = full_matrices ? m : k, rrows = full_matrices ? m : k;
  if (m == 0) return;
  ForEachMatrix(batch, m * n * k, [&](int64_t b) {
    Eigen::HouseholderQR<RowMatrix<T>> qr(MapIn<T>(a + b * m * n, m, n));
    MapOut<T> Q(q + b * m * qcols, m, qcols);
    MapOut<T> R(r + b * rrows * n, rrows, n);
    RowMatrix<T> eye = RowMatrix<T>::Identity(m, qcols);
    Q = qr.householderQ() * eye;
    R = qr.matrixQR().topRows(rrows).template triangularView<Eigen::Upper>();
  });
}

template <typename T>
void EighT(const T* a, T* v, T* w, int64_t batch, int64_t n, bool lower) {
  if (n == 0) return;
  ForEachMatrix(batch, 10 * n * n * n, [&](int64_t b) {
    MapIn<T> A(a + b * n * n, n, n);
    RowMatrix<T> sym(n, n);
    // The solver reads the lower triangle: the upper one, transposed, when asked.
    if (lower) {
      sym = A;
    } else {
      sym = A.transpose();
    }
    Eigen::SelfAdjointEigenSolver<RowMatrix<T>> es(sym, Eigen::ComputeEigenvectors);
    MapOut<T> V(v + b * n * n, n, n);
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>> W(w + b * n, n);
    if (es.info() != Eigen::Success) {
      V.setConstant(std::numeric_limits<T>::quiet_NaN());
      W.setConstant(std::numeric_limits<T>::quiet_NaN());
      return;
    }
    V = es.eigenvectors();
    W = es.eigenvalues();
  });
}

template <typename T>
void SvdT(const T* a, T* s, T* u, T* vt, int64_t batch, int64_t m, int64_t n, bool full_matrices,
          bool compute_uv) {
  using ColMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  const int64_t k = std::min(m, n);
  const int64_t ucols = full_matrices ? m : k, vtrows = full_matrices ? n : k;
  const unsigned options = !compute_uv ? 0
                           : full_matrices ? (Eigen::ComputeFullU | Eigen::ComputeFullV)
                                           : (Eigen::ComputeThinU | Eigen::ComputeThinV);
  if (k == 0) {
    // Nothing to decompose: the factors that are not empty are identities.
    for (int64_t b = 0; b < batch && compute_uv; ++b) {
      MapOut<T>(u + b * m * ucols, m, ucols).setIdentity();
      MapOut<T>(vt + b * vtrows * n, vtrows, n).setIdentity();
    }
    return;
  }
  ForEachMatrix(batch, 20 * m * n * k, [&](int64_t b) {
    const ColMatrix A = MapIn<T>(a + b * m * n, m, n);
    Eigen::JacobiSVD<ColMatrix> svd(A, options);
    Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(s + b * k, k) = svd.singularValues();
    if (!compute_uv) return;
    MapOut<T>(u + b * m * ucols, m, ucols) = svd.matrixU();
    MapOut<T>(vt + b * vtrows * n, vtrows, n) = svd.matrixV().transpose();
  });
}

int64_t BatchOf(const Shape& shape) {
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) batch *= shape[i];
  return batch;
}

struct Flag {
  const char* name;
  bool LinalgCall::*field;
};
constexpr Flag kFlags[] = {
    {"left_side", &LinalgCall::left_side},         {"lower", &LinalgCall::lower},
    {"transpose_a", &LinalgCall::transpose_a},     {"conjugate_a", &LinalgCall::conjugate_a},
    {"unit_diagonal", &LinalgCall::unit_diagonal}, {"full_matrices", &LinalgCall::full_matrices},
    {"compute_uv", &LinalgCall::compute_uv},       {"sort_eigenvalues", &LinalgCall::sort_eigenvalues},
};

constexpr std::pair<LinalgOp, std::string_view> kTargets[] = {
    {LinalgOp::kCholesky, "jx_linalg_cholesky"}, {LinalgOp::kTriangularSolve, "jx_linalg_triangular_solve"},
    {LinalgOp::kLu, "jx_linalg_lu"},             {LinalgOp::kQr, "jx_linalg_qr"},
    {LinalgOp::kEigh, "jx_linalg_eigh"},         {LinalgOp::kSvd, "jx_linalg_svd"},
};

}  // namespace

bool IsLinalgDType(DType dtype) { return dtype == float32 || dtype == float64; }

void Cholesky(DType dtype, const void* a, void* l, int64_t batch, int64_t n) {
  DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    CholeskyT(static_cast<const T*>(a), static_cast<T*>(l), batch, n);
  });
}

void TriangularSolve(DType dtype, const void* a, const void* b, void* x, int64_t batch, int64_t m, int64_t n,
                     bool left_side, bool lower, bool transpose_a, bool unit_diagonal) {
  DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    TriangularSolveT(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(x), batch, m, n, left_side,
                     lower, transpose_a, unit_diagonal);
  });
}

void Lu(DType dtype, const void* a, void* lu, int32_t* pivots, int32_t* permutation, int64_t batch, int64_t m,
        int64_t n) {
  DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    LuT(static_cast<const T*>(a), static_cast<T*>(lu), pivots, permutation, batch, m, n);
  });
}

void Qr(DType dtype, const void* a, void* q, void* r, int64_t batch, int64_t m, int64_t n, bool full_matrices) {
  DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    QrT(static_cast<const T*>(a), static_cast<T*>(q), static_cast<T*>(r), batch, m, n, full_matrices);
  });
}

void Eigh(DType dtype, const void* a, void* v, void* w, int64_t batch, int64_t n, bool lower) {
  DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    EighT(static_cast<const T*>(a), static_cast<T*>(v), static_cast<T*>(w), batch, n, lower);
  });
}

void Svd(DType dtype, const void* a, void* s, void* u, void* vt, int64_t batch, int64_t m, int64_t n,
         bool full_matrices, bool compute_uv) {
  DispatchFloat(dtype, [&](auto t) {
    using T = decltype(t);
    SvdT(static_cast<const T*>(a), static_cast<T*>(s), static_cast<T*>(u), static_cast<T*>(vt), batch, m, n,
         full_matrices, compute_uv);
  });
}

std::string_view LinalgCustomCallTarget(LinalgOp op) {
  for (const auto& [o, name] : kTargets) {
    if (o == op) return name;
  }
  return "";
}

std::optional<LinalgOp> LinalgOpFromCustomCallTarget(std::string_view target) {
  for (const auto& [o, name] : kTargets) {
    if (name == target) return o;
  }
  return std::nullopt;
}

std::string EncodeLinalgCall(const LinalgCall& call) {
  std::string out;
  for (const Flag& f : kFlags) {
    if (!out.empty()) out += ",";
    out += f.name;
    out += call.*f.field ? "=1" : "=0";
  }
  return out;
}

std::optional<LinalgCall> DecodeLinalgCall(std::string_view target, std::string_view config) {
  const std::optional<LinalgOp> op = LinalgOpFromCustomCallTarget(target);
  if (!op) return std::nullopt;
  LinalgCall call;
  call.op = *op;
  // Exactly EncodeLinalgCall's form: "name=0|1" for every flag, in order, comma-separated.
  std::string_view rest = config;
  for (size_t i = 0; i < std::size(kFlags); ++i) {
    const std::string_view name = kFlags[i].name;
    if (i > 0) {
      if (rest.empty() || rest[0] != ',') return std::nullopt;
      rest.remove_prefix(1);
    }
    if (rest.size() < name.size() + 2 || rest.substr(0, name.size()) != name || rest[name.size()] != '=') {
      return std::nullopt;
    }
    const char v = rest[name.size() + 1];
    if (v != '0' && v != '1') return std::nullopt;
    call.*kFlags[i].field = v == '1';
    rest.remove_prefix(name.size() + 2);
  }
  if (!rest.empty()) return std::nullopt;
  return call;
}

void RunLinalg(const LinalgCall& call, DType dtype, absl::Span<const Shape> operand_shapes,
               absl::Span<const void* const> operands, absl::Span<void* const> results) {
  const Shape& a = operand_shapes[0];
  const int64_t batch = BatchOf(a);
  const int64_t rows = a[a.size() - 2], cols = a[a.size() - 1];
  switch (call.op) {
    case LinalgOp::kCholesky:
      Cholesky(dtype, operands[0], results[0], batch, rows);
      return;
    case LinalgOp::kTriangularSolve: {
      const Shape& b = operand_shapes[1];
      TriangularSolve(dtype, operands[0], operands[1], results[0], batch, b[b.size() - 2], b[b.size() - 1],
                      call.left_side, call.lower, call.transpose_a, call.unit_diagonal);
      return;
    }
    case LinalgOp::kLu:
      Lu(dtype, operands[0], results[0], static_cast<int32_t*>(results[1]), static_cast<int32_t*>(results[2]), batch,
         rows, cols);
      return;
    case LinalgOp::kQr:
      Qr(dtype, operands[0], results[0], results[1], batch, rows, cols, call.full_matrices);
      return;
    case LinalgOp::kEigh:
      Eigh(dtype, operands[0], results[0], results[1], batch, rows, call.lower);
      return;
    case LinalgOp::kSvd:
      Svd(dtype, operands[0], results[0], call.compute_uv ? results[1] : nullptr,
          call.compute_uv ? results[2] : nullptr, batch, rows, cols, call.full_matrices, call.compute_uv);
      return;
  }
}

}  // namespace jx::lax::kernels
