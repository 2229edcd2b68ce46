#include "sim/importer/torchtitan_config.h"

#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include <toml++/toml.h>

#include "sim/util/error.h"

namespace stacksim::importer {
namespace {

// Understood and without effect on a step's time or memory.
constexpr KnownKey kIgnored[] = {
    {"job.", "job bookkeeping"},
    {"profiling.", "profiling"},
    {"metrics.", "logging"},
    {"optimizer.lr", "optimizer hyper-parameter"},
    {"optimizer.eps", "optimizer hyper-parameter"},
    {"optimizer.weight_decay", "optimizer hyper-parameter"},
    {"optimizer.beta1", "optimizer hyper-parameter"},
    {"optimizer.beta2", "optimizer hyper-parameter"},
    {"optimizer.implementation", "the fused Adam kernel is what stacksim prices"},
    {"lr_scheduler.", "learning-rate schedule"},
    {"checkpoint.", "checkpointing (run-campaign prices checkpoints)"},
    {"validation.", "evaluation between steps"},
    {"comm.", "timeouts and tracing"},
    {"debug.", "debugging"},
    {"memory_estimation.", "a tool, not the run"},
    {"experimental.custom_import", "extension module"},
    {"experimental.custom_args_module", "extension module"},
    {"experimental.custom_model_path", "extension module"},
    {"model.hf_assets_path", "tokenizer and checkpoint files"},
    {"model.tokenizer_path", "tokenizer files"},
    {"model.print_after_conversion", "logging"},
    {"model.norm_type", "the model flavor fixes the norm"},
    {"training.dataset", "data"},
    {"training.dataset_path", "data"},
    {"training.steps", "run length, not the step"},
    {"training.warmup_steps", "learning-rate schedule"},
    {"training.max_norm", "gradient clipping (one norm per step)"},
    {"training.gc_freq", "host garbage collection"},
    {"training.gc_debug", "host garbage collection"},
    {"training.seed", "randomness"},
    {"training.deterministic", "numerics"},
    {"training.dataloader.", "data loading (the input pipeline is not modelled)"},
    {"compile.components", "what is compiled: the model (and loss), as the framework profile assumes"},
    {"compile.backend", "inductor, as the framework profile assumes"},
    {"parallelism.pipeline_parallel_first_stage_less_layers", "torchtitan's stage split"},
    {"parallelism.pipeline_parallel_last_stage_less_layers", "torchtitan's stage split"},
};

// torchtitan [model] name and flavor -> the shipped model with the same
// shapes (torchtitan/models/<name>/__init__.py flavors).
struct Flavor {
  const char* name;
  const char* flavor;
  const char* model;
};
constexpr Flavor kFlavors[] = {
    {"llama3", "8B", "llama3.1-8b"},          {"llama3", "70B", "llama3.1-70b"},
    {"llama3", "405B", "llama3.1-405b"},      {"qwen3", "30B-A3B", "qwen3-30b-a3b"},
    {"qwen3", "235B-A22B", "qwen3-235b-a22b"}, {"deepseek_v3", "671B", "deepseek-v3"},
};


std::string Text(const toml::node& n) {
  if (auto s = n.value<std::string>()) return *s;
  std::ostringstream out;
  n.visit([&out](auto&& v) { out << v; });
  return out.str();
}

class Reader {
 public:
  Reader(const std::string& text, const std::string& file) : file_(file) {
    job_.file = file;
    job_.format = ImportFormat::kTorchtitan;
    try {
      table_ = toml::parse(text, file);
    } catch (const toml::parse_error& e) {
      throw InputError(file, "line " + std::to_string(e.source().begin.line), std::string(e.description()));
    }
    Flatten(table_, "");
  }

