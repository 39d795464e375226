// Host callbacks: functions on the host that a staged program calls with concrete values,
// as jax.debug.callback's target. The tracer-side primitive (lax/debug.h) holds the function;
// lowering registers it here and names it by id in the custom-call's backend_config, and the
// CPU backend's kernel (which cannot see lax) looks it up by that id when the program runs.
//
//   int64_t id = RegisterHostCallback(std::make_shared<const HostCallback>(
//       [](absl::Span<const Array> args) { std::cout << args[0] << "\n"; }));
//   FindHostCallback(id)->operator()({x});
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/types/span.h"
#include "jx/core/array.h"

namespace jx {

using HostCallback = std::function<void(absl::Span<const Array> args)>;

// The custom-call target a host callback lowers to.
inline constexpr std::string_view kHostCallbackTarget = "jx_host_callback";

// Keeps fn alive for the rest of the process (a compiled program may outlive its jaxpr) and
// returns its id. Thread-safe.
int64_t RegisterHostCallback(std::shared_ptr<const HostCallback> fn);
// The callback registered under id, or nullptr.
std::shared_ptr<const HostCallback> FindHostCallback(int64_t id);

}  // namespace jx
