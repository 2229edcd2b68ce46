#include "sim/importer/import.h"

#include <gtest/gtest.h>

#include "sim/config/model.h"

#include "tests/input_error.h"

namespace stacksim::importer {
namespace {

using nlohmann::json;
using testing::ErrorFrom;

ImportOptions Options(const std::string& model, int64_t gpus, int64_t seq_len = 0) {
  ImportOptions o;
  o.model = model;
  o.topology = "dgx-h100";
  o.gpus = gpus;
  o.seq_len = seq_len;
  return o;
}

bool Lists(const json& notes, const std::string& flag) {
  for (const json& n : notes) {
    if (n["flag"] == flag) return true;
  }
  return false;
}

const std::string kMegatron =
    "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2\n"
    "--num-virtual-stages-per-pipeline-rank 2 --sequence-parallel --use-distributed-optimizer\n"
    "--recompute-activations --micro-batch-size 2 --global-batch-size 64 --seq-length 4096 --bf16\n"
    "--overlap-grad-reduce --lr 1e-4 --frobnicate 3\n";

TEST(MegatronImport, MapsParallelismBatchPrecisionAndRecompute) {
  ImportResult r = ImportText(kMegatron, "args.txt", Options("llama3-8b", 32));
  const json& s = r.scenario;
  EXPECT_EQ(r.job.format, ImportFormat::kMegatron);
  EXPECT_EQ(s["framework"], "megatron-core");
  EXPECT_EQ(s["model"], "llama3-8b");
  EXPECT_EQ(s["gpus"], 32);
  EXPECT_EQ(s["training"]["seq_len"], 4096);
  EXPECT_EQ(s["training"]["global_batch"], 64);
  const json& p = s["plan"];
  EXPECT_EQ(p["tp"], 4);
  EXPECT_EQ(p["pp"], 2);
  EXPECT_EQ(p["dp"], 4);  // 32 / (4 x 2)
  EXPECT_EQ(p["vp"], 2);
  EXPECT_EQ(p["schedule"], "interleaved");
  EXPECT_EQ(p["micro_batch"], 2);
  EXPECT_EQ(p["sequence_parallel"], true);
  EXPECT_EQ(p["sharding"], "zero1");
  EXPECT_EQ(p["recompute"], "selective");
  EXPECT_EQ(p["precision"], "bf16");
  EXPECT_EQ(p["overlap_grad_reduce"], true);
  EXPECT_EQ(p["overlap_param_gather"], false);  // Megatron-LM's default: off unless given
}

// Full recomputation of the first N layers of each chunk (the block method)
// maps to recompute_layers; uniform with one layer per checkpoint is plain
// full recomputation.
TEST(MegatronImport, MapsBlockRecomputeToItsLayerCount) {
  const std::string block =
      "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2 --sequence-parallel\n"
      "--recompute-granularity full --recompute-method block --recompute-num-layers 3\n"
      "--micro-batch-size 1 --global-batch-size 64 --seq-length 4096 --bf16\n";
  ImportResult r = ImportText(block, "args.txt", Options("llama3-8b", 32));
  EXPECT_EQ(r.scenario["plan"]["recompute"], "full");
  EXPECT_EQ(r.scenario["plan"]["recompute_layers"], 3);
  std::string uniform = block;
  uniform.replace(uniform.find("block --recompute-num-layers 3"), 30, "uniform --recompute-num-layers 1");
  ImportResult u = ImportText(uniform, "args.txt", Options("llama3-8b", 32));
  EXPECT_EQ(u.scenario["plan"]["recompute"], "full");
  EXPECT_FALSE(u.scenario["plan"].contains("recompute_layers"));
}

// A MoE launch: EP, DeepEP's flex dispatcher and the 1F1B all-to-all
// overlap map to plan keys.
TEST(MegatronImport, MapsExpertParallelDispatchAndAllToAllOverlap) {
  const std::string moe =
      "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2\n"
      "--expert-model-parallel-size 8 --moe-token-dispatcher-type flex --overlap-moe-expert-parallel-comm\n"
      "--micro-batch-size 1 --global-batch-size 64 --seq-length 4096 --bf16\n";
  ImportResult r = ImportText(moe, "args.txt", Options("mixtral-8x7b", 16));
  const json& p = r.scenario["plan"];
  EXPECT_EQ(p["ep"], 8);
  EXPECT_EQ(p["moe_dispatcher"], "hierarchical");
  EXPECT_EQ(p["moe_a2a_overlap"], true);
}

// Megatron-Core's micro-batch groups of the interleaved schedule map to the
// plan; without virtual stages the flag changes nothing and says so.
TEST(MegatronImport, MapsMicroBatchGroupsOfTheInterleavedSchedule) {
  const std::string args =
      "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2\n"
      "--microbatch-group-size-per-virtual-pipeline-stage 4\n"
      "--micro-batch-size 1 --global-batch-size 64 --seq-length 4096 --bf16\n";
  ImportResult r = ImportText(args, "args.txt", Options("llama3-8b", 16));
  EXPECT_EQ(r.scenario["plan"]["microbatch_group"], 4);
  std::string flat = args;
  const std::string vp = "--num-virtual-stages-per-pipeline-rank 2";
  flat.replace(flat.find(vp), vp.size(), "");
  ImportResult plain = ImportText(flat, "args.txt", Options("llama3-8b", 16));
  EXPECT_FALSE(plain.scenario["plan"].contains("microbatch_group"));
  bool ignored = false;
  for (const auto& n : plain.job.ignored) ignored |= n.flag == "--microbatch-group-size-per-virtual-pipeline-stage";
  EXPECT_TRUE(ignored);
}

// Megatron-Core's precision-aware optimizer: the state dtypes map to
// plan.optimizer_state, and without the switch they are listed as ignored.
TEST(MegatronImport, MapsThePrecisionAwareOptimizersDtypes) {
  const std::string args =
      "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --use-distributed-optimizer\n"
      "--micro-batch-size 1 --global-batch-size 64 --seq-length 4096 --bf16\n"
      "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 --main-params-dtype fp16\n";
  ImportResult r = ImportText(args, "args.txt", Options("llama3-8b", 16));
  const json& o = r.scenario["plan"]["optimizer_state"];
  EXPECT_EQ(o["exp_avg"], "bf16");
  EXPECT_EQ(o["exp_avg_sq"], "bf16");
  EXPECT_EQ(o["master"], "fp16");
  std::string without = args;
  const std::string sw = "--use-precision-aware-optimizer ";
  without.replace(without.find(sw), sw.size(), "");
  ImportResult plain = ImportText(without, "args.txt", Options("llama3-8b", 16));
  EXPECT_FALSE(plain.scenario["plan"].contains("optimizer_state"));
  EXPECT_TRUE(Lists(plain.scenario["import"]["ignored"], "--exp-avg-dtype"));
  // A dtype Megatron-LM does not offer names the flag.
  std::string bad = args;
  bad.replace(bad.find("--main-params-dtype fp16"), 24, "--main-params-dtype bf16");
  const InputError e = testing::ErrorFrom([&] { ImportText(bad, "args.txt", Options("llama3-8b", 16)); });
  EXPECT_NE(std::string(e.what()).find("--main-params-dtype"), std::string::npos) << e.what();
}

TEST(MegatronImport, UnknownFlagsAreListedNeverDropped) {
  ImportResult r = ImportText(kMegatron, "args.txt", Options("llama3-8b", 32));
  const json& imp = r.scenario["import"];
  EXPECT_TRUE(Lists(imp["unmapped"], "--frobnicate"));
  EXPECT_FALSE(Lists(imp["unmapped"], "--lr"));
  EXPECT_TRUE(Lists(imp["ignored"], "--lr"));
  EXPECT_TRUE(Lists(imp["mapped"], "--tensor-model-parallel-size"));
}

TEST(MegatronImport, ContradictionsNameTheFlagAndFile) {
  InputError batch = ErrorFrom([] {
    ImportText("--micro-batch-size 2 --global-batch-size 100 --seq-length 2048", "a.sh", Options("llama3-8b", 8));
  });
  EXPECT_EQ(batch.file(), "a.sh");
  EXPECT_EQ(batch.key_path(), "--global-batch-size");  // 100 is not a multiple of 2 x dp 8
  InputError gpus = ErrorFrom([] { ImportText(kMegatron, "a.sh", Options("llama3-8b", 12)); });
  EXPECT_EQ(gpus.key_path(), "--tensor-model-parallel-size");  // 4 x 2 does not divide 12
  InputError shape = ErrorFrom([] { ImportText(kMegatron + "--num-layers 40", "a.sh", Options("llama3-8b", 32)); });
  EXPECT_EQ(shape.key_path(), "--num-layers");  // llama3-8b has 32 layers
  InputError both = ErrorFrom([] { ImportText("--bf16 --fp16 --micro-batch-size 1", "a.sh", Options("llama3-8b", 8, 2048)); });
  EXPECT_EQ(both.key_path(), "--fp16");
}

TEST(MegatronImport, ShapeFlagsDefineTheModelWithMegatronsVocabularyPadding) {
  const std::string args =
      "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048\n"
      "--vocab-size 50257 --tensor-model-parallel-size 4 --micro-batch-size 1 --fp16\n";
  ImportResult r = ImportText(args, "gpt.sh", Options("", 8));
  const json& m = r.scenario["model"];
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["num_hidden_layers"], 24);
  EXPECT_EQ(m["intermediate_size"], 4 * 2048);        // Megatron-LM's default FFN width without --swiglu
  EXPECT_EQ(m["vocab_size"], 50688);                  // 50257 padded to a multiple of 128 x tp 4
  EXPECT_EQ(m["position_embedding_type"], "learned");  // Megatron-LM's default
  EXPECT_EQ(m["tie_word_embeddings"], true);
  EXPECT_EQ(r.scenario["training"]["global_batch"], 2);  // micro 1 x dp 2
  InputError no_vocab = ErrorFrom([] {
    ImportText("--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1",
               "gpt.sh", Options("", 8));
  });
  EXPECT_NE(std::string(no_vocab.what()).find("--vocab-size"), std::string::npos) << no_vocab.what();
}

// Nemotron-H 8B as Megatron-LM's pretrain_mamba.py takes it: the layer
// pattern and the Mamba-2 heads; head_dim, state and groups take
// TransformerConfig's defaults (64, 128, 8).
TEST(MegatronImport, HybridPatternAndMambaFlagsDefineAHybridModel) {
  const std::string args =
      "--num-layers 52 --hidden-size 4096 --num-attention-heads 32 --group-query-attention --num-query-groups 8\n"
      "--kv-channels 128 --ffn-hidden-size 21504 --squared-relu --normalization RMSNorm --disable-bias-linear\n"
      "--position-embedding-type none --untie-embeddings-and-output-weights --vocab-size 131072\n"
      "--hybrid-override-pattern M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M- --mamba-num-heads 128\n"
      "--tensor-model-parallel-size 8 --seq-length 8192 --micro-batch-size 1 --bf16\n";
  ImportResult r = ImportText(args, "nemotron_h.sh", Options("", 8));
  const json& m = r.scenario["model"];
  ASSERT_TRUE(m.is_object());
  EXPECT_EQ(m["hybrid_override_pattern"], "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-");
  EXPECT_EQ(m["mamba_num_heads"], 128);
  EXPECT_EQ(m["mamba_head_dim"], 64);
  EXPECT_EQ(m["ssm_state_size"], 128);
  EXPECT_EQ(m["n_groups"], 8);
  const config::ModelConfig imported = config::ParseModel(JsonNode(m, "nemotron_h.sh", "model"));
  const config::ModelConfig shipped =
      config::LoadModelFile(std::string(STACKSIM_SOURCE_DIR) + "/models/nemotron-h-8b.json");
  EXPECT_EQ(imported.ParameterCount(), shipped.ParameterCount());
  EXPECT_FALSE(Lists(r.scenario["import"]["unmapped"], "--hybrid-override-pattern"));
  EXPECT_FALSE(Lists(r.scenario["import"]["unmapped"], "--mamba-num-heads"));

  // Without --num-layers the pattern gives them (Megatron-LM derives
  // num_layers from its length; examples/mamba/train.sh passes none).
  std::string no_layers = args;
  no_layers.replace(no_layers.find("--num-layers 52 "), 16, "");
  ImportResult derived = ImportText(no_layers, "nemotron_h.sh", Options("", 8));
  EXPECT_EQ(derived.scenario["model"]["num_hidden_layers"], 52);
}

// Qwen3-Next as Megatron-LM's flags give it: Gated DeltaNet layers with
// TransformerConfig's widths, every fourth layer gated full attention.
TEST(MegatronImport, GatedDeltaNetFlagsDefineLinearAttentionLayers) {
  const std::string args =
      "--num-layers 48 --hidden-size 2048 --num-attention-heads 16 --group-query-attention --num-query-groups 2\n"
      "--kv-channels 256 --ffn-hidden-size 5120 --swiglu --normalization RMSNorm --disable-bias-linear\n"
      "--position-embedding-type rope --untie-embeddings-and-output-weights --vocab-size 151936\n"
      "--num-experts 512 --moe-router-topk 10 --moe-ffn-hidden-size 512 --moe-shared-expert-intermediate-size 512\n"
      "--experimental-attention-variant gated_delta_net --linear-attention-freq 4 --attention-output-gate\n"
      "--moe-shared-expert-gate\n"
      "--tensor-model-parallel-size 1 --expert-model-parallel-size 8 --seq-length 4096 --micro-batch-size 1 --bf16\n";
  ImportResult r = ImportText(args, "qwen3_next.sh", Options("", 8));
  const json& m = r.scenario["model"];
  EXPECT_EQ(m["linear_num_value_heads"], 32);
  EXPECT_EQ(m["full_attention_interval"], 4);
  EXPECT_EQ(m["attn_output_gate"], true);
  const config::ModelConfig imported = config::ParseModel(JsonNode(m, "qwen3_next.sh", "model"));
  EXPECT_EQ(imported.AttentionLayerCount(), 12);
  EXPECT_EQ(imported.LayerKindAt(0), config::LayerKind::kGdnMoe);
  const config::ModelConfig shipped =
      config::LoadModelFile(std::string(STACKSIM_SOURCE_DIR) + "/models/qwen3-next-80b-a3b.json");
  EXPECT_EQ(imported.ParameterCount(), shipped.ParameterCount());
  EXPECT_FALSE(Lists(r.scenario["import"]["unmapped"], "--experimental-attention-variant"));
}

// Megatron-LM's own example scripts check for the training script and echo
// its path before running it (examples/llama/train_llama3_8b_h100_fp8.sh):
// those commands name the *.py file with no flag after it, and the training
// command is the one that passes it flags.
TEST(MegatronImport, TheTrainingCommandIsTheOneThatPassesFlags) {
  const std::string script = R"(PRETRAIN_SCRIPT_PATH="pretrain_gpt.py"
SEQ_LENGTH=4096
if [ ! -f "$PRETRAIN_SCRIPT_PATH" ]; then
    echo "Error: pretrain_gpt.py not found at $PRETRAIN_SCRIPT_PATH"
    exit 1
fi
torchrun --nproc_per_node 8 "$PRETRAIN_SCRIPT_PATH" --tensor-model-parallel-size 2 --micro-batch-size 1 \
    --seq-length $SEQ_LENGTH --bf16
)";
  ImportResult r = ImportText(script, "train.sh", Options("llama3-8b", 8));
  EXPECT_EQ(r.scenario["plan"]["tp"], 2);
  EXPECT_EQ(r.scenario["training"]["seq_len"], 4096);
  EXPECT_EQ(r.scenario["plan"]["precision"], "bf16");
}