  ImportedJob Read() {
    Model();
    Degrees();
    Batch();
    Precision();
    Recompute();
    std::string optimizer_from;
    if (auto o = String({"optimizer.name"}, &optimizer_from)) {
      if (*o == "AdamW" || *o == "Adam") {
        job_.Ignore(optimizer_from, *o, "Adam: the optimizer stacksim prices");
      } else {
        job_.Unmapped(optimizer_from, *o, "stacksim prices Adam's optimizer state and step");
      }
    }
    job_.framework = compile_ ? "torchtitan-compile" : "torchtitan";
    job_.Map(compile_from_.empty() ? "compile.enable (not given)" : compile_from_, compile_ ? "true" : "",
             "framework = " + job_.framework);
    for (const auto& [path, n] : leaves_) {
      if (used_.count(path)) continue;
      const bool fp8_option = path.rfind("float8.", 0) == 0 || path.rfind("quantize.", 0) == 0;
      if (const KnownKey* known = FindKnownKey(path, std::begin(kIgnored), std::end(kIgnored))) {
        job_.Ignore(path, Text(*n), known->why);
      } else if (fp8_option && !fp8_) {
        job_.Ignore(path, Text(*n), "float8 training is off");
      } else if (fp8_option) {
        job_.Unmapped(path, Text(*n), "an fp8 option stacksim does not model (fp8 GEMMs are; fp8 all-gathers are not)");
      } else {
        job_.Unmapped(path, Text(*n), "not understood");
      }
    }
    return std::move(job_);
  }

 private:
  void Flatten(const toml::table& t, const std::string& prefix) {
    for (auto&& [k, v] : t) {
      const std::string path = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
      if (const toml::table* sub = v.as_table()) {
        Flatten(*sub, path);
      } else {
        leaves_.emplace_back(path, &v);
      }
    }
  }
  // The first of the names (one key across releases) the file gives; two
  // given is an error.
  std::pair<std::string, const toml::node*> Find(std::initializer_list<const char*> names) {
    std::pair<std::string, const toml::node*> found{"", nullptr};
    for (const char* name : names) {
      for (const auto& [p, n] : leaves_) {
        if (p != name) continue;
        if (found.second != nullptr) {
          throw InputError(file_, p, "also given as " + found.first + " (two torchtitan releases' names for one setting)");
        }
        found = {p, n};
        used_[p] = true;
      }
    }
    return found;
  }
  std::optional<int64_t> Int(std::initializer_list<const char*> names, std::string* from, int64_t min = 1) {
    auto [path, n] = Find(names);
    if (n == nullptr) return std::nullopt;
    auto v = n->value<int64_t>();
    if (!n->is_integer() || !v || *v < min) {
      throw InputError(file_, path, "expected a whole number >= " + std::to_string(min) + ", got " + Text(*n));
    }
    *from = path;
    return *v;
  }
  std::optional<bool> Bool(std::initializer_list<const char*> names, std::string* from) {
    auto [path, n] = Find(names);
    if (n == nullptr) return std::nullopt;
    if (!n->is_boolean()) throw InputError(file_, path, "expected true or false, got " + Text(*n));
    *from = path;
    return n->value<bool>();
  }
  std::optional<std::string> String(std::initializer_list<const char*> names, std::string* from) {
    auto [path, n] = Find(names);
    if (n == nullptr) return std::nullopt;
    if (!n->is_string()) throw InputError(file_, path, "expected a string, got " + Text(*n));
    *from = path;
    return n->value<std::string>();
  }

  void Model() {
    std::string from_name, from_flavor;
    auto name = String({"model.name"}, &from_name);
    auto flavor = String({"model.flavor"}, &from_flavor);
    if (name && flavor) {
      for (const Flavor& f : kFlavors) {
        if (*name == f.name && *flavor == f.flavor) {
          job_.model_name = f.model;
          job_.model_name_flag = "model.flavor";
          job_.Map("model.name, model.flavor", *name + " " + *flavor, std::string("model = ") + f.model);
          return;
        }
      }
      job_.Unmapped("model.name, model.flavor", *name + " " + *flavor, "no shipped model has this flavor's shapes: give --model");
    } else if (name || flavor) {
      job_.Unmapped(name ? "model.name" : "model.flavor", name ? *name : *flavor, "needs both name and flavor: give --model");
    }
  }

