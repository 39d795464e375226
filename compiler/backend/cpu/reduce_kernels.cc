// Native reduces beyond the tile-program reduce kernel (loop_kernels.cc):
//   library reduce      a reduce whose reducer is add/multiply/maximum/minimum/and/or, init
//                       the op's identity and operand a plain buffer (or a widening convert
//                       of one: how float sums below f64 lower): the kernel library's
//                       reduction (lax/kernels/reduction.h), the code eager runs, so jit
//                       and eager agree bit for bit, at eager's speed, for every layout.
//   library arg-reduce  argmax/argmin as lowered (a (value, iota) reduce whose reducer is
//                       JAX's first-extreme, NaN-wins rule): the library's argmax/argmin.
// The rest are bit-exact with the evaluator's sequential fold (but see column reduce):
//   column reduce  an outer-axis reduce ([O, R, I] with I > 1) of a fused expression, any
//               element type and simple binary reducer: the expression is evaluated in its
//               own row-major order and folded into a row of accumulators (no transposing
//               reads); each output folds init, then its elements in order (long columns:
//               fixed chunks of rows combined in order, within rounding for float sums).
//   reduce      a single-output reduce (or kInput fusion) with an add/multiply/maximum/
//               minimum/and/or/xor reducer over any element type (pred, 8/16-bit ints,
//               f16/bf16, ...). The operand is read through a tile program in [kept...,
//               reduced...] order; ops whose fold order cannot change the bits (integers,
//               pred, max/min) split long rows into blocks folded in parallel, the rest fold
//               each row in order.
//   arg-reduce  a 2-operand (value, index) reduce whose reducer picks each output with
//               selects on a predicate of compares (how argmax/argmin lower): the predicates
//               become lookup tables over the order classes of (acc, x) (scalar_semantics.h),
//               so each step is two classifications and two lookups.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/backend/cpu/scalar_semantics.h"
#include "jx/compiler/backend/cpu/tile_program.h"
#include "jx/compiler/hlo/hlo_computation.h"
#include "jx/compiler/hlo/status_macros.h"
#include "jx/lax/kernels/reduction.h"

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using lax::kernels::ReduceOp;
using lax::kernels::ReduceOutput;
namespace kernels = lax::kernels;

constexpr int64_t kMinChunkElements = 16384;

// How a reduce reads its operand(s): [kept..., reduced...] order, so output o's elements
// are positions [o * reduced, (o + 1) * reduced) of a program compiled with `map`.
struct ReduceLayout {
  IndexMap map;
  int64_t outputs = 1, reduced = 1;
};

ReduceLayout LayoutOf(const HloInstruction& reduce) {
  ReduceLayout l;
  absl::Span<const int64_t> dims = reduce.operand(0)->shape().dimensions();
  std::vector<bool> is_reduced(dims.size(), false);
  for (int64_t d : reduce.dimensions()) is_reduced[d] = true;
  std::vector<int64_t> order;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!is_reduced[d]) order.push_back(static_cast<int64_t>(d));
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    if (is_reduced[d]) order.push_back(static_cast<int64_t>(d));
  }
  l.map.x.resize(dims.size());
  for (size_t k = 0; k < order.size(); ++k) {
    l.map.q_dims.push_back(dims[order[k]]);
    l.map.x[order[k]] = {static_cast<int64_t>(k), 1, 0};
    (is_reduced[order[k]] ? l.reduced : l.outputs) *= dims[order[k]];
  }
  return l;
}

// Where an init value comes from: an operand buffer or a constant inside the computation.
struct InitSource {
  int slot = -1;
  const uint8_t* constant = nullptr;
  const void* Get(absl::Span<const void* const> operands) const {
    return constant != nullptr ? constant : operands[slot];
  }
};

absl::StatusOr<InitSource> InitOf(const HloInstruction* init, const LeafResolver& leaves) {
  InitSource s;
  if (const int slot = leaves(init); slot >= 0) {
    s.slot = slot;
  } else if (init->opcode() == HloOpcode::kConstant) {
    s.constant = init->literal().untyped_data().data();
  } else {
    return absl::UnimplementedError("computed init value");
  }
  return s;
}

