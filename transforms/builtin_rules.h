// The rule tables of the built-in primitives are filled by lax::RegisterAll (idempotent).
// The user-facing transformation templates call it before they trace: a function may bind
// nothing but transformation-level primitives (a custom_vjp of the identity, a jacobian of
// a reshape), and those rules live in the same tables. Declared here so the templates,
// which are instantiated in programs linking jx::jx, need no lax header. The devices layer
// follows the same pattern: RegisterBuiltinClients (core/array.h) registers the host CPU's
// client, defined in devices/ and called by jit's templates and Array::devices().
#pragma once

namespace jx::lax {
void RegisterAll();
}  // namespace jx::lax
