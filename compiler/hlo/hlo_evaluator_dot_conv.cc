// Dot (general dimension numbers) and convolution (dim_labels, strides, padding, lhs/rhs
// dilation, feature and batch groups) for the reference evaluator. Floating-point results
// accumulate in double and round once; integer results accumulate with wraparound in the
// result type (operands widened as a convert to the result type would).
#include <algorithm>

#include "jx/compiler/hlo/hlo_evaluator_internal.h"
#include "jx/compiler/hlo/status_macros.h"

namespace jx::hlo::eval_internal {
namespace {

// Operand values widened for accumulation.
struct Widened {
  std::vector<double> f;
  std::vector<uint64_t> i;
};

Widened Widen(const Literal& lit, bool as_float) {
  Widened w;
  const int64_t n = lit.element_count();
  if (as_float) {
    w.f.resize(n);
    for (int64_t k = 0; k < n; ++k) w.f[k] = ElementAsDouble(lit, k);
  } else {
    w.i.resize(n);
    for (int64_t k = 0; k < n; ++k) w.i[k] = ElementAsBits64(lit, k);
  }
  return w;
}

// Accumulates sum(lhs[a_k] * rhs[b_k]) over index pairs, then stores into out[o].
class Accumulator {
 public:
  Accumulator(const Literal& lhs, const Literal& rhs, PrimitiveType result_type)
      : as_float_(IsFloatingPointType(result_type)),
        lhs_(Widen(lhs, as_float_)),
        rhs_(Widen(rhs, as_float_)) {}
  void Reset() {
    f_ = 0;
    i_ = 0;
  }
  void Add(int64_t a, int64_t b) {
    if (as_float_) {
      f_ += lhs_.f[a] * rhs_.f[b];
    } else {
      i_ += lhs_.i[a] * rhs_.i[b];  // mod 2^64, then truncated to the result width
    }
  }
  void Store(Literal& out, int64_t o) const {
    if (as_float_) {
      StoreDouble(out, o, f_);
    } else if (out.shape().element_type() == PRED) {
      StoreUint64(out, o, i_ != 0);
    } else {
      StoreUint64(out, o, i_);
    }
  }

