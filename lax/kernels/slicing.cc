#include "jx/lax/kernels/slicing.h"

#include <limits>
#include <type_traits>

#include "jx/lax/kernels/copy_kernels.h"

namespace jx::lax::kernels {
namespace {

// Row-major strides (in elements) of dims.
DimVec Strides(absl::Span<const int64_t> dims) {
  DimVec strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  return strides;
}

// Element offset of the window's first element, its starts clamped.
int64_t WindowOffset(absl::Span<const int64_t> dims, absl::Span<const int64_t> window,
                     absl::Span<const int64_t> starts, const DimVec& strides) {
  int64_t offset = 0;
  for (size_t d = 0; d < dims.size(); ++d) {
    offset += ClampStart(starts[d], dims[d], window[d]) * strides[d];
  }
  return offset;
}

// Writes value over every element of a row-major array (dims, strides) outside the box
// [box_lo, box_lo + box_size): along dim 0 the slabs before and after the box are contiguous
// fills, and inside the box's rows the same split repeats one dimension in, down to the dims
// the box covers whole. Returns false, writing nothing, where that takes more than one fill
// call per 16 elements of the array (narrow borders around many short rows): one fill of the
// whole array is then cheaper.
bool FillOutsideBox(const void* value, absl::Span<const int64_t> dims, const DimVec& strides,
                    const DimVec& box_lo, const DimVec& box_size, int64_t item_size, void* out) {
  // full_from: the first dim from which the box covers every later dim whole.
  size_t full_from = dims.size();
  while (full_from > 0 && box_lo[full_from - 1] == 0 && box_size[full_from - 1] == dims[full_from - 1]) {
    --full_from;
  }
  // Two fills per sub-array visited: one at dim 0, box_size[0] at dim 1, and so on.
  int64_t calls = 0, visits = 1, elements = 1;
  for (size_t d = 0; d < full_from; ++d) {
    calls += 2 * visits;
    visits *= box_size[d];
  }
  for (int64_t n : dims) elements *= n;
  if (calls * 16 > elements) return false;
  char* base = static_cast<char*>(out);
  auto fill = [&](int64_t begin, int64_t count) {
    if (count > 0) Fill(value, count, item_size, base + begin * item_size);
  };
  // The part outside the box of the sub-array at `offset` spanning dims d...
  auto outside = [&](auto&& self, size_t d, int64_t offset) -> void {
    if (d >= full_from) return;
    const int64_t lo = box_lo[d], hi = lo + box_size[d];
    fill(offset, lo * strides[d]);
    fill(offset + hi * strides[d], (dims[d] - hi) * strides[d]);
    if (d + 1 >= full_from) return;
    for (int64_t i = lo; i < hi; ++i) self(self, d + 1, offset + i * strides[d]);
  };
  outside(outside, 0, 0);
  return true;
}

}  // namespace

void StridedCopy(const void* src, absl::Span<const int64_t> src_strides, void* dst,
                 absl::Span<const int64_t> dst_strides, absl::Span<const int64_t> sizes,
                 int64_t item_size) {
  // Drop size-1 dims and merge dims that are contiguous in both arrays.
  DimVec sz, ss, ds;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return;
    if (sizes[d] == 1) continue;
    if (!sz.empty() && ss.back() == src_strides[d] * sizes[d] && ds.back() == dst_strides[d] * sizes[d]) {
      sz.back() *= sizes[d];
      ss.back() = src_strides[d];
      ds.back() = dst_strides[d];
    } else {
      sz.push_back(sizes[d]);
      ss.push_back(src_strides[d]);
      ds.push_back(dst_strides[d]);
    }
  }
  DispatchBySize(item_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* s = static_cast<const U*>(src);
    U* d = static_cast<U*>(dst);
    if (sz.empty()) {
      d[0] = s[0];
      return;
    }
    const int64_t len = sz.back(), sst = ss.back(), dst_st = ds.back();
    sz.pop_back();
    ss.pop_back();
    ds.pop_back();
    const bool contiguous = sst == 1 && dst_st == 1;
    if (contiguous && len >= 2 * kParallelGrain) {
      // Long rows (e.g. concatenating along axis 0): split each row into pieces as well.
      constexpr int64_t kPiece = kParallelGrain;
      DimVec psz = sz, pss = ss, pds = ds, pos(sz.size(), 0);
      psz.push_back((len + kPiece - 1) / kPiece);
      pss.push_back(kPiece);
      pds.push_back(kPiece);
      pos.push_back(kPiece);
      ForEachIndex<3>(psz, {pss, pds, pos}, 1, [&](const std::array<int64_t, 3>& off) {
        std::memcpy(d + off[1], s + off[0], static_cast<size_t>(std::min(kPiece, len - off[2])) * sizeof(U));
      });
      return;
    }
    ForEachIndex<2>(sz, {ss, ds}, RowGrain(len), [&](const std::array<int64_t, 2>& off) {
      const U* sr = s + off[0];
      U* dr = d + off[1];
      if (contiguous) {
        std::memcpy(dr, sr, static_cast<size_t>(len) * sizeof(U));
      } else if (dst_st == 1) {
        for (int64_t k = 0; k < len; ++k) dr[k] = sr[k * sst];
      } else {
        for (int64_t k = 0; k < len; ++k) dr[k * dst_st] = sr[k * sst];
      }
    });
  });
}

