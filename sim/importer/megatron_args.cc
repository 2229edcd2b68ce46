#include "sim/importer/megatron_args.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "sim/importer/shell_script.h"
#include "sim/util/error.h"

namespace stacksim::importer {
namespace {

struct Arg {
  std::string flag;
  std::vector<Word> values;
  bool used = false;
};

std::string Joined(const std::vector<Word>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + v[i].text;
  return s;
}

// Flags understood and without effect on one step's time or memory.
struct IgnoredFlag {
  const char* name;  // a flag, or a prefix ending in '-'
  const char* why;
};
constexpr IgnoredFlag kIgnored[] = {
    {"--lr", "learning rate"}, {"--min-lr", "learning rate"}, {"--lr-", "learning-rate schedule"},
    {"--weight-decay", "optimizer hyper-parameter"}, {"--clip-grad", "gradient clipping (one norm per step)"},
    {"--adam-beta1", "optimizer hyper-parameter"}, {"--adam-beta2", "optimizer hyper-parameter"},
    {"--adam-eps", "optimizer hyper-parameter"}, {"--optimizer", "stacksim prices Adam, Megatron-LM's default"},
    {"--init-method-std", "initialization"}, {"--norm-epsilon", "numerics"}, {"--rotary-base", "numerics"},
    {"--rotary-percent", "numerics"}, {"--use-rope-scaling", "numerics"}, {"--rope-scaling-factor", "numerics"},
    {"--attention-softmax-in-fp32", "numerics"}, {"--apply-query-key-layer-scaling", "numerics"},
    {"--seed", "randomness"}, {"--train-iters", "run length, not the step"},
    {"--train-samples", "run length, not the step"}, {"--eval-", "evaluation between steps"},
    {"--log-", "logging"}, {"--wandb-", "logging"}, {"--tensorboard-", "logging"}, {"--timing-log-level", "logging"},
    {"--save", "checkpoint path"}, {"--load", "checkpoint path"}, {"--save-interval", "checkpoint interval"},
    {"--ckpt-", "checkpoint format"}, {"--no-load-optim", "checkpoint loading"}, {"--no-load-rng", "checkpoint loading"},
    {"--use-checkpoint-args", "checkpoint loading"}, {"--finetune", "checkpoint loading"},
    {"--async-save", "checkpointing"}, {"--exit-", "when to stop"}, {"--data-path", "data files"},
    {"--train-data-path", "data files"}, {"--valid-data-path", "data files"}, {"--test-data-path", "data files"},
    {"--data-cache-path", "data files"}, {"--split", "data split"}, {"--mock-data", "data source"},
    {"--dataloader-type", "data loading"}, {"--num-workers", "data-loading workers (the input pipeline is not modelled)"},
    {"--vocab-file", "tokenizer files"}, {"--merge-file", "tokenizer files"}, {"--tokenizer-type", "tokenizer"},
    {"--tokenizer-model", "tokenizer (the vocabulary size comes from --vocab-size or --model)"},
    {"--distributed-backend", "NCCL is what stacksim prices"}, {"--distributed-timeout-minutes", "timeouts"},
    {"--use-mcore-models", "Megatron-Core models: the framework stacksim uses (megatron-core)"},
    {"--no-async-tensor-model-parallel-allreduce", "deprecated flag"},
    {"--bias-dropout-fusion", "the default"}, {"--use-legacy-models", "model code path"},
    {"--manual-gc", "host garbage collection"}, {"--manual-gc-interval", "host garbage collection"},
    {"--no-create-attention-mask-in-dataloader", "data loading"}, {"--check-for-nan-in-loss-and-grad", "checks"},
};

const char* IgnoredReason(const std::string& flag) {
  for (const IgnoredFlag& f : kIgnored) {
    std::string n = f.name;
    if (n.back() == '-' ? flag.compare(0, n.size(), n) == 0 : flag == n) return f.why;
  }
  return nullptr;
}

class Reader {
 public:
  Reader(const std::string& text, const std::string& file) : file_(file) {
    job_.file = file;
    job_.format = ImportFormat::kMegatron;
    job_.framework = "megatron-core";
    Split(ReadShellCommands(text, file));
  }

  ImportedJob Read() {
    Parallelism();
    Batch();
    Precision();
    Recompute();
    Overlap();
    Model();
    Rest();
    return std::move(job_);
  }