 private:
  bool as_float_;
  Widened lhs_, rhs_;
  double f_ = 0;
  uint64_t i_ = 0;
};

bool Contains(absl::Span<const int64_t> v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

absl::StatusOr<Literal> EvalDot(const HloInstruction& instr, Operands ops) {
  const Literal &lhs = *ops[0], &rhs = *ops[1];
  const DotDimensionNumbers& dn = instr.dot_dimension_numbers();
  const Shape &ls = lhs.shape(), &rs = rhs.shape();
  if (dn.lhs_batch_dims.size() != dn.rhs_batch_dims.size() ||
      dn.lhs_contracting_dims.size() != dn.rhs_contracting_dims.size()) {
    return Invalid("batch/contracting dimension lists differ in length");
  }
  std::vector<int64_t> lhs_free, rhs_free;
  for (int64_t d = 0; d < ls.rank(); ++d) {
    if (!Contains(dn.lhs_batch_dims, d) && !Contains(dn.lhs_contracting_dims, d)) {
      lhs_free.push_back(d);
    }
  }
  for (int64_t d = 0; d < rs.rank(); ++d) {
    if (!Contains(dn.rhs_batch_dims, d) && !Contains(dn.rhs_contracting_dims, d)) {
      rhs_free.push_back(d);
    }
  }
  const std::vector<int64_t> lst = RowMajorStrides(ls.dimensions());
  const std::vector<int64_t> rst = RowMajorStrides(rs.dimensions());
  // Offsets of every contracting position in both operands, in row-major order.
  std::vector<int64_t> csizes, loffs, roffs;
  for (size_t j = 0; j < dn.lhs_contracting_dims.size(); ++j) {
    const int64_t size = ls.dimensions(dn.lhs_contracting_dims[j]);
    if (size != rs.dimensions(dn.rhs_contracting_dims[j])) {
      return Invalid("contracting dimension sizes differ");
    }
    csizes.push_back(size);
  }
  int64_t ccount = 1;
  for (int64_t s : csizes) ccount *= s;
  if (ccount > 0) {
    std::vector<int64_t> c(csizes.size(), 0);
    do {
      int64_t lo = 0, ro = 0;
      for (size_t j = 0; j < c.size(); ++j) {
        lo += c[j] * lst[dn.lhs_contracting_dims[j]];
        ro += c[j] * rst[dn.rhs_contracting_dims[j]];
      }
      loffs.push_back(lo);
      roffs.push_back(ro);
    } while (NextIndex(csizes, c));
  }
  Literal out(instr.shape());
  if (out.element_count() == 0) return out;
  Accumulator acc(lhs, rhs, instr.shape().element_type());
  // Output dims: batch dims, then lhs free dims, then rhs free dims.
  const size_t nb = dn.lhs_batch_dims.size();
  std::vector<int64_t> idx(instr.shape().rank(), 0);
  int64_t o = 0;
  do {
    int64_t lbase = 0, rbase = 0;
    for (size_t j = 0; j < nb; ++j) {
      lbase += idx[j] * lst[dn.lhs_batch_dims[j]];
      rbase += idx[j] * rst[dn.rhs_batch_dims[j]];
    }
    for (size_t j = 0; j < lhs_free.size(); ++j) lbase += idx[nb + j] * lst[lhs_free[j]];
    for (size_t j = 0; j < rhs_free.size(); ++j) {
      rbase += idx[nb + lhs_free.size() + j] * rst[rhs_free[j]];
    }
    acc.Reset();
    for (size_t k = 0; k < loffs.size(); ++k) acc.Add(lbase + loffs[k], rbase + roffs[k]);
    acc.Store(out, o++);
  } while (NextIndex(instr.shape().dimensions(), idx));
  return out;
}

absl::StatusOr<Literal> EvalConvolution(const HloInstruction& instr, Operands ops) {
  const Literal &lhs = *ops[0], &rhs = *ops[1];
  const ConvolutionDimensionNumbers& dn = instr.convolution_dimension_numbers();
  const Window& window = instr.window();
  const Shape &ls = lhs.shape(), &rs = rhs.shape(), &os = instr.shape();
  const int64_t nsp = static_cast<int64_t>(dn.input_spatial_dimensions.size());
  if (static_cast<int64_t>(window.size()) != nsp ||
      static_cast<int64_t>(dn.kernel_spatial_dimensions.size()) != nsp ||
      static_cast<int64_t>(dn.output_spatial_dimensions.size()) != nsp) {
    return Invalid("window and dim_labels disagree on the number of spatial dims");
  }
  const int64_t fgc = instr.feature_group_count(), bgc = instr.batch_group_count();
  const int64_t in_features_per_group = rs.dimensions(dn.kernel_input_feature_dimension);
  const int64_t out_features = rs.dimensions(dn.kernel_output_feature_dimension);
  if (fgc < 1 || bgc < 1 || out_features % fgc != 0 || out_features % bgc != 0) {
    return Invalid("bad feature_group_count=", fgc, " / batch_group_count=", bgc);
  }
  const int64_t out_per_fgroup = out_features / fgc, out_per_bgroup = out_features / bgc;
  const int64_t out_batch = os.dimensions(dn.output_batch_dimension);
  const std::vector<int64_t> lst = RowMajorStrides(ls.dimensions());
  const std::vector<int64_t> rst = RowMajorStrides(rs.dimensions());
  std::vector<int64_t> wsizes;
  for (const WindowDim& w : window) {
    if (w.stride < 1 || w.lhs_dilation < 1 || w.rhs_dilation < 1) {
      return Invalid("window strides and dilations must be >= 1");
    }
    wsizes.push_back(w.size);
  }
  Literal out(os);
  if (out.element_count() == 0) return out;
  Accumulator acc(lhs, rhs, os.element_type());
  const bool empty_window = ShapeUtil::ElementsIn(ShapeUtil::MakeShape(F32, wsizes)) == 0;
  std::vector<int64_t> idx(os.rank(), 0), k(nsp, 0);
  int64_t o = 0;
  do {
    const int64_t b = idx[dn.output_batch_dimension];
    const int64_t f = idx[dn.output_feature_dimension];
    // Feature groups: output feature f reads input features of its group. Batch groups:
    // it reads the input batch slice of its group (groups are major in both).
    const int64_t in_feature_base = (f / out_per_fgroup) * in_features_per_group;
    const int64_t in_batch = bgc > 1 ? (f / out_per_bgroup) * out_batch + b : b;
    acc.Reset();
    if (!empty_window) {
      std::fill(k.begin(), k.end(), 0);
      do {
        int64_t loff = in_batch * lst[dn.input_batch_dimension];
        int64_t roff = f * rst[dn.kernel_output_feature_dimension];
        bool valid = true;
        for (int64_t d = 0; d < nsp && valid; ++d) {
          const WindowDim& w = window[d];
          const int64_t pos =
              idx[dn.output_spatial_dimensions[d]] * w.stride + k[d] * w.rhs_dilation - w.pad_low;
          if (pos < 0 || pos % w.lhs_dilation != 0) {
            valid = false;
            break;
          }
          const int64_t in_pos = pos / w.lhs_dilation;
          if (in_pos >= ls.dimensions(dn.input_spatial_dimensions[d])) valid = false;
          loff += in_pos * lst[dn.input_spatial_dimensions[d]];
          roff += k[d] * rst[dn.kernel_spatial_dimensions[d]];
        }
        if (valid) {
          for (int64_t c = 0; c < in_features_per_group; ++c) {
            acc.Add(loff + (in_feature_base + c) * lst[dn.input_feature_dimension],
                    roff + c * rst[dn.kernel_input_feature_dimension]);
          }
        }
      } while (NextIndex(wsizes, k));
    }
    acc.Store(out, o++);
  } while (NextIndex(os.dimensions(), idx));
  return out;
}

}  // namespace jx::hlo::eval_internal