  void Degrees() {
    std::string from;
    if (auto v = Int({"parallelism.tensor_parallel_degree", "training.tensor_parallel_degree"}, &from)) {
      job_.tp.Set(*v, from), job_.Map(from, std::to_string(*v), "plan.tp");
    }
    if (auto v = Int({"parallelism.pipeline_parallel_degree", "experimental.pipeline_parallel_degree"}, &from)) {
      job_.pp.Set(*v, from), job_.Map(from, std::to_string(*v), "plan.pp");
    }
    if (auto v = Int({"parallelism.context_parallel_degree", "experimental.context_parallel_degree"}, &from)) {
      job_.cp.Set(*v, from), job_.Map(from, std::to_string(*v), "plan.cp");
    }
    if (auto v = Int({"parallelism.expert_parallel_degree"}, &from)) {
      if (*v > 1) job_.plan["ep"] = *v;
      job_.Map(from, std::to_string(*v), "plan.ep");
    }
    if (auto v = Int({"parallelism.expert_tensor_parallel_degree"}, &from)) {
      job_.plan["etp"] = *v;
      job_.Map(from, std::to_string(*v), "plan.etp");
    }
    job_.fsdp_degrees = true;
    if (auto v = Int({"parallelism.data_parallel_replicate_degree", "training.data_parallel_replicate_degree"}, &from)) {
      job_.dp_replicate.Set(*v, from);
      job_.Map(from, std::to_string(*v), "plan.dp (x the shard degree); plan.shard_group when both exceed 1");
    }
    if (auto v = Int({"parallelism.data_parallel_shard_degree", "training.data_parallel_shard_degree"}, &from, -1)) {
      if (*v == 0) throw InputError(file_, from, "expected -1 (the rest of the GPUs) or a positive degree, got 0");
      if (*v > 0) job_.dp_shard.Set(*v, from);
      job_.Map(from, std::to_string(*v), "plan.dp (x the replicate degree); plan.sharding = zero3 when above 1");
    }
    // torchtitan of mid-2024: one degree and a type.
    if (auto v = Int({"training.data_parallel_degree"}, &from, -1)) {
      std::string type_from;
      auto type = String({"training.data_parallel_type"}, &type_from);
      if (*v > 0 && type && *type == "ddp") {
        job_.dp_replicate.Set(*v, from);
        job_.dp_shard.Set(1, type_from);
      } else if (*v > 0) {
        job_.dp_shard.Set(*v, from);
      }
      job_.Map(from, std::to_string(*v), "plan.dp");
      if (type) job_.Map(type_from, *type, *type == "ddp" ? "plan.sharding = none" : "plan.sharding = zero3");
    }
    if (auto v = Bool({"parallelism.enable_async_tensor_parallel", "experimental.enable_async_tensor_parallel"}, &from)) {
      if (*v) job_.plan["tp_comm_overlap"] = "gemm";
      job_.Map(from, *v ? "true" : "false", *v ? "plan.tp_comm_overlap = gemm" : "plan.tp_comm_overlap (framework default)");
    }
    const int64_t pp = job_.pp.has() ? *job_.pp : 1;
    if (auto s = String({"parallelism.pipeline_parallel_schedule", "experimental.pipeline_parallel_schedule"}, &from)) {
      if (pp == 1) {
        job_.Ignore(from, *s, "no pipeline parallelism");
      } else if (*s == "1F1B" || *s == "GPipe") {
        job_.plan["schedule"] = *s == "1F1B" ? "1f1b" : "gpipe";
        job_.Map(from, *s, "plan.schedule = " + job_.plan["schedule"].get<std::string>());
      } else if (*s == "Interleaved1F1B") {
        // torchtitan's default split (generate_split_points) gives each rank
        // two stages for looped schedules.
        job_.plan["schedule"] = "interleaved";
        job_.plan["vp"] = 2;
        job_.Map(from, *s, "plan.schedule = interleaved, plan.vp = 2 (torchtitan's default split)");
      } else {
        job_.Unmapped(from, *s, "a schedule stacksim does not model; 1F1B is used");
      }
    }
    if (auto m = Int({"parallelism.pipeline_parallel_microbatch_size"}, &from)) {
      pp_micro_ = *m;
      pp_micro_from_ = from;
    }
    if (auto n = Int({"experimental.pipeline_parallel_microbatches"}, &from)) {
      pp_microbatches_ = *n;
      pp_micro_from_ = from;
    }
    if (auto r = String({"parallelism.context_parallel_rotate_method", "experimental.context_parallel_rotate_method"}, &from)) {
      if (*r == "allgather" || *r == "alltoall") {
        job_.plan["cp_comm"] = *r == "allgather" ? "allgather" : "p2p";
        job_.Map(from, *r, "plan.cp_comm = " + job_.plan["cp_comm"].get<std::string>());
      } else {
        throw InputError(file_, from, "expected allgather or alltoall, got '" + *r + "'");
      }
    }
    if (auto r = String({"parallelism.fsdp_reshard_after_forward", "training.fsdp_reshard_after_forward"}, &from)) {
      if (*r == "default") {
        job_.Ignore(from, *r, "torchtitan's default, which the framework profile describes");
      } else {
        job_.Unmapped(from, *r, "not modelled: parameters are resharded after forward except under pp");
      }
    }
  }

