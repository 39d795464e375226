// Native reduces beyond the tile-program reduce kernel (loop_kernels.cc), bit-exact with the
// evaluator's sequential fold:
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

namespace jx::cpu::internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

constexpr int64_t kMinChunkElements = 16384;

// How a reduce reads its operand(s): [kept..., reduced...] order, so output o's elements
// are positions [o * reduced, (o + 1) * reduced) of a program compiled with `map`.
struct ReduceLayout {
  IndexMap map;
  int64_t outputs = 1, reduced = 1;
};

ReduceLayout LayoutOf(const HloInstruction& reduce) {
  ReduceLayout l;
  const std::vector<int64_t>& dims = reduce.operand(0)->shape().dimensions();
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
  if (instr.opcode() != HloOpcode::kReduce || instr.operand_count() != 4 ||
      !instr.shape().IsTuple()) {
    return absl::UnimplementedError("not a 2-operand reduce");
  }
  for (const HloInstruction* op : instr.operands()) {
    if (!op->shape().IsArray()) return absl::UnimplementedError("tuple operand");
  }
  const hlo::HloComputation& reducer = *instr.to_apply();
  const HloInstruction* root = reducer.root_instruction();
  if (reducer.num_parameters() != 4 || root->opcode() != HloOpcode::kTuple ||
      root->operand_count() != 2) {
    return absl::UnimplementedError("reducer is not a (value, index) tuple");
  }
  const hlo::PrimitiveType vt = instr.operand(0)->shape().element_type();
  const hlo::PrimitiveType it = instr.operand(1)->shape().element_type();
  // Parameters: 0 acc value, 1 acc index, 2 value, 3 index.
  if (hlo::IsFloatingPointType(it)) return absl::UnimplementedError("float index operand");
  std::vector<ComparedPair> pairs = {{0, 2, vt}, {1, 3, it}};
  // Twice: the second round sees every pair's kind (set by either predicate), so both
  // tables are built over the same classes.
  std::optional<std::vector<uint8_t>> take_v, take_i;
  for (int round = 0; round < 2; ++round) {
    take_v = TakeTable(root->operand(0), 0, 2, pairs);
    take_i = TakeTable(root->operand(1), 1, 3, pairs);
    if (!take_v || !take_i) return absl::UnimplementedError("reducer outside the table form");
  }
  LeafResolver leaves = OperandLeaves(&instr);
  HLO_ASSIGN_OR_RETURN(InitSource init_v, InitOf(instr.operand(2), leaves));
  HLO_ASSIGN_OR_RETURN(InitSource init_i, InitOf(instr.operand(3), leaves));
  ReduceLayout layout = LayoutOf(instr);
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<TileProgram> vp,
                       TileProgram::Compile(instr.operand(0), leaves, tile_elements, &layout.map));
  HLO_ASSIGN_OR_RETURN(std::unique_ptr<TileProgram> ip,
                       TileProgram::Compile(instr.operand(1), leaves, tile_elements, &layout.map));
  std::unique_ptr<Kernel> kernel;
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
        k->take_value_ = *take_v;
        k->take_index_ = *take_i;
        kernel = std::move(k);
      }
    });
  });
  if (kernel == nullptr) return absl::UnimplementedError("unsupported element types");
  return kernel;
}

}  // namespace jx::cpu::internal