// --fp8-param-gather: FP8 weights with an FP8 recipe; without one Megatron-LM
// keeps 16-bit weights, and the flag is listed as having no effect.
TEST(MegatronImport, Fp8ParamGatherMakesFp8WeightsUnderFp8Only) {
  ImportResult fp8 = ImportText("torchrun pretrain_gpt.py --micro-batch-size 1 --seq-length 2048 --bf16 "
                                "--fp8-format hybrid --fp8-param-gather",
                                "run.sh", Options("llama3-8b", 8));
  EXPECT_EQ(fp8.scenario["plan"]["fp8_params"], true);
  ImportResult bf16 = ImportText("torchrun pretrain_gpt.py --micro-batch-size 1 --seq-length 2048 --bf16 "
                                 "--fp8-param-gather",
                                 "run.sh", Options("llama3-8b", 8));
  EXPECT_FALSE(bf16.scenario["plan"].contains("fp8_params"));
  EXPECT_TRUE(Lists(bf16.scenario["import"]["ignored"], "--fp8-param-gather"));
}

// torchrun's --nnodes defaults to one node: --nproc_per_node alone gives the
// GPUs. A node count the script leaves unset still needs --gpus.
TEST(MegatronImport, TorchrunWithoutNnodesRunsOneNode) {
  ImportResult r = ImportText("torchrun --nproc_per_node 4 pretrain_gpt.py --micro-batch-size 1 --seq-length 2048 --bf16",
                              "run.sh", Options("llama3-8b", 0));
  EXPECT_EQ(r.scenario["gpus"], 4);
  InputError e = ErrorFrom([] {
    ImportText("torchrun --nproc_per_node 4 --nnodes $NODES pretrain_gpt.py --micro-batch-size 1 --seq-length 2048",
               "run.sh", Options("llama3-8b", 0));
  });
  EXPECT_NE(std::string(e.what()).find("--gpus"), std::string::npos) << e.what();
}