template <typename E, HloOpcode kOp>
class TypedReduceKernel : public Kernel {
 public:
  using C = typename E::Compute;
  using S = typename E::Storage;

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    void* out = results[0];
    const C init = E::Load(init_.Get(operands), 0);
    const void* const* inputs = operands.data();
    const int64_t outputs = layout_.outputs, reduced = layout_.reduced;
    const int64_t tile = program_->tile_elements();
    if (outputs == 0) return absl::OkStatus();
    if (reduced == 0) {
      for (int64_t o = 0; o < outputs; ++o) E::Store(out, o, init);
      return absl::OkStatus();
    }
    if (reduced <= tile || !kOrderFree<E, kOp>) {
      // Rows folded whole, in order; several short rows per tile.
      const int64_t rows_per_tile = std::max<int64_t>(1, tile / reduced);
      const int64_t grain =
          std::max<int64_t>(1, kMinChunkElements / (rows_per_tile * reduced)) * rows_per_tile;
      ParallelChunks(outputs, grain, [&](int64_t begin, int64_t end) {
        std::vector<S> buf(tile);
        for (int64_t o0 = begin; o0 < end; o0 += rows_per_tile) {
          const int64_t o1 = std::min(end, o0 + rows_per_tile);
          if (reduced <= tile) {
            program_->Evaluate(inputs, o0 * reduced, (o1 - o0) * reduced, buf.data());
            for (int64_t o = o0; o < o1; ++o) {
              E::Store(out, o, Fold(buf.data() + (o - o0) * reduced, reduced, init));
            }
            continue;
          }
          C acc = init;
          for (int64_t s = 0; s < reduced; s += tile) {
            const int64_t n = std::min(tile, reduced - s);
            program_->Evaluate(inputs, o0 * reduced + s, n, buf.data());
            acc = Fold(buf.data(), n, acc);
          }
          E::Store(out, o0, acc);
        }
      });
      return absl::OkStatus();
    }
    // Long rows, order-free op: fixed blocks folded in parallel, then combined in order.
    const int64_t block = 8 * tile;
    const int64_t blocks = (reduced + block - 1) / block;
    // Not std::vector<C>: for pred, C is bool and vector<bool> packs the partials into shared
    // words, so blocks finishing on different threads lost each other's bits.
    std::unique_ptr<C[]> partial = std::make_unique<C[]>(outputs * blocks);
    ParallelChunks(outputs * blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<S> buf(tile);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / blocks, lo = (item % blocks) * block;
        const int64_t hi = std::min(reduced, lo + block);
        // Each block folds from its own first element; init joins once, below.
        C acc{};
        for (int64_t s = lo; s < hi; s += tile) {
          const int64_t n = std::min(tile, hi - s);
          program_->Evaluate(inputs, o * reduced + s, n, buf.data());
          acc = s == lo ? Fold(buf.data() + 1, n - 1, E::Load(buf.data(), 0))
                        : Fold(buf.data(), n, acc);
        }
        partial[item] = acc;
      }
    });
    for (int64_t o = 0; o < outputs; ++o) {
      C acc = init;
      for (int64_t b = 0; b < blocks; ++b) acc = Step<E, kOp>(acc, partial[o * blocks + b]);
      E::Store(out, o, acc);
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "reduce"; }

  static C Fold(const S* x, int64_t n, C acc) {
    for (int64_t i = 0; i < n; ++i) acc = Step<E, kOp>(acc, E::Load(x, i));
    return acc;
  }

  std::unique_ptr<TileProgram> program_;
  ReduceLayout layout_;
  InitSource init_;
};