void Fill(const void* value, int64_t n, int64_t item_size, void* out) {
  DispatchBySize(item_size, [&](auto tag) {
    using U = typename decltype(tag)::type;
    U v;
    std::memcpy(&v, value, sizeof(U));
    ParallelFill(static_cast<U*>(out), n, v);
  });
}

void Slice(const void* in, absl::Span<const int64_t> in_dims, absl::Span<const int64_t> starts,
           absl::Span<const int64_t> strides, absl::Span<const int64_t> out_dims, int64_t item_size, void* out) {
  const DimVec in_strides = Strides(in_dims);
  DimVec src_strides = in_strides;
  int64_t base = 0;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (!strides.empty()) src_strides[d] *= strides[d];
    base += starts[d] * in_strides[d];
  }
  StridedCopy(static_cast<const char*>(in) + base * item_size, src_strides, out, Strides(out_dims), out_dims,
              item_size);
}

void Concatenate(absl::Span<const void* const> operands, absl::Span<const int64_t> sizes_along_dim,
                 absl::Span<const int64_t> out_dims, int64_t dim, int64_t item_size, void* out) {
  const DimVec out_strides = Strides(out_dims);
  DimVec dims(out_dims.begin(), out_dims.end());
  char* dst = static_cast<char*>(out);
  int64_t offset = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    dims[dim] = sizes_along_dim[i];
    StridedCopy(operands[i], Strides(dims), dst + offset * out_strides[dim] * item_size, out_strides, dims,
                item_size);
    offset += sizes_along_dim[i];
  }
}