TEST(MegatronImport, UnsetScriptVariableInAMappedFlagIsAnError) {
  InputError e = ErrorFrom([] {
    ImportText("torchrun pretrain_gpt.py --tensor-model-parallel-size $TP --micro-batch-size 1 --seq-length 2048",
               "run.sh", Options("llama3-8b", 8));
  });
  EXPECT_EQ(e.key_path(), "--tensor-model-parallel-size");
  EXPECT_NE(std::string(e.what()).find("TP is not set"), std::string::npos) << e.what();
}

const std::string kDeepSpeed = R"({
  "train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
  "fp16": {"enabled": true, "loss_scale": 0},
  "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true},
                        "reduce_bucket_size": 50000000, "stage3_prefetch_bucket_size": 50000000, "frob": 1},
  "activation_checkpointing": {"partition_activations": true}
})";

TEST(DeepSpeedImport, MapsZero3OffloadAndFp16AndDerivesTheGpus) {
  ImportResult r = ImportText(kDeepSpeed, "ds.json", Options("llama2-13b", 0, 4096));
  EXPECT_EQ(r.job.format, ImportFormat::kDeepSpeed);
  const json& s = r.scenario;
  EXPECT_EQ(s["gpus"], 8);  // 64 / (4 x 2)
  EXPECT_EQ(s["training"]["global_batch"], 64);
  const json& p = s["plan"];
  EXPECT_EQ(p["dp"], 8);
  EXPECT_EQ(p["micro_batch"], 4);
  EXPECT_EQ(p["sharding"], "zero3");
  EXPECT_EQ(p["offload_optimizer"], "host");
  EXPECT_EQ(p["precision"], "fp16");
  EXPECT_EQ(p["overlap_grad_reduce"], true);  // DeepSpeed's default at stage 3
  EXPECT_EQ(p["grad_bucket"], "100000000 B");  // 5e7 fp16 elements
}