// argmax-style reduce: value operand of type EV, index operand of type EI.
template <typename EV, typename EI>
class ArgReduceKernel : public Kernel {
 public:
  using CV = typename EV::Compute;
  using CI = typename EI::Compute;

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const int64_t outputs = layout_.outputs, reduced = layout_.reduced;
    const int64_t tile = value_program_->tile_elements();
    const CV init_v = EV::Load(init_v_.Get(operands), 0);
    const CI init_i = EI::Load(init_i_.Get(operands), 0);
    const void* const* inputs = operands.data();
    if (outputs == 0) return absl::OkStatus();
    const int64_t rows_per_tile = std::max<int64_t>(1, tile / std::max<int64_t>(reduced, 1));
    const int64_t grain = std::max<int64_t>(
        1, kMinChunkElements / (rows_per_tile * std::max<int64_t>(reduced, 1))) * rows_per_tile;
    ParallelChunks(outputs, grain, [&](int64_t begin, int64_t end) {
      std::vector<typename EV::Storage> vbuf(tile);
      std::vector<typename EI::Storage> ibuf(tile);
      for (int64_t o0 = begin; o0 < end; o0 += rows_per_tile) {
        const int64_t o1 = std::min(end, o0 + rows_per_tile);
        if (reduced <= tile) {
          const int64_t n = (o1 - o0) * reduced;
          if (n > 0) {
            value_program_->Evaluate(inputs, o0 * reduced, n, vbuf.data());
            index_program_->Evaluate(inputs, o0 * reduced, n, ibuf.data());
          }
          for (int64_t o = o0; o < o1; ++o) {
            CV v = init_v;
            CI i = init_i;
            Fold(vbuf.data() + (o - o0) * reduced, ibuf.data() + (o - o0) * reduced, reduced, v, i);
            EV::Store(results[0], o, v);
            EI::Store(results[1], o, i);
          }
          continue;
        }
        CV v = init_v;
        CI i = init_i;
        for (int64_t s = 0; s < reduced; s += tile) {
          const int64_t n = std::min(tile, reduced - s);
          value_program_->Evaluate(inputs, o0 * reduced + s, n, vbuf.data());
          index_program_->Evaluate(inputs, o0 * reduced + s, n, ibuf.data());
          Fold(vbuf.data(), ibuf.data(), n, v, i);
        }
        EV::Store(results[0], o0, v);
        EI::Store(results[1], o0, i);
      }
    });
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "arg-reduce"; }

  void Fold(const typename EV::Storage* xv, const typename EI::Storage* xi, int64_t n, CV& v,
            CI& i) const {
    for (int64_t k = 0; k < n; ++k) {
      const CV x = EV::Load(xv, k);
      const CI j = EI::Load(xi, k);
      int cv = 0;
      if (value_classes_ == 1) {
        // The value is never compared.
      } else if (value_total_order_) {
        const typename EV::Storage acc_bits = v_bits(v);
        cv = OrderClass3(EV::TotalOrderKey(&acc_bits, 0), EV::TotalOrderKey(xv, k));
      } else if (value_classes_ == 6) {
        cv = OrderClass6(v, x);
      } else {
        cv = OrderClass3(v, x);
      }
      const int c = cv + (index_compared_ ? value_classes_ * OrderClass3(i, j) : 0);
      const bool take_v = take_value_[c] != 0, take_i = take_index_[c] != 0;
      if (take_v) v = x;
      if (take_i) i = j;
    }
  }
  // The stored bits of an accumulated value (for the total order).
  static typename EV::Storage v_bits(CV v) {
    typename EV::Storage s;
    EV::Store(&s, 0, v);
    return s;
  }

  std::unique_ptr<TileProgram> value_program_, index_program_;
  ReduceLayout layout_;
  InitSource init_v_, init_i_;
  int value_classes_ = 3;
  bool value_total_order_ = false, index_compared_ = true;
  // Per class tuple (value class + classes * index class): whether x replaces the acc.
  std::vector<uint8_t> take_value_, take_index_;
};

const HloInstruction* ReduceOf(const HloInstruction& instr, LeafResolver* leaves) {
  if (instr.opcode() == HloOpcode::kFusion) {
    *leaves = ParameterLeaves();
    return instr.fused_instructions_computation()->root_instruction();
  }
  *leaves = OperandLeaves(&instr);
  return &instr;
}

// For a select(pred, x, y) root element choosing between parameters acc (p_acc) and
// x (p_x): the table of "takes x" over the pairs' classes.
std::optional<std::vector<uint8_t>> TakeTable(const HloInstruction* select, int64_t p_acc,
                                              int64_t p_x, std::vector<ComparedPair>& pairs) {
  if (select->opcode() == HloOpcode::kParameter) {
    // Always one side.
    if (select->parameter_number() != p_acc && select->parameter_number() != p_x) {
      return std::nullopt;
    }
    int64_t entries = 1;
    for (const ComparedPair& p : pairs) entries *= p.classes();
    return std::vector<uint8_t>(entries, select->parameter_number() == p_x);
  }
  if (select->opcode() != HloOpcode::kSelect) return std::nullopt;
  const HloInstruction* on_true = select->operand(1);
  const HloInstruction* on_false = select->operand(2);
  if (on_true->opcode() != HloOpcode::kParameter || on_false->opcode() != HloOpcode::kParameter) {
    return std::nullopt;
  }
  const int64_t t = on_true->parameter_number(), f = on_false->parameter_number();
  if (!((t == p_x && f == p_acc) || (t == p_acc && f == p_x))) return std::nullopt;
  std::optional<PredicateTable> table = PredicateTable::Analyze(*select->operand(0), pairs);
  if (!table) return std::nullopt;
  std::vector<uint8_t> take = table->table();
  if (t == p_acc) {
    for (uint8_t& b : take) b = !b;
  }
  return take;
}

// How a (value, index) reducer picks: "takes x" tables over the order classes of
// (acc value, value) and (acc index, index), as ArgReduceKernel::Fold reads them.
struct ArgReducerTables {
  std::vector<ComparedPair> pairs;
  std::vector<uint8_t> take_value, take_index;
};

