// Shape primitives: broadcast_in_dim, reshape, transpose, squeeze, expand_dims, rev, iota,
// copy. Abstract eval follows JAX's shape rules; the kernels only move bytes (dispatch on the
// element size), with contiguous runs copied by memcpy/fill and rows split over the pool.
// reshape, squeeze and expand_dims share the operand's buffer (row-major data is unchanged).
// The jvp/transpose/batching rules (all but iota are linear) close the file.
#include "jx/lax/shape_ops.h"

#include <algorithm>
#include <numeric>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include "jx/lax/kernels/copy_kernels.h"
#include "jx/lax/op_util.h"
#include "jx/lax/primitives.h"
#include "jx/lax/reduction_ops.h"
#include "jx/lax/rule_util.h"

namespace jx::lax {

using internal::BindOp1;

namespace {

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Canonicalizes possibly negative axes against rank and sorts them.
std::vector<int64_t> CanonicalSortedAxes(const std::vector<int64_t>& axes, int64_t rank, std::string_view op) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) out.push_back(CanonicalizeAxis(a, rank, op));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Array broadcast_in_dim(const Array& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions) {
  // Like JAX, a 0-d operand broadcast to a 0-d shape is returned as is.
  if (x.ndim() == 0 && shape.empty() && broadcast_dimensions.empty()) return x;
  return BindOp1(kBroadcastInDim, {x},
                 ParamMap{{"shape", shape}, {"broadcast_dimensions", broadcast_dimensions}, {"sharding", ParamNone{}}});
}

Array broadcast(const Array& x, const Shape& sizes) {
  if (sizes.empty()) return x;
  Shape shape = sizes;
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  std::vector<int64_t> dims(static_cast<size_t>(x.ndim()));
  std::iota(dims.begin(), dims.end(), static_cast<int64_t>(sizes.size()));
  return broadcast_in_dim(x, shape, dims);
}

Array reshape(const Array& x, const Shape& new_sizes) {
  if (x.ndim() > 0 && x.shape() == new_sizes) return x;
  return BindOp1(kReshape, {x}, ParamMap{{"new_sizes", new_sizes}, {"dimensions", ParamNone{}}, {"sharding", ParamNone{}}});
}

Array reshape(const Array& x, const Shape& new_sizes, const std::vector<int64_t>& dimensions) {
  if (IsIdentity(dimensions) && static_cast<int64_t>(dimensions.size()) == x.ndim()) return reshape(x, new_sizes);
  return BindOp1(kReshape, {x}, ParamMap{{"new_sizes", new_sizes}, {"dimensions", dimensions}, {"sharding", ParamNone{}}});
}

Array transpose(const Array& x, const std::vector<int64_t>& permutation) {
  // JAX returns the operand itself for the identity permutation.
  if (static_cast<int64_t>(permutation.size()) == x.ndim() && IsIdentity(permutation)) return x;
  return BindOp1(kTranspose, {x}, ParamMap{{"permutation", permutation}});
}

Array squeeze(const Array& x, const std::vector<int64_t>& dimensions) {
  if (dimensions.empty()) return x;
  return BindOp1(kSqueeze, {x}, ParamMap{{"dimensions", CanonicalSortedAxes(dimensions, x.ndim(), "squeeze")}});
}

Array expand_dims(const Array& x, const std::vector<int64_t>& dimensions) {
  if (dimensions.empty()) return x;
  const int64_t out_rank = x.ndim() + static_cast<int64_t>(dimensions.size());
  return BindOp1(kExpandDims, {x}, ParamMap{{"dimensions", CanonicalSortedAxes(dimensions, out_rank, "expand_dims")}});
}

Array rev(const Array& x, const std::vector<int64_t>& dimensions) {
  return BindOp1(kRev, {x}, ParamMap{{"dimensions", dimensions}});
}

Array iota(DType dtype, int64_t size) { return broadcasted_iota(dtype, Shape{size}, 0); }

Array broadcasted_iota(DType dtype, const Shape& shape, int64_t dimension) {
  return BindOp1(kIota, {},
                 ParamMap{{"dtype", dtype}, {"shape", shape}, {"dimension", dimension}, {"sharding", ParamNone{}}});
}

Array copy(const Array& x) { return BindOp1(kCopy, {x}); }

namespace internal {
namespace {

using kernels::DimVec;

std::string Tup(const std::vector<int64_t>& v) { return ShapeToString(v); }

void CheckNonNegative(std::string_view op, std::string_view what, const std::vector<int64_t>& v,
                      const ShapedArray& operand) {
  for (int64_t d : v) {
    if (d < 0) ThrowOpError<ShapeError>(op, what, " must have every element be nonnegative, got ", what, "=", Tup(v),
                                        " for operand ", operand.str());
  }
}

// Checks that dims are distinct and in [0, rank).
void CheckDims(std::string_view op, std::string_view what, const std::vector<int64_t>& dims, int64_t rank,
               const ShapedArray& operand) {
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank) {
      ThrowOpError<ShapeError>(op, what, " must all be in [0, ", rank, "), got ", what, "=", Tup(dims),
                               " for operand ", operand.str());
    }
    if (seen[static_cast<size_t>(d)]) {
      ThrowOpError<ShapeError>(op, what, " must be unique, got ", what, "=", Tup(dims), " for operand ",
                               operand.str());
    }
    seen[static_cast<size_t>(d)] = true;
  }
}

// ---- abstract evaluation ----

Avals BroadcastInDimEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "broadcast_in_dim";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const Shape& shape = p.GetInts("shape");
  const std::vector<int64_t>& dims = p.GetInts("broadcast_dimensions");
  CheckNonNegative(op, "shape", shape, x);
  if (static_cast<int64_t>(dims.size()) != x.ndim()) {
    ThrowOpError<ShapeError>(op, "broadcast_dimensions must have length equal to operand ndim; got broadcast_dimensions=",
                             Tup(dims), " for operand ", x.str());
  }
  if (static_cast<int64_t>(shape.size()) < x.ndim()) {
    ThrowOpError<ShapeError>(op, "target shape must have equal or higher rank than the operand; got operand ", x.str(),
                             " and shape=", Tup(shape));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= static_cast<int64_t>(shape.size())) {
      ThrowOpError<ShapeError>(op, "broadcast_dimensions must be a subset of output dimensions, got broadcast_dimensions=",
                               Tup(dims), " for operand ", x.str(), " and shape=", Tup(shape));
    }
    if (i > 0 && dims[i] <= dims[i - 1]) {
      ThrowOpError<ShapeError>(op, "broadcast_dimensions must be strictly increasing; got broadcast_dimensions=",
                               Tup(dims), " for operand ", x.str());
    }
    const int64_t od = x.shape[i], td = shape[static_cast<size_t>(dims[i])];
    if (od != 1 && od != td) {
      ThrowOpError<ShapeError>(op, "operand dimension sizes must either be 1, or be equal to their corresponding "
                               "dimensions in the target shape; got operand ", x.str(), ", shape=", Tup(shape),
                               ", broadcast_dimensions=", Tup(dims), " (operand dimension ", i, " has size ", od,
                               ", target dimension ", dims[i], " has size ", td, ")");
    }
  }
  return {ShapedArray{shape, x.dtype, x.weak_type}};
}

