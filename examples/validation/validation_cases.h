// jx's predictions next to published TPU numbers (issue 15, item 6). Each case is one number a
// public source printed for an exact configuration, and the function that asks jx's cost model
// or simulator for the same quantity. tests/validation asserts every fast case; the
// validation_table program prints them all as the README's table.
//
// The published numbers, their configurations and sources:
//
//  [book3] "How to Scale Your Model" (J. Austin et al., the JAX team's scaling book), Part 3
//    "Sharded Matrices and How to Multiply Them" (jax-ml.github.io/scaling-book/sharding):
//    * Pop quiz 2 (a profile on real chips): AllGather_Y([E_Y, F]) -> [E, F] on a TPU v5e
//      slice with mesh {'X': 8, 'Y': 4}, bf16. E=2048, F=8192 (34 MB): the book's estimate
//      560 us (Y has no wraparound below 16 on v5e, so a line: 3 hops of 8.4 MB at 4.5e10),
//      measured 680 us. E=F=256 (32 kB shards, latency-bound): "roughly 3 us", measured
//      "closer to 8 us".
//    * Question 2 (the book's own estimates, no profile): TPU v4 4x4x4 slice, mesh
//      {'X': 4, 'Y': 4, 'Z': 4}, B=1024, D=4096, bf16: AllGather_X([B_X, D_Y]) 23 us (a ring of
//      4, 9e10 B/s bidirectional), AllGather_XY([B_X, D_Y]) 46 us (two axes).
//    * Question 3 (estimate): AllGather_X([B_X]) with B=128 bf16 on the same 4x4x4: latency
//      bound, "roughly 2 us" (2 hops).
//  [book9] Part 9 "How to Profile TPU Programs" (jax-ml.github.io/scaling-book/profiling),
//    "Looking at a real(ish) example profile": a Transformer on 8 TPU v2 cores (Colab), 4-way
//    data x 2-way model parallel, bf16, X[32, 1024, 8192] @ W_in[8192, 32768] (the layer in
//    jx, jitted and planned on a simulated v2-8: profiled_layer.h):
//    * the per-core up-projection bf16[8,1024,8192] @ bf16[8192,16384]: estimate 95.6 ms at
//      23e12 FLOP/s per core, measured 96 ms;
//    * the ReduceScatter over the 2-way model axis of a 134 MB shard (bf16[8,1024,8192]):
//      estimate 1.1 ms (one hop, 1.2e11 B/s bidirectional), measured 1.13 ms.
//  [book10] Part 10 "Programming TPUs in JAX" (jax-ml.github.io/scaling-book/jax-stuff),
//    "Example [Collective Matmul]": mesh (2, 4) = ('X', 'Y'), B=1024, D=2048, F=8192,
//    A[B_X, D_Y] @ W[D, F_Y] -> Out[B_X, F_Y]; the operands are jnp.arange arrays, i.e. int32.
//    Profiles: jit (AllGather_Y of A, then the matmul) 311 us; the shard_map collective
//    matmul (collective_matmul_allgather_lhs_contracting: one way round the ring, 4 partial
//    dots and 3 ppermutes, unrolled) 244 us; the same matmul with an unsharded contraction
//    224 us. The example's code says it is meant for a TPU v5e-8 runtime: a v5e 2x4 slice
//    (no wraparound).
//  [maxtext] MaxText README, "Runtime Performance Results" (github.com/google/maxtext):
//    MFU of synthetic-data training steps, e.g. v5e: 1x v5e-256 16B 61.10%, 32B 66.86%, 64B
//    59.90%, 128B 56.06% (configs MaxText/configs/v5e/{16,32,64,128}b.sh: FSDP over the
//    slice, remat_policy=full, max_target_length=2048, per_device_batch_size 6/4/..);
//    v5p: 32B on v5p-128 71.47%, 128B on v5p-256 68.68%, 1160B on v5p-12288 66.23%.
//  [palm] Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways" (2022), Table 3:
//    PaLM 540B (118 layers, d_model 18432, 48 heads, d_ff 73728, seq 2048, batch 2048
//    sequences) on 6144 TPU v4 chips (two 3072-chip pods over DCN): 46.2% MFU (57.8% HFU).
//
//   for (const jx::validation::Case& c : jx::validation::Cases()) {
//     const double predicted = c.predict();
//     std::cout << c.id << " " << predicted / c.published - 1 << "\n";   // the error
//   }
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace jx::validation {

struct Case {
  std::string id;        // "book3.quiz2.allgather_large"
  std::string what;      // the quantity and its exact configuration, in words
  std::string source;    // "[book3] pop quiz 2, profile"
  bool measured = true;  // a measurement (profile) rather than the source's own estimate
  double published = 0;  // SI units: seconds, or a fraction for utilizations
  std::string unit;      // how to print it: "us", "ms" or "%"
  // The claim: predicted / published lies in [ratio_lo, ratio_hi]. `gap` marks a case where
  // jx is known to be far off: the corridor then records the documented error (a test fails
  // when the model moves out of it, fixed or broken), and `note` says why.
  double ratio_lo = 0, ratio_hi = 0;
  bool gap = false;
  bool slow = false;     // a big dry run: printed by validation_table, not run by the tests
  std::string note;      // what the model does here and, for a gap, why it is off
  std::function<double()> predict{};
};

// Every case, in table order.
const std::vector<Case>& Cases();

// One evaluated case.
struct Row {
  const Case* c = nullptr;
  double predicted = 0;
  double error() const { return predicted / c->published - 1; }  // signed, relative
  bool within() const;                                             // in the claimed corridor
};

// The README's table (markdown): case, configuration, published, jx, error, claim, source.
std::string FormatTable(const std::vector<Row>& rows);

// `value` (SI) in `unit`: "680 us", "46.2%".
std::string FormatValue(double value, const std::string& unit);

}  // namespace jx::validation
