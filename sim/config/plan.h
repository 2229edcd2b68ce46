// A parallel plan: how one training job is split over GPUs and scheduled.
//
// Megatron-LM's vocabulary: tensor (tp), pipeline (pp, with vp virtual stages
// per rank for the interleaved schedule), data (dp) parallelism; micro-batch
// and global batch in sequences; recomputation and data-parallel sharding.
// cp (context parallelism) splits each sequence over cp ranks (ring
// attention; ranks ordered tp fastest, then cp, then as rank_order says).
// ep (expert parallelism, MoE models) follows Megatron-Core's MoE parallel
// folding: the routed experts are sharded over EP ranks carved out of the
// data- (and tensor-) parallel ranks of a stage, so ep does not multiply the
// GPU count; ep must divide tp x dp (x cp) and the number of routed experts.
// etp (expert tensor parallelism) splits each expert's FFN width over etp
// ranks (1, or tp: Megatron-Core's default when unset); ep x etp ranks then
// share a layer's experts.
#ifndef STACKSIM_SIM_CONFIG_PLAN_H_
#define STACKSIM_SIM_CONFIG_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/finetune.h"
#include "sim/config/profile.h"
#include "sim/util/json_reader.h"
#include "sim/util/units.h"

namespace stacksim::config {

enum class Recompute { kNone, kSelective, kFull };
enum class Sharding { kNone, kZero1, kZero2, kZero3 };
// Pipeline schedules: GPipe; 1F1B (PipeDream-Flush); Megatron's interleaved
// 1F1B (vp > 1); ZB-H1 (Qi et al., ICLR 2024: backward split into B, the
// activation gradient, and W, the weight gradient, with W deferred to fill
// the bubble at 1F1B's memory); DualPipe (DeepSeek-V3 technical report,
// arXiv:2412.19437 §3.2.1: bidirectional, two model copies per rank, a
// forward and a backward chunk overlapped so the EP all-to-all hides behind
// the other chunk's compute).
enum class PipelineScheduleKind { kGpipe, kOneFOneB, kInterleaved, kZeroBubbleH1, kDualPipe };
// Attention kernels: the fastest fused kernel the GPU's profile describes
// (cuDNN / FlashAttention-3 class on Hopper), FlashAttention-2 (Dao 2023), or
// the unfused QK^T / softmax / PV of Megatron-LM before 2023.
// kOwn: the project's own FlashAttention-2-style kernel (kernels/attention.cu),
// as calibrate's step check runs it.
enum class AttentionImpl { kFlash, kFlash2, kFlash1, kUnfused, kOwn };
const char* AttentionName(AttentionImpl a);  // "flash", "flash2", "flash1", "unfused", "stacksim"
// Reads an attention kernel name (one of AttentionName's); a bad value fails
// naming its file and key.
AttentionImpl ReadAttention(const JsonNode& v);
// Memory-bound work in fused kernels (Megatron-LM, Transformer Engine, torch.compile)
// or as generic PyTorch eager kernels.
enum class KernelFusion { kFused, kEager };
// How a MoE router spreads tokens over the routed experts: evenly, with a
// Zipf skew (expert i's share ~ 1/(i+1)^s, in expert order, so Megatron's
// contiguous expert placement puts the hottest experts on EP rank 0: the
// worst placement of that skew), or a measured per-expert token histogram.
enum class Routing { kUniform, kZipf, kHistogram };
const char* RoutingName(Routing r);  // "uniform", "zipf", "histogram"
// How MoE tokens reach their experts' EP ranks. kAllToAll: Megatron-Core's
// alltoall dispatcher (every routed copy sent on its own by an NCCL
// all-to-all, in bf16). kHierarchical: DeepSeek-V3's dispatch (arXiv:2412.19437
// §3.2.2; DeepEP's normal kernels): one copy per destination node over IB,
// forwarded over NVLink to the GPUs of its experts; FP8 dispatch under fp8
// training (§3.3.2).
enum class MoeDispatcher { kAllToAll, kHierarchical };
const char* MoeDispatcherName(MoeDispatcher d);  // "alltoall", "hierarchical"

// Where optimizer state (fp32 master weights, Adam moments) or the 16-bit
// parameters live when they do not stay in GPU memory: host DRAM over PCIe,
// or NVMe behind the host.
enum class OffloadTarget { kNone, kHost, kNvme };
const char* OffloadName(OffloadTarget t);  // "none", "host", "nvme"

// How context-parallel ranks obtain the other ranks' keys and values: ring
// attention's point-to-point exchange overlapped with the attention of the
// block already held (Megatron-Core's default cp_comm_type "p2p"), or one
// all-gather of K and V before attention, not overlapped, with dK/dV
// reduce-scattered after the backward (Llama 3, arXiv:2407.21783 §3.3.2).
enum class CpComm { kP2p, kAllGather };
const char* CpCommName(CpComm c);  // "p2p", "allgather"

// The order in which global ranks walk the parallel dimensions, fastest
// first (sim/workload/placement.h). kTpCpDpPp is Megatron-LM's default:
// data-parallel replicas next to each other, pipeline stages furthest apart.
// kTpCpPpDp is Megatron-LM's --use-tp-pp-dp-mapping: the stages of one
// pipeline follow each other right after tp x cp, so with tp x cp below the
// NVLink domain pipeline sends stay on NVLink while the data-parallel
// gradient collectives cross nodes.
enum class RankOrder { kTpCpDpPp, kTpCpPpDp };
const char* RankOrderName(RankOrder o);  // "tp-cp-dp-pp", "tp-cp-pp-dp"

// The submodules selective recomputation re-runs in the backward, as
// Megatron-Core's --recompute-modules (TransformerConfig.recompute_modules,
// megatron/core/transformer/transformer_config.py) names them: core_attn (the
// core attention), layernorm (the input and pre-MLP norms that are modules of
// their own: MLA's input norm and a MoE layer's norm; norms fused into the next
// linear, Transformer Engine's LayerNormLinear, stay), mla_up_proj (MLA's
// up-projections and RoPE), mlp (a dense MLP), moe_act (the routed experts'
// activation), moe (the whole MoE layer), shared_experts (the shared-expert
// MLP). The list is in sim/workload/recompute_modules.cc SelectiveRecompute and
// sim/memory/memory_model.cc LayerActivations.
enum class RecomputeModule { kCoreAttn, kLayerNorm, kMlaUpProj, kMlp, kMoeAct, kMoe, kSharedExperts };
inline constexpr int kRecomputeModuleCount = 7;
const char* RecomputeModuleName(RecomputeModule m);  // "core_attn", "layernorm", ...

// A set of recompute modules (bit i: RecomputeModule i).
struct RecomputeModules {
  uint32_t bits = 0;
  bool Has(RecomputeModule m) const { return (bits >> static_cast<int>(m)) & 1u; }
  RecomputeModules& Add(RecomputeModule m) {
    bits |= 1u << static_cast<int>(m);
    return *this;
  }
  bool operator==(const RecomputeModules& o) const { return bits == o.bits; }
  // Megatron-Core's default, ["core_attn"]: Korthikanti et al.'s selective recomputation.
  static RecomputeModules Default() { return RecomputeModules{}.Add(RecomputeModule::kCoreAttn); }
};
// A JSON array of module names (["core_attn", "layernorm"]); throws
// InputError naming the node for a non-array, an unknown or a repeated name.
RecomputeModules ReadRecomputeModules(const JsonNode& v);
// "core_attn, layernorm" in RecomputeModule order.
std::string RecomputeModulesText(RecomputeModules m);

// What "selective" recomputation re-runs: Megatron-Core's recompute modules
// (recompute_modules), or torchtitan's op-level policy (torchtitan
// parallelize_llama.py _apply_ac_to_transformer_block, mode "selective",
// option "op"): per transformer block, the outputs of matrix multiplies are
// saved except every second one (in a Llama block wk, wo and w3 are
// recomputed), and so are SDPA's outputs, reduce-scatters and the fp8
// amax; norms, RoPE, the activation and element-wise work are recomputed.
// kSaveQkvProj: MaxText's remat_policy save_qkv_proj
// (jax.checkpoint_policies.save_only_these_names over the query, key and
// value projections' outputs): per layer the input and the QKV GEMMs'
// outputs are saved, and everything else of the forward runs again.
enum class SelectivePolicy { kModules, kOpPolicy, kSaveQkvProj };
const char* SelectivePolicyName(SelectivePolicy p);  // "modules", "op-policy", "save-qkv-proj"

// How the loss holds the logits on the last stage. kInPlace: Megatron-Core's
// vocab_parallel_cross_entropy (megatron/core/tensor_parallel/cross_entropy.py):
// the logits are upcast to fp32 once, the softmax is computed in place and
// kept, and the backward turns it into the gradient in place, cast back to
// 16-bit for the output layer: 4 + 2 bytes per logit. kUpcast: torchtitan's
// cross_entropy_loss, F.cross_entropy(pred.float(), labels): log_softmax keeps
// its fp32 output, and at the loss backward that output, nll_loss's fp32
// gradient and log_softmax's fp32 gradient coexist: 12 bytes per logit.
enum class LossLogits { kInPlace, kUpcast };
const char* LossLogitsName(LossLogits l);  // "inplace", "upcast"

// How eager kernels (plan.kernels "eager") run the model's RMSNorm and
// rotary embedding. kLibrary: one library kernel each (F.rms_norm, a fused
// RoPE), priced at the profile's eager efficiencies. kFp32TensorOps: the
// model's own modules written as PyTorch tensor ops on an fp32 upcast
// (torchtitan's RMSNorm x.float() -> pow -> mean -> rsqrt -> mul -> type_as
// -> * weight, and its complex-number apply_rotary_emb), one generic kernel
// per op with autograd's backward of each. With fused kernels
// (torch.compile) the norm is fused but the complex RoPE is not: Inductor
// runs complex operators as ATen fallback kernels. kHfTensorOps: Hugging
// Face transformers' Llama modules: LlamaRMSNorm is the same fp32 tensor
// ops, apply_rotary_pos_emb is q * cos + rotate_half(q) * sin in 16 bits
// (rotate_half: a negation and a cat), eager kernels each; under
// torch.compile both fuse.
enum class EagerModules { kLibrary, kFp32TensorOps, kHfTensorOps };
const char* EagerModulesName(EagerModules m);  // "library", "fp32-tensor-ops", "hf-tensor-ops"
EagerModules ReadEagerModules(const JsonNode& v);  // one of EagerModulesName's

// How FP8 training quantizes the operands of its linear layers. kPerForward:
// every forward casts the 16-bit weight and input to FP8 (read 16 bits,
// write 8), the backward the output gradient (torchao's Float8Linear with
// dynamic scaling casts each use). kTransformerEngine: Transformer Engine's
// fused cast-transpose kernels write the FP8 tensor and its FP8 transpose
// at once (Hopper's FP8 GEMMs take only the TN layout, so the weight and
// data gradients need the transposes), 16 + 8 + 8 bits an element; the
// weights are cast on the first micro-batch of a step only and reused
// (Linear.forward(is_first_microbatch=False) keeps the FP8 weight cache;
// Megatron-Core's TE wrappers pass it since core_r0.5.0), and a recomputed
// forward reuses them too; the FP8 output of the fused norm before the QKV
// and FC1 GEMMs (LayerNormLinear) is transposed for the weight gradient in
// the backward (8 + 8 bits an element).
// kIntoProducers: a compiler folds each activation's and gradient's
// quantization into the kernel that produces it (XLA: the producer's loop
// fusion writes FP8, and the GPU GemmRewriter pass fuses the dequantizing
// convert and scale into the cuBLASLt FP8 GEMM), so only the weights, which
// no kernel produces, are cast by kernels of their own, every forward.
enum class Fp8Casts { kPerForward, kTransformerEngine, kIntoProducers };
const char* Fp8CastsName(Fp8Casts c);  // "per-forward", "transformer-engine", "into-producers"
Fp8Casts ReadFp8Casts(const JsonNode& v);  // one of Fp8CastsName's

// What the optimizer keeps for each trained parameter of 16-bit training,
// beside the 16-bit weights, in Megatron-LM's terms (--exp-avg-dtype,
// --exp-avg-sq-dtype, --main-params-dtype of its precision-aware optimizer):
// Adam's two moments and the master weights. A master is an fp32 copy
// (Megatron-Core's distributed optimizer, PyTorch's AMP), a 16-bit copy, the
// 16-bit remainders that with the bf16 weight make the fp32 value (Apex
// DistributedFusedAdam's store_param_remainders, which NeMo's
// distributed_fused_adam uses for bf16 models), or none (the 16-bit weights
// are updated in place: NeMo's distributed_fused_adam with an optimizer dtype
// of bf16). FP32 training keeps fp32 moments and no master whatever this
// says; FP8 training has no bf16 weights for remainders to complete, so
// there they count as an fp32 master.
enum class StateDtype { kFp32, kBf16, kFp16, kFp8 };
const char* StateDtypeName(StateDtype d);  // "fp32", "bf16", "fp16", "fp8"
double StateDtypeBytes(StateDtype d);      // 4, 2, 2, 1
enum class MasterWeights { kFp32, kBf16, kFp16, kRemainders, kNone };
const char* MasterWeightsName(MasterWeights m);  // "fp32", "bf16", "fp16", "remainders", "none"
struct OptimizerState {
  StateDtype exp_avg = StateDtype::kFp32;
  StateDtype exp_avg_sq = StateDtype::kFp32;
  MasterWeights master = MasterWeights::kFp32;
  // Bytes per trained parameter (the shard is what the caller divides by).
  double BytesPerParam(Precision training) const;
  bool operator==(const OptimizerState&) const = default;
};

// How ZeRO-3 gathers a layer's parameters and reduce-scatters its gradients.
// kPrefetchPerLayer: one flat all-gather per layer, issued one layer ahead
// so it overlaps compute, and one flat reduce-scatter (FSDP's wrapped
// blocks, DeepSpeed since late 2021). kSyncPerParameter: DeepSpeed ZeRO-3 of
// early 2021 (v0.3.13): one all-gather and one reduce-scatter per parameter
// tensor (weights; small tensors stay unsharded), each gather issued after a
// device-wide synchronize, so nothing overlaps compute, and through
// torch.distributed's list API, which copies each rank's piece to or from a
// flat buffer (one copy per rank of the group); under full recomputation a
// tensor is gathered again for the backward unless the parameters used in
// between are fewer than zero3_max_reuse_distance (docs/workload.md).
// kPipelined: as kPrefetchPerLayer, but in the backward the next layer's
// gather is queued before this layer's reduce-scatter, so it runs while this
// layer computes (XLA's latency-hiding scheduler with pipelined all-gathers
// and reduce-scatters); kPrefetchPerLayer queues it behind that
// reduce-scatter, which waits for this layer's backward.
enum class Zero3Gather { kPrefetchPerLayer, kSyncPerParameter, kPipelined };
// How a micro-batch's weight gradients join the step's gradient buffer.
// kFused: the weight-gradient GEMMs accumulate into it (Megatron's fp32
// main_grad with gradient_accumulation_fusion), no pass of their own.
// kAutogradAdd: autograd adds each micro-batch's 16-bit gradient into the
// parameter's .grad from the second micro-batch on (read 2 + 2, write 2
// bytes a parameter; Megatron-LM 2021 under fp16 without contiguous
// buffers). k16BitAdd: a hook adds it into a 16-bit main gradient every
// micro-batch (the same bytes; Megatron-LM 2022's code under fp16 without
// fp32 accumulation; no profile sets it, docs/workload.md). kFp32Add: a
// hook adds the 16-bit gradient into an fp32 main gradient every
// micro-batch (read 2 + 4, write 4; Megatron-LM 2021's local DDP with fp32
// accumulation). kFp32UpcastAdd: after each micro-batch's
// backward the 16-bit gradients are upcast, then added into fp32 buffers
// (upcast: read 2, write 4; add: read 8, write 4; DeepSpeed's
// BF16_Optimizer, update_hp_grads).
enum class GradAccumulation { kFused, kAutogradAdd, k16BitAdd, kFp32Add, kFp32UpcastAdd };
// "fused", "autograd-add", "16bit-add", "fp32-add", "fp32-upcast-add"
const char* GradAccumulationName(GradAccumulation g);
GradAccumulation ReadGradAccumulation(const JsonNode& v);
// Bytes the accumulation pass moves per parameter (16-bit gradients).
double GradAccumulationBytesPerParam(GradAccumulation g);
// Whether the pass also runs for the first micro-batch of a step (autograd
// takes the first gradient as .grad without an add).
bool GradAccumulationOnFirstMicroBatch(GradAccumulation g);
const char* Zero3GatherName(Zero3Gather g);  // "prefetch-per-layer", "sync-per-parameter", "pipelined"
Zero3Gather ReadZero3Gather(const JsonNode& v);  // one of Zero3GatherName's
// {"exp_avg": one of StateDtypeName's, "exp_avg_sq": the same, "master": one
// of MasterWeightsName's}; a key left out keeps the default (fp32).
OptimizerState ReadOptimizerState(const JsonNode& v);
nlohmann::json OptimizerStateJson(const OptimizerState& s);
// Bytes per logit at the loss's peak.
double LossLogitBytes(LossLogits l);

// Which tensor-parallel collectives run beside a GEMM instead of blocking the
// compute stream. kNone: every one blocks (Megatron-LM before Aug 2021).
// kBackward: a column-parallel layer's data-gradient all-reduce (or, with
// sequence parallelism, reduce-scatter) runs beside its weight-gradient GEMM
// (Megatron-LM since commit 3f65246911, 2021-09-02; Megatron-Core and
// Transformer Engine linears). kGemm: also the sequence-parallel all-gathers
// and reduce-scatters next to the forward and data-gradient GEMMs, split
// into chunks that pipeline with the GEMM (Transformer Engine userbuffers,
// Megatron's --tp-comm-overlap). kPipelined: only those chunked pairs, the
// data-gradient reductions blocking (PyTorch's async TP, Inductor's
// micro-pipeline TP pass: it fuses an all-gather with the matmuls that take
// the gathered tensor and a matmul with the reduce-scatter of its output,
// not a reduce-scatter of a sum of data gradients). docs/workload.md.
enum class TpCommOverlap { kNone, kBackward, kGemm, kPipelined };
const char* TpCommOverlapName(TpCommOverlap o);     // "none", "backward", "gemm", "pipelined"
TpCommOverlap ReadTpCommOverlap(const JsonNode& v);  // one of TpCommOverlapName's

// How data-parallel replicas exchange gradients (docs/workload.md
// "Communicating less"). Throughput what-ifs only: what each method does to
// convergence (more steps for the same loss) is out of scope.
// kEveryStep: every step reduces the gradients (the default).
// kCompression: every step, but each bucket is compressed first
//   (compression_ratio of its bytes sent; compression_passes passes of the
//   bucket's bytes through HBM for compress, error feedback and decompress:
//   PowerSGD, Vogels et al. NeurIPS 2019, Alg. 1; top-k sparsification).
// kDiLoCo: local SGD as DiLoCo (Douillard et al. 2023, arXiv:2311.08105):
//   `workers` groups of dp / workers replicas reduce gradients only within
//   their group for sync_every inner steps; then the pseudo-gradients (outer
//   parameters minus inner ones) are all-reduced across workers and an outer
//   Nesterov step updates the outer parameters.
// kAsync: bounded-staleness asynchronous updates: step t's reduction may run
//   during steps t+1..t+staleness (its gradient is applied staleness steps
//   late).
enum class DpSyncMethod { kEveryStep, kCompression, kDiLoCo, kAsync };
const char* DpSyncMethodName(DpSyncMethod m);  // "every-step", "compression", "diloco", "async"

struct DpSync {
  DpSyncMethod method = DpSyncMethod::kEveryStep;
  double compression_ratio = 1.0;   // bytes sent / bytes (compression)
  double compression_passes = 0;    // HBM passes over the bucket's bytes (compression)
  int sync_every = 1;               // inner steps per outer step, H (diloco)
  int workers = 1;                  // groups that train apart (diloco); divides dp
  Precision outer_precision = Precision::kFp32;  // of the pseudo-gradient all-reduce (diloco)
  int staleness = 0;                // steps a reduction may lag (async), >= 1
};

const char* RecomputeName(Recompute r);
const char* ShardingName(Sharding s);
const char* ScheduleName(PipelineScheduleKind s);

struct PlanConfig {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;
  CpComm cp_comm = CpComm::kP2p;    // with cp > 1
  int ep = 1;
  int etp = 1;                      // expert tensor parallelism (1 or tp)
  int vp = 1;                       // virtual stages per pipeline rank (interleaved)
  RankOrder rank_order = RankOrder::kTpCpDpPp;
  bool sequence_parallel = false;
  int64_t micro_batch = 1;          // sequences per micro-batch
  int64_t global_batch = 1;         // sequences per optimizer step
  Recompute recompute = Recompute::kNone;
  // With recompute kFull: 0 recomputes every layer from its own input
  // (Megatron-Core's uniform method with one layer per checkpoint); N > 0
  // only the first N layers of each model chunk (virtual stage), the others
  // keeping all their activations (Megatron-Core's block method,
  // --recompute-method block --recompute-num-layers N). RecomputesLayer.
  int recompute_layers = 0;
  // With recompute kSelective: which submodules are recomputed.
  RecomputeModules recompute_modules = RecomputeModules::Default();
  // With recompute kSelective: module-based (recompute_modules) or the op policy.
  SelectivePolicy selective_policy = SelectivePolicy::kModules;
  LossLogits loss_logits = LossLogits::kInPlace;
  EagerModules eager_modules = EagerModules::kLibrary;  // with kernels "eager"
  Fp8Casts fp8_casts = Fp8Casts::kPerForward;  // with precision fp8
  // With precision fp8: Transformer Engine's delayed scaling all-reduces the
  // FP8 amaxes over every rank of the pipeline stage (tp x cp x dp) when a
  // chunk's forward leaves fp8_autocast and again in its backward, blocking
  // the compute stream (Megatron-Core's amax reduction group).
  bool fp8_amax_reduction = false;
  // With kernels "fused" from torch.compile: only the transformer layers are
  // compiled (torchtitan's apply_compile wraps each TransformerBlock), so the
  // embedding, final norm, output layer and loss run eager kernels.
  bool compiled_layers_only = false;
  // Grouped-query attention's K and V are copied out to the query heads
  // before the attention kernel (torchtitan's repeat_kv: expand + reshape
  // materialized), and the backward sums the copies; false: the kernel reads
  // the KV heads (flash attention's GQA).
  bool repeat_kv_copies = false;
  OptimizerState optimizer_state;
  // ZeRO-3 with pipeline parallelism: false keeps the gathered 16-bit
  // parameters and unsharded fp32 gradient accumulators through the step, as
  // torchtitan's FSDP2 does under PP (reshard_after_forward=False, gradient
  // sync only on the last micro-batch); true reshards after each use.
  bool fsdp_pp_reshard = true;
  // Sequence parallelism as DTensor runs it (torchtitan's TP plan:
  // PrepareModuleInput redistributes the norm output to Replicate before the
  // column-parallel linears, which keep that gathered input for their weight
  // gradient); false: Megatron keeps the sequence shard and re-gathers it.
  bool sp_keeps_gathered_inputs = false;
  // FP8 training under sequence parallelism: the TP all-gathers that feed FP8
  // GEMMs (the norm outputs before the column-parallel linears, their
  // re-gather for the weight gradient, the row-parallel linears' output
  // gradients) move FP8 data, one byte an element (Transformer Engine,
  // torchao's float8 TP); false: 16-bit. Reduce-scatters stay 16-bit.
  bool fp8_tp_gather = false;
  // FP8 training whose weights are FP8 tensors (Megatron-Core
  // --fp8-param-gather, Transformer Engine's fp8_model_init): no 16-bit copy
  // of the weights is kept (the FP8 data and its transpose, 2 bytes a
  // parameter), the distributed optimizer writes the FP8 weights and
  // all-gathers one byte a parameter, and the step's weight cast is only the
  // transpose. Needs precision fp8.
  bool fp8_params = false;
  // FP8 weights in effect: fp8_params under precision fp8 (a framework's
  // default applies only to its FP8 runs).
  bool Fp8Weights() const { return fp8_params && precision == Precision::kFp8; }
  // Context parallelism as PyTorch's ring attention runs it (torchtitan:
  // torch.distributed.tensor.experimental context_parallel): one SDPA per
  // ring step on the K/V after repeat_kv (query heads wide), the partial
  // outputs merged by unfused fp32 element-wise ops, and the backward's dQ,
  // dK and dV accumulated in fp32 (dK/dV passed around the ring); false: one
  // fused kernel (Transformer Engine).
  bool cp_torch_ring = false;
  Zero3Gather zero3_gather = Zero3Gather::kPrefetchPerLayer;
  // ZeRO-3 as PyTorch's FSDP2 (fully_shard) runs it: parameters are sharded
  // one by one, so each all-gather's flat output is copied out into the
  // unsharded parameters on the compute stream before the layer runs (read
  // and write the gathered bytes), and each reduce-scatter's flat input is
  // copied in from the unsharded gradients on the reduce-scatter stream,
  // cast to the reduce dtype (read the gradients, write the input); false:
  // the collectives work in place (FSDP1's flat parameter, Megatron's
  // buffers, DeepSpeed). torch/distributed/_composable/fsdp/_fsdp_collectives.py
  // foreach_all_gather_copy_out, foreach_reduce_scatter_copy_in.
  bool fsdp_copies = false;
  // Pipeline sends that block the sender: the rank's next pass starts only
  // when its last send has been delivered (Megatron-LM's _communicate through
  // early 2023: batch_isend_irecv, wait on every request, then
  // torch.cuda.synchronize(); DeepSpeed's pipeline engine sends with
  // dist.send). False: the send runs on its own stream and only the receiver
  // waits for it.
  bool pp_blocking_sends = false;
  // kSyncPerParameter: the reuse distance (parameter elements used in
  // between) under which a gathered tensor is kept for its next use
  // (DeepSpeed's stage3_max_reuse_distance).
  double zero3_max_reuse_distance = 1e9;
  GradAccumulation grad_accumulation = GradAccumulation::kFused;
  // ZeRO-1/2: the gradients are all-reduced in full, not reduce-scattered,
  // before each rank steps on its shard (DeepSpeed's BF16_Optimizer under the
  // pipeline engine). The parameter all-gather after the step stays.
  bool zero_grad_all_reduce = false;
  Sharding sharding = Sharding::kNone;
  // ZeRO-3/FSDP only: the data-parallel ranks one copy of the parameters is
  // sharded over (hybrid sharding, PyTorch's HSDP / torchtitan's dp_shard;
  // the dp / shard_group copies all-reduce their gradient shards). 0: the
  // whole dp group. Context-parallel ranks hold the same weights and join
  // every shard group (FsdpShardRanks).
  int shard_group = 0;
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
  Precision precision = Precision::kBf16;
  bool overlap_grad_reduce = true;  // DP gradient reduction overlapped with backward
  TpCommOverlap tp_comm_overlap = TpCommOverlap::kNone;
  bool overlap_param_gather = true; // ZeRO-3/FSDP: prefetch next layer's weights
  Bytes grad_bucket{40e6 * 4};      // Megatron default bucket: 40M elements of fp32
  bool cuda_graphs = false;
  // SMs that communication kernels hold for the whole step, so GEMMs and
  // attention run on the rest (DeepSeek-V3's DualPipe: 20 of 132 for the
  // all-to-all and pipeline transfers, arXiv:2412.19437 §3.2.2). 0: none.
  int comm_sms = 0;
  // SMs a collective's kernels take from GEMMs and attention that start while
  // it is in flight on the same GPU (sim/cost/comm_overlap.h). Unset: the
  // fitted constant (validation/fitted_constants.json overlap_comm_sms).
  std::optional<int> overlap_comm_sms;
  AttentionImpl attention = AttentionImpl::kFlash;
  KernelFusion kernels = KernelFusion::kFused;
  // Allow layer counts that do not divide into equal stages: the first and
  // last (virtual) stages then hold fewer layers (Llama 3's 405B run;
  // Megatron-Core's decoder_first/last_pipeline_num_layers).
  bool uneven_stages = false;
  // Precision of data-parallel gradient reduction (Megatron keeps fp32 main grads).
  // The dtype of the gradient buffers and their data-parallel reduction. Unset:
  // fp32 (Megatron-LM's main gradients), or under ZeRO-3 the 16-bit compute
  // dtype (PyTorch FSDP's and DeepSpeed's reduce dtype default); a framework
  // (frameworks/*.json) or the plan sets it. Read it with GradReducePrecision().
  std::optional<Precision> grad_reduce_precision;
  // MoE routing (see Routing); the slowest EP rank sets the pace.
  Routing routing = Routing::kUniform;
  double zipf_exponent = 1.0;
  std::vector<double> routing_histogram;  // tokens (any scale) per routed expert
  // 0: dropless (every routed token is computed). Otherwise GShard/Switch
  // capacity: each expert takes at most capacity_factor x the mean tokens per
  // expert and its buffer is padded to that capacity.
  double capacity_factor = 0;
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  // 1F1B all-to-all overlap (Megatron-Core overlap_moe_expert_parallel_comm,
  // Megatron-Bridge's moe_a2a_overlap): in the steady state each forward
  // runs with the backward of an earlier micro-batch, their expert
  // all-to-alls on a stream of their own behind the other's compute; one
  // more warm-up micro-batch is held. MoE with ep > 1, 1F1B or interleaved.
  bool moe_a2a_overlap = false;
  // Interleaved 1F1B: how many micro-batches run each model chunk before the
  // next chunk starts (Megatron-Core's microbatch_group_size_per_vp_stage);
  // 0 is Megatron-Core's default, pp. The warm-up holds (vp-1) x group chunk
  // forwards beside the 2 (pp-1-rank) of the fill, and a micro-batch count
  // that is not a multiple of pp runs (ValidatePlan: pp <= group <= the
  // micro-batches, the last group empty or at least pp). Other schedules
  // ignore it.
  int microbatch_group = 0;
  // Interleaved 1F1B with exactly pp micro-batches (one round): every
  // forward runs before the first backward (Megatron-LM's schedule from its
  // 2020 interleaving through Megatron-Core 0.9: "if num_microbatches ==
  // pipeline_parallel_size", all warm-up). Megatron-Core 0.10 (commit
  // 4295be1a6c, 2024-11-01) dropped the case: one round takes the usual
  // warm-up, 2 (pp-1-rank) + (vp-1) x group, and holds fewer chunks.
  bool single_round_all_forwards = false;
  // Offload (ZeRO-Offload / ZeRO-Infinity, Megatron-Core's optimizer CPU
  // offload): the optimizer step runs on the host for the offloaded fraction
  // of this rank's optimizer shard; gradients go down and updated 16-bit
  // parameters come back over PCIe (and NVMe when the target is nvme).
  OffloadTarget offload_optimizer = OffloadTarget::kNone;
  double offload_optimizer_fraction = 1.0;  // of the optimizer shard (Megatron's optimizer_offload_fraction)
  OffloadTarget offload_params = OffloadTarget::kNone;  // ZeRO-Infinity parameter offload (needs zero3)
  // Gradient D2H during the backward and parameter H2D overlapped with compute
  // (DeepSpeed's default; Megatron's overlap_cpu_optimizer_d2h_h2d); false puts
  // every transfer on the critical path after the backward.
  bool overlap_offload = true;
  DpSync dp_sync;                   // "dp_sync" (absent: every step)
  // Full training, or LoRA / QLoRA adapters on frozen base weights
  // (finetune.h; plan key "finetune"; docs/workload.md "Fine-tuning").
  FinetuneConfig finetune;

