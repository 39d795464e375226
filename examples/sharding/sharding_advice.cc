// Sharding advice on a simulated v5e 4x2 pod: why a jit with shardings partitions the way it
// does (propagation's conflicts priced by the cost model, each dot's strategies), then a
// search over the standard strategies of a transformer training step, planned from shapes
// alone, for the fastest that fits in HBM.
#include <iostream>

#include <jx/jx.h>
#include <jx/nn/models/transformer.h>
#include <jx/sharding/spmd/explain_sharding.h>
#include <jx/sharding/spmd/sharding_search.h>

namespace jnp = jx::numpy;
using jx::Array;

int main() {
  auto pod = jx::tpu::make_pod("v5e", {4, 2});
  auto mesh = jx::make_mesh({4, 2}, {"data", "model"}, pod.devices());

  // a is split over 'model', b over 'data', the sum must be split over 'data': propagation
  // keeps a's choice (the first it meets); the cost model says b's is cheaper.
  auto s = [&](jx::PartitionSpec p) { return jx::NamedSharding(mesh, std::move(p)); };
  auto add = jx::jit([](const Array& a, const Array& b) { return a + b; },
                     jx::in_shardings{s(jx::P("model", jx::none)), s(jx::P("data", jx::none))},
                     jx::out_shardings{s(jx::P("data", jx::none))});
  Array x = jnp::ones({256, 512});
  std::cout << jx::explain_sharding(add).lower(x, x).ToString() << "\n";

  // A matmul contracting over a split dimension: gather the operands first, or multiply the
  // shards and all-reduce (or loop over ring shifts: collective matmul).
  auto matmul = [](const Array& a, const Array& w) { return jnp::matmul(a, w); };
  Array a = jnp::ones({256, 4096}), w = jnp::ones({4096, 64});
  std::cout << jx::explain_sharding(matmul, jx::in_shardings{s(jx::P(jx::none, "data")), s(jx::P("data", jx::none))})
                   .lower(a, w)
                   .ToString()
            << "\n";

  // The transformer's training step(params, tokens, targets), its parameters abstract.
  jx::nn::models::TransformerConfig cfg;
  cfg.num_layers = 2;
  cfg.d_model = 256;
  cfg.num_heads = 8;
  cfg.d_ff = 1024;
  cfg.vocab_size = 512;
  cfg.seq_len = 128;
  cfg.batch_size = 32;
  jx::SearchOptions options;
  options.batch_argnums = {1, 2};
  const jx::ShapeDtypeStruct tokens{{cfg.batch_size, cfg.seq_len}, jx::int32};
  jx::ShardingSearch search =
      jx::search_sharding(jx::nn::models::TransformerTrainStep{cfg, mesh}, mesh, options)
          .lower(jx::nn::models::abstract_transformer_params(cfg, mesh), tokens, tokens);
  std::cout << search.ToString();
  return search.best() ? 0 : 1;
}
