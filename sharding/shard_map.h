// shard_map (JAX's jax.shard_map): f runs once per device of the mesh on that device's block
// of every argument (in_specs say how each argument is split over the mesh axes), may
// communicate through collectives (sharding/collectives.h) over the manual axes, and its
// per-device results are assembled into sharded arrays by out_specs.
//
//   auto pod = jx::tpu::make_pod("v5e", {4, 2});
//   jx::Mesh mesh = jx::make_mesh({4, 2}, {"x", "y"}, pod.devices());
//   auto matmul = jx::shard_map(
//       [](const Array& a, const Array& b) { return lax::psum(jnp::matmul(a, b), "y"); }, mesh,
//       jx::in_specs{jx::P("x", "y"), jx::P("y", jx::none)}, jx::out_specs{jx::P("x", jx::none)});
//   Array c = matmul(a, b);   // sharded over x, equal to jnp::matmul(a, b)
//
// Inside f every value's type records the manual axes it varies over (check_vma, on by
// default): inputs vary over the axes their in_specs name, binary ops insert `pvary` where
// operands differ, psum makes its result invariant, and an output whose out_spec leaves out
// an axis it varies over is an error (JAX's message, naming the output and the axes).
// make_jaxpr shows one `shard_map` equation with the body's jaxpr, as JAX prints it. The
// transform composes with grad, jvp, vmap and jit; eagerly, the body runs on every chip of
// the mesh in lockstep (each op on its chip, collectives moving data between the chips).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "jx/core/pytree.h"
#include "jx/core/registry.h"
#include "jx/sharding/collectives.h"
#include "jx/sharding/mesh.h"
#include "jx/sharding/partition_spec.h"
#include "jx/sharding/sharded_put.h"
#include "jx/transforms/ad.h"
#include "jx/transforms/builtin_rules.h"

namespace jx {

// A pytree prefix of PartitionSpecs for one argument or output of f (JAX's in_specs and
// out_specs are pytrees of specs, each a prefix of its value), by key path: each leaf takes
// the entry whose path is the longest prefix of its own (".layers" covers ".layers[2].w"; ""
// covers everything), or, given a function, the spec it returns for the leaf's path.
//   jx::specs_by_path{{".w", jx::P(jx::none, "model")}, {".b", jx::P("model")}}
//   jx::specs_by_path([](const std::string& path) { return path.ends_with(".w") ? P("x") : P(); })
class specs_by_path {
 public:
  specs_by_path(std::initializer_list<std::pair<std::string, PartitionSpec>> entries) : entries_(entries) {}
  explicit specs_by_path(std::function<PartitionSpec(const std::string& path)> fn) : fn_(std::move(fn)) {}
  // The spec of the leaf at `path`; throws ValueError naming `what` and the path when no
  // entry covers it.
  PartitionSpec SpecOf(const std::string& path, std::string_view what) const;