Avals ReshapeEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "reshape";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const Shape& new_sizes = p.GetInts("new_sizes");
  CheckNonNegative(op, "new_sizes", new_sizes, x);
  if (NumElements(new_sizes) != x.size()) {
    ThrowOpError<ShapeError>(op, "total size must be unchanged, got new_sizes=", Tup(new_sizes), " (", NumElements(new_sizes),
                             " elements) for operand ", x.str(), " (", x.size(), " elements)");
  }
  const Param& dims = p.Get("dimensions");
  if (!dims.is_none()) {
    const std::vector<int64_t>& d = p.GetInts("dimensions");
    if (static_cast<int64_t>(d.size()) != x.ndim()) {
      ThrowOpError<ShapeError>(op, "dimensions must be a permutation of the operand dimensions, got dimensions=", Tup(d),
                               " for operand ", x.str());
    }
    CheckDims(op, "dimensions", d, x.ndim(), x);
  }
  return {ShapedArray{new_sizes, x.dtype, x.weak_type}};
}

Avals TransposeEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "transpose";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& perm = p.GetInts("permutation");
  if (static_cast<int64_t>(perm.size()) != x.ndim()) {
    ThrowOpError<ShapeError>(op, "permutation must have length equal to operand ndim; got permutation=", Tup(perm),
                             " for operand ", x.str());
  }
  for (int64_t a : perm) {
    if (a < 0 || a >= x.ndim()) {
      ThrowOpError<ShapeError>(op, "permutation must be a permutation of range(", x.ndim(), "); got permutation=",
                               Tup(perm), " for operand ", x.str());
    }
  }
  CheckDims(op, "permutation", perm, x.ndim(), x);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = x.shape[static_cast<size_t>(perm[i])];
  return {ShapedArray{out, x.dtype, x.weak_type}};
}

Avals SqueezeEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "squeeze";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& dims = p.GetInts("dimensions");
  CheckDims(op, "dimensions", dims, x.ndim(), x);
  std::vector<bool> drop(static_cast<size_t>(x.ndim()), false);
  for (int64_t d : dims) {
    if (x.shape[static_cast<size_t>(d)] != 1) {
      ThrowOpError<ShapeError>(op, "cannot select an axis to squeeze out which has size not equal to one, got operand ",
                               x.str(), " and dimensions=", Tup(dims));
    }
    drop[static_cast<size_t>(d)] = true;
  }
  Shape out;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (!drop[static_cast<size_t>(i)]) out.push_back(x.shape[static_cast<size_t>(i)]);
  }
  return {ShapedArray{out, x.dtype, x.weak_type}};
}

Avals ExpandDimsEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "expand_dims";
  CheckArity(op, in, 1);
  const ShapedArray& x = *in[0];
  const std::vector<int64_t>& dims = p.GetInts("dimensions");
  const int64_t out_rank = x.ndim() + static_cast<int64_t>(dims.size());
  CheckDims(op, "dimensions", dims, out_rank, x);
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t d : dims) inserted[static_cast<size_t>(d)] = true;
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : x.shape[k++]);
  return {ShapedArray{out, x.dtype, x.weak_type}};
}

