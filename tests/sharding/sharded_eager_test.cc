// Eager ops on sharded arrays go to the one hook core owns (SetShardedEagerHandler): the
// default names the op and the sharding; an installed handler receives the op and its
// arguments; the committed-device rules run first (two meshes in one op are a ValueError).
// device_put to a NamedSharding installs the SPMD layer's handler, so the tests of core's
// default put it back for their duration (DefaultHandler).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "jx/core/apply_primitive.h"
#include "jx/transforms/jaxpr_util.h"
#include "jx/jx.h"

namespace jx::sharded_eager_test {
namespace {

namespace jnp = jx::numpy;
using ::testing::HasSubstr;

template <typename T>
std::string Str(const T& v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Core's default handler while in scope (the SPMD handler is installed by device_put).
struct DefaultHandler {
  ShardedEagerHandler previous = SetShardedEagerHandler(nullptr);
  ~DefaultHandler() { SetShardedEagerHandler(std::move(previous)); }
};

struct V5e {
  tpu::Pod pod = tpu::make_pod("v5e", {4, 2});
  Mesh mesh = make_mesh({4, 2}, {"x", "y"}, pod.devices());
};

TEST(ShardedEagerTest, DefaultHandlerNamesTheOpAndTheSharding) {
  V5e v;
  Array xs = device_put(jnp::arange(32, float32).reshape({8, 4}), NamedSharding(v.mesh, P("x", none)));
  DefaultHandler default_handler;
  try {
    jnp::sin(xs);
    FAIL() << "expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("[sin]"));
    EXPECT_THAT(msg, HasSubstr("f32[8@x,4]"));
    EXPECT_THAT(msg, HasSubstr("NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Explicit, Explicit)), "
                               "spec=PartitionSpec('x', None))"));
  }
}

TEST(ShardedEagerTest, InstalledHandlerReceivesTheOp) {
  V5e v;
  Array xs = device_put(jnp::arange(32, float32).reshape({8, 4}), NamedSharding(v.mesh, P("x", none)));
  std::string seen;
  size_t arity = 0;
  ShardedEagerHandler previous = SetShardedEagerHandler(
      [&](Primitive p, absl::Span<const Array> in, const ParamMap&) -> Arrays {
        seen = std::string(p.name());
        arity = in.size();
        return {in[0]};
      });
  Array out = xs + 1.0f;  // an uncommitted scalar follows the sharded array
  SetShardedEagerHandler(std::move(previous));
  EXPECT_EQ(seen, "add");
  EXPECT_EQ(arity, 2u);
  EXPECT_TRUE(out.sharding()->Equals(*xs.sharding()));
  // The SPMD layer's handler is back: the op runs on the mesh, sharded like its operand.
  const Array ys = jnp::sin(xs);
  EXPECT_TRUE(ys.sharding()->Equals(*xs.sharding()));
  EXPECT_TRUE(jnp::allclose(ys, jnp::sin(jnp::arange(32, float32).reshape({8, 4})), 1e-6, 1e-6));
}

TEST(ShardedEagerTest, ArraysOnTwoMeshesAreAValueError) {
  V5e v;
  Mesh other = make_mesh({2, 4}, {"x", "y"}, v.pod.devices());  // same chips, another order
  Array a = device_put(jnp::ones({8, 4}), NamedSharding(v.mesh, P("x", none)));
  Array b = device_put(jnp::ones({8, 4}), NamedSharding(other, P("x", none)));
  try {
    a + b;
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    const std::string msg = e.what();
    EXPECT_THAT(msg, HasSubstr("[add] received arrays committed to different devices"));
    EXPECT_THAT(msg, HasSubstr("argument 0 (f32[8@x,4]) is on NamedSharding(mesh=Mesh('x': 4, 'y': 2"));
    EXPECT_THAT(msg, HasSubstr("argument 1 (f32[8@x,4]) is on NamedSharding(mesh=Mesh('x': 2, 'y': 4"));
    EXPECT_THAT(msg, HasSubstr("over device ids ["));
  }
  // A sharded array and an array committed to one chip do not mix either.
  Array c = device_put(jnp::ones({8, 4}), v.pod.devices()[0]);
  EXPECT_THROW(a * c, ValueError);
  EXPECT_THROW(c * a, ValueError);
  // jit calls check their arguments by the same rules.
  auto add = jit([](const Array& p, const Array& q) { return p + q; });
  try {
    add(a, b);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("received arrays committed to different devices"));
  }
  EXPECT_THROW(add(c, a), ValueError);
}

TEST(ShardedEagerTest, JitCallsOnShardedArraysReachTheHandler) {
  V5e v;
  Array xs = device_put(jnp::ones({8, 4}), NamedSharding(v.mesh, P("x", none)));
  auto f = jit([](const Array& a) { return jnp::sin(a) * 2.0f; }, name{"f"});
  {
    DefaultHandler default_handler;
    try {
      f(xs);
      FAIL() << "expected NotImplementedError";
    } catch (const NotImplementedError& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr("[jit] argument 0 (f32[8@x,4]) is sharded with NamedSharding("));
    }
  }
  std::string program;
  ShardedEagerHandler previous = SetShardedEagerHandler(
      [&](Primitive p, absl::Span<const Array> in, const ParamMap& params) -> Arrays {
        EXPECT_EQ(p.name(), "jit");
        EXPECT_EQ(params.GetString("name"), "f");
        program = Str(GetJaxpr(params, "jaxpr"));
        return {in[0]};
      });
  f(xs);
  SetShardedEagerHandler(std::move(previous));
  EXPECT_THAT(program, HasSubstr("a:f32[8@x,4]"));
  EXPECT_THAT(program, HasSubstr("sin a"));
  // An ahead-of-time program for one device does not take a sharded argument.
  auto compiled = f.lower(jnp::ones({8, 4})).compile();
  try {
    compiled(xs);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("compiled jit(f) was compiled for CpuDevice(id=0) but"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("is sharded with NamedSharding("));
  }
}

TEST(ShardedEagerTest, UncommittedAndSameMeshArgumentsReachTheHandler) {
  V5e v;
  Array a = device_put(jnp::ones({8, 4}), NamedSharding(v.mesh, P("x", none)));
  Array b = device_put(jnp::ones({8, 4}), NamedSharding(v.mesh, P(none, "y")));  // same mesh, other spec
  int calls = 0;
  ShardedEagerHandler previous = SetShardedEagerHandler(
      [&](Primitive, absl::Span<const Array> in, const ParamMap&) -> Arrays {
        ++calls;
        return {in[0]};
      });
  a + b;
  a * jnp::ones({8, 4});  // uncommitted, on the host
  SetShardedEagerHandler(nullptr);  // null restores the default
  EXPECT_EQ(calls, 2);
  EXPECT_THROW(a + b, NotImplementedError);
  SetShardedEagerHandler(std::move(previous));
}

// Programs are cached per op, types and mesh: a same-shaped mesh on another pod's chips gets its
// own, so each result stays on its operands' chips.
TEST(ShardedEagerTest, SameShapedMeshesOfTwoPodsKeepTheirOwnPrograms) {
  V5e first, second;
  Array a = device_put(jnp::arange(32, float32).reshape({8, 4}), NamedSharding(first.mesh, P("x", none)));
  Array b = device_put(jnp::arange(32, float32).reshape({8, 4}), NamedSharding(second.mesh, P("x", none)));
  const Array ya = jnp::sin(a);
  const Array yb = jnp::sin(b);
  EXPECT_TRUE(ya.sharding()->Equals(*a.sharding()));
  EXPECT_TRUE(yb.sharding()->Equals(*b.sharding())) << yb.sharding()->ToString();
  EXPECT_TRUE(jnp::allclose(yb * 2.0f, jnp::sin(b) * 2.0f, 1e-6, 1e-6));
}

}  // namespace
}  // namespace jx::sharded_eager_test