void Pad(const void* in, absl::Span<const int64_t> in_dims, const void* padding_value,
         absl::Span<const int64_t> low, absl::Span<const int64_t> interior, absl::Span<const int64_t> out_dims,
         int64_t item_size, void* out) {
  int64_t out_elements = 1, in_elements = 1;
  for (size_t d = 0; d < out_dims.size(); ++d) {
    out_elements *= out_dims[d];
    in_elements *= in_dims[d];
  }
  if (out_elements == 0) return;
  const DimVec in_strides = Strides(in_dims), out_strides = Strides(out_dims);
  // Operand element k of axis d lands at low + k * (interior + 1); keep the ks inside the output.
  bool covers_all = true, empty = in_elements == 0;
  DimVec sizes(out_dims.size()), src_strides(out_dims.size()), dst_strides(out_dims.size()),
      box_lo(out_dims.size());
  int64_t src_base = 0, dst_base = 0;
  for (size_t d = 0; d < out_dims.size() && !empty; ++d) {
    const int64_t step = interior[d] + 1, n = in_dims[d], o = out_dims[d], lo = low[d];
    const int64_t k_min = lo >= 0 ? 0 : (-lo + step - 1) / step;
    const int64_t k_max = std::min(n - 1, o - 1 - lo < 0 ? -1 : (o - 1 - lo) / step);
    if (k_min > k_max) {
      empty = true;
      break;
    }
    sizes[d] = k_max - k_min + 1;
    src_strides[d] = in_strides[d];
    dst_strides[d] = step * out_strides[d];
    src_base += k_min * in_strides[d];
    dst_base += (lo + k_min * step) * out_strides[d];
    box_lo[d] = lo + k_min * step;
    covers_all = covers_all && step == 1 && sizes[d] == o;
  }
  bool no_interior = true;
  for (int64_t i : interior) no_interior = no_interior && i == 0;
  if (empty) {
    Fill(padding_value, out_elements, item_size, out);
  } else if (!covers_all) {
    // Without interior padding the operand lands in one box: write the padding value only
    // around it (a one-row shift of a large array fills one row, not the whole output that
    // the copy then overwrites).
    if (!no_interior || !FillOutsideBox(padding_value, out_dims, out_strides, box_lo, sizes, item_size, out)) {
      Fill(padding_value, out_elements, item_size, out);
    }
  }
  if (!empty) {
    StridedCopy(static_cast<const char*>(in) + src_base * item_size, src_strides,
                static_cast<char*>(out) + dst_base * item_size, dst_strides, sizes, item_size);
  }
}

int64_t ReadIndexElement(const void* data, DType dtype, int64_t i) {
  auto read = [&](auto tag) -> int64_t {
    using T = typename decltype(tag)::type;
    const T v = static_cast<const T*>(data)[i];
    if constexpr (std::is_same_v<T, uint64_t>) {
      return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                 ? std::numeric_limits<int64_t>::max()
                 : static_cast<int64_t>(v);
    } else {
      return static_cast<int64_t>(v);
    }
  };
  switch (dtype) {
    case DType::kInt8: return read(TypeTag<int8_t>{});
    case DType::kInt16: return read(TypeTag<int16_t>{});
    case DType::kInt32: return read(TypeTag<int32_t>{});
    case DType::kInt64: return read(TypeTag<int64_t>{});
    case DType::kUInt8: return read(TypeTag<uint8_t>{});
    case DType::kUInt16: return read(TypeTag<uint16_t>{});
    case DType::kUInt32: return read(TypeTag<uint32_t>{});
    case DType::kUInt64: return read(TypeTag<uint64_t>{});
    default: break;
  }
  throw InternalError("index array must have an integer dtype");
}

void DynamicSlice(const void* operand, absl::Span<const int64_t> operand_dims,
                  absl::Span<const int64_t> starts, absl::Span<const int64_t> slice_sizes,
                  int64_t item_size, void* out) {
  for (int64_t s : slice_sizes) {
    if (s == 0) return;
  }
  const DimVec in_strides = Strides(operand_dims);
  const int64_t base = WindowOffset(operand_dims, slice_sizes, starts, in_strides);
  StridedCopy(static_cast<const char*>(operand) + base * item_size, in_strides, out,
              Strides(slice_sizes), slice_sizes, item_size);
}

void DynamicUpdateSlice(const void* operand, const void* update,
                        absl::Span<const int64_t> operand_dims,
                        absl::Span<const int64_t> update_dims, absl::Span<const int64_t> starts,
                        int64_t item_size, void* out) {
  if (out != operand) {
    int64_t n = 1;
    for (int64_t d : operand_dims) n *= d;
    ParallelMemcpy(out, operand, n * item_size);
  }
  for (int64_t s : update_dims) {
    if (s == 0) return;
  }
  const DimVec out_strides = Strides(operand_dims);
  const int64_t base = WindowOffset(operand_dims, update_dims, starts, out_strides);
  char* window = static_cast<char*>(out) + base * item_size;
  if (window == update) return;  // the update is the window itself (in place, full size)
  StridedCopy(update, Strides(update_dims), window, out_strides, update_dims, item_size);
}

}  // namespace jx::lax::kernels