TEST(DeepSpeedImport, UnknownKeysAreListed) {
  ImportResult r = ImportText(kDeepSpeed, "ds.json", Options("llama2-13b", 0, 4096));
  const json& imp = r.scenario["import"];
  EXPECT_TRUE(Lists(imp["unmapped"], "zero_optimization.frob"));
  EXPECT_TRUE(Lists(imp["unmapped"], "zero_optimization.stage3_prefetch_bucket_size"));
  EXPECT_TRUE(Lists(imp["unmapped"], "activation_checkpointing.partition_activations"));
  EXPECT_TRUE(Lists(imp["ignored"], "fp16.loss_scale"));
}

TEST(DeepSpeedImport, ContradictionsNameTheKey) {
  std::string bad = kDeepSpeed;
  bad.replace(bad.find("64"), 2, "60");
  InputError batch = ErrorFrom([&] { ImportText(bad, "ds.json", Options("llama2-13b", 0, 4096)); });
  EXPECT_EQ(batch.file(), "ds.json");
  EXPECT_EQ(batch.key_path(), "train_batch_size");  // 60 is not a multiple of 4 x 2
  InputError gpus = ErrorFrom([] { ImportText(kDeepSpeed, "ds.json", Options("llama2-13b", 16, 4096)); });
  EXPECT_NE(gpus.key_path().find("train_batch_size"), std::string::npos);  // the batch gives dp 8, --gpus 16
  InputError no_model = ErrorFrom([] { ImportText(kDeepSpeed, "ds.json", Options("", 0, 4096)); });
  EXPECT_NE(std::string(no_model.what()).find("--model"), std::string::npos);
  InputError no_seq = ErrorFrom([] { ImportText(kDeepSpeed, "ds.json", Options("llama2-13b", 0)); });
  EXPECT_NE(std::string(no_seq.what()).find("--seq-len"), std::string::npos);
}

