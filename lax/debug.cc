#include "jx/lax/debug.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

#include "jx/core/errors.h"
#include "jx/core/host_callback.h"
#include "jx/core/registry.h"
#include "jx/core/str_util.h"
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

std::string format(std::string_view fmt, absl::Span<const Array> args) {
  auto fail = [&](std::string_view why) {
    return ValueError(StrCat("[debug.print] format \"", fmt, "\": ", why));
  };
  std::string out;
  size_t next_auto = 0;
  bool used_auto = false, used_manual = false;
  for (size_t i = 0; i < fmt.size(); ++i) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw fail("single '}' encountered");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = fmt.find('}', i + 1);
    if (close == std::string_view::npos) throw fail("single '{' encountered");
    const std::string_view field = fmt.substr(i + 1, close - i - 1);
    size_t index = 0;
    if (field.empty()) {
      if (used_manual) throw fail("cannot switch from manual field numbering to automatic");
      used_auto = true;
      index = next_auto++;
    } else if (field.find_first_not_of("0123456789") == std::string_view::npos) {
      if (used_auto) throw fail("cannot switch from automatic field numbering to manual");
      used_manual = true;
      index = static_cast<size_t>(std::stoul(std::string(field)));
    } else {
      throw fail(StrCat("field {", field,
                        "} is not supported: use {} or {N} (named fields and format specs are not)"));
    }
    if (index >= args.size()) {
      throw fail(StrCat("replacement index ", index, " out of range for ", args.size(), " argument(s)"));
    }
    out += args[index].str();
    i = close;
  }
  return out;
}

void print_values(std::string fmt, std::vector<Array> args) {
  // Checked now, against the avals, so a bad format fails where it is written.
  std::vector<Array> placeholders;
  for (const Array& a : args) placeholders.push_back(Array::Scalar(0, a.dtype()));
  format(fmt, placeholders);
  std::string label = StrCat("<debug print '", fmt, "'>");
  Stage(
      [fmt = std::move(fmt)](absl::Span<const Array> values) {
        const std::string text = format(fmt, values) + "\n";
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      },
      std::move(label), std::move(args));
}

}  // namespace debug
}  // namespace jx
