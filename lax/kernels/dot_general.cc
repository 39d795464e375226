// dot_general on the batched GEMM: canonicalize to [B, M, K] x [B, K, N], copying an operand
// only when its dims do not already form strided GEMM axes or its dtype needs converting.
#include "jx/lax/kernels/dot_general.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_join.h"
#include "jx/core/buffer.h"
#include "jx/core/errors.h"
#include "jx/core/shape.h"

namespace jx::lax::kernels {
namespace {

using DimVec = absl::InlinedVector<int64_t, 8>;
using Dims = absl::Span<const int64_t>;

DimVec FreeDims(int64_t rank, Dims batch, Dims contract) {
  DimVec out;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contract.begin(), contract.end(), d) == contract.end()) {
      out.push_back(d);
    }
  }
  return out;
}

int64_t GroupSize(Dims shape, Dims dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[d];
  return n;
}

// The stride of dims (in this order) merged into one axis of a row-major array, 0 for a group
// of total size <= 1, or nullopt when the dims do not nest.
std::optional<int64_t> MergedStride(Dims shape, const std::vector<int64_t>& strides, Dims dims) {
  int64_t prev = -1;
  for (int64_t d : dims) {
    if (shape[d] == 1) continue;
    if (prev >= 0 && strides[prev] != strides[d] * shape[d]) return std::nullopt;
    prev = d;
  }
  return prev < 0 ? 0 : strides[prev];
}

// One GEMM operand: rows x cols matrices (op(X) before transposition), one per batch entry.
struct GemmOperand {
  const void* data = nullptr;
  int64_t ld = 0, batch_stride = 0;
  bool transposed = false;
  std::shared_ptr<Buffer> scratch;  // owns packed data, if any
};

// Views the operand as [batch, rows, cols] without copying when its dims allow it.
bool TryDirectOperand(const void* x, Dims shape, Dims batch, Dims row_dims, Dims col_dims, GemmOperand* op) {
  const std::vector<int64_t> strides = RowMajorStrides(Shape(shape.begin(), shape.end()));
  const auto sb = MergedStride(shape, strides, batch);
  const auto sr = MergedStride(shape, strides, row_dims);
  const auto sc = MergedStride(shape, strides, col_dims);
  if (!sb || !sr || !sc) return false;
  const int64_t rows = GroupSize(shape, row_dims), cols = GroupSize(shape, col_dims);
  op->data = x;
  op->batch_stride = *sb;
  if (cols <= 1 || *sc == 1) {
    op->transposed = false;
    op->ld = rows <= 1 ? std::max<int64_t>(cols, 1) : *sr;
    return true;
  }
  if (rows <= 1 || *sr == 1) {
    op->transposed = true;
    op->ld = cols <= 1 ? std::max<int64_t>(rows, 1) : *sc;
    return true;
  }
  return false;
}

// Copies (and converts to acc) the operand into a dense [batch, rows, cols] or, when its
// innermost memory dim is a row dim, [batch, cols, rows] buffer.
GemmOperand PackOperand(DType dtype, const void* x, Dims shape, DType acc, Dims batch, Dims row_dims,
                        Dims col_dims) {
  const std::vector<int64_t> strides = RowMajorStrides(Shape(shape.begin(), shape.end()));
  int64_t inner = -1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) {
      inner = d;
      break;
    }
  }
  GemmOperand op;
  op.transposed = inner >= 0 && std::find(row_dims.begin(), row_dims.end(), inner) != row_dims.end();
  DimVec sizes, src_strides;
  auto add = [&](Dims dims) {
    for (int64_t d : dims) {
      sizes.push_back(shape[d]);
      src_strides.push_back(strides[d]);
    }
  };
  add(batch);
  add(op.transposed ? col_dims : row_dims);
  add(op.transposed ? row_dims : col_dims);
  const int64_t rows = GroupSize(shape, row_dims), cols = GroupSize(shape, col_dims);
  op.scratch = Buffer::Allocate(NumElements(Shape(shape.begin(), shape.end())) * ItemSize(acc));
  PackConvert(dtype, x, sizes, src_strides, acc, op.scratch->data());
  op.data = op.scratch->data();
  op.ld = std::max<int64_t>(1, op.transposed ? rows : cols);
  op.batch_stride = rows * cols;
  return op;
}

GemmOperand MakeOperand(DType dtype, const void* x, Dims shape, DType acc, Dims batch, Dims row_dims,
                        Dims col_dims) {
  GemmOperand op;
  if (SameRepresentation(dtype, acc) && TryDirectOperand(x, shape, batch, row_dims, col_dims, &op)) return op;
  return PackOperand(dtype, x, shape, acc, batch, row_dims, col_dims);
}

std::string DimsStr(Dims v) { return StrCat("[", absl::StrJoin(v, ","), "]"); }

