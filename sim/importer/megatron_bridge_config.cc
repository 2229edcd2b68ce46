#include "sim/importer/megatron_bridge_config.h"

#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "sim/importer/megatron_args.h"
#include "sim/util/error.h"

namespace stacksim::importer {
namespace {

// How a field becomes Megatron-LM's flag: its value after the flag, the flag
// alone when true (kSwitch) or when false (kOffSwitch: add_bias_linear false
// is --disable-bias-linear), or its list's items after the flag.
enum class Kind { kValue, kSwitch, kOffSwitch, kList };
struct FieldFlag {
  const char* path;
  const char* flag;
  Kind kind;
};
// Megatron-Core's config field -> Megatron-LM's argument of the same meaning
// (megatron/training/arguments.py builds TransformerConfig and
// DistributedDataParallelConfig from these arguments).
constexpr FieldFlag kFields[] = {
    {"model.num_layers", "--num-layers", Kind::kValue},
    {"model.hidden_size", "--hidden-size", Kind::kValue},
    {"model.ffn_hidden_size", "--ffn-hidden-size", Kind::kValue},
    {"model.num_attention_heads", "--num-attention-heads", Kind::kValue},
    {"model.kv_channels", "--kv-channels", Kind::kValue},
    {"model.seq_length", "--seq-length", Kind::kValue},
    {"model.vocab_size", "--vocab-size", Kind::kValue},
    {"model.make_vocab_size_divisible_by", "--make-vocab-size-divisible-by", Kind::kValue},
    {"model.tensor_model_parallel_size", "--tensor-model-parallel-size", Kind::kValue},
    {"model.pipeline_model_parallel_size", "--pipeline-model-parallel-size", Kind::kValue},
    {"model.virtual_pipeline_model_parallel_size", "--num-virtual-stages-per-pipeline-rank", Kind::kValue},
    {"model.microbatch_group_size_per_vp_stage", "--microbatch-group-size-per-virtual-pipeline-stage", Kind::kValue},
    {"model.context_parallel_size", "--context-parallel-size", Kind::kValue},
    {"model.expert_model_parallel_size", "--expert-model-parallel-size", Kind::kValue},
    {"model.expert_tensor_parallel_size", "--expert-tensor-parallel-size", Kind::kValue},
    {"model.num_layers_in_first_pipeline_stage", "--decoder-first-pipeline-num-layers", Kind::kValue},
    {"model.num_layers_in_last_pipeline_stage", "--decoder-last-pipeline-num-layers", Kind::kValue},
    {"model.sequence_parallel", "--sequence-parallel", Kind::kSwitch},
    {"model.cp_comm_type", "--cp-comm-type", Kind::kValue},
    {"model.num_moe_experts", "--num-experts", Kind::kValue},
    {"model.moe_router_topk", "--moe-router-topk", Kind::kValue},
    {"model.moe_ffn_hidden_size", "--moe-ffn-hidden-size", Kind::kValue},
    {"model.moe_shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size", Kind::kValue},
    {"model.moe_token_dispatcher_type", "--moe-token-dispatcher-type", Kind::kValue},
    {"model.moe_latent_size", "--moe-latent-size", Kind::kValue},
    {"model.hybrid_override_pattern", "--hybrid-override-pattern", Kind::kValue},
    {"model.hybrid_layer_pattern", "--hybrid-layer-pattern", Kind::kValue},
    {"model.mamba_num_heads", "--mamba-num-heads", Kind::kValue},
    {"model.mamba_head_dim", "--mamba-head-dim", Kind::kValue},
    {"model.mamba_state_dim", "--mamba-state-dim", Kind::kValue},
    {"model.mamba_num_groups", "--mamba-num-groups", Kind::kValue},
    {"model.mtp_num_layers", "--mtp-num-layers", Kind::kValue},
    {"model.mtp_hybrid_override_pattern", "--mtp-hybrid-override-pattern", Kind::kValue},
    {"model.experimental_attention_variant", "--experimental-attention-variant", Kind::kValue},
    {"model.linear_attention_freq", "--linear-attention-freq", Kind::kValue},
    {"model.linear_num_key_heads", "--linear-num-key-heads", Kind::kValue},
    {"model.linear_num_value_heads", "--linear-num-value-heads", Kind::kValue},
    {"model.linear_key_head_dim", "--linear-key-head-dim", Kind::kValue},
    {"model.linear_value_head_dim", "--linear-value-head-dim", Kind::kValue},
    {"model.linear_conv_kernel_dim", "--linear-conv-kernel-dim", Kind::kValue},
    {"model.attention_output_gate", "--attention-output-gate", Kind::kSwitch},
    {"model.moe_shared_expert_gate", "--moe-shared-expert-gate", Kind::kSwitch},
    {"model.overlap_moe_expert_parallel_comm", "--overlap-moe-expert-parallel-comm", Kind::kSwitch},
    {"model.recompute_granularity", "--recompute-granularity", Kind::kValue},
    {"model.recompute_method", "--recompute-method", Kind::kValue},
    {"model.recompute_num_layers", "--recompute-num-layers", Kind::kValue},
    {"model.recompute_modules", "--recompute-modules", Kind::kList},
    {"model.normalization", "--normalization", Kind::kValue},
    {"model.add_bias_linear", "--disable-bias-linear", Kind::kOffSwitch},
    {"model.add_qkv_bias", "--add-qkv-bias", Kind::kSwitch},
    {"model.share_embeddings_and_output_weights", "--untie-embeddings-and-output-weights", Kind::kOffSwitch},
    {"model.position_embedding_type", "--position-embedding-type", Kind::kValue},
    {"model.attention_backend", "--attention-backend", Kind::kValue},
    {"model.hidden_dropout", "--hidden-dropout", Kind::kValue},
    {"model.attention_dropout", "--attention-dropout", Kind::kValue},
    {"model.tp_comm_overlap", "--tp-comm-overlap", Kind::kSwitch},
    // The recipe's CommOverlapConfig, which Megatron-Bridge copies onto the
    // model config at setup (training/comm_overlap.py): a dump may carry
    // either copy, and a switch given by either is on.
    {"comm_overlap.tp_comm_overlap", "--tp-comm-overlap", Kind::kSwitch},
    {"comm_overlap.overlap_moe_expert_parallel_comm", "--overlap-moe-expert-parallel-comm", Kind::kSwitch},
    {"model.transformer_impl", "--transformer-impl", Kind::kValue},
    {"mixed_precision.bf16", "--bf16", Kind::kSwitch},
    {"mixed_precision.fp16", "--fp16", Kind::kSwitch},
    {"mixed_precision.fp8", "--fp8-format", Kind::kValue},
    {"mixed_precision.fp8_param_gather", "--fp8-param-gather", Kind::kSwitch},
    {"mixed_precision.fp8_param", "--fp8-param-gather", Kind::kSwitch},
    {"ddp.overlap_grad_reduce", "--overlap-grad-reduce", Kind::kSwitch},
    {"ddp.overlap_param_gather", "--overlap-param-gather", Kind::kSwitch},
    {"ddp.use_distributed_optimizer", "--use-distributed-optimizer", Kind::kSwitch},
    {"ddp.grad_reduce_in_fp32", "--grad-reduce-in-bf16", Kind::kOffSwitch},
    {"ddp.data_parallel_sharding_strategy", "--data-parallel-sharding-strategy", Kind::kValue},
    {"ddp.use_megatron_fsdp", "--use-megatron-fsdp", Kind::kSwitch},
    {"ddp.use_custom_fsdp", "--use-custom-fsdp", Kind::kSwitch},
    {"ddp.bucket_size", "--ddp-bucket-size", Kind::kValue},
    {"dist.use_torch_fsdp2", "--use-torch-fsdp2", Kind::kSwitch},
    {"optimizer.optimizer_cpu_offload", "--optimizer-cpu-offload", Kind::kSwitch},
    {"optimizer.optimizer_offload_fraction", "--optimizer-offload-fraction", Kind::kValue},
    {"optimizer.overlap_cpu_optimizer_d2h_h2d", "--overlap-cpu-optimizer-d2h-h2d", Kind::kSwitch},
    {"train.global_batch_size", "--global-batch-size", Kind::kValue},
    {"train.micro_batch_size", "--micro-batch-size", Kind::kValue},
};

// Leaves (or sections, ending in '.') understood and without effect on one
// step's time or memory, or said by another field.
constexpr KnownKey kIgnored[] = {
    {"checkpoint.", "checkpointing"},
    {"comm_overlap.tp_comm_overlap_cfg.", "userbuffers settings per GEMM (the overlap is priced per mode)"},
    {"comm_overlap.delay_wgrad_compute", "the weight gradients' split that the all-to-all overlap pairs with"},
    {"logger.", "logging"},
    {"profiling.", "profiling"},
    {"rerun_state_machine.", "loss checks and reruns"},
    {"rng.", "randomness"},
    {"scheduler.", "learning-rate and weight-decay schedule"},
    {"tokenizer.", "tokenizer (the vocabulary size is model.vocab_size)"},
    {"validation.", "evaluation between steps"},
    {"nvrx_straggler.", "straggler detection"},
    {"straggler.", "straggler detection"},
    {"ft.", "fault tolerance"},
    {"inprocess_restart.", "restarts"},
    {"tensor_inspect.", "tensor inspection"},
    {"optimizer_config_override_provider.", "per-parameter optimizer overrides"},
    {"dataset.", "data loading (the input pipeline is not modelled)"},
    {"train.", "run length, evaluation and garbage collection, not one step"},
    {"optimizer.", "optimizer hyper-parameters (Adam's state is priced from the plan)"},
    {"dist.", "process-group setup"},
    {"ddp.", "DDP details without a modelled effect"},
    {"mixed_precision.", "numerics of the precision recipe"},
    {"model.bf16", "as mixed_precision.bf16"},
    {"model.fp16", "as mixed_precision.fp16"},
    {"model.fp8", "as mixed_precision.fp8"},
    {"model.params_dtype", "as mixed_precision"},
    {"model.pipeline_dtype", "as mixed_precision"},
    {"model.autocast_dtype", "as mixed_precision"},
    {"model.init_", "initialization"},
    {"model.perform_initialization", "initialization"},
    {"model.use_cpu_initialization", "initialization"},
    {"model.embedding_init_method", "initialization"},
    {"model.output_layer_init_method", "initialization"},
    {"model.inference_", "inference only"},
    {"model.flash_decode", "inference only"},
    {"model.mlp_chunks_for_prefill", "inference only"},
    {"model.nccl_all_reduce_for_prefill", "inference only"},
    {"model.layernorm_epsilon", "numerics"},
    {"model.rotary_", "numerics"},
    {"model.rope_", "numerics"},
    {"model.yarn_", "numerics"},
    {"model.mscale", "numerics"},
    {"model.seq_len_interpolation_factor", "numerics"},
    {"model.original_max_position_embeddings", "numerics"},
    {"model.apply_query_key_layer_scaling", "numerics"},
    {"model.attention_softmax_in_fp32", "numerics"},
    {"model.softmax_scale", "numerics"},
    {"model.mup_", "numerics"},
    {"model.qk_clip", "numerics"},
    {"model.moe_aux_loss_coeff", "loss term"},
    {"model.moe_z_loss_coeff", "loss term"},
    {"model.moe_router_load_balancing_type", "loss term"},
    {"model.moe_router_bias_update_rate", "router numerics"},
    {"model.moe_router_dtype", "router numerics"},
    {"model.moe_router_score_function", "router numerics"},
    {"model.moe_router_pre_softmax", "router numerics"},
    {"model.moe_router_topk_scaling_factor", "router numerics"},
    {"model.moe_input_jitter_eps", "router numerics"},
    {"model.moe_per_layer_logging", "logging"},
    {"model.mtp_loss_scaling_factor", "loss term"},
    {"model.calculate_per_token_loss", "loss normalization"},
    {"model.log_", "logging"},
    {"model.barrier_with_L1_time", "logging"},
    {"model.timers", "logging"},
    {"model.config_logger_dir", "logging"},
    {"model.deterministic_mode", "numerics"},
    {"model.test_mode", "testing"},
    {"model.hf_model_id", "checkpoint source"},
    {"model.restore_modelopt_state", "checkpoint source"},
    {"model.transformer_layer_spec", "the layer spec class (Transformer Engine: model.transformer_impl)"},
    {"model.finalize_model_grads_func", "set by the trainer"},
    {"model.grad_scale_func", "set by the trainer"},
    {"model.grad_sync_func", "set by the trainer"},
    {"model.param_sync_func", "set by the trainer"},
    {"model.no_sync_func", "set by the trainer"},
    {"model.bias_activation_fusion", "kernel fusion: the framework profile's (fused)"},
    {"model.bias_dropout_fusion", "kernel fusion: the framework profile's (fused)"},
    {"model.masked_softmax_fusion", "kernel fusion: the framework profile's (fused)"},
    {"model.apply_rope_fusion", "kernel fusion: the framework profile's (fused)"},
    {"model.persist_layer_norm", "kernel fusion: the framework profile's (fused)"},
    {"model.gradient_accumulation_fusion", "kernel fusion: the framework profile's (fused)"},
    {"model.cross_entropy_loss_fusion", "kernel fusion: the framework profile's (fused)"},
    {"model.cross_entropy_fusion_impl", "kernel fusion: the framework profile's (fused)"},
    {"model.moe_permute_fusion", "kernel fusion: the framework profile's (fused)"},
    {"model.moe_router_fusion", "kernel fusion: the framework profile's (fused)"},
    {"model.moe_grouped_gemm", "grouped expert GEMMs, as stacksim prices them"},
};

// A class or function the dump names by reference only ({_target_: ...,
// _call_: false}, such as model.activation_func): one leaf, its _target_.
bool IsReference(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("_target_")) return false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key().empty() || it.key()[0] != '_') return false;
  }
  return true;
}