Avals RevEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "rev";
  CheckArity(op, in, 1);
  CheckDims(op, "dimensions", p.GetInts("dimensions"), in[0]->ndim(), *in[0]);
  return {*in[0]};
}

Avals IotaEval(InAvals in, const ParamMap& p) {
  constexpr std::string_view op = "iota";
  CheckArity(op, in, 0);
  const DType dtype = p.GetDType("dtype");
  const Shape& shape = p.GetInts("shape");
  const int64_t dimension = p.GetInt("dimension");
  if (IsBool(dtype)) ThrowOpError<TypeError>(op, "does not accept dtype bool; expected a numeric dtype");
  for (int64_t d : shape) {
    if (d < 0) ThrowOpError<ShapeError>(op, "shape must have every element be nonnegative, got shape=", Tup(shape));
  }
  if (dimension < 0 || dimension >= static_cast<int64_t>(shape.size())) {
    ThrowOpError<ShapeError>(op, "dimension must be between 0 and len(shape), got dimension=", dimension,
                             " for shape=", Tup(shape), " (", dtype_name(dtype), ")");
  }
  return {ShapedArray{shape, dtype, false}};
}

Avals CopyEval(InAvals in, const ParamMap&) {
  CheckArity("copy", in, 1);
  return {*in[0]};
}

// ---- kernels ----

// An array sharing x's buffer under a new aval of the same size (row-major data unchanged).
Array ShareBuffer(const Array& x, const ShapedArray& aval) {
  return Array(std::make_shared<ConcreteArray>(aval, x.buffer()));
}

void BroadcastKernel(const Array& in, const std::vector<int64_t>& bdims, Array& out) {
  const Shape& out_shape = out.shape();
  const int64_t n = static_cast<int64_t>(out_shape.size());
  if (out.size() == 0) return;
  const std::vector<int64_t> op_strides = RowMajorStrides(in.shape());
  DimVec st(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < bdims.size(); ++i) {
    if (in.shape()[i] != 1) st[static_cast<size_t>(bdims[i])] = op_strides[i];
  }
  // Collapse: drop size-1 dims, merge neighbours that are both broadcast or both contiguous.
  DimVec sizes, strides;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t s = out_shape[static_cast<size_t>(j)], t = st[static_cast<size_t>(j)];
    if (s == 1) continue;
    if (!sizes.empty() && ((strides.back() == 0 && t == 0) || (t != 0 && strides.back() == t * s))) {
      sizes.back() *= s;
      strides.back() = t;
    } else {
      sizes.push_back(s);
      strides.push_back(t);
    }
  }
  kernels::DispatchBySize(ItemSize(in.dtype()), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(in.data());
    U* dst = static_cast<U*>(out.mutable_data());
    const size_t m = sizes.size();
    size_t prefix = 0;  // leading broadcast dims: computed once, then replicated
    while (prefix < m && strides[prefix] == 0) ++prefix;
    if (prefix == m) {
      kernels::ParallelFill(dst, out.size(), src[0]);
      return;
    }
    DimVec outer_sizes(sizes.begin() + static_cast<ptrdiff_t>(prefix), sizes.end() - 1);
    DimVec in_strides(strides.begin() + static_cast<ptrdiff_t>(prefix), strides.end() - 1);
    DimVec out_strides(outer_sizes.size());
    const int64_t len = sizes.back();
    int64_t acc = len;
    for (size_t k = outer_sizes.size(); k-- > 0;) {
      out_strides[k] = acc;
      acc *= outer_sizes[k];
    }
    const int64_t block = acc;  // elements of the non-replicated suffix
    const bool fill_rows = strides.back() == 0;
    kernels::ForEachIndex<2>(outer_sizes, {in_strides, out_strides}, kernels::RowGrain(len),
                             [&](const std::array<int64_t, 2>& off) {
                               if (fill_rows) {
                                 std::fill_n(dst + off[1], len, src[off[0]]);
                               } else {
                                 std::memcpy(dst + off[1], src + off[0], static_cast<size_t>(len) * sizeof(U));
                               }
                             });
    int64_t copies = 1;
    for (size_t k = 0; k < prefix; ++k) copies *= sizes[k];
    kernels::ReplicateBlock(reinterpret_cast<char*>(dst), block * static_cast<int64_t>(sizeof(U)), copies);
  });
}

// Micro-kernels: transpose an MxM block, src rows at stride ss (M contiguous elements each)
// into dst rows at stride ds. They only shuffle bits, so any 2/4/8-byte dtype goes through.
#ifdef __AVX2__
inline void MicroTranspose(const uint32_t* src, int64_t ss, uint32_t* dst, int64_t ds) {
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  const __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ss), r2 = _mm256_loadu_ps(s + 2 * ss),
               r3 = _mm256_loadu_ps(s + 3 * ss), r4 = _mm256_loadu_ps(s + 4 * ss), r5 = _mm256_loadu_ps(s + 5 * ss),
               r6 = _mm256_loadu_ps(s + 6 * ss), r7 = _mm256_loadu_ps(s + 7 * ss);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3),
               t3 = _mm256_unpackhi_ps(r2, r3), t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5),
               t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
               u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
               u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
               u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}