const std::string kTitan =
    "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
    "[training]\nlocal_batch_size = 2\nseq_len = 8192\nsteps = 100\n"
    "[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = 2\n"
    "frobnicate = 1\n"
    "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"op\"\n";

TEST(TorchtitanImport, MapsFlavorDegreesAndBatch) {
  ImportResult r = ImportText(kTitan, "job.toml", Options("", 0));
  EXPECT_EQ(r.job.format, ImportFormat::kTorchtitan);
  const json& s = r.scenario;
  EXPECT_EQ(s["model"], "llama3.1-8b");
  EXPECT_EQ(s["framework"], "torchtitan");
  EXPECT_EQ(s["gpus"], 16);  // 2 x 4 x tp 2
  EXPECT_EQ(s["training"]["global_batch"], 16);  // local 2 x dp 8
  const json& p = s["plan"];
  EXPECT_EQ(p["tp"], 2);
  EXPECT_EQ(p["dp"], 8);
  EXPECT_EQ(p["sharding"], "zero3");
  EXPECT_EQ(p["shard_group"], 4);  // HSDP: 2 replicas of 4-way shards
  EXPECT_EQ(p["micro_batch"], 2);
  EXPECT_EQ(p["recompute"], "selective");
  EXPECT_TRUE(Lists(s["import"]["unmapped"], "parallelism.frobnicate"));
  EXPECT_TRUE(Lists(s["import"]["ignored"], "training.steps"));
}

