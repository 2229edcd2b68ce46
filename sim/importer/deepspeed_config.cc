#include "sim/importer/deepspeed_config.h"

#include <iterator>
#include <map>
#include <optional>

#include "sim/util/error.h"

namespace stacksim::importer {
namespace {

using nlohmann::json;

// Keys (or prefixes ending in '.') understood and without effect on a step.
constexpr KnownKey kIgnored[] = {
    {"optimizer.params.", "optimizer hyper-parameters"},
    {"scheduler.", "learning-rate schedule"},
    {"gradient_clipping", "gradient clipping (one norm per step)"},
    {"steps_per_print", "logging"},
    {"wall_clock_breakdown", "logging"},
    {"dump_state", "logging"},
    {"tensorboard.", "logging"},
    {"wandb.", "logging"},
    {"csv_monitor.", "logging"},
    {"comms_logger.", "logging"},
    {"flops_profiler.", "profiling"},
    {"prescale_gradients", "numerics"},
    {"gradient_predivide_factor", "numerics"},
    {"zero_allow_untested_optimizer", "a check"},
    {"zero_force_ds_cpu_optimizer", "a check"},
    {"fp16.loss_scale", "loss scaling: numerics"},
    {"fp16.initial_scale_power", "loss scaling: numerics"},
    {"fp16.loss_scale_window", "loss scaling: numerics"},
    {"fp16.hysteresis", "loss scaling: numerics"},
    {"fp16.consecutive_hysteresis", "loss scaling: numerics"},
    {"fp16.min_loss_scale", "loss scaling: numerics"},
    {"zero_optimization.contiguous_gradients", "memory layout of the gradients"},
    {"zero_optimization.load_from_fp32_weights", "checkpoint loading"},
    {"zero_optimization.elastic_checkpoint", "checkpointing"},
    {"zero_optimization.stage3_gather_16bit_weights_on_model_save", "checkpoint saving"},
    {"zero_optimization.stage3_gather_fp16_weights_on_model_save", "checkpoint saving"},
    {"zero_optimization.gather_16bit_weights_on_model_save", "checkpoint saving"},
    {"zero_optimization.ignore_unused_parameters", "a check"},
    {"zero_optimization.sub_group_size", "how the host optimizer steps its shard in groups"},
    {"zero_optimization.offload_optimizer.pin_memory", "pinned host buffers: copies run at the PCIe rate either way"},
    {"zero_optimization.offload_optimizer.nvme_path", "a path"},
    {"zero_optimization.offload_optimizer.buffer_count", "NVMe staging buffers"},
    {"zero_optimization.offload_optimizer.fast_init", "initialization"},
    {"zero_optimization.offload_optimizer.pipeline_read", "NVMe I/O pipelining (modelled as overlapped)"},
    {"zero_optimization.offload_optimizer.pipeline_write", "NVMe I/O pipelining (modelled as overlapped)"},
    {"zero_optimization.offload_param.pin_memory", "pinned host buffers: copies run at the PCIe rate either way"},
    {"zero_optimization.offload_param.nvme_path", "a path"},
    {"zero_optimization.offload_param.buffer_count", "NVMe staging buffers"},
    {"zero_optimization.offload_param.buffer_size", "NVMe staging buffers"},
    {"zero_optimization.offload_param.max_in_cpu", "NVMe staging buffers"},
};
// Prefixes whose keys (all leaves below) are listed as unmapped with a reason.
constexpr KnownKey kNotModelled[] = {
    {"activation_checkpointing.", "activation checkpointing is set by the model code: give --set plan.recompute=..."},
    {"zero_optimization.allgather_bucket_size", "the ZeRO-1/2 parameter all-gather bucket is not modelled"},
    {"zero_optimization.stage3_prefetch_bucket_size", "stacksim prefetches one layer's parameters ahead"},
    {"zero_optimization.stage3_param_persistence_threshold", "small parameters kept whole are not modelled"},
    {"zero_optimization.stage3_max_live_parameters", "not modelled"},
    {"zero_optimization.round_robin_gradients", "not modelled"},
    {"sparse_attention.", "sparse attention is not modelled"},
    {"pipeline.", "the DeepSpeed pipeline engine is not read: give --set plan.pp=..."},
    {"data_types.", "not modelled"},
    {"amp.", "Apex AMP is not modelled"},
    {"compression_training.", "not modelled"},
};



class Reader {
 public:
  Reader(const json& doc, const std::string& file) : doc_(doc), file_(file) {
    job_.file = file;
    job_.format = ImportFormat::kDeepSpeed;
    if (!doc.is_object()) throw InputError(file, "", "a DeepSpeed config is a JSON object");
    Flatten(doc, "");
  }

