// The shard_map matmul from JAX's shard_map guide, on 8 simulated v5e chips: A is split over
// both mesh axes (rows over x, columns over y), B's rows over y; every chip multiplies its
// blocks and psum over y adds the partial products, so C comes out split over x only. The
// result equals the unsharded matmul; the chips' clocks show what the step cost on the pod.
#include <cstdio>
#include <iostream>

#include <jx/jx.h>

namespace jnp = jx::numpy;
namespace lax = jx::lax;
using jx::Array;
using jx::P;

int main() {
  auto pod = jx::tpu::make_pod("v5e", {4, 2});
  jx::Mesh mesh = jx::make_mesh({4, 2}, {"x", "y"}, pod.devices());
  std::cout << mesh << "\n";

  const Array keys = jx::random::split(jx::random::key(0), 2);
  const Array a = jx::random::normal(keys[0], {8, 16});
  const Array b = jx::random::normal(keys[1], {16, 4});

  auto matmul_basic = jx::shard_map(
      [](const Array& a_block, const Array& b_block) {
        // a_block: f32[2,8] (varies over x and y), b_block: f32[8,4] (varies over y).
        return lax::psum(jnp::matmul(a_block, b_block), "y");
      },
      mesh, jx::in_specs{P("x", "y"), P("y", jx::none)}, jx::out_specs{P("x", jx::none)});

  std::cout << jx::make_jaxpr(matmul_basic)(a, b) << "\n";
  const Array c = jx::jit(matmul_basic)(a, b);
  std::cout << "c: " << jx::typeof(c) << " on " << c.devices().size() << " chips, "
            << c.sharding()->ToString() << "\n";
  for (const jx::Shard& s : c.addressable_shards()) {
    std::printf("  %s rows [%lld, %lld) replica %lld\n", s.device->ToString().c_str(),
                static_cast<long long>(s.index[0].first), static_cast<long long>(s.index[0].second),
                static_cast<long long>(s.replica_id));
  }
  const Array expected = jnp::matmul(a, b);
  const double err = jnp::max(jnp::abs(c - expected)).item<double>();
  // The chips multiply in bf16 passes (a TPU's default precision), so compare at bf16's scale.
  std::printf("max |c - a @ b| = %.3g (%s)\n", err, err < 0.1 ? "ok" : "MISMATCH");
  return err < 0.1 ? 0 : 1;
}
