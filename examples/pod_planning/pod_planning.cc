// Planning a pod: a dry run of a transformer training step, FSDP x TP sharded, from shapes
// alone (jx::ShapeDtypeStructs with shardings: nothing is allocated and nothing runs). The plan
// is the step a real run on the simulated pod would report: its time on the slowest chip,
// compute vs communication, the per-chip HBM peak against capacity, FLOPs utilization and MFU.
//
//   pod_planning            a 4-layer d_model-1024 model on a v5e 4x4 slice (mesh data:4 x model:4)
//   pod_planning --full     Llama-2-70B's shape on a full v4 pod (16x16x16, data:256 x model:16)
// As MaxText trains, each layer is rematerialized (jax.checkpoint with nothing_saveable:
// remat_policy=full) and attention is nn::flash_attention (attention=flash; 2048-token tiles),
// so the 70B step fits in the v4 chips' 32 GiB;
//   --no-remat              saves every activation instead (the 70B step then needs ~425 GiB/chip)
//   --dot-product           materializes the [T, T] attention logits instead of flash attention
#include <cstring>
#include <iostream>

#include <jx/jx.h>
#include <jx/nn/models/transformer.h>

namespace models = jx::nn::models;

int main(int argc, char** argv) {
  bool full = false, remat = true, flash = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--full") == 0) {
      full = true;
    } else if (std::strcmp(argv[i], "--no-remat") == 0) {
      remat = false;
    } else if (std::strcmp(argv[i], "--dot-product") == 0) {
      flash = false;
    } else {
      std::cerr << "usage: pod_planning [--full] [--no-remat] [--dot-product]\n";
      return 2;
    }
  }
  models::TransformerConfig cfg;
  jx::tpu::Pod pod = full ? jx::tpu::make_pod("v4", {16, 16, 16}) : jx::tpu::make_pod("v5e", {4, 4});
  jx::Mesh mesh = full ? jx::make_mesh({256, 16}, {"data", "model"}, pod.devices())
                       : jx::make_mesh({4, 4}, {"data", "model"}, pod.devices());
  if (full) {
    cfg = models::TransformerConfig::Llama70B(/*batch_size=*/1024);
  } else {
    cfg.num_layers = 4;
    cfg.d_model = 1024;
    cfg.num_heads = 16;
    cfg.d_ff = 4096;
    cfg.vocab_size = 32000;
    cfg.seq_len = 1024;
    cfg.batch_size = 32;
  }
  cfg.remat = remat;
  cfg.remat_policy = jx::policies::nothing_saveable;
  cfg.attention = flash ? "flash" : "dot_product";
  // 2048-token tiles on the 4096-token 70B step: 3 of 4 tiles computed (causal); smaller tiles
  // skip more but multiply the planned program's instructions.
  cfg.attention_block = full ? 2048 : 512;
  std::cout << "Planning one training step of " << cfg.ToString() << "\non " << pod.num_chips() << " " << pod.generation() << " chips, "
            << mesh.ToString() << "\n\n";

  // The step as it would be jitted for real arrays; its parameters carry their own shardings.
  auto step = jx::jit(models::TransformerTrainStep{cfg, mesh}, jx::in_shardings{std::nullopt}, jx::name{"train_step"});
  const jx::ShapeDtypeTree params = models::abstract_transformer_params(cfg, mesh);
  const jx::ShapeDtypeStruct tokens = models::abstract_transformer_batch(cfg, mesh);
  const jx::tpu::PodPlan plan = step.lower(params, tokens, tokens).compile().plan();

  std::cout << plan.ToString() << "\n";
  std::cout << "model FLOPs per step " << cfg.train_flops_per_step() << " (6 * params * tokens + attention): MFU "
            << 100 * plan.mfu(cfg.train_flops_per_step()) << "%\n";
  std::cout << (plan.fits() ? "The step fits in HBM." : "The step does NOT fit in HBM: shard more, or rematerialize.")
            << "\n";
  // The dry run allocated nothing on the chips.
  for (const jx::Device* chip : pod.devices()) {
    if (chip->memory_stats().peak_bytes_in_use != 0) {
      std::cerr << "a dry run allocated on " << chip->ToString() << "\n";
      return 1;
    }
  }
  return plan.step.wall_seconds > 0 ? 0 : 1;
}
