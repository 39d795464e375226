// SLOW PATH, never silent: an instruction no native kernel handles (custom-call, rng, a
// fusion holding a concatenate or pad, ...) runs through the reference HloEvaluator: operand
// buffers are copied into Literals, the instruction is evaluated, and the result's leaves are
// copied back. Correct for every valid module, and slow. Kernel selection logs every use
// under JX_LOG_COMPILES and refuses it under JX_CPU_FALLBACK=error (kernel_selection.cc).
#include <cstring>
#include <vector>

#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/hlo_evaluator.h"

namespace jx::cpu::internal {
namespace {

using hlo::Literal;
using hlo::Shape;

// A literal of `shape` whose leaves are read from leaves[*next...] (depth first).
Literal BuildLiteral(const Shape& shape, absl::Span<const void* const> leaves, size_t* next) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& s : shape.tuple_shapes()) elements.push_back(BuildLiteral(s, leaves, next));
    return Literal::CreateTuple(std::move(elements));
  }
  Literal lit(shape);
  const void* src = leaves[(*next)++];
  const size_t bytes = lit.untyped_data().size();
  if (bytes > 0) std::memcpy(lit.mutable_untyped_data().data(), src, bytes);
  return lit;
}

void ScatterLeaves(const Literal& lit, absl::Span<void* const> leaves, size_t* next) {
  if (lit.shape().IsTuple()) {
    for (const Literal& e : lit.tuple_elements()) ScatterLeaves(e, leaves, next);
    return;
  }
  void* dst = leaves[(*next)++];
  const size_t bytes = lit.untyped_data().size();
  if (bytes > 0) std::memcpy(dst, lit.untyped_data().data(), bytes);
}

class FallbackKernel : public Kernel {
 public:
  explicit FallbackKernel(const hlo::HloInstruction& instr) : instr_(instr) {}

  absl::Status Run(absl::Span<const void* const> operands,
                   absl::Span<void* const> results) const override {
    std::vector<Literal> values;
    values.reserve(instr_.operand_count());
    size_t next = 0;
    for (const hlo::HloInstruction* op : instr_.operands()) {
      values.push_back(BuildLiteral(op->shape(), operands, &next));
    }
    std::vector<const Literal*> ptrs;
    for (const Literal& v : values) ptrs.push_back(&v);
    hlo::HloEvaluator evaluator;
    absl::StatusOr<Literal> result = evaluator.EvaluateInstruction(instr_, ptrs);
    if (!result.ok()) return result.status();
    next = 0;
    ScatterLeaves(*result, results, &next);
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "fallback"; }

 private:
  const hlo::HloInstruction& instr_;
};

}  // namespace

std::unique_ptr<Kernel> MakeFallbackKernel(const hlo::HloInstruction& instr) {
  return std::make_unique<FallbackKernel>(instr);
}

}  // namespace jx::cpu::internal