inline void MicroTranspose(const uint64_t* src, int64_t ss, uint64_t* dst, int64_t ds) {
  const double* s = reinterpret_cast<const double*>(src);
  double* d = reinterpret_cast<double*>(dst);
  const __m256d r0 = _mm256_loadu_pd(s), r1 = _mm256_loadu_pd(s + ss), r2 = _mm256_loadu_pd(s + 2 * ss),
                r3 = _mm256_loadu_pd(s + 3 * ss);
  const __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1), t2 = _mm256_unpacklo_pd(r2, r3),
                t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(d + ds, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(d + 2 * ds, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(d + 3 * ds, _mm256_permute2f128_pd(t1, t3, 0x31));
}
inline void MicroTranspose(const uint16_t* src, int64_t ss, uint16_t* dst, int64_t ds) {
  auto ld = [&](int k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k * ss)); };
  const __m128i r0 = ld(0), r1 = ld(1), r2 = ld(2), r3 = ld(3), r4 = ld(4), r5 = ld(5), r6 = ld(6), r7 = ld(7);
  const __m128i a0 = _mm_unpacklo_epi16(r0, r1), a1 = _mm_unpackhi_epi16(r0, r1), a2 = _mm_unpacklo_epi16(r2, r3),
                a3 = _mm_unpackhi_epi16(r2, r3), a4 = _mm_unpacklo_epi16(r4, r5), a5 = _mm_unpackhi_epi16(r4, r5),
                a6 = _mm_unpacklo_epi16(r6, r7), a7 = _mm_unpackhi_epi16(r6, r7);
  const __m128i b0 = _mm_unpacklo_epi32(a0, a2), b1 = _mm_unpackhi_epi32(a0, a2), b2 = _mm_unpacklo_epi32(a1, a3),
                b3 = _mm_unpackhi_epi32(a1, a3), b4 = _mm_unpacklo_epi32(a4, a6), b5 = _mm_unpackhi_epi32(a4, a6),
                b6 = _mm_unpacklo_epi32(a5, a7), b7 = _mm_unpackhi_epi32(a5, a7);
  auto st = [&](int k, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + k * ds), v); };
  st(0, _mm_unpacklo_epi64(b0, b4));
  st(1, _mm_unpackhi_epi64(b0, b4));
  st(2, _mm_unpacklo_epi64(b1, b5));
  st(3, _mm_unpackhi_epi64(b1, b5));
  st(4, _mm_unpacklo_epi64(b2, b6));
  st(5, _mm_unpackhi_epi64(b2, b6));
  st(6, _mm_unpacklo_epi64(b3, b7));
  st(7, _mm_unpackhi_epi64(b3, b7));
}
inline void MicroTranspose(const uint8_t* src, int64_t ss, uint8_t* dst, int64_t ds) {
  // 16x16 bytes in four unpack stages (8-, 16-, 32-, 64-bit).
  __m128i r[16], b[16], c[4][4], d[4][2][2];
  for (int k = 0; k < 16; ++k) r[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + k * ss));
  for (int p = 0; p < 8; ++p) {
    b[p] = _mm_unpacklo_epi8(r[2 * p], r[2 * p + 1]);      // cols 0..7 of rows 2p, 2p+1
    b[p + 8] = _mm_unpackhi_epi8(r[2 * p], r[2 * p + 1]);  // cols 8..15
  }
  for (int q = 0; q < 4; ++q) {  // c[g][q]: cols 4g..4g+3 of rows 4q..4q+3
    c[0][q] = _mm_unpacklo_epi16(b[2 * q], b[2 * q + 1]);
    c[1][q] = _mm_unpackhi_epi16(b[2 * q], b[2 * q + 1]);
    c[2][q] = _mm_unpacklo_epi16(b[8 + 2 * q], b[8 + 2 * q + 1]);
    c[3][q] = _mm_unpackhi_epi16(b[8 + 2 * q], b[8 + 2 * q + 1]);
  }
  for (int g = 0; g < 4; ++g) {
    for (int pp = 0; pp < 2; ++pp) {  // d[g][h][pp]: cols 4g+2h, 4g+2h+1 of rows 8pp..8pp+7
      d[g][0][pp] = _mm_unpacklo_epi32(c[g][2 * pp], c[g][2 * pp + 1]);
      d[g][1][pp] = _mm_unpackhi_epi32(c[g][2 * pp], c[g][2 * pp + 1]);
    }
  }
  for (int g = 0; g < 4; ++g) {
    for (int h = 0; h < 2; ++h) {
      const int col = 4 * g + 2 * h;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + col * ds), _mm_unpacklo_epi64(d[g][h][0], d[g][h][1]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (col + 1) * ds), _mm_unpackhi_epi64(d[g][h][0], d[g][h][1]));
    }
  }
}
template <typename U>
inline constexpr int64_t kMicro = sizeof(U) == 8 ? 4 : sizeof(U) == 1 ? 16 : 8;
#else
template <typename U>
inline constexpr int64_t kMicro = 0;
template <typename U>
inline void MicroTranspose(const U*, int64_t, U*, int64_t) {}
#endif

