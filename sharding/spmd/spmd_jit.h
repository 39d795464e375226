// jit with shardings (JAX's jax.jit(f, in_shardings=..., out_shardings=...)): f is traced on
// its arguments' global shapes, propagation gives every value a sharding (from in_shardings,
// the arguments' own NamedShardings, with_sharding_constraint and out_shardings), and the
// partitioner makes the per-device program with its collectives. Programs are cached per
// (avals, shardings); JX_EXPLAIN_CACHE_MISSES=1 says which argument's sharding changed.
// Results are sharded arrays laid out by out_shardings (or by propagation).
//
//   jx::NamedSharding rows(mesh, jx::P("x", jx::none)), cols(mesh, jx::P(jx::none, "y"));
//   auto mm = jx::jit([](const Array& a, const Array& b) { return jnp::matmul(a, b); },
//                     jx::in_shardings{rows, cols}, jx::out_shardings{rows});
//   Array c = mm(a, b);                                  // sharded P('x', None)
//   std::cout << mm.lower(a, b).compile().as_text();     // the per-device program
//
// Arguments are Arrays (one entry of in_shardings each; a single entry applies to every
// argument, as a pytree prefix); f returns an Array or a std::vector<Array>. An entry of
// std::nullopt leaves that argument to its own sharding or to propagation.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/sharding/named_sharding.h"
#include "jx/sharding/spmd/spmd_program.h"
#include "jx/transforms/jit.h"

namespace jx {

struct in_shardings {
  in_shardings(std::initializer_list<std::optional<NamedSharding>> s) : shardings(s) {}
  std::vector<std::optional<NamedSharding>> shardings;
};
struct out_shardings {
  out_shardings(std::initializer_list<std::optional<NamedSharding>> s) : shardings(s) {}
  std::vector<std::optional<NamedSharding>> shardings;
};

namespace spmd {

// The untyped core of a jit with shardings: traces, partitions and caches per signature.
class SpmdJitState {
 public:
  SpmdJitState(std::string name, std::vector<std::optional<NamedSharding>> in,
               std::vector<std::optional<NamedSharding>> out);
  // The program for these arguments (traced with fn on a miss).
  std::shared_ptr<const SpmdProgram> ProgramFor(const std::function<Arrays(absl::Span<const Array>)>& fn,
                                                absl::Span<const Array> args);

 private:
  std::string name_;
  std::vector<std::optional<NamedSharding>> in_, out_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const SpmdProgram>> cache_;
  std::vector<std::string> last_key_parts_;
};

// jit(f, shardings...).lower(args...) and its .compile(): the partitioned program.
class SpmdCompiled {
 public:
  explicit SpmdCompiled(std::shared_ptr<const SpmdProgram> p) : program_(std::move(p)) {}
  // The partitioned program: the shardings and the per-device jaxpr with its collectives.
  std::string as_text() const { return program_->ToString(); }
  const SpmdProgram& program() const { return *program_; }
  SpmdCompiled compile() const { return *this; }

 private:
  std::shared_ptr<const SpmdProgram> program_;
};

template <typename F>
class SpmdJitted {
 public:
  SpmdJitted(F f, std::shared_ptr<SpmdJitState> state) : f_(std::move(f)), state_(std::move(state)) {}

  template <typename... Args>
  auto operator()(const Args&... args) const {
    static_assert((std::is_convertible_v<Args, Array> && ...), "jit with shardings takes Array arguments");
    const Arrays in{Array(args)...};
    auto program = Program<Args...>(in);
    Arrays outs = program->Run(in);
    using R = std::invoke_result_t<const F&, const Args&...>;
    if constexpr (std::is_convertible_v<R, Array>) {
      return outs[0];
    } else {
      return std::vector<Array>(outs.begin(), outs.end());
    }
  }

  template <typename... Args>
  SpmdCompiled lower(const Args&... args) const {
    return SpmdCompiled(Program<Args...>(Arrays{Array(args)...}));
  }

 private:
  template <typename... Args>
  std::shared_ptr<const SpmdProgram> Program(const Arrays& in) const {
    auto fn = [this](absl::Span<const Array> xs) -> Arrays {
      auto call = [&]<size_t... I>(std::index_sequence<I...>) { return f_(xs[I]...); };
      auto r = call(std::index_sequence_for<Args...>{});
      if constexpr (std::is_convertible_v<decltype(r), Array>) {
        return Arrays{Array(r)};
      } else {
        return Arrays(r.begin(), r.end());
      }
    };
    return state_->ProgramFor(fn, in);
  }

  F f_;
  std::shared_ptr<SpmdJitState> state_;
};

}  // namespace spmd

// jit(f, in_shardings{...}, [out_shardings{...}], [name]) and jit(f, out_shardings{...}):
// more specialized than transforms' jit(f, options...), so these are chosen with shardings.
template <typename F, typename... Options>
spmd::SpmdJitted<F> jit(F f, in_shardings in, out_shardings out, Options... options) {
  jit_internal::JitOptions o;
  (jit_internal::SetOption(o, std::move(options)), ...);
  return spmd::SpmdJitted<F>(std::move(f), std::make_shared<spmd::SpmdJitState>(o.name, std::move(in.shardings),
                                                                                  std::move(out.shardings)));
}
template <typename F, typename... Options>
spmd::SpmdJitted<F> jit(F f, in_shardings in, Options... options) {
  return jit(std::move(f), std::move(in), out_shardings{}, std::move(options)...);
}
template <typename F, typename... Options>
spmd::SpmdJitted<F> jit(F f, out_shardings out, Options... options) {
  return jit(std::move(f), in_shardings{}, std::move(out), std::move(options)...);
}

}  // namespace jx
