// A training framework as facts: what Megatron-LM, NeMo, torchtitan,
// llm-foundry, MaxText, DeepSpeed and the others do that a parallel plan does
// not say (attention kernel class, kernel fusion, sequence-parallel and
// sharding defaults, gradient-reduction overlap and dtype, which selective
// recomputation it offers, the architecture details of the model family it
// trains). One data file per framework under frameworks/ (schema
// stacksim.framework/1, docs/formats.md), every fact with its source: the
// framework's own configs, docs or code.
//
// A scenario names a framework ("framework": "megatron-core"); its facts are
// the plan's defaults, and plan keys the scenario gives win. A published run
// names its framework in free text ("NeMo 24.07 (Megatron-Core)"); the
// profile whose match is the most specific selects it (MatchFramework).
#ifndef STACKSIM_SIM_CONFIG_FRAMEWORK_H_
#define STACKSIM_SIM_CONFIG_FRAMEWORK_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/model.h"
#include "sim/config/plan.h"

namespace stacksim::config {

// Which selective recomputation the framework runs when a plan asks for
// "selective": none at all (Megatron-LM before Korthikanti et al. 2022 could
// only checkpoint whole layers), Megatron-Core's recompute modules
// (core_attn by default), torchtitan's op-level policy (plan.h
// SelectivePolicy::kOpPolicy) or MaxText's save_qkv_proj (kSaveQkvProj).
enum class SelectiveRecomputeKind { kUnavailable, kModules, kOpPolicy, kSaveQkvProj };
// "unavailable", "modules", "op-policy", "save-qkv-proj"
const char* SelectiveRecomputeKindName(SelectiveRecomputeKind k);

// The architecture details of a non-gated (GELU/ReLU) model that the schema of
// a published run leaves out: GPT as Megatron-LM trains it (learned
// positions, biases, dropout 0.1, tied embeddings) or MPT as llm-foundry does
// (ALiBi, no biases, no dropout, tied embeddings). Gated-MLP models follow
// the Llama family whatever the framework.
enum class ModelFamily { kGpt, kMpt };
const char* ModelFamilyName(ModelFamily f);  // "gpt", "mpt"

struct FrameworkProfile {
  std::string name;   // the file's stem: "megatron-core"
  std::string title;  // "Megatron-LM with Megatron-Core (2023-)"
  std::string file;
  // Each entry: substrings that must all appear (ignoring case) in a run's
  // framework text for this profile to match.
  std::vector<std::vector<std::string>> matches;
  // Entries tried only when no profile's `matches` entry matches: a family
  // name without a release ("Megatron-LM core_r0.13.0") or a generic one
  // ("PyTorch FSDP") that a more specific profile would otherwise lose to.
  std::vector<std::vector<std::string>> fallback_matches;

