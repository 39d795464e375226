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
// Arguments are pytrees of Arrays (a params struct, an optimizer state, a batch): one entry of
// in_shardings per argument applies to all of its leaves, and a single entry to every
// argument (JAX's pytree prefixes). f returns any pytree; out_shardings has one entry, or one
// per element of a returned tuple or list. An entry of std::nullopt leaves that argument to
// its own sharding or to propagation.
//
//   auto step = jx::jit(train_step, jx::in_shardings{replicated, replicated, batch_sharded});
//   auto [params2, opt2, loss] = step(params, opt_state, batch);
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "jx/core/array.h"
#include "jx/core/pytree.h"
#include "jx/core/str_util.h"
#include "jx/sharding/named_sharding.h"
#include "jx/sharding/spmd/spmd_program.h"
#include "jx/transforms/eval_shape.h"
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

// A call's leaves: the argument each belongs to, names for messages ("argument 0 .layers[1].w")
// and the arguments' tree structures (part of the cache key).
struct SpmdCall {
  std::vector<size_t> arg_of_leaf;
  std::vector<std::string> leaf_names;
  size_t num_args = 0;
  std::string structure;
};
// What tracing learns of the outputs: their structure, and the out_shardings entry of each
// leaf (the top-level element of a tuple or list result it belongs to).
struct SpmdOutputs {
  tree::TreeDef def;
  std::vector<size_t> group_of_leaf;
  size_t num_groups = 1;
};
// Fills out's def and groups from the result's structure.
void GroupOutputs(const tree::TreeDef& def, SpmdOutputs* out);
// A sharded array's NamedSharding (nullopt for any other array).
std::optional<NamedSharding> NamedShardingOf(const Array& x);

// The untyped core of a jit with shardings: traces, partitions and caches per signature.
class SpmdJitState {
 public:
  using TraceFn = std::function<Arrays(absl::Span<const Array>, SpmdOutputs*)>;
  SpmdJitState(std::string name, std::vector<std::optional<NamedSharding>> in,
               std::vector<std::optional<NamedSharding>> out);
  // The program for these leaves (traced with fn on a miss), and its outputs' structure.
  // own[i]: leaf i's own sharding (a sharded array's, or an abstract leaf's .sharding).
  std::shared_ptr<const SpmdProgram> ProgramFor(const TraceFn& fn, absl::Span<const ShapedArray> avals,
                                                absl::Span<const std::optional<NamedSharding>> own,
                                                const SpmdCall& call, tree::TreeDef* out_def);

 private:
  struct Entry {
    std::shared_ptr<const SpmdProgram> program;
    tree::TreeDef out_def;
  };
  std::string name_;
  std::vector<std::optional<NamedSharding>> in_, out_;
  std::mutex mu_;
  std::map<std::string, Entry> cache_;
  std::vector<std::string> last_key_parts_;
  std::string last_structure_;
};

// jit(f, shardings...).lower(args...) and its .compile(): the partitioned program.
class SpmdCompiled {
 public:
  explicit SpmdCompiled(std::shared_ptr<const SpmdProgram> p) : program_(std::move(p)) {}
  // The partitioned program: the shardings and the per-device jaxpr with its collectives.
  std::string as_text() const { return program_->ToString(); }
  const SpmdProgram& program() const { return *program_; }
  SpmdCompiled compile() const { return *this; }
  // A dry run of one step on the mesh's pod (SpmdProgram::Plan): predicted step time, per-chip
  // HBM peak, communication, utilization; nothing runs and nothing is allocated.
  tpu::PodPlan plan() const { return program_->Plan(); }

 private:
  std::shared_ptr<const SpmdProgram> program_;
};

// The parameter types of a callable with one non-template call operator (a lambda with
// typed parameters, a function object, a function pointer): lower() rebuilds a
// ShapeDtypeTree argument as the type the function takes there.
template <typename F>
struct CallableArgs : CallableArgs<decltype(&F::operator())> {};
template <typename C, typename R, typename... A>
struct CallableArgs<R (C::*)(A...) const> {
  using type = std::tuple<std::decay_t<A>...>;
};
template <typename C, typename R, typename... A>
struct CallableArgs<R (C::*)(A...)> {
  using type = std::tuple<std::decay_t<A>...>;
};
template <typename R, typename... A>
struct CallableArgs<R (*)(A...)> {
  using type = std::tuple<std::decay_t<A>...>;
};

// The sharding a ShapeDtypeStruct carries (nullopt for none); a TypeError naming the leaf for
// a sharding that is not a NamedSharding.
std::optional<NamedSharding> AbstractSharding(const ShapeDtypeStruct& s, const std::string& leaf_name);

template <typename F>
class SpmdJitted {
 public:
  SpmdJitted(F f, std::shared_ptr<SpmdJitState> state) : f_(std::move(f)), state_(std::move(state)) {}

  template <typename... Args>
  auto operator()(const Args&... args) const {
    static_assert((tree::IsPytree<Args> && ...), "jit with shardings is called with pytrees of Arrays");
    using R = std::invoke_result_t<const F&, const Args&...>;
    Flat flat = Flatten(args...);
    tree::TreeDef out_def;
    auto program = state_->ProgramFor(TraceFn<Args...>(flat.defs, std::index_sequence_for<Args...>{}), flat.avals,
                                      flat.own, flat.call, &out_def);
    return tree::unflatten<R>(out_def, program->Run(flat.leaves));
  }

