// The host-callback custom-call (core/host_callback.h; what debug_callback lowers to): wraps
// each operand buffer in a concrete array and calls the registered function. Exceptions the
// callback throws become the run's error status, naming the callback.
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "jx/compiler/backend/cpu/cpu_kernels.h"
#include "jx/compiler/hlo/str_util.h"
#include "jx/core/host_callback.h"

namespace jx::cpu::internal {
namespace {

class HostCallbackKernel : public Kernel {
 public:
  HostCallbackKernel(std::shared_ptr<const HostCallback> fn, int64_t id, std::vector<Shape> shapes,
                     std::vector<DType> dtypes)
      : fn_(std::move(fn)), id_(id), shapes_(std::move(shapes)), dtypes_(std::move(dtypes)) {}

  absl::Status Run(absl::Span<const void* const> operands, absl::Span<void* const>) const override {
    std::vector<Array> args;
    args.reserve(operands.size());
    for (size_t i = 0; i < operands.size(); ++i) args.push_back(Array::FromData(operands[i], shapes_[i], dtypes_[i]));
    try {
      (*fn_)(args);
    } catch (const std::exception& e) {
      return absl::InternalError(hlo::StrCat("host callback ", id_, " failed: ", e.what()));
    }
    return absl::OkStatus();
  }
  std::string_view kind() const override { return "host-callback"; }

 private:
  std::shared_ptr<const HostCallback> fn_;
  int64_t id_;
  std::vector<Shape> shapes_;
  std::vector<DType> dtypes_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeHostCallbackKernel(const hlo::HloInstruction& instr) {
  if (instr.opcode() != hlo::HloOpcode::kCustomCall || instr.custom_call_target() != kHostCallbackTarget) {
    return absl::UnimplementedError("not a host-callback custom-call");
  }
  int64_t id = -1;
  if (!absl::SimpleAtoi(instr.backend_config(), &id)) {
    return absl::InvalidArgumentError(
        hlo::StrCat("host-callback custom-call: backend_config \"", instr.backend_config(), "\" is not a callback id"));
  }
  std::shared_ptr<const HostCallback> fn = FindHostCallback(id);
  if (fn == nullptr) return absl::NotFoundError(hlo::StrCat("host-callback custom-call: no callback ", id));
  std::vector<Shape> shapes;
  std::vector<DType> dtypes;
  for (const hlo::HloInstruction* op : instr.operands()) {
    std::optional<DType> dtype = KernelDTypeOf(op->shape().element_type());
    if (!dtype) {
      return absl::UnimplementedError(
          hlo::StrCat("host-callback custom-call: operand ", op->shape().ToString(false), " is not an array"));
    }
    shapes.emplace_back(op->shape().dimensions().begin(), op->shape().dimensions().end());
    dtypes.push_back(*dtype);
  }
  return std::unique_ptr<Kernel>(new HostCallbackKernel(std::move(fn), id, std::move(shapes), std::move(dtypes)));
}

}  // namespace jx::cpu::internal