 private:
  // The training command's launcher words and Megatron-LM arguments.
  void Split(const std::vector<ShellCommand>& commands) {
    const ShellCommand* train = nullptr;
    size_t program = 0;
    // A command that names a *.py file but passes it no flag (a script's
    // `[ -f "$PRETRAIN_SCRIPT" ]` check, an `echo` of its path) is not the
    // training command while another one is.
    auto flags_after = [](const ShellCommand& c, size_t i) {
      for (size_t j = i + 1; j < c.words.size(); ++j) {
        if (c.words[j].text.rfind("--", 0) == 0) return true;
      }
      return false;
    };
    bool any_with_flags = false;
    for (const ShellCommand& c : commands) {
      for (size_t i = 0; i < c.words.size() && !any_with_flags; ++i) {
        const std::string& w = c.words[i].text;
        any_with_flags = w.size() >= 3 && w.compare(w.size() - 3, 3, ".py") == 0 && flags_after(c, i);
      }
    }
    for (const ShellCommand& c : commands) {
      for (size_t i = 0; i < c.words.size(); ++i) {
        const std::string& w = c.words[i].text;
        if (w.size() < 3 || w.compare(w.size() - 3, 3, ".py") != 0) continue;
        if (any_with_flags && !flags_after(c, i)) break;
        const bool pretrain = std::filesystem::path(w).filename().string().rfind("pretrain", 0) == 0;
        if (train == nullptr || (pretrain && !train_is_pretrain_)) {
          train = &c;
          program = i;
          train_is_pretrain_ = pretrain;
        }
        break;
      }
    }
    std::vector<Word> args;
    if (train != nullptr) {
      Launcher(std::vector<Word>(train->words.begin(), train->words.begin() + program));
      args.assign(train->words.begin() + program + 1, train->words.end());
    } else {
      for (const ShellCommand& c : commands) {
        if (c.words[0].text.rfind("--", 0) == 0) args.insert(args.end(), c.words.begin(), c.words.end());
      }
    }
    if (args.empty()) {
      throw InputError(file_, "", "no Megatron-LM arguments: expected a command that runs pretrain_*.py (or another "
                                  "*.py) with its --flags, or a list of --flags");
    }
    for (const Word& w : args) {
      if (w.text.rfind("--", 0) == 0 && w.unresolved.empty()) {
        size_t eq = w.text.find('=');
        Arg a{w.text.substr(0, eq), {}};
        if (eq != std::string::npos) a.values.push_back(Word{w.text.substr(eq + 1), w.unresolved, w.line});
        auto it = index_.find(a.flag);
        if (it != index_.end()) {
          Arg& old = args_[it->second];
          job_.Ignore(old.flag, Joined(old.values), "given again later; Megatron-LM (argparse) keeps the last");
          old.used = true;
        }
        index_[a.flag] = args_.size();
        args_.push_back(std::move(a));
      } else if (!args_.empty()) {
        args_.back().values.push_back(w);
      } else {
        job_.Unmapped(w.text, "", "a word before the first --flag (not understood)");
      }
    }
  }

  void Launcher(const std::vector<Word>& words) {
    std::optional<int64_t> per_node, nodes;
    std::string per_node_flag, nodes_flag;
    bool nodes_given = false;  // a node count flag, resolved or not
    for (size_t i = 0; i < words.size(); ++i) {
      std::string w = words[i].text;
      if (w.rfind("--", 0) != 0) continue;
      std::string value;
      const Word* vw = nullptr;
      if (size_t eq = w.find('='); eq != std::string::npos) {
        value = w.substr(eq + 1);
        w = w.substr(0, eq);
      } else if (i + 1 < words.size() && words[i + 1].text.rfind("-", 0) != 0) {
        vw = &words[i + 1];
        value = vw->text;
      }
      const bool resolved = vw == nullptr || vw->unresolved.empty();
      char* end = nullptr;
      long long n = resolved && !value.empty() ? std::strtoll(value.c_str(), &end, 10) : 0;
      const bool number = resolved && !value.empty() && *end == '\0' && n > 0;
      if (w == "--nproc_per_node" || w == "--nproc-per-node" || w == "--num_gpus" || w == "--num-gpus") {
        if (number) per_node = n, per_node_flag = w;
      } else if (w == "--nnodes" || w == "--num_nodes" || w == "--num-nodes") {
        nodes_given = true;
        if (number) nodes = n, nodes_flag = w;
      } else {
        job_.Ignore(w, value, "launcher option (rendezvous, addresses, ranks): no effect on a step");
        continue;
      }
      if (number) {
        job_.Map(w, value, "gpus (with the other launcher count)");
      } else {
        job_.Ignore(w, value, "launcher count that is not a number in the script: give --gpus");
      }
    }
    if (per_node && nodes) {
      job_.gpus.Set(*per_node * *nodes, "launcher " + per_node_flag + " x " + nodes_flag);
    } else if (per_node && !nodes_given && TorchRun(words)) {
      // torchrun's --nnodes defaults to 1 (torch.distributed.run: "1:1").
      job_.gpus.Set(*per_node, "launcher " + per_node_flag + " (torchrun's --nnodes default: one node)");
    }
  }

  // The launcher is torchrun (or python -m torch.distributed.run / launch).
  static bool TorchRun(const std::vector<Word>& words) {
    for (const Word& w : words) {
      const std::string name = std::filesystem::path(w.text).filename().string();
      if (name == "torchrun" || w.text == "torch.distributed.run" || w.text == "torch.distributed.launch") return true;
    }
    return false;
  }

