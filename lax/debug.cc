#include "jx/lax/debug.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

#include "jx/core/errors.h"
#include "jx/core/host_callback.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"
#include "jx/lax/debug_format.h"
#include "jx/lax/debug_internal.h"
#include "jx/lax/op_util.h"
#include "jx/lax/registration.h"
#include "jx/lax/shape_ops.h"
#include "jx/lax/slicing_ops.h"

namespace jx {
namespace lax::internal {

// The `callback` param of a debug_callback equation: the host function, and (once lowered)
// its id in the host-callback table. Equal only to itself: two prints are two effects.
class DebugCallbackParam : public ParamObject {
 public:
  DebugCallbackParam(HostCallback fn, std::string label)
      : fn_(std::make_shared<const HostCallback>(std::move(fn))), label_(std::move(label)) {}
  size_t Hash() const override { return std::hash<const void*>()(this); }
  bool Equals(const ParamObject& other) const override { return this == &other; }
  std::string ToString() const override { return label_; }

  const HostCallback& fn() const { return *fn_; }
  int64_t host_id() const {
    std::call_once(registered_, [this] { host_id_ = RegisterHostCallback(fn_); });
    return host_id_;
  }

 private:
  std::shared_ptr<const HostCallback> fn_;
  std::string label_;
  mutable std::once_flag registered_;
  mutable int64_t host_id_ = -1;
};

// The `effect` param: JAX's debug_effect, printed as `effect=Debug`.
class DebugEffectParam : public ParamObject {
 public:
  size_t Hash() const override { return 0x0deb; }
  bool Equals(const ParamObject& other) const override {
    return dynamic_cast<const DebugEffectParam*>(&other) != nullptr;
  }
  std::string ToString() const override { return "Debug"; }
};

int64_t DebugCallbackHostId(const ParamMap& params) {
  return static_cast<const DebugCallbackParam&>(*params.GetObject("callback")).host_id();
}

namespace {

const DebugCallbackParam& CallbackOf(const ParamMap& params) {
  return static_cast<const DebugCallbackParam&>(*params.GetObject("callback"));
}

// Element i of x along dim (JAX's index_in_dim(..., keepdims=False)).
Array IndexInDim(const Array& x, int64_t dim, int64_t i) {
  std::vector<int64_t> start(x.shape().size(), 0), limit(x.shape().begin(), x.shape().end());
  start[static_cast<size_t>(dim)] = i;
  limit[static_cast<size_t>(dim)] = i + 1;
  return squeeze(slice(x, start, limit), {dim});
}

}  // namespace

void RegisterDebug(Registry& r) {
  PrimitiveRules& rules = r.Define(kDebugCallback);
  rules.abstract_eval = [](InAvals, const ParamMap&) { return Avals{}; };
  rules.impl = [](absl::Span<const Array> in, const ParamMap& params, absl::Span<const ShapedArray>) {
    CallbackOf(params).fn()(in);
    return Arrays{};
  };
  // The forward pass sees the primals; tangents are not printed (JAX's debug_callback_jvp_rule).
  rules.jvp = [](absl::Span<const Array> primals, absl::Span<const Array>, const ParamMap& params) {
    Bind(kDebugCallback, primals, params);
    return JvpResult{};
  };
  rules.unsupported["transpose"] = "debug_callback has no outputs and no linear inputs: no cotangent reaches it";
  // JAX unrolls the mapped axis: one call per batch element, unmapped arguments as they are.
  rules.batch = [](absl::Span<const Array> args, absl::Span<const int64_t> dims, int64_t axis_size,
                   const ParamMap& params) {
    for (int64_t i = 0; i < axis_size; ++i) {
      Arrays element;
      for (size_t k = 0; k < args.size(); ++k) {
        element.push_back(dims[k] == kNotMapped ? args[k] : IndexInDim(args[k], dims[k], i));
      }
      Bind(kDebugCallback, element, params);
    }
    return BatchResult{};
  };
}

}  // namespace lax::internal

namespace debug {
namespace {

void Stage(HostCallback fn, std::string label, std::vector<Array> args) {
  ParamMap params;
  params.Set("callback", std::shared_ptr<const ParamObject>(
                             std::make_shared<lax::internal::DebugCallbackParam>(std::move(fn), std::move(label))));
  params.Set("effect", std::shared_ptr<const ParamObject>(std::make_shared<lax::internal::DebugEffectParam>()));
  lax::internal::BindOp(lax::kDebugCallback, args, params);
}

}  // namespace

void callback(std::function<void(absl::Span<const Array> args)> fn, std::vector<Array> args) {
  if (!fn) throw ValueError("[debug.callback] the callback is empty");
  Stage(std::move(fn), "<callback>", std::move(args));
}

namespace {

std::vector<std::string> NamesOf(absl::Span<const NamedArg> named) {
  std::vector<std::string> names;
  for (const NamedArg& a : named) {
    if (std::find(names.begin(), names.end(), a.name) != names.end()) {
      throw ValueError(StrCat("[debug.print] named argument '", a.name, "' is given twice"));
    }
    names.push_back(a.name);
  }
  return names;
}

std::string Render(std::string_view fmt, absl::Span<const internal::FormatPiece> pieces,
                   absl::Span<const Array> values) {
  std::string out;
  for (const internal::FormatPiece& piece : pieces) {
    if (const auto* text = std::get_if<std::string>(&piece)) {
      out += *text;
    } else {
      const auto& field = std::get<internal::ReplacementField>(piece);
      out += internal::FormatField(fmt, field, values[field.arg]);
    }
  }
  return out;
}

}  // namespace

std::string format(std::string_view fmt, absl::Span<const Array> args, absl::Span<const NamedArg> named) {
  const auto pieces = internal::ParseFormat(fmt, args.size(), NamesOf(named));
  std::vector<Array> values(args.begin(), args.end());
  for (const NamedArg& a : named) values.push_back(a.value);
  return Render(fmt, pieces, values);
}

void print_values(std::string fmt, std::vector<Array> args, std::vector<NamedArg> named) {
  // Parsed and checked now, against the avals, so a bad format fails where it is written.
  auto pieces = internal::ParseFormat(fmt, args.size(), NamesOf(named));
  for (NamedArg& a : named) args.push_back(std::move(a.value));
  for (const internal::FormatPiece& piece : pieces) {
    if (const auto* field = std::get_if<internal::ReplacementField>(&piece)) {
      internal::CheckField(fmt, *field, args[field->arg].aval());
    }
  }
  std::string label = StrCat("<debug print '", fmt, "'>");
  Stage(
      [fmt = std::move(fmt), pieces = std::move(pieces)](absl::Span<const Array> values) {
        const std::string text = Render(fmt, pieces, values) + "\n";
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      },
      std::move(label), std::move(args));
}

}  // namespace debug
}  // namespace jx
