// Hybrid Mamba-2 models (Nemotron 3 Nano): the layer pattern and parameter
// counts against a hand count and the model card, the Mamba-2 mixer's
// forward and backward FLOPs, its tensor-parallel split, the blocks of a
// hybrid stack, activation memory, and a whole step.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/mamba.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"
#include "tests/ops.h"

namespace stacksim::workload {
namespace {

using config::LayerKind;
using testing::FlopsNamed;
using testing::HasOp;

const std::string kModels = std::string(STACKSIM_SOURCE_DIR) + "/models/";

config::ModelConfig Nano() { return config::LoadModelFile(kModels + "nemotron-3-nano-30b-a3b.json"); }

config::PlanConfig Plan(int tp, bool sp) {
  config::PlanConfig p;
  p.tp = tp;
  p.sequence_parallel = sp;
  p.micro_batch = 1;
  return p;
}

LayerShape Block(LayerKind kind, int tp = 1, bool sp = false, int64_t seq = 8192) {
  const config::ModelConfig m = Nano();
  return LayerShape::From(m, Plan(tp, sp), seq, testing::RoundProfile()).Kind(m, Plan(tp, sp), kind);
}

// Hand count (hidden 2688, vocabulary 131072, untied):
//   Mamba-2 mixer: in_proj 2688 x (2 x 4096 + 2 x 8 x 128 + 64 = 10304),
//     convolution 6144 x (4 taps + bias), A/D/dt_bias 3 x 64, gated norm
//     4096, out_proj 4096 x 2688: 38,742,208
//   attention: 2688 x (4096 + 2 x 256) + 4096 x 2688: 23,396,352
//   MoE: router 2688 x 128, 128 experts of 2 x 2688 x 1856, one shared
//     expert of 2 x 2688 x 3712: 1,297,465,344
//   52 blocks with a 2688-wide norm each, two embeddings, the final norm:
//   31,577,937,344 (the model card: 31.6B); with 6 of 128 experts used,
//   3,580,073,408 (the card: 3.5B active).
TEST(Hybrid, NemotronNanoParametersMatchHandCountAndModelCard) {
  const config::ModelConfig m = Nano();
  EXPECT_EQ(m.MambaParameterCount(), 38742208);
  EXPECT_EQ(m.AttentionParameterCount(), 23396352);
  EXPECT_EQ(m.LayerParameterCount(0), 38742208 + 2688);  // 'M'
  EXPECT_EQ(m.LayerParameterCount(1), 1297465344 + 2688);  // 'E'
  EXPECT_EQ(m.LayerParameterCount(5), 23396352 + 2688);  // '*'
  EXPECT_EQ(m.ParameterCount(), 31577937344);
  EXPECT_EQ(m.ActiveParameterCount(), 3580073408);
  EXPECT_EQ(m.AttentionLayerCount(), 6);
  EXPECT_EQ(m.MoeLayerCount(), 23);
  EXPECT_EQ(m.LayerKindAt(0), LayerKind::kMamba);
  EXPECT_EQ(m.LayerKindAt(1), LayerKind::kMoeBlock);
  EXPECT_EQ(m.LayerKindAt(5), LayerKind::kAttention);
  EXPECT_TRUE(m.IsMoeLayer(1));
  EXPECT_FALSE(m.IsMoeLayer(0));
}

// The dense Nemotron-H models against their paper's sizes (arXiv:2504.03624:
// 8B and 56B): the same block formulas at other widths.
TEST(Hybrid, NemotronHSizesMatchThePaper) {
  const config::ModelConfig h8 = config::LoadModelFile(kModels + "nemotron-h-8b.json");
  EXPECT_EQ(h8.ParameterCount(), 8100852736);
  EXPECT_FALSE(h8.is_moe());
  EXPECT_EQ(h8.LayerKindAt(1), LayerKind::kMlp);
  const config::ModelConfig h56 = config::LoadModelFile(kModels + "nemotron-h-56b.json");
  EXPECT_EQ(h56.ParameterCount(), 56324350464);
  EXPECT_EQ(h56.AttentionLayerCount(), 10);
}

// Nemotron 3 Super: latent MoE and an MTP module on a hybrid stack, against
// the hand count (hidden 4096; mixer 109,635,968; attention 35,651,584;
// latent MoE block: router 4096 x 512, fc1/fc2_latent_proj 2 x 4096 x 1024,
// 512 experts of 2 x 1024 x 2688, a shared expert of 2 x 4096 x 5376:
// 2,873,098,240). 40 + 40 + 8 blocks, embeddings and the final norm:
// 120,668,687,360; the MTP module (an attention and MoE layer, five norms,
// the 2h x h projection) 2,942,324,736; 40 x 490 unused experts a token.
TEST(Hybrid, NemotronSuperLatentMoeAndMtpMatchHandCount) {
  const config::ModelConfig m = config::LoadModelFile(kModels + "nemotron-3-super-120b-a12b.json");
  EXPECT_EQ(m.LayerParameterCount(1), 2873098240 + 4096);
  EXPECT_EQ(m.ParameterCount(), 120668687360);
  EXPECT_EQ(m.MtpParameterCount(), 2942324736);
  EXPECT_EQ(m.ParameterCount() - m.ActiveParameterCount(), 107898470400);
  EXPECT_EQ(m.LayerKindAt(88), LayerKind::kMoe);  // the MTP module's layer: attention, then MoE
  EXPECT_EQ(m.PipelineLayerCount(), 89);
}

// Nemotron 3 Super's config.json as Hugging Face publishes it
// (nvidia/NVIDIA-Nemotron-3-Super-120B-A12B; quantization left out), read
// as stacksim reads any model file: the same model as the shipped file.
TEST(Hybrid, NemotronHConfigsAsHuggingFaceWritesThemLoad) {
  const nlohmann::json hf = nlohmann::json::parse(R"({
    "architectures": ["NemotronHForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 1, "chunk_size": 128, "conv_kernel": 4, "dtype": "bfloat16", "eos_token_id": 2,
    "expand": 2, "head_dim": 128, "hidden_dropout": 0.0, "hidden_size": 4096,
    "hybrid_override_pattern": "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME",
    "initializer_range": 0.02, "intermediate_size": 2688, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64,
    "mamba_hidden_act": "silu", "mamba_num_heads": 128, "mamba_proj_bias": false,
    "mamba_ssm_cache_dtype": "float32", "max_position_embeddings": 262144, "mlp_bias": false,
    "mlp_hidden_act": "relu2", "model_type": "nemotron_h", "moe_intermediate_size": 2688,
    "moe_latent_size": 1024, "moe_shared_expert_intermediate_size": 5376, "moe_shared_expert_overlap": false,
    "mtp_hybrid_override_pattern": "*E", "n_group": 1, "n_groups": 8, "n_routed_experts": 512,
    "n_shared_experts": 1, "norm_eps": 1e-05, "norm_topk_prob": true, "num_attention_heads": 32,
    "num_experts_per_tok": 22, "num_hidden_layers": 88, "num_key_value_heads": 2, "num_logits_to_keep": 1,
    "num_nextn_predict_layers": 1, "pad_token_id": 0, "partial_rotary_factor": 1.0,
    "rescale_prenorm_residual": true, "residual_in_fp32": false, "rope_theta": 10000,
    "routed_scaling_factor": 5.0, "sliding_window": null, "ssm_state_size": 128, "tie_word_embeddings": false,
    "time_step_floor": 0.0001, "time_step_max": 0.1, "time_step_min": 0.001, "topk_group": 1,
    "transformers_version": "4.57.6", "use_bias": false, "use_cache": true, "use_conv_bias": true,
    "use_mamba_kernels": true, "vocab_size": 131072})");
  const config::ModelConfig m = config::ParseModel(JsonNode(hf, "config.json", ""));
  const config::ModelConfig shipped = config::LoadModelFile(kModels + "nemotron-3-super-120b-a12b.json");
  EXPECT_EQ(m.ParameterCount(), shipped.ParameterCount());
  EXPECT_EQ(m.MtpParameterCount(), shipped.MtpParameterCount());
  EXPECT_EQ(m.ActiveParameterCount(), shipped.ActiveParameterCount());
  EXPECT_EQ(m.norm, config::NormKind::kRmsNorm);
  EXPECT_EQ(m.position_embedding, config::PositionEmbedding::kNone);
  EXPECT_EQ(m.activation, config::Activation::kSquaredRelu);
  EXPECT_EQ(m.expert_groups, 1);  // n_group 1: one group of every expert, as Kimi K2's
}

// Latent MoE moves rows and runs experts at the latent width (1024), not
// the hidden (4096): a quarter of the dispatch bytes, and two projections.
TEST(Hybrid, LatentMoeDispatchesAndComputesAtTheLatentWidth) {
  const config::ModelConfig m = config::LoadModelFile(kModels + "nemotron-3-super-120b-a12b.json");
  config::PlanConfig p = Plan(1, false);
  p.ep = 8;
  const LayerShape s = LayerShape::From(m, p, 8192, testing::RoundProfile()).Kind(m, p, LayerKind::kMoeBlock);
  const std::vector<Op> fwd = LayerForward(s);
  config::ModelConfig plain = m;
  plain.moe_latent_size = 0;
  const LayerShape w = LayerShape::From(plain, p, 8192, testing::RoundProfile()).Kind(plain, p, LayerKind::kMoeBlock);
  const std::vector<Op> wide = LayerForward(w);
  auto bytes = [](const std::vector<Op>& ops, const std::string& name) {
    for (const Op& op : ops) {
      if (op.name == name) return op.bytes.value;
    }
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(bytes(fwd, "ep-dispatch") * 4, bytes(wide, "ep-dispatch"));
  EXPECT_DOUBLE_EQ(FlopsNamed(fwd, "expert-fc1") * 4, FlopsNamed(wide, "expert-fc1"));
  EXPECT_DOUBLE_EQ(FlopsNamed(fwd, "moe-latent-down") / 8192, 2.0 * 4096 * 1024);
  EXPECT_TRUE(HasOp(fwd, "moe-latent-up"));
  EXPECT_FALSE(HasOp(wide, "moe-latent-up"));
}

// Per token, tp 1: in_proj 2 x 2688 x 10304 = 55,394,304; out_proj
// 2 x 4096 x 2688 = 22,020,096; the SSD's products 2 x (64 x 128 x 64
// states + 8 x 128 x 128 C B^T + 64 x 64 x (128 + 128) output) = 3,407,872.
TEST(Hybrid, MambaForwardFlopsMatchHandCount) {
  const std::vector<Op> fwd = LayerForward(Block(LayerKind::kMamba));
  const double T = 8192;
  EXPECT_DOUBLE_EQ(FlopsNamed(fwd, "in-proj") / T, 55394304.0);
  EXPECT_DOUBLE_EQ(FlopsNamed(fwd, "out-proj") / T, 22020096.0);
  EXPECT_DOUBLE_EQ(FlopsNamed(fwd, "ssd-") / T, 3407872.0);
  EXPECT_DOUBLE_EQ(SsdForwardFlops(Nano().mamba, T) / T, 3407872.0);
  // The SSD's products count as the sequence mixer's work, like attention.
  for (const Op& op : fwd) {
    if (op.name == "ssd-chunk-scan") EXPECT_EQ(op.role, trace::TaskRole::kAttention);
  }
  EXPECT_FALSE(HasOp(fwd, "qkv"));
  EXPECT_FALSE(HasOp(fwd, "mlp-norm"));
}

TEST(Hybrid, MambaBackwardDoublesTheProjectionsAndRecomputesTheScanState) {
  const LayerShape s = Block(LayerKind::kMamba);
  const std::vector<Op> fwd = LayerForward(s), bwd = LayerBackward(s);
  EXPECT_DOUBLE_EQ(FlopsNamed(bwd, "in-proj-"), 2.0 * FlopsNamed(fwd, "in-proj"));
  EXPECT_DOUBLE_EQ(FlopsNamed(bwd, "out-proj-"), 2.0 * FlopsNamed(fwd, "out-proj"));
  // Transposed products (about twice the forward's) plus CB and the states again.
  const double scan = FlopsNamed(bwd, "ssd-");
  EXPECT_GT(scan, 2.0 * FlopsNamed(fwd, "ssd-"));
  EXPECT_LT(scan, 3.5 * FlopsNamed(fwd, "ssd-"));
  EXPECT_TRUE(HasOp(bwd, "ssd-chunk-state-recompute"));
}

TEST(Hybrid, TensorParallelismSplitsTheMixerAndAddsItsCollectives) {
  const std::vector<Op> one = LayerForward(Block(LayerKind::kMamba, 1));
  const std::vector<Op> two = LayerForward(Block(LayerKind::kMamba, 2, /*sp=*/true));
  EXPECT_DOUBLE_EQ(FlopsNamed(two, "in-proj"), FlopsNamed(one, "in-proj") / 2);
  EXPECT_DOUBLE_EQ(FlopsNamed(two, "ssd-"), FlopsNamed(one, "ssd-") / 2);
  int collectives = 0;
  for (const Op& op : two) collectives += op.is_collective ? 1 : 0;
  EXPECT_EQ(collectives, 2);  // SP: all-gather before in_proj, reduce-scatter after out_proj
  for (const Op& op : one) EXPECT_FALSE(op.is_collective);
}

// Megatron-Core's MambaContextParallel: the projections on the rank's
// sequence shard, five all-to-alls (z, x, B, C, dt) to whole sequences of
// 1/cp of the heads for the convolution and the scan, one (y) back; the
// backward the same the other way.
TEST(Hybrid, ContextParallelismHandsTheScanWholeSequencesOfFewerHeads) {
  const config::ModelConfig m = Nano();
  auto block = [&](int tp, int cp) {
    config::PlanConfig p = Plan(tp, tp > 1);
    p.cp = cp;
    return LayerShape::From(m, p, 8192, testing::RoundProfile()).Kind(m, p, LayerKind::kMamba);
  };
  const std::vector<Op> one = LayerForward(block(1, 1)), two = LayerForward(block(1, 2));
  EXPECT_DOUBLE_EQ(FlopsNamed(two, "in-proj"), FlopsNamed(one, "in-proj") / 2);
  EXPECT_DOUBLE_EQ(FlopsNamed(two, "ssd-"), FlopsNamed(one, "ssd-") / 2);
  // 4,096 tokens a rank, 2 bytes: z and x 4,096 wide, B and C 8 groups x
  // 128, dt 64 heads; y 4,096 wide.
  const double T = 4096 * 2.0;
  std::vector<std::pair<std::string, double>> exchanged;
  for (const Op& op : two) {
    if (!op.is_collective) continue;
    EXPECT_TRUE(op.cp_group) << op.name;
    EXPECT_EQ(op.collective, trace::CollectiveKind::kAllToAll) << op.name;
    exchanged.emplace_back(op.name, op.bytes.value);
  }
  const std::vector<std::pair<std::string, double>> expected = {
      {"mamba-cp-a2a-z", T * 4096}, {"mamba-cp-a2a-x", T * 4096}, {"mamba-cp-a2a-b", T * 1024},
      {"mamba-cp-a2a-c", T * 1024}, {"mamba-cp-a2a-dt", T * 64},  {"mamba-cp-a2a-y", T * 4096}};
  EXPECT_EQ(exchanged, expected);
  // The scan sits between the two exchanges.
  size_t dt = 0, scan = 0, y = 0;
  for (size_t i = 0; i < two.size(); ++i) {
    if (two[i].name == "mamba-cp-a2a-dt") dt = i;
    if (two[i].name == "ssd-chunk-scan") scan = i;
    if (two[i].name == "mamba-cp-a2a-y") y = i;
  }
  EXPECT_LT(dt, scan);
  EXPECT_LT(scan, y);
  int backward = 0;
  for (const Op& op : LayerBackward(block(1, 2))) backward += op.is_collective && op.cp_group ? 1 : 0;
  EXPECT_EQ(backward, 6);
  // tp 8 leaves one group a rank: cp 2 repeats it, so B and C go out twice
  // as wide (2 x 128; in_proj's output holds the CP rank's 4,096 tokens, SP
  // gathered) and each CP rank scans 4 of the TP rank's 8 heads.
  const std::vector<Op> repeated = LayerForward(block(8, 2));
  for (const Op& op : repeated) {
    if (op.name == "mamba-cp-a2a-b") EXPECT_DOUBLE_EQ(op.bytes.value, T * 256);
  }
  EXPECT_DOUBLE_EQ(FlopsNamed(repeated, "ssd-chunk-scan"), FlopsNamed(LayerForward(block(8, 1)), "ssd-chunk-scan") / 2);
}

TEST(Hybrid, BlocksHoldOnlyTheirOwnPart) {
  const std::vector<Op> attention = LayerForward(Block(LayerKind::kAttention));
  EXPECT_TRUE(HasOp(attention, "attention"));
  EXPECT_FALSE(HasOp(attention, "mlp-norm"));
  EXPECT_FALSE(HasOp(attention, "router"));
  const std::vector<Op> moe = LayerForward(Block(LayerKind::kMoeBlock));
  EXPECT_FALSE(HasOp(moe, "attention"));
  EXPECT_FALSE(HasOp(moe, "input-norm"));
  EXPECT_TRUE(HasOp(moe, "expert-fc1"));
  EXPECT_TRUE(HasOp(moe, "mlp-residual"));
}

TEST(Hybrid, MambaActivationsAreTheCombinedFunctionsSavedTensors) {
  // bf16, tp 1, 8192 tokens: the block input and in_proj's input (2 x 2688),
  // z x B C dt (10304), y (4096), out_proj's input (4096), 2 bytes each.
  const double expected = 2.0 * 8192 * (2688 + 2688 + 10304 + 4096 + 4096);
  EXPECT_DOUBLE_EQ(memory::LayerActivations(Block(LayerKind::kMamba), config::Recompute::kNone).value, expected);
  // An attention block keeps less than a whole transformer layer would.
  const double attention = memory::LayerActivations(Block(LayerKind::kAttention), config::Recompute::kNone).value;
  const double transformer = memory::LayerActivations(Block(LayerKind::kDense), config::Recompute::kNone).value;
  EXPECT_GT(attention, 0.0);
  EXPECT_LT(attention, transformer);
}

TEST(Hybrid, PlansMustSplitTheMixerIntoWholeGroups) {
  config::PlanConfig p = Plan(8, true);
  p.dp = 2;
  p.global_batch = 2;
  const config::ScenarioConfig s = testing::Scenario(Nano(), 16, 8192, p);
  EXPECT_NO_THROW(config::ValidatePlan(s, "nano.json"));
  // Context parallelism splits each TP rank's 16 heads (tp 4) again: cp 2
  // runs, cp 32 leaves no whole head.
  config::ScenarioConfig cp = s;
  cp.plan.tp = 4;
  cp.plan.cp = 2;
  EXPECT_NO_THROW(config::ValidatePlan(cp, "nano.json"));
  cp.plan.cp = 32;
  cp.gpus = 256;
  const InputError e = testing::ErrorFrom([&] { config::ValidatePlan(cp, "nano.json"); });
  EXPECT_EQ(e.key_path(), "plan.cp") << e.what();
  config::ModelConfig odd = Nano();
  odd.mamba.groups = 4;  // tp 8 cannot split 4 groups
  const InputError g = testing::ErrorFrom([&] { config::ValidatePlan(testing::Scenario(odd, 16, 8192, p), "nano.json"); });
  EXPECT_EQ(g.key_path(), "plan.tp") << g.what();
}

// Model FLOPs per token: 6 x the 3,227,749,184 parameters a token uses
// outside the input embedding, 3 x 23 SSD scans of 3,407,872, and
// attention in the 6 attention blocks only: 6 x 6 x 32 x 128 x 8192.
TEST(Hybrid, StepSimulatesWithModelFlopsOfItsBlocks) {
  config::PlanConfig p = Plan(1, false);
  p.dp = 8;
  p.ep = 8;
  p.global_batch = 16;
  p.precision = config::Precision::kBf16;
  config::ScenarioConfig s = testing::Scenario(Nano(), 8, 8192, p);
  s.plan.recompute = config::Recompute::kFull;
  simulate::Options options;
  options.simulate_if_out_of_memory = true;  // the step's work, whatever the fit
  const simulate::SimulationResult r = simulate::Simulate(s, options);
  EXPECT_GT(r.iteration.seconds(), 0.0);
  const double tokens = 16.0 * 8192;
  EXPECT_DOUBLE_EQ(r.model_flops.value / tokens, 6.0 * 3227749184.0 + 3.0 * 23 * 3407872.0 + 6.0 * 6 * 32 * 128 * 8192);
  EXPECT_GT(r.breakdown.attention.seconds(), 0.0);  // the SSD scans and the six attention blocks
}

}  // namespace
}  // namespace stacksim::workload