  Arg* Take(const std::string& flag) {
    auto it = index_.find(flag);
    if (it == index_.end()) return nullptr;
    Arg* a = &args_[it->second];
    a->used = true;
    return a;
  }
  bool Switch(const std::string& flag) {
    Arg* a = Take(flag);
    if (a == nullptr) return false;
    for (const Word& w : a->values) job_.Unmapped(w.text, "", "a word after the switch " + flag + " (not understood)");
    return true;
  }
  const Word& One(const Arg& a) const {
    if (a.values.size() != 1) {
      throw InputError(file_, a.flag, a.values.empty() ? "needs a value" : "expected one value, got '" + Joined(a.values) + "'");
    }
    const Word& w = a.values[0];
    // Array elements keep an unset variable's text ("$TP") without the mark.
    if (!w.unresolved.empty() || w.text.find('$') != std::string::npos) {
      const std::string what = w.unresolved.empty() ? "a variable in it" : w.unresolved;
      throw InputError(file_, a.flag, "'" + w.text + "' (line " + std::to_string(w.line) + "): " + what +
                                          " is not set in the script, so its value is unknown; set it there");
    }
    return w;
  }
  int64_t Int(const Arg& a, int64_t min = 1) const {
    const std::string& t = One(a).text;
    char* end = nullptr;
    long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || v < min || v > (int64_t{1} << 40)) {
      throw InputError(file_, a.flag, "expected a whole number >= " + std::to_string(min) + ", got '" + t + "'");
    }
    return v;
  }
  double Real(const Arg& a) const {
    const std::string& t = One(a).text;
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !std::isfinite(v)) throw InputError(file_, a.flag, "expected a number, got '" + t + "'");
    return v;
  }
  std::string Text(const Arg& a) const { return One(a).text; }
  std::string OneOf(const Arg& a, std::initializer_list<const char*> choices) const {
    std::string t = Text(a);
    std::string list;
    for (const char* c : choices) {
      if (t == c) return t;
      list += std::string(list.empty() ? "" : ", ") + c;
    }
    throw InputError(file_, a.flag, "'" + t + "' is not one of " + list);
  }
  // An integer flag mapped to a Sourced field or a plan key.
  std::optional<int64_t> IntTo(const std::string& flag, const std::string& to, Sourced* field = nullptr) {
    Arg* a = Take(flag);
    if (a == nullptr) return std::nullopt;
    int64_t v = Int(*a);
    if (field != nullptr) field->Set(v, flag);
    job_.Map(flag, std::to_string(v), to);
    return v;
  }

  void Parallelism() {
    IntTo("--tensor-model-parallel-size", "plan.tp", &job_.tp);
    IntTo("--pipeline-model-parallel-size", "plan.pp", &job_.pp);
    IntTo("--context-parallel-size", "plan.cp", &job_.cp);
    if (auto ep = IntTo("--expert-model-parallel-size", "plan.ep")) job_.plan["ep"] = *ep;
    if (auto etp = IntTo("--expert-tensor-parallel-size", "plan.etp")) job_.plan["etp"] = *etp;
    Arg* per_stage = Take("--num-layers-per-virtual-pipeline-stage");
    Arg* per_rank = Take("--num-virtual-stages-per-pipeline-rank");
    if (per_stage && per_rank) {
      throw InputError(file_, per_stage->flag, "give it or --num-virtual-stages-per-pipeline-rank, not both "
                                               "(Megatron-LM refuses both)");
    }
    int64_t vp = 1;
    if (per_rank) {
      vp = Int(*per_rank);
      job_.Map(per_rank->flag, std::to_string(vp), "plan.vp");
    }
    if (per_stage) {
      const int64_t per = Int(*per_stage);
      Arg* layers = index_.count("--num-layers") ? &args_[index_["--num-layers"]] : nullptr;
      if (layers == nullptr) throw InputError(file_, per_stage->flag, "needs --num-layers to give the virtual stages");
      const int64_t l = Int(*layers);
      const int64_t pp = job_.pp.has() ? *job_.pp : 1;
      if (l % pp != 0 || (l / pp) % per != 0) {
        throw InputError(file_, per_stage->flag,
                         std::to_string(l) + " layers (--num-layers) over " + std::to_string(pp) +
                             " pipeline stages do not split into virtual stages of " + std::to_string(per) + " layers");
      }
      vp = l / pp / per;
      job_.Map(per_stage->flag, std::to_string(per), "plan.vp = layers / pp / " + std::to_string(per) + " = " +
                                                         std::to_string(vp));
    }
    if (vp > 1) {
      job_.plan["vp"] = vp;
      job_.plan["schedule"] = "interleaved";
    }
    if (Arg* a = Take("--microbatch-group-size-per-virtual-pipeline-stage")) {
      const int64_t g = Int(*a);
      if (vp > 1) {
        job_.plan["microbatch_group"] = g;
        job_.Map(a->flag, std::to_string(g), "plan.microbatch_group");
      } else {
        job_.Ignore(a->flag, std::to_string(g), "only the interleaved schedule groups micro-batches (no virtual stages here)");
      }
    }
    const bool sp = Switch("--sequence-parallel");
    job_.plan["sequence_parallel"] = sp;
    job_.Map("--sequence-parallel", sp ? "" : "(not given)", std::string("plan.sequence_parallel = ") + (sp ? "true" : "false"));
    if (Switch("--use-tp-pp-dp-mapping")) {
      job_.plan["rank_order"] = "tp-cp-pp-dp";
      job_.Map("--use-tp-pp-dp-mapping", "", "plan.rank_order = tp-cp-pp-dp");
    }
    if (Arg* a = Take("--cp-comm-type")) {
      std::string t = Joined(a->values);
      if (t == "p2p" || t == "allgather") {
        job_.plan["cp_comm"] = t;
        job_.Map(a->flag, t, "plan.cp_comm");
      } else {
        job_.Unmapped(a->flag, t, "only p2p and allgather (one type for all layers) are modelled; p2p is used");
      }
    }
    // Sharding: the distributed optimizer shards the optimizer state (ZeRO-1);
    // FSDP shards more.
    std::string sharding = "none", from = "(not given)";
    if (Switch("--use-distributed-optimizer")) sharding = "zero1", from = "--use-distributed-optimizer";
    if (Switch("--use-torch-fsdp2")) sharding = "zero3", from = "--use-torch-fsdp2";
    const bool megatron_fsdp = Switch("--use-megatron-fsdp"), custom_fsdp = Switch("--use-custom-fsdp");
    const bool mfsdp = megatron_fsdp || custom_fsdp;
    if (Arg* a = Take("--data-parallel-sharding-strategy")) {
      std::string s = OneOf(*a, {"no_shard", "optim", "optim_grads", "optim_grads_params"});
      if (mfsdp) {
        sharding = s == "optim" ? "zero1" : s == "optim_grads" ? "zero2" : s == "optim_grads_params" ? "zero3" : "none";
        from = a->flag + " " + s;
      } else {
        job_.Ignore(a->flag, s, "applies to Megatron FSDP (--use-megatron-fsdp), not given");
      }
    }
    job_.plan["sharding"] = sharding;
    job_.Map(from, "", "plan.sharding = " + sharding);
  }

