// The sort kernel: a (variadic) sort whose comparator is a predicate of compares between
// each key operand's pair of parameters (2k, 2k+1), joined by and/or/xor/not (how sort,
// argsort and top_k lower: a total-order LT/GT on operand 0, lexicographic over several
// keys; other operands carried along). Lines along the sort dimension are sorted
// independently, in parallel:
//   - one key, operand 0, ordered ascending or descending by a strict total order
//     (integers, pred, floats under TOTALORDER): the kernel library's sort
//     (lax/kernels/sort.h), the code eager lax::sort runs (radix sort of order-preserving
//     integer keys, stable), so jit and eager agree bit for bit;
//   - anything else: the comparator becomes a lookup table over the keys' order classes
//     (scalar_semantics.h), run by the evaluator's own bottom-up stable merge sort, so even
//     an inconsistent comparator (IEEE compares with NaNs) gives its permutation.
#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/lax/kernels/sort.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

constexpr int64_t kMinChunkElements = 65536;

// Order class of elements (i, j) of a contiguous line of one key operand.
using ClassFn = int (*)(const void* line, int64_t i, int64_t j);

template <typename E, int kMode>  // 0: natural 3 classes, 1: IEEE 6 classes, 2: total order
int ClassOf(const void* line, int64_t i, int64_t j) {
  if constexpr (kMode == 2) {
    return OrderClass3(E::TotalOrderKey(line, i), E::TotalOrderKey(line, j));
  } else if constexpr (kMode == 1) {
    return OrderClass6(E::Load(line, i), E::Load(line, j));
  } else {
    return OrderClass3(E::Load(line, i), E::Load(line, j));
  }
}

// The evaluator's bottom-up merge sort (hlo_evaluator_reduce.cc StableSort), step for step.
template <typename Less>
void MergeSort(std::vector<int64_t>& v, std::vector<int64_t>& tmp, Less&& less) {
  const size_t n = v.size();
  tmp.resize(n);
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      const size_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      size_t i = lo, j = mid, o = lo;
      while (i < mid && j < hi) tmp[o++] = less(v[j], v[i]) ? v[j++] : v[i++];
      while (i < mid) tmp[o++] = v[i++];
      while (j < hi) tmp[o++] = v[j++];
    }
    v.swap(tmp);
  }
}

struct Key {
  int operand;
  int64_t classes;
  ClassFn cls;
};

class SortKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const int64_t lines = outer_ * inner_;
    if (lines * len_ == 0) return absl::OkStatus();
    const int64_t grain = std::max<int64_t>(1, kMinChunkElements / len_);
    ParallelChunks(lines, grain, [&](int64_t begin, int64_t end) {
      std::vector<std::vector<uint8_t>> line(esize_.size());
      std::vector<int64_t> perm(len_), tmp;
      for (int64_t l = begin; l < end; ++l) {
        const int64_t o = l / inner_, in = l % inner_;
        const int64_t base = o * len_ * inner_ + in;  // element offset of position 0
        // Gather the line of every operand (contiguous already when inner_ == 1).
        std::vector<const uint8_t*> src(esize_.size());
        for (size_t k = 0; k < esize_.size(); ++k) {
          const uint8_t* x = static_cast<const uint8_t*>(operands[k]);
          const int64_t es = esize_[k];
          if (inner_ == 1) {
            src[k] = x + base * es;
            continue;
          }
          line[k].resize(len_ * es);
          for (int64_t i = 0; i < len_; ++i) {
            std::memcpy(line[k].data() + i * es, x + (base + i * inner_) * es, es);
          }
          src[k] = line[k].data();
        }
        for (int64_t i = 0; i < len_; ++i) perm[i] = i;
        MergeSort(perm, tmp, [&](int64_t a, int64_t b) {
          int64_t index = 0, stride = 1;
          for (const Key& key : keys_) {
            index += stride * key.cls(src[key.operand], a, b);
            stride *= key.classes;
          }
          return table_[index] != 0;
        });
        for (size_t k = 0; k < esize_.size(); ++k) {
          uint8_t* y = static_cast<uint8_t*>(results[k]);
          const int64_t es = esize_[k];
          for (int64_t i = 0; i < len_; ++i) {
            std::memcpy(y + (base + i * inner_) * es, src[k] + perm[i] * es, es);
          }
        }
      }
    });
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "sort"; }

  std::vector<int64_t> esize_;  // per operand
  int64_t outer_ = 1, len_ = 1, inner_ = 1;
  std::vector<Key> keys_;
  std::vector<uint8_t> table_;
};

// One total-order key on operand 0: the kernel library's sort.
class LibrarySortKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    // The library reads every input line before writing it only for a single operand; an
    // output sharing its operand's buffer sorts from a copy otherwise.
    std::vector<std::vector<uint8_t>> copies(dtypes_.size());
    std::vector<lax::kernels::SortOperand> ops;
    for (size_t k = 0; k < dtypes_.size(); ++k) {
      const void* in = operands[k];
      if (in == results[k] && dtypes_.size() > 1) {
        const uint8_t* p = static_cast<const uint8_t*>(in);
        copies[k].assign(p, p + elements_ * ItemSize(dtypes_[k]));
        in = copies[k].data();
      }
      ops.push_back({dtypes_[k], in, results[k]});
    }
    try {
      if (top_k_ > 0) {
        // Only the first top_k_ of each line are read: select them (top_k's lowering).
        const int64_t n = shape_.back();
        lax::kernels::TopK(dtypes_[0], operands[0], results[0], static_cast<int32_t*>(results[1]),
                           elements_ / n, n, top_k_, /*out_row_stride=*/n);
        return absl::OkStatus();
      }
      lax::kernels::Sort(ops, shape_, dimension_, /*num_keys=*/1, descending_);
    } catch (const std::exception& e) {
      return absl::InternalError(std::string("sort: ") + e.what());
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return top_k_ > 0 ? "top-k" : "sort"; }

  std::vector<DType> dtypes_;
  std::vector<int64_t> shape_;
  int64_t dimension_ = 0, elements_ = 0;
  bool descending_ = false;
  int64_t top_k_ = 0;  // > 0: only this prefix of each line is written (TopKPrefix)
};