  void Batch() {
    std::string from;
    int64_t local = 8;  // torchtitan's default local batch (job_config.py / config_manager.py)
    std::string local_from = "training.local_batch_size (not given: 8, torchtitan's default)";
    if (auto v = Int({"training.local_batch_size", "training.batch_size"}, &from)) local = *v, local_from = from;
    job_.local_batch.Set(local, local_from);
    job_.Map(local_from, std::to_string(local), "sequences per data-parallel rank per forward-backward");
    if (auto v = Int({"training.global_batch_size"}, &from, -1)) {
      if (*v > 0) job_.global_batch.Set(*v, from);
      job_.Map(from, std::to_string(*v), *v > 0 ? "training.global_batch" : "training.global_batch = local x dp");
    }
    if (auto v = Int({"training.seq_len"}, &from)) job_.seq_len.Set(*v, from), job_.Map(from, std::to_string(*v), "training.seq_len");
    const int64_t pp = job_.pp.has() ? *job_.pp : 1;
    if (pp == 1) {
      job_.micro_batch.Set(local, local_from);
      if (!pp_micro_from_.empty()) job_.Ignore(pp_micro_from_, "", "no pipeline parallelism");
      return;
    }
    if (pp_microbatches_ > 0) {  // 2024-25: a number of micro-batches
      if (local % pp_microbatches_ != 0) {
        throw InputError(file_, pp_micro_from_, std::to_string(local) + " sequences (" + local_from +
                                                    ") do not split into " + std::to_string(pp_microbatches_) +
                                                    " micro-batches");
      }
      job_.micro_batch.Set(local / pp_microbatches_, pp_micro_from_);
      job_.Map(pp_micro_from_, std::to_string(pp_microbatches_), "plan.micro_batch = local batch / micro-batches");
    } else {
      const int64_t m = pp_micro_ > 0 ? pp_micro_ : 1;  // pipeline_parallel_microbatch_size defaults to 1
      const std::string f = pp_micro_ > 0 ? pp_micro_from_ : "parallelism.pipeline_parallel_microbatch_size (not given: 1)";
      job_.micro_batch.Set(m, f);
      job_.Map(f, std::to_string(m), "plan.micro_batch");
    }
  }