// One tile of a transpose: dst[i * ds + j] = src[i + j * ss] for i in [i0, i1), j in [j0, j1).
template <typename U>
void TransposeTile(const U* src, int64_t ss, U* dst, int64_t ds, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  constexpr int64_t m = kMicro<U>;
  int64_t i_full = i0, j_full = j0;
  if constexpr (m > 0) {
    i_full = i0 + (i1 - i0) / m * m;
    j_full = j0 + (j1 - j0) / m * m;
    // j (input rows) outer: a few input rows are consumed across the tile while their lines
    // are hot; measured faster than i-outer and than staging through a buffer.
    for (int64_t j = j0; j < j_full; j += m) {
      for (int64_t i = i0; i < i_full; i += m) MicroTranspose(src + i + j * ss, ss, dst + i * ds + j, ds);
    }
  }
  // Edges (everything without SIMD micro-kernels).
  for (int64_t i = i0; i < i1; ++i) {
    U* drow = dst + i * ds;
    const U* scol = src + i;
    for (int64_t j = (i < i_full ? j_full : j0); j < j1; ++j) drow[j] = scol[j * ss];
  }
}

// Transposes in (row-major, shape in_shape) into out. Size-1 dims are dropped and runs of
// input dims that stay adjacent are merged, so most transposes become a 2-D or 3-D problem.
void TransposeKernel(const void* in_data, const Shape& in_shape, const std::vector<int64_t>& perm, void* out_data,
                     int64_t item_size) {
  const int64_t total = NumElements(in_shape);
  if (total == 0) return;
  // Drop size-1 dims.
  const size_t rank = in_shape.size();
  std::vector<int64_t> new_index(rank, -1);
  DimVec sizes1;
  for (size_t i = 0; i < rank; ++i) {
    if (in_shape[i] != 1) {
      new_index[i] = static_cast<int64_t>(sizes1.size());
      sizes1.push_back(in_shape[i]);
    }
  }
  DimVec perm1;
  for (int64_t a : perm) {
    if (new_index[static_cast<size_t>(a)] >= 0) perm1.push_back(new_index[static_cast<size_t>(a)]);
  }
  // Merge runs of consecutive input dims that stay consecutive in the output.
  struct Run {
    int64_t first, len;
  };
  absl::InlinedVector<Run, 8> runs;  // in output order
  for (size_t j = 0; j < perm1.size(); ++j) {
    if (j > 0 && perm1[j] == perm1[j - 1] + 1) {
      ++runs.back().len;
    } else {
      runs.push_back({perm1[j], 1});
    }
  }
  const size_t r = runs.size();
  if (r <= 1) {
    kernels::ParallelMemcpy(out_data, in_data, total * item_size);
    return;
  }
  // Input order of the runs gives the merged input dims.
  DimVec order(r);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return runs[a].first < runs[b].first; });
  DimVec in_sizes(r), p(r);  // p: merged permutation (output position -> merged input dim)
  for (size_t k = 0; k < r; ++k) {
    const Run& run = runs[static_cast<size_t>(order[k])];
    int64_t s = 1;
    for (int64_t d = run.first; d < run.first + run.len; ++d) s *= sizes1[static_cast<size_t>(d)];
    in_sizes[k] = s;
    p[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
  }
  DimVec in_strides(r), out_sizes(r), out_strides(r);
  int64_t acc = 1;
  for (size_t k = r; k-- > 0;) {
    in_strides[k] = acc;
    acc *= in_sizes[k];
  }
  for (size_t j = 0; j < r; ++j) out_sizes[j] = in_sizes[static_cast<size_t>(p[j])];
  acc = 1;
  for (size_t j = r; j-- > 0;) {
    out_strides[j] = acc;
    acc *= out_sizes[j];
  }
  kernels::DispatchBySize(item_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(in_data);
    U* dst = static_cast<U*>(out_data);
    if (p[r - 1] == static_cast<int64_t>(r) - 1) {
      // The last axis stays last: copy whole rows.
      const int64_t len = out_sizes[r - 1];
      DimVec osz(out_sizes.begin(), out_sizes.end() - 1), ist(r - 1), ost(out_strides.begin(), out_strides.end() - 1);
      for (size_t j = 0; j + 1 < r; ++j) ist[j] = in_strides[static_cast<size_t>(p[j])];
      kernels::ForEachIndex<2>(osz, {ist, ost}, kernels::RowGrain(len), [&](const std::array<int64_t, 2>& off) {
        std::memcpy(dst + off[1], src + off[0], static_cast<size_t>(len) * sizeof(U));
      });
      return;
    }
    // Tiles over (q, a): q is the output position of the input's contiguous axis, a the
    // output's contiguous axis. Reads and writes of a tile stay in L1.
    constexpr int64_t kTile = sizeof(U) == 4 ? 64 : 32;
    const size_t a = r - 1;
    size_t q = 0;
    while (p[q] != static_cast<int64_t>(r) - 1) ++q;
    const int64_t n_q = out_sizes[q], n_a = out_sizes[a];
    const int64_t s_a = in_strides[static_cast<size_t>(p[a])], os_q = out_strides[q];
    // Odometer dims: the other output dims, then the two tile dims (whose coordinates come
    // out as offsets 2 and 3).
    DimVec sz, ist, ost, tq, ta;
    for (size_t j = 0; j < r; ++j) {
      if (j == q || j == a) continue;
      sz.push_back(out_sizes[j]);
      ist.push_back(in_strides[static_cast<size_t>(p[j])]);
      ost.push_back(out_strides[j]);
      tq.push_back(0);
      ta.push_back(0);
    }
    sz.push_back((n_q + kTile - 1) / kTile);
    sz.push_back((n_a + kTile - 1) / kTile);
    ist.insert(ist.end(), {0, 0});
    ost.insert(ost.end(), {0, 0});
    tq.insert(tq.end(), {kTile, 0});
    ta.insert(ta.end(), {0, kTile});
    kernels::ForEachIndex<4>(sz, {ist, ost, tq, ta}, kernels::RowGrain(kTile * kTile),
                             [&](const std::array<int64_t, 4>& off) {
                               TransposeTile<U>(src + off[0], s_a, dst + off[1], os_q, off[2],
                                             std::min(off[2] + kTile, n_q), off[3], std::min(off[3] + kTile, n_a));
                             });
  });
}