  void Batch() {
    IntTo("--micro-batch-size", "plan.micro_batch", &job_.micro_batch);
    IntTo("--global-batch-size", "training.global_batch", &job_.global_batch);
    IntTo("--seq-length", "training.seq_len", &job_.seq_len);
    if (Arg* a = Take("--rampup-batch-size")) {
      job_.Unmapped(a->flag, Joined(a->values), "batch-size ramp-up: stacksim simulates a step at the full --global-batch-size");
    }
  }

  void Precision() {
    const bool bf16 = Switch("--bf16"), fp16 = Switch("--fp16");
    if (bf16 && fp16) throw InputError(file_, "--fp16", "given with --bf16 (Megatron-LM refuses both)");
    std::string p = bf16 ? "bf16" : fp16 ? "fp16" : "fp32";
    std::string from = bf16 ? "--bf16" : fp16 ? "--fp16" : "--bf16/--fp16 (not given: fp32, Megatron-LM's default)";
    if (Arg* a = Take("--fp8-format")) {
      std::string f = OneOf(*a, {"e4m3", "hybrid"});
      p = "fp8";
      from = a->flag + " " + f;
    }
    job_.plan["precision"] = p;
    job_.Map(from, "", "plan.precision = " + p);
    // FP8 weights (Transformer Engine's fp8_model_init; the distributed
    // optimizer all-gathers them in FP8). Without FP8 Megatron-LM ignores it.
    if (Switch("--fp8-param-gather")) {
      if (p == "fp8") {
        job_.plan["fp8_params"] = true;
        job_.Map("--fp8-param-gather", "", "plan.fp8_params = true");
      } else {
        job_.Ignore("--fp8-param-gather", "", "FP8 weights need --fp8-format; without it they stay 16-bit");
      }
    }
    if (Switch("--grad-reduce-in-bf16")) {
      job_.plan["grad_reduce_precision"] = "bf16";
      job_.Map("--grad-reduce-in-bf16", "", "plan.grad_reduce_precision = bf16");
    }
    if (Switch("--accumulate-allreduce-grads-in-fp32")) {
      job_.plan["grad_reduce_precision"] = "fp32";
      job_.Map("--accumulate-allreduce-grads-in-fp32", "", "plan.grad_reduce_precision = fp32");
    }
    OptimizerState();
  }

  // Megatron-Core's precision-aware optimizer: the moments' and main
  // params' dtypes apply "when enabling precision-aware-optimizer"
  // (megatron/training/arguments.py), so without the switch they are ignored.
  void OptimizerState() {
    const bool aware = Switch("--use-precision-aware-optimizer");
    struct Field {
      const char* flag;
      const char* key;
      std::initializer_list<const char*> choices;
    };
    const Field fields[] = {{"--exp-avg-dtype", "exp_avg", {"fp32", "fp16", "bf16", "fp8"}},
                            {"--exp-avg-sq-dtype", "exp_avg_sq", {"fp32", "fp16", "bf16", "fp8"}},
                            {"--main-params-dtype", "master", {"fp32", "fp16"}}};
    nlohmann::json state = nlohmann::json::object();
    for (const Field& f : fields) {
      Arg* a = Take(f.flag);
      if (!a) continue;
      const std::string v = OneOf(*a, f.choices);
      if (!aware) {
        job_.Ignore(a->flag, v, "applies with --use-precision-aware-optimizer only");
        continue;
      }
      state[f.key] = v;
      job_.Map(a->flag, v, std::string("plan.optimizer_state.") + f.key + " = " + v);
    }
    if (!state.empty()) job_.plan["optimizer_state"] = state;
    if (aware && state.empty()) {
      job_.Map("--use-precision-aware-optimizer", "", "the default dtypes: fp32 moments and main params");
    } else if (aware) {
      job_.Map("--use-precision-aware-optimizer", "", "plan.optimizer_state (the dtypes below)");
    }
  }