TEST(TorchtitanImport, ReadsEarlierReleasesKeyNames) {
  const std::string old =
      "[training]\nbatch_size = 8\nseq_len = 2048\ndata_parallel_shard_degree = -1\ncompile = true\n"
      "[experimental]\npipeline_parallel_degree = 2\npipeline_parallel_microbatches = 4\n"
      "[float8]\nenable_float8_linear = true\n";
  ImportResult r = ImportText(old, "old.toml", Options("llama3-8b", 16));
  const json& p = r.scenario["plan"];
  EXPECT_EQ(p["pp"], 2);
  EXPECT_EQ(p["dp"], 8);
  EXPECT_EQ(p["micro_batch"], 2);  // 8 sequences in 4 micro-batches
  EXPECT_EQ(p["precision"], "fp8");
  EXPECT_EQ(r.scenario["framework"], "torchtitan-compile");
}

TEST(TorchtitanImport, ContradictionsNameTheKey) {
  InputError batch = ErrorFrom([] {
    ImportText(kTitan + "[training]\n", "job.toml", Options("", 0));  // a table twice: malformed TOML
  });
  EXPECT_EQ(batch.key_path().rfind("line ", 0), 0u) << batch.what();
  std::string global = kTitan;
  global.insert(global.find("steps"), "global_batch_size = 20\n");
  InputError g = ErrorFrom([&] { ImportText(global, "job.toml", Options("", 0)); });
  EXPECT_EQ(g.key_path(), "training.global_batch_size");  // 20 is not a multiple of 2 x 8
  InputError gpus = ErrorFrom([] { ImportText(kTitan, "job.toml", Options("", 12)); });
  EXPECT_EQ(gpus.key_path(), "parallelism.data_parallel_shard_degree");  // the degrees give 16
  InputError model = ErrorFrom([] { ImportText(kTitan, "job.toml", Options("llama2-7b", 0)); });
  EXPECT_EQ(model.key_path(), "model.flavor");
}