absl::StatusOr<ArgReducerTables> AnalyzeArgReducer(const HloInstruction& reduce) {
  if (reduce.opcode() != HloOpcode::kReduce || reduce.operand_count() != 4 ||
      !reduce.shape().IsTuple()) {
    return absl::UnimplementedError("not a 2-operand reduce");
  }
  for (const HloInstruction* op : reduce.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  const hlo::HloComputation& reducer = *reduce.to_apply();
  const HloInstruction* root = reducer.root_instruction();
  if (reducer.num_parameters() != 4 || root->opcode() != HloOpcode::kTuple ||
      root->operand_count() != 2) {
    return absl::UnimplementedError("reducer is not a (value, index) tuple");
  }
  const hlo::PrimitiveType vt = reduce.operand(0)->shape().element_type();
  const hlo::PrimitiveType it = reduce.operand(1)->shape().element_type();
  // Parameters: 0 acc value, 1 acc index, 2 value, 3 index.
  if (hlo::IsFloatingPointType(it)) return absl::UnimplementedError("float index operand");
  ArgReducerTables t;
  t.pairs = {{0, 2, vt}, {1, 3, it}};
  // Twice: the second round sees every pair's kind (set by either predicate), so both
  // tables are built over the same classes.
  std::optional<std::vector<uint8_t>> take_v, take_i;
  for (int round = 0; round < 2; ++round) {
    take_v = TakeTable(root->operand(0), 0, 2, t.pairs);
    take_i = TakeTable(root->operand(1), 1, 3, t.pairs);
    if (!take_v || !take_i) return absl::UnimplementedError("reducer outside the table form");
  }
  t.take_value = *std::move(take_v);
  t.take_index = *std::move(take_i);
  return t;
}

// ---------------------------------------------------------------------------------------
// The kernel library's reductions (lax/kernels/reduction.h): the code eager runs, so a
// non-fused reduction gives eager's bits.

std::optional<ReduceOp> LibraryOpOf(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd: return ReduceOp::kSum;
    case HloOpcode::kMultiply: return ReduceOp::kProd;
    case HloOpcode::kMaximum: return ReduceOp::kMax;
    case HloOpcode::kMinimum: return ReduceOp::kMin;
    case HloOpcode::kAnd: return ReduceOp::kAnd;
    case HloOpcode::kOr: return ReduceOp::kOr;
    default: return std::nullopt;
  }
}

// Whether `init` is a constant holding the identity the library starts op's reduction of
// dtype from (asked of the library itself: the reduction of an empty axis).
bool IsLibraryIdentity(const HloInstruction& init, ReduceOp op, DType dtype, ReduceOutput output) {
  if (init.opcode() != HloOpcode::kConstant || !hlo::ShapeUtil::IsScalar(init.shape())) return false;
  uint8_t identity[8] = {};
  const int64_t zero = 0;
  kernels::Reduce(op, dtype, {zero}, {zero}, nullptr, identity, output);
  const absl::Span<const uint8_t> bytes = init.literal().untyped_data();
  return bytes.size() <= sizeof(identity) && std::memcmp(bytes.data(), identity, bytes.size()) == 0;
}

class LibraryReduceKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    kernels::Reduce(op_, dtype_, dims_, axes_, operands[slot_], results[0], output_);
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "library-reduce"; }

  ReduceOp op_ = ReduceOp::kSum;
  DType dtype_ = DType::kFloat32;
  ReduceOutput output_ = ReduceOutput::kDType;
  std::vector<int64_t> dims_, axes_;
  int slot_ = -1;
};

// argmax/argmin as the library computes it. The (value, index) reduce also yields the values,
// which are the operand's elements at the indices found.
class LibraryArgReduceKernel : public Kernel {
 public:
  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    const int64_t outputs = outer_ * inner_;
    if (outputs == 0) return absl::OkStatus();
    std::vector<int64_t> index(static_cast<size_t>(outputs));
    if (reduced_ == 0) {  // nothing to fold: every output is the init pair (identity, 0)
      uint8_t* values = static_cast<uint8_t*>(results[0]);
      for (int64_t o = 0; o < outputs; ++o) {
        std::memcpy(values + o * value_size_, init_value_.data(), init_value_.size());
      }
      return StoreIndex(index, results[1]);
    }
    kernels::ArgReduce(find_max_, dtype_, dims_, axis_, DType::kInt64, operands[slot_], index.data());
    const uint8_t* x = static_cast<const uint8_t*>(operands[slot_]);
    uint8_t* values = static_cast<uint8_t*>(results[0]);
    for (int64_t o = 0; o < outputs; ++o) {
      const int64_t at = ((o / inner_) * reduced_ + index[static_cast<size_t>(o)]) * inner_ + o % inner_;
      std::memcpy(values + o * value_size_, x + at * value_size_, static_cast<size_t>(value_size_));
    }
    return StoreIndex(index, results[1]);
  }
  std::string_view kind() const override { return "library-arg-reduce"; }

  // Indices narrower than 64 bits wrap, as the library's static_cast does.
  absl::Status StoreIndex(const std::vector<int64_t>& index, void* out) const {
    switch (index_size_) {
      case 1: return StoreIndices<int8_t>(index, out);
      case 2: return StoreIndices<int16_t>(index, out);
      case 4: return StoreIndices<int32_t>(index, out);
      default: return StoreIndices<int64_t>(index, out);
    }
  }

  template <typename I>
  static absl::Status StoreIndices(const std::vector<int64_t>& index, void* out) {
    I* dst = static_cast<I*>(out);
    for (size_t o = 0; o < index.size(); ++o) dst[o] = static_cast<I>(index[o]);
    return absl::OkStatus();
  }

  bool find_max_ = true;
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> dims_;
  int64_t axis_ = 0, outer_ = 1, reduced_ = 1, inner_ = 1, value_size_ = 4, index_size_ = 4;
  int slot_ = -1;
  std::vector<uint8_t> init_value_;  // the value init's bytes, for an empty axis
};