  void Recompute() {
    std::string r = "none", from = "(no --recompute-* flag)";
    if (Switch("--recompute-activations")) r = "selective", from = "--recompute-activations";
    if (Arg* a = Take("--recompute-granularity")) r = OneOf(*a, {"full", "selective"}), from = a->flag + " " + r;
    Arg* method = Take("--recompute-method");
    Arg* layers = Take("--recompute-num-layers");
    if (method) {
      std::string m = OneOf(*method, {"uniform", "block"});
      if (r != "full") {
        job_.Ignore(method->flag, m, "applies to --recompute-granularity full only");
      } else {
        job_.Map(method->flag, m, "plan.recompute = full");
        if (layers) {
          int64_t n = Int(*layers);
          if (m == "uniform" && n == 1) {
            job_.Map(layers->flag, "1", "plan.recompute = full (each layer from its own input)");
          } else if (m == "block" && n > 0) {
            job_.plan["recompute_layers"] = n;
            job_.Map(layers->flag, std::to_string(n),
                     "plan.recompute_layers = " + std::to_string(n) + " (the first N layers of each model chunk)");
          } else {
            job_.Unmapped(layers->flag, std::to_string(n),
                          m == "block" ? "block of no layers: stacksim recomputes every layer (time overstated)"
                                       : "uniform chunks of several layers: stacksim recomputes each layer from its "
                                         "own input (activation memory overstated)");
          }
          layers = nullptr;
        }
      }
    }
    if (layers) job_.Ignore(layers->flag, Joined(layers->values), "applies to --recompute-method only");
    job_.plan["recompute"] = r;
    job_.Map(from, "", "plan.recompute = " + r);
    if (Arg* a = Take("--recompute-modules")) {
      nlohmann::json modules = nlohmann::json::array();
      for (const Word& w : a->values) {
        static const char* const kKnown[] = {"core_attn", "layernorm", "mla_up_proj", "mlp", "moe_act", "moe",
                                             "shared_experts"};
        bool known = false;
        for (const char* k : kKnown) known = known || w.text == k;
        if (known) {
          modules.push_back(w.text);
        } else {
          job_.Unmapped(a->flag, w.text, "a recompute module stacksim does not model");
        }
      }
      if (r == "selective") {
        job_.plan["recompute_modules"] = modules;
        job_.Map(a->flag, Joined(a->values), "plan.recompute_modules");
      } else {
        job_.Ignore(a->flag, Joined(a->values), "applies to selective recomputation only");
      }
    }
  }

  void Overlap() {
    const bool grad = Switch("--overlap-grad-reduce"), param = Switch("--overlap-param-gather");
    job_.plan["overlap_grad_reduce"] = grad;
    job_.plan["overlap_param_gather"] = param;
    job_.Map("--overlap-grad-reduce", grad ? "" : "(not given)", std::string("plan.overlap_grad_reduce = ") + (grad ? "true" : "false"));
    job_.Map("--overlap-param-gather", param ? "" : "(not given)", std::string("plan.overlap_param_gather = ") + (param ? "true" : "false"));
    if (Switch("--tp-comm-overlap")) {
      job_.plan["tp_comm_overlap"] = "gemm";
      job_.Map("--tp-comm-overlap", "", "plan.tp_comm_overlap = gemm");
    }
    if (Arg* a = Take("--ddp-bucket-size")) {
      const int64_t elements = Int(*a);
      const bool bf16_grads = job_.plan.value("grad_reduce_precision", "") == "bf16";
      const int64_t bytes = elements * (bf16_grads ? 2 : 4);
      job_.plan["grad_bucket"] = std::to_string(bytes) + " B";
      job_.Map(a->flag, std::to_string(elements),
               std::string("plan.grad_bucket = elements x ") + (bf16_grads ? "2" : "4") + " bytes");
    }
    if (Switch("--optimizer-cpu-offload")) {
      job_.plan["offload_optimizer"] = "host";
      job_.Map("--optimizer-cpu-offload", "", "plan.offload_optimizer = host");
      const bool overlap = Switch("--overlap-cpu-optimizer-d2h-h2d");
      job_.plan["overlap_offload"] = overlap;
      job_.Map("--overlap-cpu-optimizer-d2h-h2d", overlap ? "" : "(not given)",
               std::string("plan.overlap_offload = ") + (overlap ? "true" : "false"));
      if (Arg* a = Take("--optimizer-offload-fraction")) {
        job_.plan["offload_optimizer_fraction"] = Real(*a);
        job_.Map(a->flag, Text(*a), "plan.offload_optimizer_fraction");
      }
    }
    if (Switch("--enable-cuda-graph")) {
      job_.plan["cuda_graphs"] = true;
      job_.Map("--enable-cuda-graph", "", "plan.cuda_graphs = true");
    }
    if (Arg* a = Take("--moe-token-dispatcher-type")) {
      std::string d = OneOf(*a, {"allgather", "alltoall", "flex"});
      if (d == "allgather") {
        job_.Unmapped(a->flag, d, "the allgather dispatcher is not modelled; priced as alltoall");
      } else {
        job_.plan["moe_dispatcher"] = d == "flex" ? "hierarchical" : "alltoall";
        job_.Map(a->flag, d, d == "flex" ? "plan.moe_dispatcher = hierarchical (DeepEP)" : "plan.moe_dispatcher = alltoall");
      }
    }
    if (Switch("--overlap-moe-expert-parallel-comm")) {
      job_.plan["moe_a2a_overlap"] = true;
      job_.Map("--overlap-moe-expert-parallel-comm", "", "plan.moe_a2a_overlap = true");
    }
    if (Switch("--use-flash-attn")) {
      job_.plan["attention"] = "flash";
      job_.Map("--use-flash-attn", "", "plan.attention = flash");
    }
    if (Arg* a = Take("--attention-backend")) {
      std::string b = OneOf(*a, {"flash", "fused", "unfused", "local", "auto"});
      job_.plan["attention"] = b == "unfused" || b == "local" ? "unfused" : "flash";
      job_.Map(a->flag, b, "plan.attention = " + job_.plan["attention"].get<std::string>());
    }
    if (Arg* a = Take("--transformer-impl")) {
      std::string t = Text(*a);
      if (t == "transformer_engine") {
        job_.Ignore(a->flag, t, "Transformer Engine: the framework's (megatron-core) default");
      } else {
        job_.Unmapped(a->flag, t, "a transformer implementation other than Transformer Engine is not modelled");
      }
    }
    for (const char* f : {"--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers"}) {
      if (Arg* a = Take(f)) {
        job_.plan["uneven_stages"] = true;
        job_.Unmapped(a->flag, Joined(a->values), "plan.uneven_stages = true: stacksim gives the remainder to the "
                                                  "first and last stages, not this count");
      }
    }
  }