 private:
  std::vector<std::pair<std::string, PartitionSpec>> entries_;
  std::function<PartitionSpec(const std::string&)> fn_;
};

// One entry of in_specs or out_specs: a spec for every leaf of the value, or a prefix by path.
using SpecEntry = std::variant<PartitionSpec, specs_by_path>;

// One entry per argument of f (a PartitionSpec applies to every leaf of a pytree argument),
// or a single entry for all of them.
struct in_specs {
  std::vector<SpecEntry> specs;
  in_specs(std::initializer_list<SpecEntry> s) : specs(s) {}
  explicit in_specs(std::vector<SpecEntry> s) : specs(std::move(s)) {}
  explicit in_specs(const std::vector<PartitionSpec>& s) : specs(s.begin(), s.end()) {}
};
// One entry per output of f (f returning a std::tuple/std::pair: one per element), or a
// single entry for everything f returns.
struct out_specs {
  std::vector<SpecEntry> specs;
  out_specs(std::initializer_list<SpecEntry> s) : specs(s) {}
  explicit out_specs(std::vector<SpecEntry> s) : specs(std::move(s)) {}
  explicit out_specs(const std::vector<PartitionSpec>& s) : specs(s.begin(), s.end()) {}
};

struct ShardMapOptions {
  // JAX's check_vma: track varying manual axes, insert pvary, check out_specs' replication.
  bool check_vma = true;
  // The mesh axes f is manual over (JAX's axis_names); empty: all of them. The others stay
  // automatic: arguments are whole along them and every device along them computes alike.
  std::vector<std::string> axis_names = {};
  // The function's name in errors ("shard_map applied to the function 'f' ...").
  std::string name = "f";
};

inline const Primitive kShardMap = Primitive::Intern("shard_map");

// Registers the shard_map primitive and the collectives (idempotent).
void RegisterShardMap();

// The flat form: args are f's leaves, leaf_in_specs one spec per leaf; out_leaf_specs gives
// one spec per output leaf once f has been traced (it may read what the trace recorded).
Arrays ShardMapCall(const ArraysFn& f, const Mesh& mesh, const std::vector<PartitionSpec>& leaf_in_specs,
                    const std::function<std::vector<PartitionSpec>(size_t num_outputs)>& out_leaf_specs,
                    const ShardMapOptions& options, absl::Span<const Array> args);

namespace shard_map_internal {

// Expands one entry per top-level value (defs: their structures) into one spec per leaf; a
// single entry covers every value (its paths then start with the value's index, "[1].w").
// Throws ValueError naming `what` on a count mismatch or a leaf no entry covers.
std::vector<PartitionSpec> LeafSpecs(const std::vector<SpecEntry>& specs, const std::vector<tree::TreeDef>& defs,
                                     std::string_view what);

template <typename T> struct IsTupleLike : std::false_type {};
template <typename... Ts> struct IsTupleLike<std::tuple<Ts...>> : std::true_type {};
template <typename A, typename B> struct IsTupleLike<std::pair<A, B>> : std::true_type {};

// The structure of each top-level output: per element of a tuple or pair, else the whole.
template <typename R>
std::vector<tree::TreeDef> TopLevelDefs(const R& r) {
  if constexpr (IsTupleLike<R>::value) {
    return std::apply([](const auto&... e) { return std::vector<tree::TreeDef>{tree::structure(e)...}; }, r);
  } else {
    return {tree::structure(r)};
  }
}

}  // namespace shard_map_internal

// shard_map(f, mesh, in_specs{...}, out_specs{...}, options)(args...).
template <typename F>
auto shard_map(F f, Mesh mesh, in_specs in, out_specs out, ShardMapOptions options = {}) {
  return [f, mesh = std::move(mesh), in = std::move(in), out = std::move(out),
          options = std::move(options)](const auto&... args) {
    using Tuple = std::tuple<std::decay_t<decltype(args)>...>;
    using R = std::decay_t<std::invoke_result_t<const F&, decltype(args)...>>;
    lax::RegisterAll();
    RegisterShardMap();
    spmd::RegisterSpmdPrimitives();  // its sharded results work in eager ops
    const std::vector<PartitionSpec> leaf_in =
        shard_map_internal::LeafSpecs(in.specs, std::vector<tree::TreeDef>{tree::structure(args)...}, "in_specs");
    auto [leaves, def] = tree::flatten(Tuple{args...});
    auto out_def = std::make_shared<tree::TreeDef>();
    auto out_defs = std::make_shared<std::vector<tree::TreeDef>>();
    ArraysFn flat = [&f, def = def, out_def, out_defs](absl::Span<const Array> l) {
      R r = std::apply(f, tree::unflatten<Tuple>(def, l));
      *out_defs = shard_map_internal::TopLevelDefs(r);
      auto [o, d] = tree::flatten(r);
      *out_def = d;
      return Arrays(o.begin(), o.end());
    };
    Arrays outs = ShardMapCall(
        flat, mesh, leaf_in,
        [&](size_t) { return shard_map_internal::LeafSpecs(out.specs, *out_defs, "out_specs"); }, options, leaves);
    return tree::unflatten<R>(*out_def, outs);
  };
}

}  // namespace jx