void CheckArgs(const DotGeneralArgs& a) {
  auto fail = [&](std::string_view why) {
    throw ValueError(StrCat("dot_general kernel: ", why, " (lhs ", dtype_name(a.lhs_dtype), DimsStr(a.lhs_shape),
                            ", rhs ", dtype_name(a.rhs_dtype), DimsStr(a.rhs_shape), ", batch dims ",
                            DimsStr(a.lhs_batch_dims), "/", DimsStr(a.rhs_batch_dims), ", contracting dims ",
                            DimsStr(a.lhs_contracting_dims), "/", DimsStr(a.rhs_contracting_dims), ")"));
  };
  if (a.lhs_batch_dims.size() != a.rhs_batch_dims.size() ||
      a.lhs_contracting_dims.size() != a.rhs_contracting_dims.size()) {
    fail("lhs and rhs need as many batch and contracting dims");
  }
  auto check_side = [&](Dims shape, Dims batch, Dims contract) {
    std::vector<bool> seen(shape.size(), false);
    for (Dims dims : {batch, contract}) {
      for (int64_t d : dims) {
        if (d < 0 || d >= static_cast<int64_t>(shape.size()) || seen[d]) fail("dims out of range or repeated");
        seen[d] = true;
      }
    }
  };
  check_side(a.lhs_shape, a.lhs_batch_dims, a.lhs_contracting_dims);
  check_side(a.rhs_shape, a.rhs_batch_dims, a.rhs_contracting_dims);
  for (size_t i = 0; i < a.lhs_batch_dims.size(); ++i) {
    if (a.lhs_shape[a.lhs_batch_dims[i]] != a.rhs_shape[a.rhs_batch_dims[i]]) fail("batch dim sizes differ");
  }
  for (size_t i = 0; i < a.lhs_contracting_dims.size(); ++i) {
    if (a.lhs_shape[a.lhs_contracting_dims[i]] != a.rhs_shape[a.rhs_contracting_dims[i]]) {
      fail("contracting dim sizes differ");
    }
  }
}

}  // namespace

void DotGeneral(const DotGeneralArgs& args) {
  CheckArgs(args);
  const DimVec lhs_free = FreeDims(static_cast<int64_t>(args.lhs_shape.size()), args.lhs_batch_dims,
                                   args.lhs_contracting_dims);
  const DimVec rhs_free = FreeDims(static_cast<int64_t>(args.rhs_shape.size()), args.rhs_batch_dims,
                                   args.rhs_contracting_dims);
  const int64_t b = GroupSize(args.lhs_shape, args.lhs_batch_dims);
  const int64_t m = GroupSize(args.lhs_shape, lhs_free);
  const int64_t n = GroupSize(args.rhs_shape, rhs_free);
  const int64_t k = GroupSize(args.lhs_shape, args.lhs_contracting_dims);
  if (b * m * n == 0) return;
  const DType acc = AccumulationDType(args.lhs_dtype, args.rhs_dtype, args.out_dtype);

  GemmOperand a, bop;
  if (k > 0) {
    a = MakeOperand(args.lhs_dtype, args.lhs, args.lhs_shape, acc, args.lhs_batch_dims, lhs_free,
                    args.lhs_contracting_dims);
    bop = MakeOperand(args.rhs_dtype, args.rhs, args.rhs_shape, acc, args.rhs_batch_dims,
                      args.rhs_contracting_dims, rhs_free);
  }
  const bool direct_out = SameRepresentation(args.out_dtype, acc);
  std::shared_ptr<Buffer> tmp;
  if (!direct_out) tmp = Buffer::Allocate(b * m * n * ItemSize(acc));

  GemmArgs g;
  g.dtype = acc;
  g.batch = b;
  g.m = m;
  g.n = n;
  g.k = k;
  g.a = a.data;
  g.lda = a.ld;
  g.stride_a = a.batch_stride;
  g.transpose_a = a.transposed;
  g.b = bop.data;
  g.ldb = bop.ld;
  g.stride_b = bop.batch_stride;
  g.transpose_b = bop.transposed;
  g.c = direct_out ? args.out : tmp->data();
  g.ldc = n;
  g.stride_c = m * n;
  // Each block is rounded to out_dtype and handed to the epilogue while it is in cache.
  const int64_t acc_size = ItemSize(acc), out_size = ItemSize(args.out_dtype);
  auto finish = [&](int64_t begin, int64_t end) {
    if (!direct_out) {
      PackConvert(acc, static_cast<const uint8_t*>(tmp->data()) + begin * acc_size, {end - begin}, {1},
                  args.out_dtype, static_cast<uint8_t*>(args.out) + begin * out_size);
    }
    if (args.epilogue) args.epilogue(begin, end);
  };
  if (!direct_out || args.epilogue) {
    g.on_block = [&](int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
      const int64_t base = bi * m * n;
      if (j0 == 0 && j1 == n) return finish(base + i0 * n, base + i1 * n);
      for (int64_t i = i0; i < i1; ++i) finish(base + i * n + j0, base + i * n + j1);
    };
  }
  Gemm(g);
}

}  // namespace jx::lax::kernels