  int gpus() const { return tp * pp * dp * cp; }
  Precision GradReducePrecision() const {
    if (grad_reduce_precision) return *grad_reduce_precision;
    if (sharding != Sharding::kZero3) return Precision::kFp32;
    return precision == Precision::kFp16 || precision == Precision::kFp32 ? precision : Precision::kBf16;
  }
  int64_t micro_batches() const { return global_batch / (micro_batch * dp); }
  // Data-parallel ranks per parameter shard group (shard_group, or dp when 0).
  int ShardGroup() const { return shard_group > 0 ? shard_group : dp; }
  // ZeRO-3/FSDP: ranks one layer's dense parameters are sharded over, and
  // gathered from: the shard group x cp, as torchtitan's FSDP2 shards over
  // the flattened dp_shard x cp mesh. The parameter gather and gradient
  // reduce-scatter run over these ranks.
  int FsdpShardRanks() const { return ShardGroup() * cp; }
  // ZeRO-3/FSDP: copies of each parameter shard (hybrid sharding: dp /
  // shard_group), which all-reduce their gradient shards.
  int FsdpReplicas() const { return dp / ShardGroup(); }
  // MoE: ranks one layer's routed experts are split over (ep x etp); the
  // expert-data-parallel group is tp x dp x cp / ExpertShards() ranks.
  int ExpertShards() const { return ep * etp; }
  // Whether the layer at `index` of its model chunk (0 = the chunk's first)
  // is recomputed whole (recompute kFull, recompute_layers).
  bool RecomputesLayer(int64_t index) const {
    return recompute == Recompute::kFull && (recompute_layers == 0 || index < recompute_layers);
  }
  // MoE: ranks that hold the same experts and shard their optimizer state
  // (and under ZeRO-3 their parameters and gradients): tp x dp x cp /
  // ExpertShards(); under hybrid-sharded ZeRO-3 those of one shard group,
  // tp x shard_group x cp / ExpertShards(), the experts' copies in the other
  // shard groups all-reducing their gradient shards (torchtitan's FSDP2 over
  // dp_shard x cp / ep, replicated over dp_replicate).
  int ExpertDpRanks() const {
    return tp * (sharding == Sharding::kZero3 ? FsdpShardRanks() : dp * cp) / ExpertShards();
  }
};

// Parses a plan object. Fields absent from the object keep the values in
// `defaults` (the scenario decides what a missing field means). An absent
// schedule is interleaved when vp > 1, else 1f1b. Errors (InputError naming the
// key): a global_batch
// key (it lives in the scenario's training object), interleaved with vp 1,
// vp > 1 without interleaving. sequence_parallel with tp 1 is switched off, as
// Megatron-LM does. recompute_modules needs recompute "selective"; an unknown
// or repeated module name is an error. Rules that need the model or cluster
// are ValidatePlan's.
PlanConfig ParsePlan(const JsonNode& node, const PlanConfig& defaults);
// Whether the plan's schedule can run the 1F1B all-to-all overlap
// (moe_a2a_overlap): ep > 1, 1F1B or interleaved, and under pipeline
// parallelism virtual stages (Megatron-Core requires them; ValidatePlan's
// rule). The model must also be MoE (the caller's part).
bool MoeA2aOverlapRuns(const PlanConfig& p);
// Every plan key, explicit (global_batch is not a plan key: it belongs to the
// scenario's training object). ParsePlan reads it back.
nlohmann::json PlanToJson(const PlanConfig& p);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_PLAN_H_
