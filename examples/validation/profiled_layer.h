// The scaling book's profiled Transformer layer ([book9], validation_cases.h) written in jx: the
// FFW block of Part 9's "real(ish) example profile", jitted with its shardings on a simulated
// TPU v2-8 (8 TensorCores, each a JAX device, as a 4 data x 2 model mesh) and planned by the
// SPMD partitioner and the pod's cost model. The validation rows read the plan's per-op times.
// The whole layer (the chapter's head-sharded attention, then the FFW) is planned too
// (PlanBookLayer); the chapter publishes no time for its attention or for the layer.
//
// What the chapter prints of the layer (its Colab's code is not in the text):
//   X: bf16[32, 1024, 8192] (batch, seq, d_model), sharded 4-way over batch ('data');
//   W_in: bf16[8192, 32768] (d_model, d_ff), its columns 2-way over 'model'; per core the
//     up-projection is bf16[8,1024,8192] @ bf16[8192,16384];
//   the down-projection's partial sums bf16[8,1024,8192] are reduce-scattered over 'model' to
//     bf16[8,1024,4096] (d_model 2-way), so W_out: bf16[32768, 8192], its rows over 'model',
//     and the block's output P('data', None, 'model').
// The activation between the projections is not printed; none is applied here (on XLA:TPU an
// elementwise activation fuses into the up-projection's output fusion).
//
//   const tpu::Pod pod = tpu::make_pod("v2", {2, 2});
//   const BookFfwProfile profile = PlanBookFfw(pod);       // a dry run: shapes only
//   profile.up_projection_seconds;                          // the chapter's 96 ms
//   profile.reduce_scatter_seconds;                         // the chapter's 1.13 ms
#pragma once

#include <cstdint>
#include <vector>

#include <jx/jx.h>
#include <jx/devices/tpu/pod_plan.h>

#include "validation_cases.h"

namespace jx::validation {

// The chapter's sizes (the defaults); smaller ones for a run with data.
struct BookFfwConfig {
  int64_t batch = 32;
  int64_t seq = 1024;
  int64_t d_model = 8192;
  int64_t d_ff = 32768;
};

// The FFW block: X[B, T, D] @ W_in[D, F] -> Tmp[B, T, F]; Tmp @ W_out[F, D] -> [B, T, D].
Array BookFfw(const Array& x, const Array& w_in, const Array& w_out);

// The layer jitted with the chapter's shardings on `mesh` (axes 'data' and 'model'): in
// P('data', None, None), P(None, 'model'), P('model', None); out P('data', None, 'model').
spmd::SpmdCompiled CompileBookFfw(const Mesh& mesh, const BookFfwConfig& cfg);

// What the plan of the layer predicts for the ops the chapter's profile shows.
struct BookFfwProfile {
  tpu::PodPlan plan;
  double up_projection_seconds = 0;    // the per-device X @ W_in
  double down_projection_seconds = 0;  // the per-device Tmp @ W_out (partial sums)
  double reduce_scatter_seconds = 0;   // the partial sums over 'model'
  int64_t reduce_scatter_bytes = 0;    // per chip (its result: TPU.md's V / N)
  int num_reduce_scatters = 0;
  int num_other_collectives = 0;
};

// A dry run of the layer on `pod` (8 devices: a v2-8, make_pod("v2", {2, 2})), mesh (4, 2) =
// ('data', 'model'). The projections are the plan's two dots, told apart by program order
// (the up-projection runs first); a jx::Error when the plan does not hold exactly those two
// dots and one reduce-scatter.
BookFfwProfile PlanBookFfw(const tpu::Pod& pod, const BookFfwConfig& cfg = {});

// The chapter's attention (its Q projection W_Q: [d_model, n_heads, d_qkv] = [8192, 32, 256],
// "Megatron sharding along the head dimension"; no time is published for it): W_Q, W_K, W_V
// [D, N, H] and W_O [N, H, D], heads 2-way over 'model'. softmax(Q K^T / sqrt(H)) V, no mask
// (the chapter does not say).
struct BookLayerConfig {
  BookFfwConfig ffw;
  int64_t heads = 32;
  int64_t d_qkv = 256;
};
Array BookAttention(const Array& x, const Array& w_q, const Array& w_k, const Array& w_v, const Array& w_o);

// The layer: h = x + attention(x); out = h + ffw(h), jitted with the chapter's shardings
// (x P('data', None, None), heads and d_ff over 'model', out P('data', None, 'model')) and
// planned on `pod` (a v2-8) with mesh (4, 2) = ('data', 'model').
tpu::PodPlan PlanBookLayer(const tpu::Pod& pod, const BookLayerConfig& cfg = {});

// The validation rows of the chapter's profile (the up-projection, the reduce-scatter), each
// read from one dry run of the layer on a v2-8 (planned on the first prediction).
std::vector<Case> ProfiledLayerCases();

}  // namespace jx::validation