  AttentionImpl attention = AttentionImpl::kFlash;
  KernelFusion kernels = KernelFusion::kFused;
  bool sequence_parallel = false;          // with tp > 1, when the plan does not say
  Sharding sharding = Sharding::kNone;     // when the plan does not say
  bool overlap_grad_reduce = true;
  // Dense models, and mixture-of-experts models (whose recipes often turn
  // the GEMM overlap off).
  TpCommOverlap tp_comm_overlap = TpCommOverlap::kNone;
  TpCommOverlap tp_comm_overlap_moe = TpCommOverlap::kNone;
  TpCommOverlap TpOverlapFor(bool moe) const { return moe ? tp_comm_overlap_moe : tp_comm_overlap; }
  // What a run that does not state its precision or recomputation trained
  // with, where the framework's own launch scripts fix it (facts "precision",
  // "recompute"); unset: bf16, and the recomputation validate's plan search
  // picks.
  std::optional<Precision> unstated_precision;
  std::optional<Recompute> unstated_recompute;
  Precision grad_precision_bf16 = Precision::kFp32;  // gradient buffers and their reduction, bf16/fp8 training
  Precision grad_precision_fp16 = Precision::kFp32;  // the same under fp16 training
  // How micro-batch gradients accumulate and whether ZeRO-1/2 all-reduces
  // them, per training dtype like grad_precision (optional facts
  // "grad_accumulation" and "zero_grad_all_reduce"; absent: fused, false).
  GradAccumulation grad_accumulation_bf16 = GradAccumulation::kFused;
  GradAccumulation grad_accumulation_fp16 = GradAccumulation::kFused;
  bool zero_grad_all_reduce_bf16 = false;
  bool zero_grad_all_reduce_fp16 = false;
  SelectiveRecomputeKind selective_recompute = SelectiveRecomputeKind::kModules;
  // The wider selective module sets the framework's own tuning guide turns
  // to, narrowest first, before full recomputation (fact
  // "recompute_escalation"; kModules only). Empty: the default modules
  // (core_attn) are the only selective setting a run is taken to have used.
  std::vector<RecomputeModules> recompute_escalation;
  ModelFamily non_gated_family = ModelFamily::kGpt;
  // The micro-batch a run that does not state it used: chosen by the job's
  // tuning (any size dividing the local batch), or the whole local batch
  // without gradient accumulation, split into pp micro-batches under pipeline
  // parallelism (torchtitan of 2024).
  bool whole_local_batch = false;
  // A fixed micro-batch size (a launch script's --micro-batch-size); 0: none.
  int64_t fixed_micro_batch = 0;
  // The virtual stages per pipeline rank of a run that does not state them:
  // 0, chosen by tuning (interleaving searched); 1, the framework's default
  // 1F1B (torchtitan's pipeline_parallel_schedule); 2 or more, interleaved
  // 1F1B with the framework's default stages per rank (torchtitan's
  // generate_split_points: 2).
  int default_vp = 0;
  // DualPipe (fact pipeline_schedule "dualpipe"; DeepSeek-V3 report §3.2.1):
  // every pipeline rank holds two stages, one from each end, and runs one
  // micro-batch's forward beside another's backward. No virtual stages.
  bool dualpipe = false;
  // How MoE tokens reach their experts (fact "moe_dispatcher"; absent:
  // Megatron-Core's alltoall dispatcher).
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  // The model parallelism the framework offers (fact "model_parallelism",
  // a list of "tp" and "pp"; absent: both). Only validate's choice of a
  // layout a run leaves open reads it: a layout the framework cannot run is
  // not a candidate.
  bool offers_tp = true;
  bool offers_pp = true;
  // SMs the framework's communication kernels hold for the whole step
  // (fact "comm_sms"; PlanConfig::comm_sms).
  int comm_sms = 0;
  // What the framework's own performance recipe for one model sets that a
  // run does not state (fact "model_recipes"). A run's model is a recipe's
  // when its name, in lower case without punctuation, starts with one of the
  // recipe's ("DeepSeekV3" and "DeepSeek-V3 671B" are "DeepSeek-V3"); a
  // recipe that names GPUs ("gpus") holds only on a GPU profile whose name
  // starts so ("h100" is h100-sxm-80gb), where the framework's recipes
  // differ between GPUs.
  struct ModelRecipe {
    std::vector<std::string> models;
    std::vector<std::string> gpus;  // empty: every GPU
    std::optional<MoeDispatcher> moe_dispatcher;
    std::optional<bool> expert_tp_follows_tp;  // "expert_tensor_parallel": 1 or "tp", as the fact
    std::optional<OptimizerState> optimizer_state;  // "optimizer_state", as the fact
    std::optional<TpCommOverlap> tp_comm_overlap;    // "tp_comm_overlap", one mode
    std::optional<bool> moe_a2a_overlap;             // PlanConfig::moe_a2a_overlap
  };
  std::vector<ModelRecipe> model_recipes;
  // The first recipe for the model called `model_name` on the GPU profile
  // `gpu`, or nullptr.
  const ModelRecipe* RecipeFor(const std::string& model_name, const std::string& gpu) const;
  // Sets on `plan` what `recipe` names (the dispatcher and etp on a MoE model
  // only), except the plan keys `stated` says the plan gives
  // ("moe_dispatcher", "etp", "optimizer_state", "tp_comm_overlap",
  // "moe_a2a_overlap"); the all-to-all overlap only where the plan's
  // schedule runs it (MoeA2aOverlapRuns).
  static void ApplyRecipe(const ModelRecipe& recipe, bool moe, PlanConfig& plan,
                          const std::function<bool(const char* key)>& stated);
  // The modules selective recomputation recomputes when a run says
  // "selective" (fact "selective_recompute_modules"; absent: Megatron-Core's
  // default, core_attn).
  std::optional<RecomputeModules> selective_modules;
  // Optional facts (Megatron-Core's behaviour when a file leaves them out).
  LossLogits loss_logits = LossLogits::kInPlace;
  EagerModules eager_modules = EagerModules::kLibrary;  // PlanConfig::eager_modules
  Fp8Casts fp8_casts = Fp8Casts::kPerForward;            // PlanConfig::fp8_casts
  bool fp8_amax_reduction = false;                       // PlanConfig::fp8_amax_reduction
  bool compiled_layers_only = false;                    // PlanConfig::compiled_layers_only
  bool repeat_kv_copies = false;                        // PlanConfig::repeat_kv_copies
  bool fsdp_pp_reshard = true;
  bool sp_keeps_gathered_inputs = false;
  // MoE expert tensor parallelism when the run does not say it: 1 (each
  // rank holds whole experts), or the tensor-parallel size (Megatron-Core's
  // default for an unset expert_tensor_parallel_size).
  bool expert_tp_follows_tp = false;
  bool cp_torch_ring = false;  // PlanConfig::cp_torch_ring
  bool fsdp_copies = false;    // PlanConfig::fsdp_copies (FSDP2's copy-out and copy-in)
  bool pp_blocking_sends = false;  // PlanConfig::pp_blocking_sends
  bool single_round_all_forwards = false;  // PlanConfig::single_round_all_forwards
  bool overlap_param_gather = true;        // PlanConfig::overlap_param_gather (ZeRO-1/2: the gather after the step)
  OptimizerState optimizer_state;          // PlanConfig::optimizer_state (fact "optimizer_state")
  bool fp8_tp_gather = false;  // PlanConfig::fp8_tp_gather
  bool fp8_params = false;     // PlanConfig::fp8_params
  CpComm cp_comm = CpComm::kP2p;  // PlanConfig::cp_comm (Megatron-Core's ring of K/V blocks)
  Zero3Gather zero3_gather = Zero3Gather::kPrefetchPerLayer;
  double zero3_max_reuse_distance = 1e9;