// The shipped example dump (scenarios/imports/): Megatron-Core's fields read
// through Megatron-LM's flags, every note named by its YAML path.
TEST(MegatronBridgeImport, MapsTheShippedConfigDumpByItsYamlPaths) {
  ImportOptions o = Options("", 64);
  ImportResult r = ImportFile(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/imports/megatron-bridge-llama3-70b.yaml", o);
  const json& s = r.scenario;
  EXPECT_EQ(r.job.format, ImportFormat::kMegatronBridge);
  EXPECT_EQ(s["framework"], "megatron-bridge");
  EXPECT_EQ(s["training"]["seq_len"], 8192);
  EXPECT_EQ(s["training"]["global_batch"], 128);
  const json& p = s["plan"];
  EXPECT_EQ(p["tp"], 4);
  EXPECT_EQ(p["pp"], 8);
  EXPECT_EQ(p["vp"], 5);
  EXPECT_EQ(p["dp"], 2);
  EXPECT_EQ(p["precision"], "fp8");
  EXPECT_EQ(p["grad_reduce_precision"], "bf16");  // ddp.grad_reduce_in_fp32: false
  EXPECT_EQ(p["sequence_parallel"], true);
  EXPECT_EQ(p["overlap_param_gather"], true);
  EXPECT_EQ(s["model"]["hidden_act"], "swiglu");  // gated_linear_unit with silu
  EXPECT_EQ(s["model"]["num_key_value_heads"], 8);
  EXPECT_EQ(s["model"]["tie_word_embeddings"], false);
  const json& imp = s["import"];
  EXPECT_EQ(imp["format"], "megatron-bridge");
  EXPECT_TRUE(Lists(imp["mapped"], "model.tensor_model_parallel_size (--tensor-model-parallel-size)"));
  EXPECT_TRUE(Lists(imp["mapped"], "train.global_batch_size (--global-batch-size)"));
  EXPECT_TRUE(Lists(imp["ignored"], "checkpoint.save_interval"));
  EXPECT_TRUE(Lists(imp["ignored"], "dataset.sequence_length"));  // as model.seq_length
  EXPECT_TRUE(Lists(imp["ignored"], "model.gated_linear_unit"));  // read with model.activation_func
  EXPECT_TRUE(imp["unmapped"].empty()) << imp["unmapped"].dump();
}

const std::string kBridgeMoe =
    "_target_: megatron.bridge.training.config.ConfigContainer\n"
    "model:\n"
    "  num_layers: 48\n"
    "  hidden_size: 2048\n"
    "  num_attention_heads: 32\n"
    "  num_query_groups: 4\n"
    "  kv_channels: 128\n"
    "  normalization: RMSNorm\n"
    "  add_bias_linear: false\n"
    "  share_embeddings_and_output_weights: false\n"
    "  gated_linear_unit: true\n"
    "  activation_func:\n"
    "    _call_: false\n"
    "    _target_: torch.nn.functional.silu\n"
    "  num_moe_experts: 128\n"
    "  moe_router_topk: 8\n"
    "  moe_ffn_hidden_size: 768\n"
    "  moe_token_dispatcher_type: flex\n"
    "  expert_model_parallel_size: 16\n"
    "  tensor_model_parallel_size: 1\n"
    "  pipeline_model_parallel_size: 1\n"
    "  seq_length: 4096\n"
    "  recompute_granularity: selective\n"
    "  recompute_modules:\n"
    "  - moe_act\n"
    "  softmax_type: learnable\n"
    "mixed_precision:\n"
    "  bf16: true\n"
    "train:\n"
    "  global_batch_size: 1024\n"
    "  micro_batch_size: 1\n";

// The recipe's CommOverlapConfig section turns the overlaps on as the model
// section's copies do.
TEST(MegatronBridgeImport, ReadsTheCommOverlapSection) {
  const std::string dump = kBridgeMoe +
                           "comm_overlap:\n"
                           "  tp_comm_overlap: false\n"
                           "  overlap_moe_expert_parallel_comm: true\n"
                           "  delay_wgrad_compute: true\n";
  ImportResult r = ImportText(dump, "run_config.yaml", Options("qwen3-30b-a3b", 16));
  EXPECT_EQ(r.scenario["plan"]["moe_a2a_overlap"], true);
  EXPECT_FALSE(r.scenario["plan"].contains("tp_comm_overlap"));
  EXPECT_TRUE(Lists(r.scenario["import"]["ignored"], "comm_overlap.delay_wgrad_compute"));
  EXPECT_FALSE(Lists(r.scenario["import"]["unmapped"], "comm_overlap.overlap_moe_expert_parallel_comm"));
}

// A MoE dump: the flex dispatcher (DeepEP/HybridEP) is the hierarchical one;
// a field without a stacksim counterpart is listed, never dropped.
TEST(MegatronBridgeImport, MapsExpertFieldsAndListsTheRest) {
  ImportResult r = ImportText(kBridgeMoe, "run_config.yaml", Options("qwen3-30b-a3b", 16));
  const json& p = r.scenario["plan"];
  EXPECT_EQ(p["ep"], 16);
  EXPECT_EQ(p["moe_dispatcher"], "hierarchical");
  EXPECT_EQ(p["recompute"], "selective");
  EXPECT_TRUE(Lists(r.scenario["import"]["unmapped"], "model.softmax_type"));
  EXPECT_TRUE(Lists(r.scenario["import"]["mapped"], "model.moe_token_dispatcher_type (--moe-token-dispatcher-type flex)") ||
              Lists(r.scenario["import"]["mapped"], "model.moe_token_dispatcher_type (--moe-token-dispatcher-type)"))
      << r.scenario["import"]["mapped"].dump();
}

// Megatron-Core's micro-batch groups come through the flag of the same
// meaning: this dump has no virtual stages, so the field is listed ignored.
TEST(MegatronBridgeImport, MicroBatchGroupsGoThroughTheFlagTable) {
  std::string text = kBridgeMoe;
  text.insert(text.find("  seq_length: 4096\n"), "  microbatch_group_size_per_vp_stage: 4\n");
  ImportResult r = ImportText(text, "run_config.yaml", Options("qwen3-30b-a3b", 16));
  EXPECT_FALSE(r.scenario["plan"].contains("microbatch_group"));
  EXPECT_TRUE(Lists(r.scenario["import"]["ignored"], "model.microbatch_group_size_per_vp_stage (--microbatch-group-size-per-virtual-pipeline-stage)"))
      << r.scenario["import"]["ignored"].dump();
}

// A hybrid dump (Nemotron 3 Nano): the layer pattern and the Mamba-2 heads
// are claims checked against the named model; a pattern that differs is
// an error at its YAML path.
TEST(MegatronBridgeImport, HybridFieldsAreCheckedAgainstTheNamedModel) {
  const std::string text =
      "model:\n"
      "  num_layers: 52\n"
      "  hidden_size: 2688\n"
      "  num_attention_heads: 32\n"
      "  num_query_groups: 2\n"
      "  kv_channels: 128\n"
      "  ffn_hidden_size: 1856\n"
      "  vocab_size: 131072\n"
      "  normalization: RMSNorm\n"
      "  add_bias_linear: false\n"
      "  share_embeddings_and_output_weights: false\n"
      "  position_embedding_type: none\n"
      "  hybrid_override_pattern: MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME\n"
      "  mamba_num_heads: 64\n"
      "  num_moe_experts: 128\n"
      "  moe_router_topk: 6\n"
      "  moe_ffn_hidden_size: 1856\n"
      "  expert_model_parallel_size: 8\n"
      "  tensor_model_parallel_size: 1\n"
      "  seq_length: 8192\n"
      "mixed_precision:\n"
      "  bf16: true\n"
      "train:\n"
      "  global_batch_size: 1024\n"
      "  micro_batch_size: 1\n";
  ImportResult r = ImportText(text, "run_config.yaml", Options("nemotron-3-nano-30b-a3b", 16));
  EXPECT_EQ(r.scenario["plan"]["ep"], 8);
  EXPECT_FALSE(Lists(r.scenario["import"]["unmapped"], "model.hybrid_override_pattern"));
  std::string other = text;
  other.replace(other.find("MEMEM*"), 6, "MEMEME");
  InputError e = ErrorFrom([&] { ImportText(other, "run_config.yaml", Options("nemotron-3-nano-30b-a3b", 16)); });
  EXPECT_NE(e.key_path().find("model.hybrid_override_pattern"), std::string::npos) << e.what();
}

TEST(MegatronBridgeImport, ContradictionsNameTheYamlPath) {
  std::string text = kBridgeMoe + "dataset:\n  sequence_length: 8192\n";
  InputError e = ErrorFrom([&] { ImportText(text, "run_config.yaml", Options("qwen3-30b-a3b", 16)); });
  EXPECT_EQ(e.key_path(), "dataset.sequence_length");
  text = kBridgeMoe + "ddp:\n  overlap_grad_reduce: 1\n";
  e = ErrorFrom([&] { ImportText(text, "run_config.yaml", Options("qwen3-30b-a3b", 16)); });
  EXPECT_EQ(e.key_path(), "ddp.overlap_grad_reduce");
  // A value the flag reader refuses names the YAML field, then the flag.
  text = kBridgeMoe;
  text.replace(text.find("normalization: RMSNorm"), 22, "normalization: ScaleNorm");
  e = ErrorFrom([&] { ImportText(text, "run_config.yaml", Options("qwen3-30b-a3b", 16)); });
  EXPECT_EQ(e.key_path(), "model.normalization (--normalization)");
  // A batch that does not multiply names the YAML path of the flag it came from.
  text = kBridgeMoe;
  text.replace(text.find("global_batch_size: 1024"), 23, "global_batch_size: 1000");
  e = ErrorFrom([&] { ImportText(text, "run_config.yaml", Options("qwen3-30b-a3b", 16)); });
  EXPECT_NE(e.key_path().find("train."), std::string::npos) << e.key_path() << ": " << e.what();
}

TEST(ImportFormatDetection, TellsTheFormatsApart) {
  EXPECT_EQ(DetectFormat("{\"zero_optimization\": {\"stage\": 2}}", "a.json"), ImportFormat::kDeepSpeed);
  EXPECT_EQ(DetectFormat("[training]\nseq_len = 1\n", "a.toml"), ImportFormat::kTorchtitan);
  EXPECT_EQ(DetectFormat("torchrun pretrain_gpt.py --bf16\n", "a.sh"), ImportFormat::kMegatron);
  EXPECT_EQ(DetectFormat(kBridgeMoe, "run_config.yaml"), ImportFormat::kMegatronBridge);
  EXPECT_EQ(DetectFormat(kBridgeMoe, "dump.txt"), ImportFormat::kMegatronBridge);  // by its _target_
  InputError other = ErrorFrom([] { DetectFormat("a: 1\n", "other.yaml"); });
  EXPECT_NE(std::string(other.what()).find("Megatron-Bridge"), std::string::npos);
  InputError hf = ErrorFrom([] { DetectFormat("{\"hidden_size\": 4096}", "config.json"); });
  EXPECT_NE(std::string(hf.what()).find("--model"), std::string::npos);
}

}  // namespace
}  // namespace stacksim::importer