  void Precision() {
    std::string from;
    std::string p = "bf16";
    std::string p_from = "training.mixed_precision_param (not given: bfloat16)";
    if (auto v = String({"training.mixed_precision_param"}, &from)) {
      if (*v != "bfloat16" && *v != "float32") throw InputError(file_, from, "expected bfloat16 or float32, got '" + *v + "'");
      p = *v == "bfloat16" ? "bf16" : "fp32";
      p_from = from;
    }
    if (auto v = Bool({"float8.enable_float8_linear"}, &from); v && *v) fp8_ = true, p_from = from;
    if (auto [path, n] = Find({"model.converters"}); n != nullptr) {
      const toml::array* a = n->as_array();
      if (a == nullptr) throw InputError(file_, path, "expected a list of converter names");
      for (const toml::node& c : *a) {
        const std::string name = Text(c);
        if (name == "float8" || name == "quantize.linear.float8") {
          fp8_ = true;
          p_from = path;
        } else {
          job_.Unmapped(path, name, "a model converter stacksim does not model");
        }
      }
    }
    if (fp8_) p = "fp8";
    job_.plan["precision"] = p;
    job_.Map(p_from, "", "plan.precision = " + p);
    if (auto v = String({"training.mixed_precision_reduce"}, &from)) {
      if (*v != "float32" && *v != "bfloat16") throw InputError(file_, from, "expected float32 or bfloat16, got '" + *v + "'");
      job_.plan["grad_reduce_precision"] = *v == "float32" ? "fp32" : "bf16";
      job_.Map(from, *v, "plan.grad_reduce_precision");
    }
    if (auto v = Bool({"training.enable_cpu_offload"}, &from); v) {
      if (*v) {
        // FSDP2's CPUOffloadPolicy: parameters, gradients and the optimizer
        // step on the host.
        job_.plan["offload_optimizer"] = "host";
        job_.plan["offload_params"] = "host";
      }
      job_.Map(from, *v ? "true" : "false", *v ? "plan.offload_optimizer = plan.offload_params = host" : "no offload");
    }
    if (auto v = Bool({"compile.enable", "training.compile"}, &from)) compile_ = *v, compile_from_ = from;
  }

  void Recompute() {
    std::string from, option_from;
    std::string mode = "selective", option = "2";  // job_config.py defaults
    bool given = false;
    if (auto v = String({"activation_checkpoint.mode"}, &from)) mode = *v, given = true;
    if (auto [path, n] = Find({"activation_checkpoint.selective_ac_option"}); n != nullptr) {
      option = Text(*n);
      option_from = path;
    }
    const std::string where = given ? from : "activation_checkpoint.mode (not given: selective, every 2nd layer)";
    std::string r;
    if (mode == "none" || mode == "full") {
      r = mode;
    } else if (mode == "selective" && option == "op") {
      r = "selective";  // the framework profile's op-level policy
    } else if (mode == "selective" && option == "1") {
      r = "full";
    } else if (mode == "selective") {
      r = "full";
      job_.Unmapped(option_from.empty() ? where : option_from, option,
                    "every Nth layer checkpointed: stacksim recomputes all layers or none (full is used)");
    } else if (mode == "memory_budget") {
      r = "selective";
      job_.Unmapped(where, mode, "the memory-budget policy is not modelled; the op-level selective policy is used");
    } else {
      throw InputError(file_, from, "expected none, selective, full or memory_budget, got '" + mode + "'");
    }
    job_.plan["recompute"] = r;
    job_.Map(where, mode + (mode == "selective" ? " (" + option + ")" : ""), "plan.recompute = " + r);
  }

  std::string file_;
  ImportedJob job_;
  toml::table table_;
  std::vector<std::pair<std::string, const toml::node*>> leaves_;
  std::map<std::string, bool> used_;
  int64_t pp_micro_ = 0, pp_microbatches_ = 0;
  std::string pp_micro_from_;
  bool fp8_ = false;
  bool compile_ = false;
  std::string compile_from_;
};

}  // namespace

bool LooksLikeToml(const std::string& text) {
  try {
    toml::table t = toml::parse(text);
    for (auto&& [k, v] : t) {
      if (v.is_table()) return true;
    }
  } catch (const toml::parse_error&) {
  }
  return false;
}

ImportedJob ReadTorchtitan(const std::string& text, const std::string& file) { return Reader(text, file).Read(); }

}  // namespace stacksim::importer