void RevKernel(const Array& in, const std::vector<int64_t>& dims, Array& out) {
  const Shape& shape = in.shape();
  if (in.size() == 0) return;
  std::vector<bool> reversed(shape.size(), false);
  for (int64_t d : dims) reversed[static_cast<size_t>(d)] = true;
  // Collapse: drop size-1 dims and merge neighbours with the same reversal flag.
  DimVec sizes;
  absl::InlinedVector<bool, 8> rev;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!sizes.empty() && rev.back() == reversed[i]) {
      sizes.back() *= shape[i];
    } else {
      sizes.push_back(shape[i]);
      rev.push_back(reversed[i]);
    }
  }
  const int64_t item = ItemSize(in.dtype());
  if (std::find(rev.begin(), rev.end(), true) == rev.end()) {
    kernels::ParallelMemcpy(out.mutable_data(), in.data(), in.size() * item);
    return;
  }
  const size_t m = sizes.size();
  const int64_t len = sizes.back();
  const bool inner_rev = rev.back();
  DimVec osz(sizes.begin(), sizes.end() - 1), ist(m - 1), ost(m - 1);
  int64_t acc = len, base = 0;
  for (size_t k = m - 1; k-- > 0;) {
    ost[k] = acc;
    ist[k] = rev[k] ? -acc : acc;
    if (rev[k]) base += (sizes[k] - 1) * acc;
    acc *= sizes[k];
  }
  kernels::DispatchBySize(item, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = static_cast<const U*>(in.data()) + base;
    U* dst = static_cast<U*>(out.mutable_data());
    if (osz.empty()) {  // one long reversed row: split it
      ParallelFor(len, kernels::kParallelGrain, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; ++k) dst[k] = src[len - 1 - k];
      });
      return;
    }
    kernels::ForEachIndex<2>(osz, {ist, ost}, kernels::RowGrain(len), [&](const std::array<int64_t, 2>& off) {
      const U* s = src + off[0];
      U* d = dst + off[1];
      if (inner_rev) {
        for (int64_t k = 0; k < len; ++k) d[k] = s[len - 1 - k];
      } else {
        std::memcpy(d, s, static_cast<size_t>(len) * sizeof(U));
      }
    });
  });
}

void IotaKernel(const Shape& shape, int64_t dimension, Array& out) {
  if (out.size() == 0) return;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dimension; ++i) outer *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(dimension) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t n = shape[static_cast<size_t>(dimension)];
  kernels::DispatchDType(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      T* dst = kernels::MutableData<T>(out);
      ParallelFor(n, kernels::RowGrain(inner), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          T v;
          if constexpr (kernels::kIsHalf<T>) v = T(static_cast<float>(i));
          else v = static_cast<T>(i);
          std::fill_n(dst + i * inner, inner, v);
        }
      });
      kernels::ReplicateBlock(reinterpret_cast<char*>(dst), n * inner * static_cast<int64_t>(sizeof(T)), outer);
    }
  });
}

Arrays BroadcastInDimImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  BroadcastKernel(in[0], p.GetInts("broadcast_dimensions"), out);
  return {out};
}

Arrays ReshapeImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  if (p.Get("dimensions").is_none()) return {ShareBuffer(in[0], out_avals[0])};
  const std::vector<int64_t>& dims = p.GetInts("dimensions");
  Array out = Array::Empty(out_avals[0]);
  TransposeKernel(in[0].data(), in[0].shape(), dims, out.mutable_data(), ItemSize(in[0].dtype()));
  return {out};
}

Arrays TransposeImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  TransposeKernel(in[0].data(), in[0].shape(), p.GetInts("permutation"), out.mutable_data(), ItemSize(in[0].dtype()));
  return {out};
}