// The leaves under `prefix`.
void Flatten(const nlohmann::json& j, const std::string& prefix, std::vector<std::pair<std::string, nlohmann::json>>& out) {
  if (IsReference(j) && !prefix.empty()) {
    out.emplace_back(prefix, j["_target_"]);
  } else if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it) Flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else {
    out.emplace_back(prefix, j);
  }
}

}  // namespace

bool LooksLikeMegatronBridge(const nlohmann::json& doc) {
  if (!doc.is_object()) return false;
  if (doc.contains("_target_") && doc["_target_"].is_string() &&
      doc["_target_"].get<std::string>().rfind("megatron.bridge.", 0) == 0) {
    return true;
  }
  return doc.contains("model") && doc["model"].is_object() && doc.contains("train") && doc["train"].is_object();
}

ImportedJob ReadMegatronBridge(const nlohmann::json& doc, const std::string& file) {
  if (!LooksLikeMegatronBridge(doc)) {
    throw InputError(file, "", "not a Megatron-Bridge configuration: expected the model and train sections");
  }
  std::vector<std::pair<std::string, nlohmann::json>> leaves;
  Flatten(doc, "", leaves);
  if (!doc.contains("model") || !doc["model"].is_object()) throw InputError(file, "model", "expected the model section");
  // A model field the reading of another depends on (null when absent).
  const nlohmann::json& model = doc["model"];
  auto model_field = [&](const char* key) { return model.contains(key) ? model[key] : nlohmann::json(); };

  std::vector<FlagNote> ignored, unmapped;
  std::map<std::string, std::string> path_of_flag;
  std::string args;
  // The arguments go through the shell-word reader: each value is quoted, so
  // it reaches the flag reader as written.
  auto quoted = [](const std::string& v) {
    std::string q = "'";
    for (char c : v) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  auto emit = [&](const std::string& path, const std::string& flag, const std::vector<std::string>& values) {
    args += flag;
    for (const std::string& v : values) args += " " + quoted(v);
    args += "\n";
    path_of_flag[flag] = path;
  };

  const nlohmann::json model_seq = model_field("seq_length");
  for (const auto& [path, value] : leaves) {
    const FieldFlag* field = nullptr;
    for (const FieldFlag& f : kFields) {
      if (path == f.path) field = &f;
    }
    if (path == "model.num_query_groups") {
      if (value.is_null()) {
        ignored.push_back({path, "null", "unset: as many key/value heads as attention heads"});
      } else {
        emit(path, "--group-query-attention", {});
        emit(path, "--num-query-groups", {LeafText(value)});
      }
      continue;
    }
    if (path == "model.gated_linear_unit") {
      if (model.contains("activation_func")) {
        ignored.push_back({path, LeafText(value), "read with model.activation_func"});
      } else if (value == true) {
        unmapped.push_back({path, "true", "a gated unit without model.activation_func: give the model with --model"});
      } else {
        ignored.push_back({path, LeafText(value), "not gated: Megatron-LM's default"});
      }
      continue;
    }
    if (path == "model.activation_func") {
      const std::string act = LeafText(value);
      const bool gated = model_field("gated_linear_unit") == true;
      const auto ends = [&](const std::string& tail) {
        return act.size() >= tail.size() && act.compare(act.size() - tail.size(), tail.size(), tail) == 0;
      };
      if (gated && ends("silu")) {
        emit(path, "--swiglu", {});
      } else if (!gated && (ends("squared_relu") || ends("relu2"))) {
        emit(path, "--squared-relu", {});
      } else if (!gated && ends("gelu")) {
        ignored.push_back({path, act, "GELU, Megatron-LM's default activation"});
      } else {
        unmapped.push_back({path, act + (gated ? " (gated)" : ""),
                            "an activation without a Megatron-LM flag: give the model with --model"});
      }
      continue;
    }
    if (path == "model.cuda_graph_impl") {
      if (value.is_string() && value != "none") {
        emit(path, "--enable-cuda-graph", {});
      } else {
        ignored.push_back({path, LeafText(value), "no CUDA graphs"});
      }
      continue;
    }
    if (path == "dataset.sequence_length" && !value.is_null() && !model_seq.is_null()) {
      if (value != model_seq) {
        throw InputError(file, path, LeafText(value) + " differs from model.seq_length " + LeafText(model_seq));
      }
      ignored.push_back({path, LeafText(value), "as model.seq_length"});
      continue;
    }
    if (field != nullptr) {
      if (value.is_null()) {
        ignored.push_back({path, "null", "unset: the framework's default"});
      } else if (field->kind == Kind::kSwitch || field->kind == Kind::kOffSwitch) {
        if (!value.is_boolean()) throw InputError(file, path, "expected true or false, got " + LeafText(value));
        if (value.get<bool>() == (field->kind == Kind::kSwitch)) {
          emit(path, field->flag, {});
        } else {
          ignored.push_back({path, LeafText(value), std::string("without ") + field->flag + " (Megatron-LM's default)"});
        }
      } else if (field->kind == Kind::kList) {
        if (!value.is_array()) throw InputError(file, path, "expected a list, got " + LeafText(value));
        std::vector<std::string> items;
        for (const auto& v : value) items.push_back(LeafText(v));
        if (items.empty()) {
          ignored.push_back({path, "[]", "empty"});
        } else {
          emit(path, field->flag, items);
        }
      } else {
        if (value.is_object() || value.is_array()) {
          unmapped.push_back({path, LeafText(value), std::string("a structured value where ") + field->flag + " takes one"});
        } else {
          emit(path, field->flag, {LeafText(value)});
        }
      }
      continue;
    }
    const bool config_class = path == "_target_" || (path.size() > 9 && path.compare(path.size() - 9, 9, "._target_") == 0);
    if (config_class) {
      ignored.push_back({path, LeafText(value), "the config class"});
    } else if (const KnownKey* k = FindKnownKey(path, std::begin(kIgnored), std::end(kIgnored))) {
      ignored.push_back({path, LeafText(value), k->why});
    } else if (value.is_null() || value == false || (value.is_array() && value.empty())) {
      ignored.push_back({path, LeafText(value), "off or unset: the framework's default"});
    } else {
      unmapped.push_back({path, LeafText(value), "not modelled or not understood"});
    }
  }
  if (args.empty()) throw InputError(file, "model", "no model, parallelism or batch field to read");

  ImportedJob job;
  try {
    job = ReadMegatron(args, file);
  } catch (const InputError& e) {
    // Name the YAML field the flag came from.
    const std::string key = e.key_path();
    const auto it = path_of_flag.find(key);
    if (it == path_of_flag.end()) throw;
    std::string what = e.what();
    const std::string prefix = e.file() + ": " + key + ": ";
    if (what.compare(0, prefix.size(), prefix) == 0) what = what.substr(prefix.size());
    throw InputError(file, it->second + " (" + key + ")", what);
  }
  job.format = ImportFormat::kMegatronBridge;
  job.framework = "megatron-bridge";
  // Name every note and source by the YAML path, the Megatron-LM flag after it.
  auto rename = [&](std::string& flag) {
    for (const auto& [f, path] : path_of_flag) {
      if (flag == f || (flag.size() > f.size() && flag.compare(0, f.size(), f) == 0 && flag[f.size()] == ' ')) {
        flag = path + " (" + flag + ")";
        return;
      }
    }
  };
  for (auto* notes : {&job.mapped, &job.ignored, &job.unmapped}) {
    for (FlagNote& n : *notes) rename(n.flag);
  }
  for (Sourced* s : {&job.tp, &job.pp, &job.cp, &job.micro_batch, &job.local_batch, &job.global_batch, &job.grad_accum,
                     &job.dp, &job.gpus, &job.seq_len}) {
    rename(s->flag);
  }
  for (ShapeClaim& c : job.claims) rename(c.flag);
  rename(job.model_name_flag);
  if (job.inline_model.is_object()) {
    job.inline_model["name"] = std::filesystem::path(file).filename().string() + " (Megatron-Bridge model fields)";
    std::string source = job.inline_model.value("source", std::string());
    const std::string from = "the Megatron-LM model-shape flags";
    if (const size_t at = source.find(from); at != std::string::npos) {
      source.replace(at, from.size(), "the Megatron-Bridge model fields, read as Megatron-LM's flags of the same meaning");
      job.inline_model["source"] = source;
    }
  }
  job.ignored.insert(job.ignored.end(), ignored.begin(), ignored.end());
  job.unmapped.insert(job.unmapped.end(), unmapped.begin(), unmapped.end());
  return job;
}

}  // namespace stacksim::importer