  ImportedJob Read() {
    Batch();
    Precision();
    Zero();
    Optimizer();
    for (const auto& [path, v] : leaves_) {
      if (used_.count(path)) continue;
      if (const KnownKey* known = FindKnownKey(path, std::begin(kIgnored), std::end(kIgnored))) {
        job_.Ignore(path, LeafText(*v), known->why);
        continue;
      }
      const KnownKey* known = FindKnownKey(path, std::begin(kNotModelled), std::end(kNotModelled));
      job_.Unmapped(path, LeafText(*v), known ? known->why : "not understood");
    }
    return std::move(job_);
  }

 private:
  void Flatten(const json& v, const std::string& path) {
    if (v.is_object() && !v.empty()) {
      for (auto it = v.begin(); it != v.end(); ++it) Flatten(it.value(), path.empty() ? it.key() : path + "." + it.key());
    } else {
      leaves_.emplace_back(path, &v);
    }
  }
  const json* Get(const std::string& path) {
    for (const auto& [p, v] : leaves_) {
      if (p == path) {
        used_[path] = true;
        return v;
      }
    }
    return nullptr;
  }
  // A whole number >= min, or nullopt for "auto" (the Hugging Face
  // Trainer fills it in) or an absent key.
  std::optional<int64_t> Int(const std::string& path, int64_t min = 1) {
    const json* v = Get(path);
    if (v == nullptr) return std::nullopt;
    if (v->is_string() && v->get<std::string>() == "auto") {
      job_.Ignore(path, "auto", "filled in by the Hugging Face Trainer at run time: not known here");
      return std::nullopt;
    }
    if (!v->is_number_integer() || v->get<int64_t>() < min) {
      throw InputError(file_, path, "expected a whole number >= " + std::to_string(min) + ", got " + v->dump());
    }
    return v->get<int64_t>();
  }
  std::optional<bool> Bool(const std::string& path) {
    const json* v = Get(path);
    if (v == nullptr) return std::nullopt;
    if (v->is_string() && v->get<std::string>() == "auto") {
      job_.Ignore(path, "auto", "filled in by the Hugging Face Trainer at run time: not known here");
      return std::nullopt;
    }
    if (!v->is_boolean()) throw InputError(file_, path, "expected true or false, got " + v->dump());
    return v->get<bool>();
  }
  std::optional<std::string> String(const std::string& path) {
    const json* v = Get(path);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) throw InputError(file_, path, "expected a string, got " + v->dump());
    return v->get<std::string>();
  }

  void Batch() {
    auto g = Int("train_batch_size");
    auto m = Int("train_micro_batch_size_per_gpu");
    auto a = Int("gradient_accumulation_steps");
    if (g) job_.global_batch.Set(*g, "train_batch_size"), job_.Map("train_batch_size", std::to_string(*g), "training.global_batch");
    if (m) {
      job_.micro_batch.Set(*m, "train_micro_batch_size_per_gpu");
      job_.Map("train_micro_batch_size_per_gpu", std::to_string(*m), "plan.micro_batch");
    }
    if (a) {
      job_.grad_accum.Set(*a, "gradient_accumulation_steps");
      job_.Map("gradient_accumulation_steps", std::to_string(*a), "checked: train_batch_size = micro x accumulation x dp");
    }
    // DeepSpeed's batch identity (runtime/config.py _batch_assertion): all
    // three give the data-parallel size.
    if (g && m && a) {
      if (*g % (*m * *a) != 0) {
        throw InputError(file_, "train_batch_size",
                         std::to_string(*g) + " is not a multiple of train_micro_batch_size_per_gpu x "
                         "gradient_accumulation_steps = " + std::to_string(*m) + " x " + std::to_string(*a));
      }
      job_.dp.Set(*g / (*m * *a), "train_batch_size / (train_micro_batch_size_per_gpu x gradient_accumulation_steps)");
    }
  }

  void Precision() {
    const bool fp16 = Bool("fp16.enabled").value_or(false);
    const bool bf16 = Bool("bf16.enabled").value_or(false);
    if (fp16 && bf16) throw InputError(file_, "bf16.enabled", "given with fp16.enabled (DeepSpeed refuses both)");
    precision_ = fp16 ? "fp16" : bf16 ? "bf16" : "fp32";
    job_.plan["precision"] = precision_;
    job_.Map(fp16 ? "fp16.enabled" : bf16 ? "bf16.enabled" : "fp16/bf16 (not enabled: fp32, DeepSpeed's default)",
             fp16 || bf16 ? "true" : "", "plan.precision = " + precision_);
    for (const char* k : {"fp16.auto_cast", "fp16.fp16_master_weights_and_grads", "bf16.immediate_grad_update"}) {
      if (const json* v = Get(k)) job_.Unmapped(k, LeafText(*v), "not modelled");
    }
    if (auto c = String("communication_data_type")) {
      const std::string p = *c == "fp16" ? "fp16" : *c == "bf16" ? "bf16" : *c == "fp32" ? "fp32" : "";
      if (p.empty()) throw InputError(file_, "communication_data_type", "expected fp16, bf16 or fp32, got '" + *c + "'");
      job_.plan["grad_reduce_precision"] = p;
      job_.Map("communication_data_type", *c, "plan.grad_reduce_precision");
    }
  }