// The take tables of argmax (find_max) or argmin as JAX defines them: the larger (smaller)
// value wins, a NaN beats every number, ties (NaN ties included) go to the lower index.
// Indexed as ArgReduceKernel::Fold reads them: value class + value_classes * index class.
ArgReducerTables LibraryArgTables(bool find_max, int value_classes) {
  ArgReducerTables t;
  for (int ci = 0; ci < 3; ++ci) {
    for (int cv = 0; cv < value_classes; ++cv) {
      // cv: 0 acc < x, 1 equal, 2 acc > x, 3 acc NaN, 4 x NaN, 5 both NaN; ci: 2 is j < acc index.
      const bool better = (find_max ? cv == 0 : cv == 2) || cv == 4;
      const bool same = cv == 1 || cv == 5;
      t.take_value.push_back(better);
      t.take_index.push_back(better || (same && ci == 2));
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// Outer-axis reduces of fused expressions ([O, R, I] with I > 1 after dropping size-1 dims
// and merging neighbours): the expression is evaluated in its own row-major order, whole rows
// (or blocks of a row) at a time, and folded into a row of accumulators, instead of being read
// through a transposing map. Each output folds init, then its elements in order (the
// evaluator's bits), except that long columns with few column blocks fold 16 fixed chunks of
// rows in parallel, combined in order: the evaluator's bits for order-free ops (integers,
// max/min), within rounding of them for float sums and products, and never thread-dependent.

struct ColumnShape {
  int64_t outer = 1, reduced = 1, inner = 1;
};

std::optional<ColumnShape> OuterAxisShape(const HloInstruction& reduce) {
  absl::Span<const int64_t> dims = reduce.operand(0)->shape().dimensions();
  std::vector<bool> is_reduced(dims.size(), false);
  for (int64_t d : reduce.dimensions()) is_reduced[d] = true;
  // Groups of neighbouring dims of one kind, size-1 dims dropped: must be [kept?, reduced, kept].
  std::vector<std::pair<int64_t, bool>> groups;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!groups.empty() && groups.back().second == is_reduced[d]) {
      groups.back().first *= dims[d];
    } else {
      groups.push_back({dims[d], is_reduced[d]});
    }
  }
  if (groups.size() == 2 && groups[0].second) return ColumnShape{1, groups[0].first, groups[1].first};
  if (groups.size() == 3 && groups[1].second) {
    return ColumnShape{groups[0].first, groups[1].first, groups[2].first};
  }
  return std::nullopt;
}

template <typename E, HloOpcode kOp>
class ColumnReduceKernel : public Kernel {
 public:
  using C = typename E::Compute;
  using S = typename E::Storage;

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    void* out = results[0];
    const C init = E::Load(init_.Get(operands), 0);
    const int64_t O = shape_.outer, R = shape_.reduced, I = shape_.inner;
    if (O * I == 0) return absl::OkStatus();
    if (R == 0) {
      for (int64_t j = 0; j < O * I; ++j) E::Store(out, j, init);
      return absl::OkStatus();
    }
    const int64_t tile = program_->tile_elements();
    // Few column blocks of long columns: whole rows (long contiguous reads), with the rows
    // split into 16 fixed chunks folded in parallel. Otherwise column blocks narrow enough
    // to give a few cores work, wide enough for long contiguous runs, each folded whole.
    const bool split_rows = R >= 64 && O * ((I + tile - 1) / tile) < 8;
    const int64_t width =
        split_rows ? std::min(I, tile) : std::min({I, tile, std::max<int64_t>(kMinBlockWidth, (I + 3) / 4)});
    const int64_t blocks = (I + width - 1) / width;
    const int64_t tasks = O * blocks;
    const int64_t chunk_rows = split_rows ? (R + 15) / 16 : R;
    const int64_t chunks = (R + chunk_rows - 1) / chunk_rows;
    // Not std::vector<C>: for pred, C is bool and vector<bool> packs partials into shared words.
    std::unique_ptr<C[]> partial;
    if (chunks > 1) partial = std::make_unique<C[]>(chunks * O * I);
    const int64_t grain = std::max<int64_t>(1, kMinChunkElements / (chunk_rows * width));
    ParallelChunks(chunks * tasks, grain, [&](int64_t begin, int64_t end) {
      std::vector<S> buf(tile);
      std::vector<C> acc(width);
      for (int64_t item = begin; item < end; ++item) {
        const int64_t c = item / tasks, o = (item % tasks) / blocks, i0 = (item % blocks) * width;
        const int64_t len = std::min(width, I - i0);
        const int64_t r0 = c * chunk_rows, r1 = std::min(R, r0 + chunk_rows);
        // A chunk of an order-free op folds from its own first row; init joins once, below.
        const bool from_first_row = chunks > 1;
        if (!from_first_row) std::fill(acc.begin(), acc.end(), init);
        // Whole rows several per evaluation when a block is the full row, else one segment.
        const int64_t rows_per_eval = len == I ? std::max<int64_t>(1, tile / I) : 1;
        for (int64_t r = r0; r < r1; r += rows_per_eval) {
          const int64_t nr = std::min(rows_per_eval, r1 - r);
          program_->Evaluate(operands.data(), (o * R + r) * I + i0, len == I ? nr * I : len, buf.data());
          for (int64_t k = 0; k < nr; ++k) {
            const S* row = buf.data() + k * I;
            if (from_first_row && r + k == r0) {
              for (int64_t i = 0; i < len; ++i) acc[i] = E::Load(row, i);
            } else {
              for (int64_t i = 0; i < len; ++i) acc[i] = Step<E, kOp>(acc[i], E::Load(row, i));
            }
          }
        }
        if (chunks > 1) {
          std::copy(acc.begin(), acc.begin() + len, partial.get() + (c * O + o) * I + i0);
        } else {
          for (int64_t i = 0; i < len; ++i) E::Store(out, o * I + i0 + i, acc[i]);
        }
      }
    });
    if (chunks > 1) {
      for (int64_t j = 0; j < O * I; ++j) {
        C a = init;
        for (int64_t c = 0; c < chunks; ++c) a = Step<E, kOp>(a, partial[c * O * I + j]);
        E::Store(out, j, a);
      }
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "reduce"; }

  static constexpr int64_t kMinBlockWidth = 512;
  std::unique_ptr<TileProgram> program_;
  ColumnShape shape_;
  InitSource init_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeTypedReduceKernel(const HloInstruction& instr,
                                                              int64_t tile_elements) {
  LeafResolver leaves;
  const HloInstruction* reduce = ReduceOf(instr, &leaves);
  if (reduce->opcode() != HloOpcode::kReduce || reduce->operand_count() != 2 ||
      !reduce->shape().IsArray()) {
    return absl::UnimplementedError("not a single-output reduce");
  }
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  const std::optional<HloOpcode> op = SimpleBinaryReducer(*reduce->to_apply());
  const hlo::PrimitiveType type = reduce->shape().element_type();
  if (!op || reduce->operand(0)->shape().element_type() != type) {
    return absl::UnimplementedError("reducer is not a simple binary op");
  }
  HLO_ASSIGN_OR_RETURN(InitSource init, InitOf(reduce->operand(1), leaves));
  ReduceLayout layout = LayoutOf(*reduce);
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<TileProgram> program,
                       TileProgram::Compile(reduce->operand(0), leaves, tile_elements, &layout.map));
  std::unique_ptr<Kernel> kernel;
  VisitType(type, [&](auto e) {
    using E = decltype(e);
    VisitReducer<E>(*op, [&](auto kop) {
      auto k = std::make_unique<TypedReduceKernel<E, decltype(kop)::value>>();
      k->program_ = std::move(program);
      k->layout_ = std::move(layout);
      k->init_ = init;
      kernel = std::move(k);
    });
  });
  if (kernel == nullptr) return absl::UnimplementedError("reducer op not defined on the type");
  return kernel;
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeArgReduceKernel(const HloInstruction& instr,
                                                            int64_t tile_elements) {
  LeafResolver leaves;
  const HloInstruction* reduce = ReduceOf(instr, &leaves);
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  HLO_ASSIGN_OR_RETURN(ArgReducerTables tables, AnalyzeArgReducer(*reduce));
  const hlo::PrimitiveType vt = reduce->operand(0)->shape().element_type();
  const hlo::PrimitiveType it = reduce->operand(1)->shape().element_type();
  HLO_ASSIGN_OR_RETURN(InitSource init_v, InitOf(reduce->operand(2), leaves));
  HLO_ASSIGN_OR_RETURN(InitSource init_i, InitOf(reduce->operand(3), leaves));
  ReduceLayout layout = LayoutOf(*reduce);
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<TileProgram> vp,
                       TileProgram::Compile(reduce->operand(0), leaves, tile_elements, &layout.map));
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<TileProgram> ip,
                       TileProgram::Compile(reduce->operand(1), leaves, tile_elements, &layout.map));
  std::unique_ptr<Kernel> kernel;
  const std::vector<ComparedPair>& pairs = tables.pairs;
  const bool total = pairs[0].total_order();
  VisitType(vt, [&](auto ev) {
    VisitType(it, [&](auto ei) {
      using EV = decltype(ev);
      using EI = decltype(ei);
      if constexpr (!EI::kIsFloat) {
        auto k = std::make_unique<ArgReduceKernel<EV, EI>>();
        k->value_program_ = std::move(vp);
        k->index_program_ = std::move(ip);
        k->layout_ = std::move(layout);
        k->init_v_ = init_v;
        k->init_i_ = init_i;
        k->value_total_order_ = total;
        k->value_classes_ = pairs[0].classes();
        k->index_compared_ = pairs[1].classes() > 1;
        k->take_value_ = tables.take_value;
        k->take_index_ = tables.take_index;
        kernel = std::move(k);
      }
    });
  });
  if (kernel == nullptr) return absl::UnimplementedError("unsupported element types");
  return kernel;
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeLibraryReduceKernel(const HloInstruction& instr) {
  LeafResolver leaves;
  const HloInstruction* reduce = ReduceOf(instr, &leaves);
  if (reduce->opcode() != HloOpcode::kReduce || reduce->operand_count() != 2 ||
      !reduce->shape().IsArray()) {
    return absl::UnimplementedError("not a single-output reduce");
  }
  const std::optional<HloOpcode> reducer = SimpleBinaryReducer(*reduce->to_apply());
  const std::optional<ReduceOp> op = reducer ? LibraryOpOf(*reducer) : std::nullopt;
  if (!op) return absl::UnimplementedError("reducer is not add/multiply/maximum/minimum/and/or");
  // A float sum or product below f64 lowers as a reduce in f64 of a widening convert (the
  // library's f64 accumulation): the library reads the narrow operand and writes the f64
  // accumulator for the convert that follows.
  const HloInstruction* input = reduce->operand(0);
  ReduceOutput output = ReduceOutput::kDType;
  if (input->opcode() == HloOpcode::kConvert && reduce->shape().element_type() == hlo::F64) {
    const std::optional<DType> from = KernelDTypeOf(input->operand(0)->shape().element_type());
    if (from && kernels::ReducesInFloat64(*op, *from)) {
      output = ReduceOutput::kFloat64;
      input = input->operand(0);
    }
  }
  const int slot = leaves(input);
  if (slot < 0) return absl::UnimplementedError("reduces a computed expression");
  const std::optional<DType> dtype = KernelDTypeOf(input->shape().element_type());
  if (!dtype || !kernels::IsReduceDefined(*op, *dtype)) {
    return absl::UnimplementedError("reducer op not defined on the type");
  }
  if (output == ReduceOutput::kDType) {
    if (input->shape().element_type() != reduce->shape().element_type()) {
      return absl::UnimplementedError("result type differs from the operand's");
    }
    if (kernels::ReducesInFloat64(*op, *dtype)) {
      // The library would accumulate in f64; this reduce asks for its own type's rounding.
      return absl::UnimplementedError("float sum or product in a type narrower than f64");
    }
  }
  if (!IsLibraryIdentity(*reduce->operand(1), *op, *dtype, output)) {
    return absl::UnimplementedError("init value is not the op's identity constant");
  }
  auto kernel = std::make_unique<LibraryReduceKernel>();
  kernel->op_ = *op;
  kernel->dtype_ = *dtype;
  kernel->output_ = output;
  kernel->dims_ = hlo::SpanToVector(input->shape().dimensions());
  kernel->axes_.assign(reduce->dimensions().begin(), reduce->dimensions().end());
  kernel->slot_ = slot;
  return kernel;
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeLibraryArgReduceKernel(const HloInstruction& instr) {
  // A (value, iota) reduce, alone or as an input fusion that computes the iota.
  LeafResolver leaves;
  const HloInstruction* reduce = ReduceOf(instr, &leaves);
  HLO_ASSIGN_OR_RETURN(ArgReducerTables tables, AnalyzeArgReducer(*reduce));
  if (reduce->dimensions().size() != 1) return absl::UnimplementedError("more than one reduced axis");
  const int64_t axis = reduce->dimensions()[0];
  const HloInstruction* value = reduce->operand(0);
  const HloInstruction* index = reduce->operand(1);
  if (index->opcode() != HloOpcode::kIota || index->iota_dimension() != axis) {
    return absl::UnimplementedError("index operand is not an iota along the reduced axis");
  }
  const int slot = leaves(value);
  if (slot < 0) return absl::UnimplementedError("reduces a computed expression");
  const std::optional<DType> dtype = KernelDTypeOf(value->shape().element_type());
  const std::optional<DType> index_dtype = KernelDTypeOf(index->shape().element_type());
  if (!dtype || !index_dtype || !IsInteger(*index_dtype)) {
    return absl::UnimplementedError("unsupported element types");
  }
  const std::vector<ComparedPair>& pairs = tables.pairs;
  if (pairs[0].total_order()) return absl::UnimplementedError("values compared in the total order");
  std::optional<bool> find_max;
  for (bool m : {true, false}) {
    const ArgReducerTables want = LibraryArgTables(m, pairs[0].classes());
    if (tables.take_value == want.take_value && tables.take_index == want.take_index) find_max = m;
  }
  if (!find_max) return absl::UnimplementedError("reducer is not argmax/argmin");
  // The fold starts from (lowest, 0) for argmax, (highest, 0) for argmin: the identities of
  // max/min, so the first extreme element wins.
  const HloInstruction* init_index = reduce->operand(3);
  const int64_t zero = 0;
  if (!IsLibraryIdentity(*reduce->operand(2), *find_max ? ReduceOp::kMax : ReduceOp::kMin, *dtype,
                         ReduceOutput::kDType) ||
      init_index->opcode() != HloOpcode::kConstant ||
      std::memcmp(init_index->literal().untyped_data().data(), &zero,
                  init_index->literal().untyped_data().size()) != 0) {
    return absl::UnimplementedError("init values are not (identity, 0)");
  }
  absl::Span<const int64_t> dims = value->shape().dimensions();
  auto kernel = std::make_unique<LibraryArgReduceKernel>();
  kernel->find_max_ = *find_max;
  kernel->dtype_ = *dtype;
  kernel->dims_ = hlo::SpanToVector(dims);
  kernel->axis_ = axis;
  kernel->reduced_ = dims[axis];
  for (int64_t d = 0; d < axis; ++d) kernel->outer_ *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) kernel->inner_ *= dims[d];
  kernel->value_size_ = hlo::ByteSizeOfPrimitiveType(value->shape().element_type());
  kernel->index_size_ = hlo::ByteSizeOfPrimitiveType(index->shape().element_type());
  kernel->slot_ = slot;
  const absl::Span<const uint8_t> init_value = reduce->operand(2)->literal().untyped_data();
  kernel->init_value_.assign(init_value.begin(), init_value.end());
  return kernel;
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeColumnReduceKernel(const HloInstruction& instr,
                                                               int64_t tile_elements) {
  LeafResolver leaves;
  const HloInstruction* reduce = ReduceOf(instr, &leaves);
  if (reduce->opcode() != HloOpcode::kReduce || reduce->operand_count() != 2 ||
      !reduce->shape().IsArray()) {
    return absl::UnimplementedError("not a single-output reduce");
  }
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  const std::optional<ColumnShape> shape = OuterAxisShape(*reduce);
  if (!shape) return absl::UnimplementedError("not an outer-axis reduction");
  const std::optional<HloOpcode> op = SimpleBinaryReducer(*reduce->to_apply());
  const hlo::PrimitiveType type = reduce->shape().element_type();
  if (!op || reduce->operand(0)->shape().element_type() != type) {
    return absl::UnimplementedError("reducer is not a simple binary op");
  }
  HLO_ASSIGN_OR_RETURN(InitSource init, InitOf(reduce->operand(1), leaves));
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<TileProgram> program,
                       TileProgram::Compile(reduce->operand(0), leaves, tile_elements));
  std::unique_ptr<Kernel> kernel;
  VisitType(type, [&](auto e) {
    using E = decltype(e);
    VisitReducer<E>(*op, [&](auto kop) {
      auto k = std::make_unique<ColumnReduceKernel<E, decltype(kop)::value>>();
      k->program_ = std::move(program);
      k->shape_ = *shape;
      k->init_ = init;
      kernel = std::move(k);
    });
  });
  if (kernel == nullptr) return absl::UnimplementedError("reducer op not defined on the type");
  return kernel;
}

}  // namespace jx::cpu::internal