  // Model shape flags: a whole model when the file gives one, and claims to
  // check against --model.
  void Model() {
    auto claim = [&](const std::string& flag, const std::string& value, const char* key, nlohmann::json v) {
      job_.claims.push_back({flag, key, v});
      job_.Map(flag, value, std::string("model.") + key);
    };
    auto int_claim = [&](const char* flag, const char* key) -> std::optional<int64_t> {
      Arg* a = Take(flag);
      if (a == nullptr) return std::nullopt;
      int64_t v = Int(*a);
      claim(flag, std::to_string(v), key, v);
      return v;
    };
    auto layers = int_claim("--num-layers", "num_hidden_layers");
    // A hybrid layer pattern gives the layers itself: Megatron-LM derives
    // --num-layers from its length (arguments.py, "Derive num_layers from
    // pattern"), and its own examples/mamba/train.sh passes none.
    if (!layers) {
      for (const char* flag : {"--hybrid-layer-pattern", "--hybrid-override-pattern"}) {
        auto it = index_.find(flag);
        if (it == index_.end() || args_[it->second].values.size() != 1) continue;
        const std::string& p = args_[it->second].values[0].text;
        if (!p.empty() && p.find_first_not_of("M*-E") == std::string::npos) {
          layers = static_cast<int64_t>(p.size());
          job_.claims.push_back({flag, "num_hidden_layers", *layers});
        }
      }
    }
    const auto hidden = int_claim("--hidden-size", "hidden_size");
    const auto heads = int_claim("--num-attention-heads", "num_attention_heads");
    auto ffn = int_claim("--ffn-hidden-size", "intermediate_size");
    const auto head_dim = int_claim("--kv-channels", "head_dim");
    const bool gqa = Switch("--group-query-attention");
    std::optional<int64_t> kv;
    if (Arg* a = Take("--num-query-groups")) {
      if (gqa) {
        kv = Int(*a);
        claim(a->flag, std::to_string(*kv), "num_key_value_heads", *kv);
      } else {
        job_.Ignore(a->flag, Text(*a), "applies with --group-query-attention only");
      }
    }
    if (gqa) job_.Map("--group-query-attention", "", "model.num_key_value_heads (from --num-query-groups)");
    const bool defines = layers.has_value();  // Megatron-LM requires --num-layers: the file describes a model
    if (defines && !gqa && heads) job_.claims.push_back({"--num-query-groups", "num_key_value_heads", *heads});
    const bool swiglu = Switch("--swiglu"), squared_relu = Switch("--squared-relu");
    if (swiglu) job_.Map("--swiglu", "", "model.hidden_act = swiglu");
    if (squared_relu) job_.Map("--squared-relu", "", "model.hidden_act = squared_relu");
    if (defines || swiglu) job_.claims.push_back({"--swiglu", "gated", swiglu});
    std::string norm = "layernorm";
    if (Arg* a = Take("--normalization")) {
      norm = OneOf(*a, {"LayerNorm", "RMSNorm"}) == "RMSNorm" ? "rmsnorm" : "layernorm";
      claim(a->flag, Text(*a), "norm_type", norm);
    } else if (defines) {
      job_.claims.push_back({"--normalization", "norm_type", norm});
    }
    const bool untie = Switch("--untie-embeddings-and-output-weights");
    if (untie) job_.Map("--untie-embeddings-and-output-weights", "", "model.tie_word_embeddings = false");
    if (defines || untie) job_.claims.push_back({"--untie-embeddings-and-output-weights", "tie_word_embeddings", !untie});
    std::string position = "learned";
    if (Arg* a = Take("--position-embedding-type")) {
      std::string t = OneOf(*a, {"learned_absolute", "rope", "mrope", "relative", "none"});
      if (t == "mrope" || t == "relative") {
        job_.Unmapped(a->flag, t, "not modelled; priced as rope");
        t = "rope";
      }
      position = t == "learned_absolute" ? "learned" : t;
      job_.Map(a->flag, t, "model.position_embedding_type = " + position);
    }
    if (Switch("--use-rotary-position-embeddings")) {
      position = "rope";
      job_.Map("--use-rotary-position-embeddings", "", "model.position_embedding_type = rope");
    }
    std::optional<int64_t> max_pos;
    if (Arg* a = Take("--max-position-embeddings")) {
      max_pos = Int(*a);
      job_.Map(a->flag, std::to_string(*max_pos), "model.max_position_embeddings");
      if (position == "learned") job_.claims.push_back({a->flag, "max_position_embeddings", *max_pos});
    }
    const bool bias = !Switch("--disable-bias-linear");
    if (!bias) job_.Map("--disable-bias-linear", "", "model.attention_bias = model.mlp_bias = false");
    if (Switch("--add-qkv-bias")) {
      if (bias) {
        job_.Ignore("--add-qkv-bias", "", "the linear layers have biases already");
      } else {
        job_.Unmapped("--add-qkv-bias", "", "a bias on QKV alone is not modelled (a few thousand parameters per layer)");
      }
    }
    double hidden_dropout = 0.1, attention_dropout = 0.1;  // Megatron-LM's defaults
    if (Arg* a = Take("--hidden-dropout")) hidden_dropout = Real(*a), job_.Map(a->flag, Text(*a), "model.hidden_dropout");
    if (Arg* a = Take("--attention-dropout")) {
      attention_dropout = Real(*a);
      job_.Map(a->flag, Text(*a), "model.attention_dropout");
    }
    std::optional<int64_t> vocab;
    if (Arg* a = Take("--vocab-size")) {
      vocab = Int(*a);
      claim(a->flag, std::to_string(*vocab), "vocab_size", *vocab);
    }
    int64_t divisible = 128;
    if (Arg* a = Take("--make-vocab-size-divisible-by")) {
      divisible = Int(*a);
      job_.Map(a->flag, std::to_string(divisible), "model.vocab_size (padding)");
    }
    // MoE.
    const auto experts = int_claim("--num-experts", "num_experts");
    std::optional<int64_t> topk = int_claim("--moe-router-topk", "num_experts_per_tok");
    const auto moe_ffn = int_claim("--moe-ffn-hidden-size", "moe_intermediate_size");
    std::optional<int64_t> shared;
    if (Arg* a = Take("--moe-shared-expert-intermediate-size")) {
      shared = Int(*a);
      job_.Map(a->flag, std::to_string(*shared), "model.shared_expert_intermediate_size");
    }
    if (Arg* a = Take("--moe-layer-freq")) {
      if (Text(*a) == "1") {
        job_.Map(a->flag, "1", "every layer a MoE layer (the default)");
      } else {
        job_.Unmapped(a->flag, Text(*a), "a pattern of dense and MoE layers: give a model file with it (--model)");
      }
    }

    const auto latent = int_claim("--moe-latent-size", "moe_latent_size");
    // Hybrid (Mamba-2) stacks, as pretrain_mamba.py takes them: the layer
    // pattern (--hybrid-layer-pattern, formerly --hybrid-override-pattern)
    // and the mixer's shape with TransformerConfig's defaults (state 128,
    // head_dim 64, 8 groups, heads = 2 x hidden / head_dim).
    std::optional<std::string> pattern;
    for (const char* flag : {"--hybrid-layer-pattern", "--hybrid-override-pattern"}) {
      if (Arg* a = Take(flag)) {
        pattern = Text(*a);
        claim(flag, *pattern, "hybrid_override_pattern", *pattern);
      }
    }
    for (const char* flag : {"--hybrid-attention-ratio", "--hybrid-mlp-ratio"}) {
      if (Arg* a = Take(flag)) job_.Unmapped(flag, Text(*a), "a pattern from ratios: give --hybrid-layer-pattern");
    }
    auto mamba_int = [&](const char* flag, const char* key) -> std::optional<int64_t> {
      Arg* a = Take(flag);
      if (a == nullptr) return std::nullopt;
      const int64_t v = Int(*a);
      job_.Map(flag, std::to_string(v), std::string("model.") + key);
      return v;
    };
    const auto mamba_heads = mamba_int("--mamba-num-heads", "mamba_num_heads");
    const auto mamba_head_dim = mamba_int("--mamba-head-dim", "mamba_head_dim");
    const auto mamba_state = mamba_int("--mamba-state-dim", "ssm_state_size");
    const auto mamba_groups = mamba_int("--mamba-num-groups", "n_groups");
    const auto mtp = mamba_int("--mtp-num-layers", "num_nextn_predict_layers");
    // Gated DeltaNet layers (Qwen3-Next: --experimental-attention-variant
    // gdn, formerly gated_delta_net), every --linear-attention-freq-th
    // layer full attention, with TransformerConfig's widths where absent
    // (16 key heads, 32 value heads, 128 each, conv 4).
    bool gdn = false;
    if (Arg* a = Take("--experimental-attention-variant")) {
      const std::string v = OneOf(*a, {"gdn", "gated_delta_net", "gdn2", "dsa"});
      if (v == "gdn" || v == "gated_delta_net") {
        gdn = true;
        claim(a->flag, v, "linear_attention", true);
      } else {
        job_.Unmapped(a->flag, v, "not modelled");
      }
    }
    std::optional<int64_t> linear_freq;
    if (Arg* a = Take("--linear-attention-freq")) {
      linear_freq = Int(*a);
      job_.Map(a->flag, std::to_string(*linear_freq), "model.full_attention_interval");
    }
    const auto lin_kh = mamba_int("--linear-num-key-heads", "linear_num_key_heads");
    const auto lin_vh = mamba_int("--linear-num-value-heads", "linear_num_value_heads");
    const auto lin_kd = mamba_int("--linear-key-head-dim", "linear_key_head_dim");
    const auto lin_vd = mamba_int("--linear-value-head-dim", "linear_value_head_dim");
    const auto lin_conv = mamba_int("--linear-conv-kernel-dim", "linear_conv_kernel_dim");
    const bool output_gate = Switch("--attention-output-gate");
    const bool shared_gate = Switch("--moe-shared-expert-gate");
    if (shared_gate) job_.Map("--moe-shared-expert-gate", "", "model.shared_expert_gate = true");
    if (output_gate) job_.Map("--attention-output-gate", "", "model.attn_output_gate = true");
    std::optional<std::string> mtp_pattern;
    if (Arg* a = Take("--mtp-hybrid-override-pattern")) {
      mtp_pattern = Text(*a);
      job_.Map(a->flag, *mtp_pattern, "model.mtp_hybrid_override_pattern");
    }

    if (!defines || !hidden || !heads) {
      job_.inline_model_missing = "the file does not give --num-layers, --hidden-size and --num-attention-heads";
      return;
    }
    if (!vocab) {
      job_.inline_model_missing = "the file does not give --vocab-size (the tokenizer's vocabulary is not read)";
      return;
    }
    if (!ffn) ffn = swiglu ? (4 * *hidden * 2 / 3) / 64 * 64 : 4 * *hidden;  // Megatron-LM's default width
    // Megatron-LM pads the vocabulary to a multiple of
    // --make-vocab-size-divisible-by x tp (arguments.py, _vocab_size_with_padding).
    const int64_t tp = job_.tp.has() ? *job_.tp : 1;
    const int64_t multiple = divisible * tp;
    const int64_t padded = (*vocab + multiple - 1) / multiple * multiple;
    nlohmann::json m = {
        {"name", std::filesystem::path(file_).filename().string() + " (Megatron-LM flags)"},
        {"source", "stacksim import of " + file_ + ": the Megatron-LM model-shape flags (vocabulary padded to " +
                       std::to_string(padded) + " as Megatron-LM pads it)"},
        {"hidden_size", *hidden},
        {"num_hidden_layers", *layers},
        {"num_attention_heads", *heads},
        {"num_key_value_heads", kv ? *kv : *heads},
        {"intermediate_size", *ffn},
        {"vocab_size", padded},
        {"hidden_act", swiglu ? "swiglu" : squared_relu ? "squared_relu" : "gelu"},
        {"norm_type", norm},
        {"tie_word_embeddings", !untie},
        {"attention_bias", bias},
        {"mlp_bias", bias},
        {"position_embedding_type", position},
        {"hidden_dropout", hidden_dropout},
        {"attention_dropout", attention_dropout},
    };
    if (head_dim) m["head_dim"] = *head_dim;
    if (max_pos) m["max_position_embeddings"] = *max_pos;
    if (experts) {
      m["num_experts"] = *experts;
      m["num_experts_per_tok"] = topk ? *topk : 2;  // Megatron-LM's --moe-router-topk default
      m["moe_intermediate_size"] = moe_ffn ? *moe_ffn : *ffn;
      if (shared) m["shared_expert_intermediate_size"] = *shared;
      if (latent) m["moe_latent_size"] = *latent;
      if (shared_gate) m["shared_expert_gate"] = true;
    }
    if (gdn) {
      m["linear_num_key_heads"] = lin_kh ? *lin_kh : 16;
      m["linear_num_value_heads"] = lin_vh ? *lin_vh : 32;
      m["linear_key_head_dim"] = lin_kd ? *lin_kd : 128;
      m["linear_value_head_dim"] = lin_vd ? *lin_vd : 128;
      m["linear_conv_kernel_dim"] = lin_conv ? *lin_conv : 4;
      if (linear_freq) m["full_attention_interval"] = *linear_freq;
    }
    if (output_gate) m["attn_output_gate"] = true;
    if (mtp) m["num_nextn_predict_layers"] = *mtp;
    if (mtp_pattern) m["mtp_hybrid_override_pattern"] = *mtp_pattern;
    if (pattern) {
      m["hybrid_override_pattern"] = *pattern;
      if (pattern->find('M') != std::string::npos) {
        const int64_t head_dim_m = mamba_head_dim ? *mamba_head_dim : 64;
        m["mamba_head_dim"] = head_dim_m;
        m["mamba_num_heads"] = mamba_heads ? *mamba_heads : 2 * *hidden / head_dim_m;
        m["ssm_state_size"] = mamba_state ? *mamba_state : 128;
        m["n_groups"] = mamba_groups ? *mamba_groups : 8;
      }
    }
    job_.inline_model = m;
  }

  void Rest() {
    for (Arg& a : args_) {
      if (a.used) continue;
      if (const char* why = IgnoredReason(a.flag)) {
        job_.Ignore(a.flag, Joined(a.values), why);
      } else if (a.flag.rfind("--no-", 0) == 0 && a.flag.find("fusion") != std::string::npos) {
        job_.Unmapped(a.flag, Joined(a.values), "an unfused kernel: stacksim prices the fused one");
      } else {
        job_.Unmapped(a.flag, Joined(a.values), "not understood");
      }
    }
  }

  std::string file_;
  ImportedJob job_;
  std::vector<Arg> args_;
  std::map<std::string, size_t> index_;
  bool train_is_pretrain_ = false;
};

}  // namespace

ImportedJob ReadMegatron(const std::string& text, const std::string& file) { return Reader(text, file).Read(); }

}  // namespace stacksim::importer