Arrays ShareImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  return {ShareBuffer(in[0], out_avals[0])};
}

Arrays RevImpl(absl::Span<const Array> in, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  RevKernel(in[0], p.GetInts("dimensions"), out);
  return {out};
}

Arrays IotaImpl(absl::Span<const Array>, const ParamMap& p, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  IotaKernel(out_avals[0].shape, p.GetInt("dimension"), out);
  return {out};
}

Arrays CopyImpl(absl::Span<const Array> in, const ParamMap&, absl::Span<const ShapedArray> out_avals) {
  Array out = Array::Empty(out_avals[0]);
  kernels::ParallelMemcpy(out.mutable_data(), in[0].data(), in[0].nbytes());
  return {out};
}

void Define(Registry& r, Primitive p, AbstractEvalRule eval, ImplRule impl) {
  PrimitiveRules& rules = r.Define(p);
  rules.abstract_eval = std::move(eval);
  rules.impl = std::move(impl);
}

// ---- jvp, transpose and batching rules ----
// Every shape op but iota is linear in its operand: the jvp applies the op to the tangent,
// the transpose applies the inverse movement (summing over broadcast axes), and batching
// folds the batch dimension into the op's own dimensions.

// The jvp of an op linear in its single operand.
JvpRule LinearUnaryJvp(Primitive p) {
  return [p](absl::Span<const Array> primals, absl::Span<const Array> tangents, const ParamMap& params) {
    Array out = Bind1(p, primals, params);
    Array t = tangents[0].defined() ? Bind1(p, {tangents[0]}, params) : Array();
    return JvpResult{{std::move(out)}, {std::move(t)}};
  };
}

// A transpose rule for an op linear in its single operand, from ct -> operand cotangent.
TransposeRule LinearUnaryTranspose(std::function<Array(const Array&, const ShapedArray&, const ParamMap&)> f) {
  return [f = std::move(f)](absl::Span<const Array> cts, absl::Span<const TransposeArg> args, const ParamMap& params) {
    if (!cts[0].defined() || !args[0].is_linear()) return Arrays{Array()};
    return Arrays{f(cts[0], args[0].aval, params)};
  };
}

std::vector<int64_t> ShiftedBy1(const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (int64_t d : dims) out.push_back(d + 1);
  return out;
}

// A batch rule for a one-operand op whose batch dimension is moved to the front: `params`
// get rewritten by `shift` for the extra leading axis of size n.
BatchRule FrontBatch(Primitive p, std::function<ParamMap(const ParamMap&, int64_t n)> shift) {
  return [p, shift = std::move(shift)](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                                       const ParamMap& params) {
    Array x = MoveBatchToFront(args[0], dims[0], n);
    return BatchResult{{Bind1(p, {x}, shift(params, n))}, {0}};
  };
}

ParamMap WithInts(ParamMap params, std::string_view name, std::vector<int64_t> v) {
  params.Set(name, std::move(v));
  return params;
}

Array BroadcastInDimTranspose(const Array& ct, const ShapedArray& operand, const ParamMap& p) {
  const std::vector<int64_t>& bdims = p.GetInts("broadcast_dimensions");
  // Sum over the new axes and over the operand's size-1 axes (broadcast or not), then put
  // the size-1 axes back.
  std::vector<bool> kept(static_cast<size_t>(ct.ndim()), false);
  std::vector<int64_t> unit_dims;
  for (size_t i = 0; i < bdims.size(); ++i) {
    if (operand.shape[i] == 1) {
      unit_dims.push_back(static_cast<int64_t>(i));
    } else {
      kept[static_cast<size_t>(bdims[i])] = true;
    }
  }
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < ct.ndim(); ++d) {
    if (!kept[static_cast<size_t>(d)]) axes.push_back(d);
  }
  Array summed = axes.empty() ? ct : reduce_sum(ct, axes);
  return expand_dims(summed, unit_dims);
}

Array ReshapeTranspose(const Array& ct, const ShapedArray& operand, const ParamMap& p) {
  if (p.Get("dimensions").is_none()) return reshape(ct, operand.shape);
  // The forward op transposed by `dimensions` first: undo the reshape, then the transpose.
  const std::vector<int64_t>& dims = p.GetInts("dimensions");
  Shape permuted;
  for (int64_t d : dims) permuted.push_back(operand.shape[static_cast<size_t>(d)]);
  return transpose(reshape(ct, permuted), InversePermutation(dims));
}

BatchResult BroadcastInDimBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n,
                                const ParamMap& p) {
  Array x = MoveAxis(args[0], dims[0], 0);
  Shape shape = p.GetInts("shape");
  shape.insert(shape.begin(), n);
  std::vector<int64_t> bdims = ShiftedBy1(p.GetInts("broadcast_dimensions"));
  bdims.insert(bdims.begin(), 0);
  ParamMap q = WithInts(WithInts(p, "shape", shape), "broadcast_dimensions", bdims);
  return BatchResult{{Bind1(kBroadcastInDim, {x}, q)}, {0}};
}