  void Zero() {
    int64_t stage = 0;
    if (auto s = Int("zero_optimization.stage", 0)) {
      if (*s > 3) throw InputError(file_, "zero_optimization.stage", "expected 0, 1, 2 or 3, got " + std::to_string(*s));
      stage = *s;
    }
    static const char* const kSharding[] = {"none", "zero1", "zero2", "zero3"};
    job_.plan["sharding"] = kSharding[stage];
    job_.Map("zero_optimization.stage", std::to_string(stage), std::string("plan.sharding = ") + kSharding[stage]);
    // overlap_comm defaults to true at stage 3 only (zero/config.py overlap_comm_valid).
    const auto overlap = Bool("zero_optimization.overlap_comm");
    const bool o = overlap.value_or(stage == 3);
    job_.plan["overlap_grad_reduce"] = o;
    job_.Map("zero_optimization.overlap_comm", overlap ? (o ? "true" : "false") : "(not given)",
             std::string("plan.overlap_grad_reduce = ") + (o ? "true" : "false"));
    if (auto b = Int("zero_optimization.reduce_bucket_size")) {
      // Elements of the reduced gradient: the compute dtype unless
      // communication_data_type says otherwise.
      const std::string reduce = job_.plan.value("grad_reduce_precision", precision_);
      const int64_t bytes = *b * (reduce == "fp32" ? 4 : 2);
      job_.plan["grad_bucket"] = std::to_string(bytes) + " B";
      job_.Map("zero_optimization.reduce_bucket_size", std::to_string(*b),
               std::string("plan.grad_bucket = elements x ") + (reduce == "fp32" ? "4" : "2") + " bytes");
    }
    for (const char* k : {"zero_optimization.reduce_scatter", "zero_optimization.allgather_partitions"}) {
      if (auto v = Bool(k)) {
        if (*v) {
          job_.Ignore(k, "true", "the default, which stacksim models");
        } else {
          job_.Unmapped(k, "false", "all-reduce in place of reduce-scatter / all-gather is not modelled");
        }
      }
    }
    if (auto d = Int("zero_optimization.stage3_max_reuse_distance", 0)) {
      job_.plan["zero3_max_reuse_distance"] = static_cast<double>(*d);
      job_.Map("zero_optimization.stage3_max_reuse_distance", std::to_string(*d), "plan.zero3_max_reuse_distance");
    }
    Offload("zero_optimization.offload_optimizer", "offload_optimizer");
    Offload("zero_optimization.offload_param", "offload_params");
    if (auto legacy = Bool("zero_optimization.cpu_offload"); legacy && *legacy) {
      job_.plan["offload_optimizer"] = "host";
      job_.Map("zero_optimization.cpu_offload", "true", "plan.offload_optimizer = host");
    }
    if (auto r = Get("zero_optimization.offload_optimizer.ratio")) {
      if (!r->is_number() || r->get<double>() <= 0 || r->get<double>() > 1) {
        throw InputError(file_, "zero_optimization.offload_optimizer.ratio", "expected a number in (0, 1], got " + r->dump());
      }
      job_.plan["offload_optimizer_fraction"] = r->get<double>();
      job_.Map("zero_optimization.offload_optimizer.ratio", r->dump(), "plan.offload_optimizer_fraction");
    }
  }

  void Offload(const std::string& path, const char* key) {
    auto d = String(path + ".device");
    if (!d) return;
    std::string target = *d == "cpu" ? "host" : *d == "nvme" ? "nvme" : *d == "none" ? "none" : "";
    if (target.empty()) throw InputError(file_, path + ".device", "expected cpu, nvme or none, got '" + *d + "'");
    job_.plan[key] = target;
    job_.Map(path + ".device", *d, std::string("plan.") + key + " = " + target);
  }

  void Optimizer() {
    if (auto t = String("optimizer.type")) {
      static const char* const kAdam[] = {"Adam", "AdamW", "adam", "adamw", "FusedAdam", "CPUAdam", "DeepSpeedCPUAdam"};
      bool adam = false;
      for (const char* a : kAdam) adam = adam || *t == a;
      if (adam) {
        job_.Ignore("optimizer.type", *t, "Adam: the optimizer stacksim prices");
      } else {
        job_.Unmapped("optimizer.type", *t, "stacksim prices Adam's optimizer state and step");
      }
    }
  }

  const json& doc_;
  std::string file_;
  ImportedJob job_;
  std::vector<std::pair<std::string, const json*>> leaves_;
  std::map<std::string, bool> used_;
  std::string precision_ = "fp32";
};

}  // namespace

bool LooksLikeDeepSpeed(const nlohmann::json& doc) {
  if (!doc.is_object()) return false;
  for (const char* k : {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                        "zero_optimization", "fp16", "bf16"}) {
    if (doc.contains(k)) return true;
  }
  return false;
}

ImportedJob ReadDeepSpeed(const nlohmann::json& doc, const std::string& file) { return Reader(doc, file).Read(); }

}  // namespace stacksim::importer
