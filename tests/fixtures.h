// Small configurations built in code for unit tests (no files needed).
#ifndef STACKSIM_TESTS_FIXTURES_H_
#define STACKSIM_TESTS_FIXTURES_H_

#include <utility>

#include "sim/config/scenario.h"

namespace stacksim::testing {

// A GPT-style model (learned positions, biases, dropout, tied embeddings).
inline config::ModelConfig GptModel(int layers, int hidden, int heads, int vocab) {
  config::ModelConfig m;
  m.name = "test-gpt";
  m.num_layers = layers;
  m.hidden_size = hidden;
  m.num_attention_heads = heads;
  m.num_kv_heads = heads;
  m.head_dim = hidden / heads;
  m.intermediate_size = 4 * hidden;
  m.vocab_size = vocab;
  m.activation = config::Activation::kGelu;
  m.norm = config::NormKind::kLayerNorm;
  m.attention_bias = m.mlp_bias = true;
  m.position_embedding = config::PositionEmbedding::kLearned;
  m.learned_position_embeddings = true;
  m.max_position_embeddings = 2048;
  m.tie_word_embeddings = true;
  m.dropout = true;
  return m;
}

// GptModel with every layer a MoE layer: `experts` routed experts of width
// `expert_ffn`, top-`top_k`, untied embeddings.
inline config::ModelConfig GptMoeModel(int layers, int hidden, int experts, int top_k, int64_t expert_ffn) {
  config::ModelConfig m = GptModel(layers, hidden, 8, 1024);
  m.num_experts = experts;
  m.experts_per_token = top_k;
  m.moe_intermediate_size = expert_ffn;
  m.tie_word_embeddings = false;
  return m;
}

// Llama-like: hidden 1024, 16 heads of 64, 4 KV heads, SwiGLU 2816, RMSNorm,
// RoPE, no biases or dropout, untied embeddings.
inline config::ModelConfig SmallLlamaModel(int layers) {
  config::ModelConfig m = GptModel(layers, 1024, 16, 32000);
  m.num_kv_heads = 4;
  m.intermediate_size = 2816;
  m.activation = config::Activation::kSwiglu;
  m.norm = config::NormKind::kRmsNorm;
  m.attention_bias = m.mlp_bias = false;
  m.position_embedding = config::PositionEmbedding::kRope;
  m.learned_position_embeddings = false;
  m.tie_word_embeddings = false;
  m.dropout = false;
  return m;
}

// A DGX-like node: 8 GPUs in one NVSwitch domain, 8 NICs.
inline config::TopologyConfig DgxTopology() {
  config::TopologyConfig t;
  t.name = "test-dgx";
  t.gpu = "test-gpu";
  t.gpus_per_node = 8;
  t.scale_up.kind = config::ScaleUpKind::kNvSwitch;
  t.scale_up.domain_gpus = 8;
  t.scale_up.per_gpu_bandwidth = Bandwidth{450e9};
  t.scale_up.latency = Time::Us(1);
  t.nics.per_node = 8;
  t.nics.bandwidth = Bandwidth{50e9};
  t.nics.latency = Time::Us(2);
  t.pcie_bandwidth = Bandwidth{64e9};
  return t;
}

// A profile with round numbers: 1000 TFLOP/s bf16 at 80% for large GEMMs,
// 4 TB/s achievable copy bandwidth, 100 SMs, 128x128 tiles.
inline config::ProfileConfig RoundProfile() {
  config::ProfileConfig p;
  p.name = "round";
  p.gpu = "round numbers";
  p.sm_count.value = 100;
  p.hbm_capacity.value = Bytes{80e9};
  p.hbm_bandwidth.value = Bandwidth{5e12};
  p.copy_efficiency.value = 0.8;
  p.peak_flops[static_cast<int>(config::Precision::kBf16)] = config::Sourced<FlopRate>{FlopRate{1000e12}, "test"};
  p.peak_flops[static_cast<int>(config::Precision::kFp16)] = config::Sourced<FlopRate>{FlopRate{1000e12}, "test"};
  p.peak_flops[static_cast<int>(config::Precision::kFp32)] = config::Sourced<FlopRate>{FlopRate{60e12}, "test"};
  p.gemm.max_efficiency[static_cast<int>(config::Precision::kBf16)] = config::Sourced<double>{0.8, "test"};
  p.gemm.max_efficiency[static_cast<int>(config::Precision::kFp16)] = config::Sourced<double>{0.8, "test"};
  p.gemm.tile.value = {128, 128};
  p.attention_fwd_efficiency.value = 0.5;
  p.attention_bwd_efficiency.value = 0.4;
  p.flash2_fwd_efficiency.value = 0.3;
  p.flash2_bwd_efficiency.value = 0.25;
  p.flash1_fwd_efficiency.value = 0.15;
  p.flash1_bwd_efficiency.value = 0.125;
  // Eager kernels at the H200-measured fractions of copy bandwidth that every
  // shipped profile carries (profiles/*.json "eager_kernels").
  using config::EagerKernel;
  for (auto [kind, gbps] : {std::pair{EagerKernel::kElementwise, 4152.0}, std::pair{EagerKernel::kLayerNorm, 2424.0},
                            std::pair{EagerKernel::kRmsNorm, 2681.0}, std::pair{EagerKernel::kGelu, 3621.0},
                            std::pair{EagerKernel::kGatedActivation, 1137.0}, std::pair{EagerKernel::kSoftmax, 1071.0},
                            std::pair{EagerKernel::kDropout, 2415.0}, std::pair{EagerKernel::kCast, 2115.0}}) {
    p.eager_kernels[static_cast<int>(kind)] = {gbps / 4152, "test: H200-measured eager GB/s over the 4152 GB/s copy"};
  }
  p.kernel_launch.value = Time::Us(4);
  p.host_bandwidth.value = Bandwidth{50e9};
  p.intra_reference_link.value = Bandwidth{450e9};
  p.intra_all_reduce.points = {{Bytes{1e3}, Bandwidth{1e9}}, {Bytes{1e9}, Bandwidth{400e9}}};
  p.intra_ring.points = {{Bytes{1e3}, Bandwidth{1e9}}, {Bytes{1e9}, Bandwidth{360e9}}};
  p.intra_latency.value = Time::Us(3);
  p.nic_efficiency.value = 0.9;
  p.inter_latency.value = Time::Us(5);
  return p;
}

inline config::ScenarioConfig Scenario(const config::ModelConfig& model, int gpus, int64_t seq,
                                       const config::PlanConfig& plan) {
  config::ScenarioConfig s;
  s.name = "test";
  s.model = model;
  s.topology = DgxTopology();
  s.profile = RoundProfile();
  s.gpus = gpus;
  s.seq_len = seq;
  s.plan = plan;
  return s;
}

}  // namespace stacksim::testing

#endif  // STACKSIM_TESTS_FIXTURES_H_