  // The gradient dtype of training in `training` precision.
  Precision GradPrecision(Precision training) const;
  // The gradient accumulation and ZeRO gradient reduction of training in
  // `training` precision (fp32 training: fused, reduce-scatter).
  GradAccumulation GradAccumulationFor(Precision training) const;
  bool ZeroGradAllReduceFor(Precision training) const;
  // `base` with this framework's defaults: attention, kernels, sequence
  // parallelism, sharding, overlap, the selective-recompute policy and the
  // gradient dtype for base.precision.
  PlanConfig PlanDefaults(PlanConfig base) const;
};

// Reads one framework file. Throws InputError naming the file and key.
FrameworkProfile LoadFrameworkFile(const std::string& path);

// Every frameworks/*.json under the data root (config::DataRoot()), by name.
const std::vector<FrameworkProfile>& ShippedFrameworks();

// The shipped framework called `name` (a file stem). Throws InputError
// (file, key) listing the known names when there is none.
const FrameworkProfile& FrameworkNamed(const std::string& name, const std::string& file, const std::string& key);

// Which profile a run's framework text selected, and how.
struct FrameworkMatch {
  const FrameworkProfile* profile = nullptr;
  bool fallback = false;  // selected by a fallback_matches entry
  std::string entry;      // the entry that matched, its substrings joined by " + "
  bool assumed = false;   // no entry matched: the profile stands in by the run's plan (`entry` says why)
  // "megatron-lm", or "megatron-lm (fallback entry 'Megatron-LM': no
  // profile names 'Megatron-LM core_r0.13.0' more specifically)".
  std::string Describe(const std::string& text) const;
};

// The profile whose matching entry is the most specific (the most characters
// of required substrings) for `text`: first among `matches` entries as
// written, then among them ignoring case, then among `fallback_matches`
// ignoring case, each pass only when the ones before matched nothing. Throws
// InputError (file, key) when no profile matches, or when two match equally
// specifically in the pass that decides.
FrameworkMatch FindFramework(const std::vector<FrameworkProfile>& frameworks, const std::string& text,
                             const std::string& file, const std::string& key);
// The same, with nullopt where no profile matches (a tie still throws).
std::optional<FrameworkMatch> TryFindFramework(const std::vector<FrameworkProfile>& frameworks,
                                               const std::string& text, const std::string& file,
                                               const std::string& key);
const FrameworkProfile& MatchFramework(const std::vector<FrameworkProfile>& frameworks, const std::string& text,
                                       const std::string& file, const std::string& key);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_FRAMEWORK_H_