BatchResult ReshapeBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t n, const ParamMap& p) {
  Array x = MoveAxis(args[0], dims[0], 0);
  if (!p.Get("dimensions").is_none()) {
    std::vector<int64_t> perm = ShiftedBy1(p.GetInts("dimensions"));
    perm.insert(perm.begin(), 0);
    x = transpose(x, perm);
  }
  Shape sizes = p.GetInts("new_sizes");
  sizes.insert(sizes.begin(), n);
  ParamMap q = WithInts(p, "new_sizes", sizes);
  q.Set("dimensions", ParamNone{});
  return BatchResult{{Bind1(kReshape, {x}, q)}, {0}};
}

// The batch axis stays where it is; the permutation keeps it in front of the output.
BatchResult TransposeBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap& p) {
  const int64_t b = dims[0];
  std::vector<int64_t> perm = {b};
  for (int64_t a : p.GetInts("permutation")) perm.push_back(a < b ? a : a + 1);
  return BatchResult{{Bind1(kTranspose, {args[0]}, ParamMap{{"permutation", perm}})}, {0}};
}

// rev and copy act per element position: the batch axis stays in place.
BatchResult RevBatch(absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap& p) {
  const int64_t b = dims[0];
  std::vector<int64_t> rdims;
  for (int64_t d : p.GetInts("dimensions")) rdims.push_back(d < b ? d : d + 1);
  return BatchResult{{Bind1(kRev, {args[0]}, ParamMap{{"dimensions", rdims}})}, {b}};
}

void AddShapeRules(Registry& r) {
  const auto shift_dims = [](const ParamMap& p, int64_t) { return WithInts(p, "dimensions", ShiftedBy1(p.GetInts("dimensions"))); };

  PrimitiveRules& bid = r.Define(kBroadcastInDim);
  bid.jvp = LinearUnaryJvp(kBroadcastInDim);
  bid.transpose = LinearUnaryTranspose(BroadcastInDimTranspose);
  bid.batch = BroadcastInDimBatch;

  PrimitiveRules& rs = r.Define(kReshape);
  rs.jvp = LinearUnaryJvp(kReshape);
  rs.transpose = LinearUnaryTranspose(ReshapeTranspose);
  rs.batch = ReshapeBatch;

  PrimitiveRules& tr = r.Define(kTranspose);
  tr.jvp = LinearUnaryJvp(kTranspose);
  tr.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap& p) {
    return transpose(ct, InversePermutation(p.GetInts("permutation")));
  });
  tr.batch = TransposeBatch;

  PrimitiveRules& sq = r.Define(kSqueeze);
  sq.jvp = LinearUnaryJvp(kSqueeze);
  sq.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap& p) {
    return expand_dims(ct, p.GetInts("dimensions"));
  });
  sq.batch = FrontBatch(kSqueeze, shift_dims);

  PrimitiveRules& ed = r.Define(kExpandDims);
  ed.jvp = LinearUnaryJvp(kExpandDims);
  ed.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap& p) {
    return squeeze(ct, p.GetInts("dimensions"));
  });
  ed.batch = FrontBatch(kExpandDims, shift_dims);

  PrimitiveRules& rv = r.Define(kRev);
  rv.jvp = LinearUnaryJvp(kRev);
  rv.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap& p) {
    return Bind1(kRev, {ct}, p);
  });
  rv.batch = RevBatch;

  PrimitiveRules& cp = r.Define(kCopy);
  cp.jvp = LinearUnaryJvp(kCopy);
  cp.transpose = LinearUnaryTranspose([](const Array& ct, const ShapedArray&, const ParamMap&) { return copy(ct); });
  cp.batch = [](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t, const ParamMap&) {
    return BatchResult{{copy(args[0])}, {dims[0]}};
  };

  // iota has no operands: it is never batched (vmap binds it as is), and its output is an
  // integer or a constant, so it has no tangent.
  PrimitiveRules& io = r.Define(kIota);
  io.jvp = [](absl::Span<const Array> primals, absl::Span<const Array>, const ParamMap& p) {
    return JvpResult{{Bind1(kIota, primals, p)}, {Array()}};
  };
  io.unsupported["transpose"] = "iota has no operands, so nothing to be linear in";
  io.batch = [](absl::Span<const Array> args, absl::Span<const int64_t>, int64_t, const ParamMap& p) {
    return BatchResult{{Bind1(kIota, args, p)}, {kNotMapped}};
  };
}

}  // namespace

void RegisterShapeOps(Registry& r) {
  Define(r, kBroadcastInDim, BroadcastInDimEval, BroadcastInDimImpl);
  Define(r, kReshape, ReshapeEval, ReshapeImpl);
  Define(r, kTranspose, TransposeEval, TransposeImpl);
  Define(r, kSqueeze, SqueezeEval, ShareImpl);
  Define(r, kExpandDims, ExpandDimsEval, ShareImpl);
  Define(r, kRev, RevEval, RevImpl);
  Define(r, kIota, IotaEval, IotaImpl);
  Define(r, kCopy, CopyEval, CopyImpl);
  AddShapeRules(r);
}

}  // namespace internal
}  // namespace jx::lax