// k when `sort` is top_k as lax lowers it (a stable descending sort along the last dim of x
// and an s32 iota along that dim) and every use of its results reads only the first k < n
// of each line (get-tuple-element then slice [0:k] of the last dim); 0 otherwise. Then the
// kernel selects the k largest per line instead of sorting, and leaves the rest unwritten.
int64_t TopKPrefix(const HloInstruction& sort, bool descending) {
  if (!descending || sort.operand_count() != 2) return 0;
  const hlo::Shape& x = sort.operand(0)->shape();
  const HloInstruction* iota = sort.operand(1);
  const int64_t last = x.rank() - 1;
  if (sort.sort_dimension() != last || iota->opcode() != HloOpcode::kIota ||
      iota->iota_dimension() != last || iota->shape().element_type() != hlo::S32) {
    return 0;
  }
  if (sort.parent() == nullptr || sort.parent()->root_instruction() == &sort) return 0;
  const int64_t n = x.dimensions(last);
  int64_t k = 0;
  for (const HloInstruction* gte : sort.users()) {
    if (gte->opcode() != HloOpcode::kGetTupleElement) return 0;
    if (gte->parent()->root_instruction() == gte) return 0;
    for (const HloInstruction* slice : gte->users()) {
      if (slice->opcode() != HloOpcode::kSlice) return 0;
      for (int64_t d = 0; d <= last; ++d) {
        const bool unit_stride = slice->slice_strides().empty() || slice->slice_strides()[d] == 1;
        if (slice->slice_starts()[d] != 0 || !unit_stride) return 0;
        if (d < last && slice->slice_limits()[d] != x.dimensions(d)) return 0;
      }
      k = std::max(k, slice->slice_limits()[last]);
    }
  }
  return k < n ? k : 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeSortKernel(const HloInstruction& instr) {
  if (instr.opcode() != HloOpcode::kSort) return absl::UnimplementedError("not a sort");
  const int64_t n = instr.operand_count();
  const hlo::HloComputation& cmp = *instr.to_apply();
  if (n == 0 || cmp.num_parameters() != 2 * n) return absl::UnimplementedError("bad arity");
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  std::vector<ComparedPair> all;
  for (int64_t k = 0; k < n; ++k) {
    all.push_back({2 * k, 2 * k + 1, instr.operand(k)->shape().element_type()});
  }
  std::optional<PredicateTable> table = PredicateTable::Analyze(*cmp.root_instruction(), all);
  if (!table) return absl::UnimplementedError("comparator outside the table form");
  // Only the compared operands are keys (the rest are carried, with one class each).
  std::vector<ComparedPair> pairs;
  for (const ComparedPair& p : all) {
    if (p.kind >= 0) pairs.push_back(p);
  }
  if (pairs.empty()) return absl::UnimplementedError("comparator compares nothing");

  const std::vector<uint8_t>& t = table->table();
  if (pairs.size() == 1 && pairs[0].a == 0 && pairs[0].classes() == 3 &&
      instr.operand(0)->shape().rank() > 0 &&
      (t == std::vector<uint8_t>{1, 0, 0} || t == std::vector<uint8_t>{0, 0, 1})) {
    auto kernel = std::make_unique<LibrarySortKernel>();
    for (const HloInstruction* op : instr.operands()) {
      const std::optional<DType> dtype = KernelDTypeOf(op->shape().element_type());
      if (!dtype) return absl::UnimplementedError("operand type");
      kernel->dtypes_.push_back(*dtype);
    }
    kernel->shape_ = hlo::SpanToVector(instr.operand(0)->shape().dimensions());
    kernel->dimension_ = instr.sort_dimension();
    kernel->elements_ = hlo::ShapeUtil::ElementsIn(instr.operand(0)->shape());
    kernel->descending_ = t[2] != 0;
    kernel->top_k_ = TopKPrefix(instr, kernel->descending_);
    return kernel;
  }

  auto kernel = std::make_unique<SortKernel>();
  kernel->table_ = table->table();
  for (const ComparedPair& p : pairs) {
    Key key{static_cast<int>(p.a / 2), p.classes(), nullptr};
    VisitType(p.type, [&](auto e) {
      using E = decltype(e);
      if (p.total_order()) {
        key.cls = &ClassOf<E, 2>;
      } else if (p.classes() == 6) {
        key.cls = &ClassOf<E, 1>;
      } else {
        key.cls = &ClassOf<E, 0>;
      }
    });
    if (key.cls == nullptr) return absl::UnimplementedError("key type");
    kernel->keys_.push_back(key);
  }
  absl::Span<const int64_t> dims = instr.operand(0)->shape().dimensions();
  const int64_t dim = instr.sort_dimension();
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (d < dim) kernel->outer_ *= dims[d];
    if (d > dim) kernel->inner_ *= dims[d];
  }
  kernel->len_ = dims.empty() ? 1 : dims[dim];
  for (const HloInstruction* op : instr.operands()) {
    kernel->esize_.push_back(hlo::ByteSizeOfPrimitiveType(op->shape().element_type()));
  }
  return kernel;
}

}  // namespace jx::cpu::internal