  // Traces, propagates, partitions and lowers for these arguments without running anything:
  // pytrees of Arrays, jx::ShapeDtypeStructs standing for Arrays, or jx::ShapeDtypeTrees
  // standing for pytrees (the function's parameter type there must be deducible: a typed
  // lambda or function object). An abstract leaf's .sharding places it as a sharded array's
  // sharding would; nothing of the global shapes is allocated.
  template <typename... Args>
  SpmdCompiled lower(const Args&... args) const {
    Flat flat = Flatten(args...);
    tree::TreeDef out_def;
    return SpmdCompiled(state_->ProgramFor(TraceFn<Args...>(flat.defs, std::index_sequence_for<Args...>{}),
                                           flat.avals, flat.own, flat.call, &out_def));
  }

 private:
  struct Flat {
    Arrays leaves;  // of Array arguments (empty for abstract ones)
    std::vector<ShapedArray> avals;
    std::vector<std::optional<NamedSharding>> own;  // each leaf's own sharding
    std::vector<tree::TreeDef> defs;
    SpmdCall call;
  };

  template <typename... Args>
  static Flat Flatten(const Args&... args) {
    Flat flat;
    flat.call.num_args = sizeof...(Args);
    size_t a = 0;
    auto name_of = [&](const tree::TreeDef& def, size_t j) {
      return StrCat("argument ", a, def.IsLeaf() ? "" : " ", def.KeyPath(j));
    };
    auto add_abstract = [&](const tree::TreeDef& def, absl::Span<const ShapeDtypeStruct> l) {
      for (size_t j = 0; j < l.size(); ++j) {
        flat.call.arg_of_leaf.push_back(a);
        flat.call.leaf_names.push_back(name_of(def, j));
        flat.avals.push_back(ShapedArray{l[j].shape, l[j].dtype, l[j].weak_type});
        flat.own.push_back(AbstractSharding(l[j], flat.call.leaf_names.back()));
      }
    };
    auto add = [&]<typename A>(const A& arg) {
      tree::TreeDef def;
      if constexpr (std::is_same_v<A, ShapeDtypeStruct>) {
        add_abstract(def, absl::MakeConstSpan(&arg, 1));
      } else if constexpr (std::is_same_v<A, ShapeDtypeTree>) {
        if (arg.def.num_leaves() != arg.leaves.size()) {
          throw ValueError(StrCat("jit with shardings: argument ", a, "'s ShapeDtypeTree has ", arg.leaves.size(),
                                  " leaves but its structure ", arg.def.ToString(), " has ", arg.def.num_leaves()));
        }
        def = arg.def;
        add_abstract(def, arg.leaves);
      } else {
        static_assert(tree::IsPytree<A>,
                      "jit with shardings takes pytrees of Arrays, ShapeDtypeStructs or ShapeDtypeTrees");
        auto [l, d] = tree::flatten(arg);
        def = std::move(d);
        for (size_t j = 0; j < l.size(); ++j) {
          flat.call.arg_of_leaf.push_back(a);
          flat.call.leaf_names.push_back(name_of(def, j));
          flat.avals.push_back(l[j].aval());
          flat.own.push_back(NamedShardingOf(l[j]));
          flat.leaves.push_back(std::move(l[j]));
        }
      }
      flat.call.structure += def.ToString() + ";";
      flat.defs.push_back(std::move(def));
      ++a;
    };
    (add(args), ...);
    return flat;
  }

  // f on arguments rebuilt from the traced leaves; the outputs flattened and grouped.
  template <typename... Args, size_t... I>
  SpmdJitState::TraceFn TraceFn(const std::vector<tree::TreeDef>& defs, std::index_sequence<I...>) const {
    return [this, &defs](absl::Span<const Array> xs, SpmdOutputs* out) -> Arrays {
      size_t next = 0, d = 0;
      auto take = [&](const tree::TreeDef& def) {
        std::vector<Array> l(xs.begin() + static_cast<ptrdiff_t>(next),
                             xs.begin() + static_cast<ptrdiff_t>(next + def.num_leaves()));
        next += def.num_leaves();
        return l;
      };
      auto rebuild = [&]<size_t K, typename A>(std::type_identity<A>) {
        const tree::TreeDef& def = defs[d++];
        if constexpr (std::is_same_v<A, ShapeDtypeStruct>) {
          return xs[next++];
        } else if constexpr (std::is_same_v<A, ShapeDtypeTree>) {
          using T = std::tuple_element_t<K, typename CallableArgs<F>::type>;
          return tree::unflatten<T>(def, take(def));
        } else {
          return tree::unflatten<A>(def, take(def));
        }
      };
      // Braced initialization evaluates left to right (leaf order).
      std::tuple rebuilt{rebuild.template operator()<I>(std::type_identity<Args>{})...};
      auto [leaves, def] = tree::flatten(std::apply(f_, rebuilt));
      GroupOutputs(def, out);
      return Arrays(leaves.begin(), leaves.end());
    };
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
