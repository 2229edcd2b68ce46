#include "sim/workload/training_step.h"

#include <algorithm>
#include <cmath>
#include <coroutine>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/workload/dp_sync.h"
#include "sim/workload/gradient_buckets.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/lora.h"
#include "sim/workload/offload.h"
#include "sim/workload/op_builders.h"
#include "sim/workload/pass_emission.h"
#include "sim/workload/pipeline_schedule.h"
#include "sim/workload/placement.h"
#include "sim/workload/stage_groups.h"
#include "sim/workload/stage_layers.h"
#include "sim/workload/zero_bubble_split.h"

namespace stacksim::workload {
namespace {

using config::Sharding;
using config::Zero3Gather;
using trace::CollectiveKind;
using trace::TaskId;
using trace::TaskKind;

// Bytes per parameter the optimizer step moves with mixed-precision Adam:
// reads fp32 master weight, fp32 main gradient and both fp32 moments (16),
// writes master and moments (12) and the 16-bit working copy (2), then zeroes
// the gradient (4), plus one more gradient read for the global norm used in
// clipping (4). (Megatron-LM's fused Adam; Micikevicius et al. 2018 for the
// mixed-precision layout.)
constexpr double kOptimizerBytesPerParam = 38.0;

// Host time of a PyTorch tensor view (narrow, view) called from Python: the
// dispatch an eager op costs beyond its kernel launch. Measured on the H200
// node (2026-11-29, PyTorch 2.11): an eager op 6.908 us
// (profiles/measured/h200-sxm-141gb-2026-11-29/launch.csv eager_torch_add)
// less a bare CUDA launch 4.683 us (launch_cuda.csv host_issue_us_per_launch);
// the hosts of other runs assumed no faster [U].
constexpr double kTorchViewOpUs = 6.908 - 4.683;

// DeepSpeed ZeRO-3's stage3_param_persistence_threshold default, 1e5
// elements (DeepSpeed's ZeRO configuration docs; v0.3.13's
// FP16_DeepSpeedZeroOptimizer_Stage3 param_persistence_threshold=100000):
// smaller tensors are kept whole from the optimizer step to the end of the
// backward (PersistentGather).
constexpr double kZero3PersistenceThreshold = 1e5;

struct OpList {
  std::vector<Op> ops;
  std::vector<int32_t> names;
  std::vector<trace::Trace::ComputeRef> compute;  // compute ops: the trace's copy (else -1)
};

class StepBuilder {
 public:
  StepBuilder(const config::ScenarioConfig& s, DpSyncPhase phase) : s_(s), plan_(s.plan), phase_(phase) {}

  trace::Trace Build();

 private:
  OpList Intern(std::vector<Op> ops);
  // Emitting one op list, possibly in several parts.
  struct Cursor {
    const OpList* list = nullptr;
    size_t next = 0;
    bool first_micro_batch = true;  // of the step on this chunk: Op::once_per_step ops run
    std::vector<TaskId> ids;
    TaskId prev = -1;        // last task of the list on the compute stream
    TaskId pending_ep = -1;  // overlapped: the async all-to-all the next op waits for
    std::vector<TaskId> first_deps;
    std::vector<TaskId>* async_out = nullptr;  // collects async collectives (for a later W pass)
    bool done() const { return next >= list->ops.size(); }
  };
  // Emits ops of the cursor's list on `rank`; the first task waits for
  // `first_deps`. Overlapped: stops after an expert-parallel all-to-all, which
  // then runs asynchronously on its own stream.
  void EmitSome(int rank, Cursor& c, int layer, int mb, bool overlapped);
  // Emits `list` on `rank`; the first task waits for `first_deps`. Returns the
  // last task on the compute stream (or the last of `first_deps` if empty).
  TaskId Emit(int rank, const OpList& list, const std::vector<TaskId>& first_deps, int layer, int mb,
              std::vector<TaskId>* async_out = nullptr);
  // ZeRO-3/FSDP: gathers layer `l`'s parameters before its forward or
  // backward; returns the collective the layer's compute waits for.
  TaskId FsdpGather(int rank, int l, int mb);
  // PlanConfig::fsdp_copies: the copy of layer `l`'s gathered parameters out
  // of the all-gather's flat buffer, on the compute stream after `gather`;
  // returns what the layer waits for (`gather` itself without the copies).
  TaskId FsdpCopyOut(int rank, int l, int mb, TaskId gather);
  // Layer `l`'s parameters gathered (and copied out) for micro-batch `mb`,
  // from `prefetched` when that gather is already issued: what the layer's
  // compute waits for. Under KeepsGathered() only the step's first use
  // gathers; later micro-batches reuse it.
  TaskId GatheredLayer(int rank, int l, int mb, TaskId prefetched);
  // ZeRO-3 under pipeline parallelism with plan.fsdp_pp_reshard false
  // (torchtitan: FSDP2 with reshard_after_forward=False under PP, and
  // torch.distributed.pipelining's backward_maybe_with_nosync turning off
  // the reshard after backward and the gradient sync for every micro-batch
  // but the last): each layer is gathered once per step and its gradients
  // reduce-scattered once, after its last micro-batch's backward.
  bool KeepsGathered() const {
    return plan_.sharding == Sharding::kZero3 && plan_.pp > 1 && !plan_.fsdp_pp_reshard && !SyncGathers();
  }
  // Under KeepsGathered(): layer `l` was gathered earlier in the step.
  bool KeptGathered(int rank, int l) const { return KeepsGathered() && kept_gather_[rank][l] >= 0; }
  // Zero3Gather::kSyncPerParameter: one all-gather per weight tensor of
  // layer `l` (those in `tensors`, indices into fsdp_tensors_), each after
  // the device is idle and followed by the list API's per-rank copies.
  TaskId SyncParameterGathers(int rank, int l, int mb, const std::vector<int>& tensors);
  // kSyncPerParameter under full recomputation: the tensors the recompute
  // forward releases before the backward needs them again (DeepSpeed's
  // reuse-distance rule, see the .cc).
  std::vector<int> RegatheredTensors(int kind) const;
  // The list API's copies of each rank's piece of a `bytes` collective to or
  // from a flat buffer: one copy per group member, on the dp stream.
  TaskId ListApiCopies(int rank, Bytes bytes, std::vector<TaskId> deps, int l, int mb,
                       const char* name = "zero3-list-copies");
  // DeepSpeed's Python loop over the group's ranks before a list-API
  // collective: `views` tensor views per rank, host work on the host stream.
  TaskId RankLoopViews(int rank, int views, std::vector<TaskId> deps, int l, int mb);
  // `ops` PyTorch ops dispatched from Python without a launch, on the host stream.
  TaskId HostDispatch(int rank, const char* name, double ops, std::vector<TaskId> deps, int l, int mb);
  // kSyncPerParameter: the tensors of rank `rank` below DeepSpeed's
  // persistence threshold (elements each, as the rank holds them after tp),
  // and their gather after the optimizer step (the .cc).
  std::vector<double> PersistentTensors(int rank) const;
  TaskId PersistentGather(int rank, TaskId after);
  // A memory-bound task of `bytes` that the workload adds itself (not from a
  // layer's op list).
  trace::Task MemoryPass(int rank, trace::StreamId stream, trace::TaskRole role, const char* name, Bytes bytes,
                         int kernels, int layer, int mb);
  // PlanConfig::grad_accumulation's pass over a micro-batch's gradients, on
  // the compute stream after `after`, where the plan has one for `mb`.
  bool AccumulatesSeparately(int chunk, int mb) const;
  TaskId GradientAccumulation(int rank, int mb, TaskId after);
  // A layer kind's weight tensors in forward order: elements on this rank
  // (after tp) and share of the layer's dense parameters.
  struct FsdpTensor {
    double elements = 0, share = 1;
  };
  std::vector<FsdpTensor> fsdp_tensors_[config::kNumLayerKinds];
  std::vector<int> all_tensors_[config::kNumLayerKinds];
  bool SyncGathers() const {
    return plan_.sharding == Sharding::kZero3 && plan_.zero3_gather == Zero3Gather::kSyncPerParameter;
  }
  // One rank's ZeRO-3 shard of layer `l`, bytes: the dense part (sharded over
  // the shard group x cp) and the routed experts (over the expert-data-parallel group).
  struct FsdpShard {
    Bytes dense, expert;
  };
  FsdpShard FsdpShardOf(int l) const;
  TaskId Collective(int rank, trace::StreamId stream, trace::TaskRole role, const std::string& name,
                    CollectiveKind kind, Bytes bytes, trace::GroupId group, std::vector<TaskId> deps,
                    int instance = -1, int layer = -1, int mb = -1);
  // A pipeline send of one micro-batch's activation (or its gradient).
  TaskId Send(int rank, int mb, int dst, trace::GroupId pair, int32_t name, TaskId after);
  // Sends the output of model stage `stage` (forward) or its input gradient
  // (backward) to the rank holding the neighbouring stage.
  TaskId SendOut(int rank, int stage, int mb, bool forward, TaskId after);
  PassEmission EmitForward(int rank, PipelineStep st, bool overlapped);
  PassEmission EmitBackward(int rank, PipelineStep st, bool overlapped);
  void EmitWeight(int rank, const PipelineStep& st);
  // FP8 delayed scaling (plan.fp8_amax_reduction): the blocking all-reduce of
  // the amaxes of stage `vs`'s chunk over the stage's ranks, after the
  // chunk's forward (input, weight and output of each FP8 GEMM) or backward
  // (output and input gradients), 4 bytes each. Returns `after` without it.
  TaskId AmaxReduction(int rank, int vs, int mb, bool forward, TaskId after);
  // A layer's weight gradients of micro-batch `mb` exist (after its whole
  // backward or its W pass): FSDP reduce-scatters them now; otherwise they
  // join the bucketed reduction after the chunk's last micro-batch.
  void WeightGradientsDone(int rank, int layer, int mb, TaskId last, bool last_micro_batch);
  // Gradient accounting after a layer's weight gradients are complete.
  void LayerGradientsDone(int rank, int layer, TaskId last);
  void StageGradientsDone(int rank, int stage, TaskId last);
  int LastMicroBatch(int chunk) const { return layout_.dual() && chunk == 0 ? m_ / 2 - 1 : m_ - 1; }
  int FirstMicroBatch(int chunk) const { return layout_.dual() && chunk == 1 ? m_ / 2 : 0; }
  // Adds gradients to the rank's bucket; reduces it when full (overlapped reduction).
  void AddGradients(int rank, Bytes dense, Bytes expert, TaskId after);
  void FlushGradients(int rank, TaskId after);
  void EmitStepEnd();
  bool CanRun(int rank, const PipelineStep& st) const;

  PipelineLayout layout_;
  int last_stage() const { return layout_.stages() - 1; }

  const config::ScenarioConfig& s_;
  const config::PlanConfig& plan_;
  trace::Trace t_;
  int p_ = 1, v_ = 1, m_ = 1;
  LayerShape shape_;
  std::vector<int> layers_;      // per virtual stage
  std::vector<int> first_layer_; // per virtual stage
  // Per layer kind (config::LayerKind; built for the kinds the model has).
  OpList fwd_[config::kNumLayerKinds], bwd_[config::kNumLayerKinds];
  OpList recompute_full_[config::kNumLayerKinds], recompute_sel_[config::kNumLayerKinds];
  int fp8_gemms_[config::kNumLayerKinds] = {};  // FP8 GEMMs of a layer's forward (a grouped GEMM counts each expert)
  OpList bwd_input_[config::kNumLayerKinds], bwd_weight_[config::kNumLayerKinds];  // bwd_ split into B and W
  OpList emb_f_, emb_b_, head_f_, head_b_, emb_recompute_;
  // Megatron-LM's scatter/gather of pipeline sends without sequence
  // parallelism: each TP rank sends 1/t of the activation (Send) and the
  // receivers all-gather the pieces over NVLink before using them
  // (p2p_communication.py gather_split_1d_tensor). Empty when the sends are
  // already split (SP) or there is no TP.
  OpList pp_recv_gather_;
  // PlanConfig::pp_blocking_sends: each rank's last pipeline send (-1: none).
  std::vector<TaskId> last_send_;
  // The first dependencies of a pass on `rank`: what it received (-1: none),
  // behind the receive's all-gather, and the rank's last send when sends block.
  std::vector<TaskId> PassDeps(int rank, TaskId received, int mb);
  OpList head_b_input_, head_b_weight_;
  // Split backward: per (micro-batch, stage), B's async collectives W waits for.
  std::map<std::pair<int, int>, std::vector<TaskId>> b_async_;
  int Kind(int layer) const { return static_cast<int>(s_.model.LayerKindAt(layer)); }
  trace::StreamId compute_ = 0, tp_stream_ = 0, dp_stream_ = 0, pp_stream_ = 0, ep_stream_ = 0;
  trace::StreamId host_stream_ = 0;  // SyncGathers(): the framework's Python loops (RankLoopViews)
  trace::LabelId label_compute_ = 0;
  StageGroups groups_;
  // DualPipe: the collective instance each rank shares with its mirror.
  std::vector<int> mirror_instance_;
  // Cross-stage hand-offs: [micro-batch][model stage] -> transfer task.
  std::vector<std::vector<TaskId>> fwd_out_, bwd_out_;
  GradientBuckets buckets_;
  std::vector<std::vector<TaskId>> dp_tasks_;  // per rank: its data-parallel collectives
  std::vector<TaskId> last_compute_;
  std::vector<double> accumulation_bytes_;  // per rank, GradientAccumulation's bytes (0: not yet computed)
  // ZeRO-3: per rank, the last parameter gather and the compute that must
  // finish before the next gather may start (prefetch depth one layer).
  std::vector<TaskId> last_gather_;
  std::vector<TaskId> gather_gate_;
  // KeepsGathered(): per rank and layer, the gathered parameters its later
  // micro-batches reuse (-1 before the first gather).
  std::vector<std::vector<TaskId>> kept_gather_;
  // Distributed optimizer with overlapped parameter gather: per rank and chunk,
  // the gather the chunk's first forward waits for.
  std::vector<std::vector<TaskId>> chunk_gather_;
  std::vector<TaskId> embedding_grad_ready_;
  int32_t n_xfer_fwd_ = 0, n_xfer_bwd_ = 0, n_gather_ = 0, n_reduce_ = 0;
  GradientSizes sizes_;
  int edp_ = 1;  // expert-data-parallel size: tp x dp x cp / ep
  int next_instance_ = 0;
  DpSyncPhase phase_ = DpSyncPhase::kStep;
};

OpList StepBuilder::Intern(std::vector<Op> ops) {
  OpList list;
  list.ops = std::move(ops);
  for (const Op& op : list.ops) {
    list.names.push_back(t_.InternName(op.name));
    const bool compute = !op.is_collective && !(op.host_wait > Time::Zero());
    list.compute.push_back(compute ? t_.InternCompute(op.compute) : -1);
  }
  return list;
}

TaskId StepBuilder::Collective(int rank, trace::StreamId stream, trace::TaskRole role, const std::string& name,
                               CollectiveKind kind, Bytes bytes, trace::GroupId group, std::vector<TaskId> deps,
                               int instance, int layer, int mb) {
  trace::Task task;
  task.kind = TaskKind::kCollective;
  task.rank = rank;
  task.stream = stream;
  task.role = role;
  task.label = t_.RoleLabel(role);
  task.name = t_.InternName(name);
  task.layer = layer;
  task.micro_batch = mb;
  task.comm.kind = kind;
  task.comm.bytes = bytes;
  task.comm.group = group;
  task.comm.instance = instance;
  return t_.Add(task, deps);
}

StepBuilder::FsdpShard StepBuilder::FsdpShardOf(int l) const {
  const bool moe = s_.model.IsMoeLayer(l);
  const double expert = moe ? static_cast<double>(s_.model.ExpertParameterCount()) : 0.0;
  const double dense =
      (static_cast<double>(moe ? s_.model.LayerParameterCount(l) : s_.model.LayerParameterCount()) - expert) / plan_.tp;
  FsdpShard out;
  out.dense = Bytes{dense / plan_.FsdpShardRanks() * shape_.element_bytes()};
  if (plan_.finetune.frozen_base()) {  // the frozen weights (NF4 under QLoRA) and the adapters
    out.dense = Bytes{(LayerFrozenBytes(s_.model, plan_, shape_.element_bytes()) +
                       LayerAdapterParameters(s_.model, plan_) * shape_.element_bytes()) /
                      plan_.FsdpShardRanks()};
  }
  out.expert = Bytes{expert / plan_.ExpertShards() / edp_ * shape_.element_bytes()};
  return out;
}

TaskId StepBuilder::ListApiCopies(int rank, Bytes bytes, std::vector<TaskId> deps, int l, int mb, const char* name) {
  // torch.distributed.all_gather / reduce_scatter with a list of tensors
  // (PyTorch 1.8 ProcessGroupNCCL.cpp, the API DeepSpeed v0.3.13 calls): the
  // NCCL call works on a flat buffer, and each of the group's ranks' pieces is
  // copied out of it (all-gather) or into it (reduce-scatter) by its own
  // copy_: every byte read and written once, one launch per rank.
  // Part of the collective call, as the framework issues it: on the dp stream, counted as DP communication.
  trace::Task c = MemoryPass(rank, dp_stream_, trace::TaskRole::kDpComm, name, bytes * 2.0, plan_.FsdpShardRanks(), l, mb);
  return t_.Add(c, deps);
}

TaskId StepBuilder::RankLoopViews(int rank, int views, std::vector<TaskId> deps, int l, int mb) {
  // DeepSpeed v0.3.13 (partition_parameters.py) builds the list API's
  // per-rank tensors in Python: _allgather_param takes one narrow() of the
  // flat buffer per rank, _reduce_scatter_gradient one view(-1).narrow()
  // pair. A view launches no kernel but costs PyTorch's dispatch from
  // Python (kTorchViewOpUs). The host does it between the collectives of
  // the dp stream; the Python work between the views (the loop itself, the
  // get_rank(group) call per rank) is not priced.
  return HostDispatch(rank, "zero3-rank-views", static_cast<double>(views) * plan_.FsdpShardRanks(), std::move(deps),
                      l, mb);
}

TaskId StepBuilder::HostDispatch(int rank, const char* name, double ops, std::vector<TaskId> deps, int l, int mb) {
  trace::Task t;
  t.kind = TaskKind::kDelay;
  t.rank = rank;
  t.stream = host_stream_;
  t.role = trace::TaskRole::kOther;  // host work: runtime orchestration in the breakdown
  t.label = t_.RoleLabel(t.role);
  t.name = t_.InternName(name);
  t.layer = l;
  t.micro_batch = mb;
  t.duration = Time::Us(kTorchViewOpUs * ops);
  return t_.Add(t, deps);
}

std::vector<double> StepBuilder::PersistentTensors(int rank) const {
  // Per layer: the two norms' weights (and biases), the attention's QKV
  // bias (split over tp, as Megatron's column-parallel bias) and output
  // bias, the MLP's FC1 bias (both halves when gated, split over tp) and
  // FC2 bias; the final norm on the last stage. Weight matrices are far
  // above the threshold. MoE layers' expert biases and router are left out.
  const config::ModelConfig& m = s_.model;
  const double h = static_cast<double>(m.hidden_size);
  const int norm_tensors = m.norm == config::NormKind::kLayerNorm && m.norm_bias ? 2 : 1;
  std::vector<double> out;
  auto add = [&](double elements) {
    if (elements > 0 && elements < kZero3PersistenceThreshold) out.push_back(elements);
  };
  for (int c = 0; c < v_; ++c) {
    const int stage = c * p_ + rank;
    for (int l = first_layer_[stage]; l < first_layer_[stage] + layers_[stage]; ++l) {
      for (int i = 0; i < 2 * norm_tensors; ++i) add(h);
      if (m.attention_bias) {
        add(static_cast<double>(shape_.attention.heads + 2 * shape_.attention.kv_heads) * shape_.attention.head_dim /
            plan_.tp);
        add(h);
      }
      if (m.mlp_bias && !m.IsMoeLayer(l)) {
        add(static_cast<double>(shape_.ffn) * (m.gated_mlp() ? 2 : 1) / plan_.tp);
        add(h);
      }
    }
  }
  if (rank == p_ - 1) {
    for (int i = 0; i < norm_tensors; ++i) add(h);
  }
  return out;
}

TaskId StepBuilder::PersistentGather(int rank, TaskId after) {
  // DeepSpeed v0.3.13 stage3.py: backward() ends by partitioning every
  // parameter (_partition_all_parameters, the persistent ones too), and
  // step() ends (_post_step) by gathering the persistent ones again with
  // persistent_parameters[0].all_gather, the synchronous _allgather_params
  // of partition_parameters.py: their shards in one flat buffer with a
  // narrow() per rank, one list-API all-gather, then for every tensor and
  // every rank holding part of it a narrow(), a view(-1), a narrow() and a
  // copy_ into the tensor's replicated copy, all from Python.
  const std::vector<double> tensors = PersistentTensors(rank);
  if (tensors.empty()) return after;
  const int ranks = plan_.FsdpShardRanks();
  double elements = 0;
  for (double e : tensors) elements += std::ceil(e / ranks) * ranks;  // each padded to whole shards
  const Bytes bytes{elements * shape_.element_bytes()};
  TaskId prev = HostDispatch(rank, "zero3-persistent-rank-views", ranks, {after}, -1, -1);
  prev = Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "zero3-persistent-gather", CollectiveKind::kAllGather,
                    bytes, groups_.fsdp[rank], {prev});
  prev = ListApiCopies(rank, bytes, {prev}, -1, -1, "zero3-persistent-list-copies");
  for (double e : tensors) {
    const double shard = std::ceil(e / ranks);
    const int holders = static_cast<int>(std::ceil(e / shard));
    // Three views and the copy's own dispatch per rank; then the copies'
    // launches and bytes (read and written).
    prev = HostDispatch(rank, "zero3-persistent-views", 4.0 * holders, {prev}, -1, -1);
    prev = t_.Add(MemoryPass(rank, dp_stream_, trace::TaskRole::kDpComm, "zero3-persistent-copies",
                             Bytes{2.0 * e * shape_.element_bytes()}, holders, -1, -1),
                  {prev});
  }
  return prev;
}

trace::Task StepBuilder::MemoryPass(int rank, trace::StreamId stream, trace::TaskRole role, const char* name,
                                    Bytes bytes, int kernels, int layer, int mb) {
  trace::Task c;
  c.kind = TaskKind::kCompute;
  c.rank = rank;
  c.stream = stream;
  c.role = role;
  c.label = t_.RoleLabel(role);
  c.name = t_.InternName(name);
  c.layer = layer;
  c.micro_batch = mb;
  c.compute.op_class = trace::OpClass::kMemoryBound;
  c.compute.precision = plan_.precision;
  c.compute.bytes = bytes;
  c.compute.flops = Flops{0};
  c.compute.kernels = static_cast<int16_t>(std::min(kernels, 32767));  // the trace's field holds up to int16
  return c;
}

TaskId StepBuilder::SyncParameterGathers(int rank, int l, int mb, const std::vector<int>& tensors) {
  // DeepSpeed v0.3.13 (deepspeed/runtime/zero/partition_parameters.py
  // _allgather_param; stage3.py fetch_sub_module) calls
  // torch.cuda.synchronize() before each parameter's all-gather and again
  // before the sub-module runs: a gather starts when the compute stream and
  // earlier collectives are done, and compute waits for it (DeepSpeed PR
  // #1188, Oct 2021, found the asynchronous path synchronous for this reason).
  const FsdpShard shard = FsdpShardOf(l);
  const std::vector<FsdpTensor>& all = fsdp_tensors_[Kind(l)];
  TaskId prev = EmitParamFetch(t_, s_, rank, shard.dense + shard.expert, {last_compute_[rank]}, l, mb);
  std::vector<TaskId> deps = {last_compute_[rank], last_gather_[rank], prev};
  if (!dp_tasks_[rank].empty()) deps.push_back(dp_tasks_[rank].back());  // the synchronize waits for these too
  for (int i : tensors) {
    const Bytes bytes = shard.dense * (static_cast<double>(plan_.FsdpShardRanks()) * all[i].share);
    // _allgather_param: torch.zeros of the whole gathered tensor, then
    // torch.cuda.synchronize(), then the per-rank views.
    TaskId zeros = t_.Add(MemoryPass(rank, dp_stream_, trace::TaskRole::kDpComm, "zero3-gather-zeros", bytes, 1, l, mb),
                          deps);
    TaskId views = RankLoopViews(rank, 1, {zeros}, l, mb);
    TaskId g = Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "fsdp-gather", CollectiveKind::kAllGather, bytes,
                          groups_.fsdp[rank], {views}, -1, l, mb);
    prev = ListApiCopies(rank, bytes, {g}, l, mb);
    deps = {prev};
  }
  if (shard.expert.value > 0 && edp_ > 1) {
    prev = Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "fsdp-expert-gather", CollectiveKind::kAllGather,
                      shard.expert * static_cast<double>(edp_), groups_.edp[rank], deps, -1, l, mb);
  }
  if (prev < 0) prev = last_compute_[rank];
  last_gather_[rank] = prev;
  gather_gate_[rank] = last_compute_[rank];
  return prev;
}

std::vector<int> StepBuilder::RegatheredTensors(int kind) const {
  // DeepSpeed v0.3.13 stage3.py release_sub_module: after a sub-module's
  // forward its parameters are released unless _keep_for_later, i.e. the
  // parameters used before their next use (get_reuse_distance_in_numel) are
  // fewer than stage3_max_reuse_distance. After the recompute forward of a
  // layer the tensors come back in reverse order: tensor i's next use follows
  // the forward and backward of every later tensor of the layer.
  std::vector<int> out;
  const std::vector<FsdpTensor>& all = fsdp_tensors_[kind];
  double later = 0;
  for (int i = static_cast<int>(all.size()) - 1; i >= 0; --i) {
    if (2 * later >= plan_.zero3_max_reuse_distance) out.push_back(i);
    later += all[i].elements;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

TaskId StepBuilder::FsdpGather(int rank, int l, int mb) {
  if (SyncGathers()) return SyncParameterGathers(rank, l, mb, all_tensors_[Kind(l)]);
  // FSDP2 on the flattened dp_shard x cp mesh (torchtitan): the dense
  // parameters come from the shard group's shard_group x cp ranks; the routed
  // experts, one EP rank's share, from the ranks that hold the same experts.
  const FsdpShard shard = FsdpShardOf(l);
  TaskId g = Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "fsdp-gather", CollectiveKind::kAllGather,
                        shard.dense * static_cast<double>(plan_.FsdpShardRanks()), groups_.fsdp[rank],
                        {last_gather_[rank], gather_gate_[rank],
                         EmitParamFetch(t_, s_, rank, shard.dense + shard.expert, {gather_gate_[rank]}, l, mb)},
                        -1, l, mb);
  if (shard.expert.value > 0 && edp_ > 1) {
    g = Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "fsdp-expert-gather", CollectiveKind::kAllGather,
                   shard.expert * static_cast<double>(edp_), groups_.edp[rank], {g}, -1, l, mb);
  }
  last_gather_[rank] = g;
  gather_gate_[rank] = last_compute_[rank];
  return g;
}

TaskId StepBuilder::GatheredLayer(int rank, int l, int mb, TaskId prefetched) {
  if (KeptGathered(rank, l)) return kept_gather_[rank][l];
  const TaskId ready = FsdpCopyOut(rank, l, mb, prefetched >= 0 ? prefetched : FsdpGather(rank, l, mb));
  if (KeepsGathered()) kept_gather_[rank][l] = ready;
  return ready;
}

TaskId StepBuilder::FsdpCopyOut(int rank, int l, int mb, TaskId gather) {
  if (!plan_.fsdp_copies || SyncGathers()) return gather;
  // FSDP2 (foreach_all_gather_copy_out): one split_with_sizes_copy from the
  // flat all-gather output into the unsharded parameters, on the current
  // (compute) stream once the gather is done: the gathered bytes read and
  // written.
  const FsdpShard shard = FsdpShardOf(l);
  const double experts = edp_ > 1 ? static_cast<double>(edp_) : 0.0;
  const Bytes gathered = shard.dense * static_cast<double>(plan_.FsdpShardRanks()) + shard.expert * experts;
  return t_.Add(MemoryPass(rank, compute_, trace::TaskRole::kMemoryBound, "fsdp-copy-out", gathered * 2.0, 1, l, mb),
                {gather});
}

void StepBuilder::EmitSome(int rank, Cursor& c, int layer, int mb, bool overlapped) {
  const OpList& list = *c.list;
  if (c.ids.empty()) c.ids.assign(list.ops.size(), -1);
  std::vector<TaskId> deps;
  while (c.next < list.ops.size()) {
    const size_t i = c.next++;
    const Op& op = list.ops[i];
    if (op.once_per_step && (op.recompute || !c.first_micro_batch)) continue;
    deps.clear();
    if (c.prev < 0) deps = c.first_deps;
    if (op.wait_for >= 0) deps.push_back(c.ids[op.wait_for]);
    if (c.pending_ep >= 0) {
      deps.push_back(c.pending_ep);
      c.pending_ep = -1;
    }
    trace::Task task;
    task.rank = rank;
    task.role = op.role;
    task.recompute = op.recompute;
    task.expert = op.expert;
    task.label = t_.RoleLabel(op.role);
    task.name = list.names[i];
    task.layer = layer;
    task.micro_batch = mb;
    bool async = op.async;
    bool stop = false;
    if (op.is_collective) {
      task.kind = TaskKind::kCollective;
      task.comm.kind = op.collective;
      task.comm.bytes = op.bytes;
      task.comm.scale_out_bytes = op.scale_out_bytes;
      task.comm.group = op.ep_group ? groups_.ep[rank] : op.cp_group ? groups_.cp[rank] : groups_.tp[rank];
      if (overlapped && op.ep_group && op.collective == CollectiveKind::kAllToAll) {
        task.stream = ep_stream_;
        if (c.prev >= 0) deps.push_back(c.prev);
        async = true;
        stop = true;
      } else if (op.async) {
        task.stream = tp_stream_;
        if (c.prev >= 0) deps.push_back(c.prev);
      } else {
        task.stream = compute_;
      }
    } else if (op.host_wait > Time::Zero()) {  // the GPU idles while the host waits
      task.kind = TaskKind::kDelay;
      task.stream = compute_;
      task.duration = op.host_wait;
    } else {
      task.kind = TaskKind::kCompute;
      task.stream = compute_;
    }
    c.ids[i] = task.kind == TaskKind::kCompute ? t_.AddCompute(task, list.compute[i], deps) : t_.Add(task, deps);
    if (async) {
      if (c.async_out) c.async_out->push_back(c.ids[i]);
      if (stop) c.pending_ep = c.ids[i];
    } else {
      c.prev = c.ids[i];
    }
    if (stop && c.next < list.ops.size()) return;
  }
  // A list that ends in an overlapped all-to-all: its result is the list's output.
  if (c.pending_ep >= 0) {
    c.prev = c.pending_ep;
    c.pending_ep = -1;
  }
}

TaskId StepBuilder::Emit(int rank, const OpList& list, const std::vector<TaskId>& first_deps, int layer, int mb,
                         std::vector<TaskId>* async_out) {
  Cursor c;
  c.list = &list;
  c.first_deps = first_deps;
  c.async_out = async_out;
  EmitSome(rank, c, layer, mb, false);
  if (c.prev < 0) return first_deps.empty() ? -1 : first_deps.back();
  last_compute_[rank] = c.prev;
  return c.prev;
}

TaskId StepBuilder::Send(int rank, int mb, int dst, trace::GroupId pair, int32_t name, TaskId after) {
  trace::Task x;
  x.kind = TaskKind::kTransfer;
  x.rank = rank;
  x.stream = pp_stream_;
  x.role = trace::TaskRole::kPpComm;
  x.label = t_.RoleLabel(x.role);
  x.name = name;
  x.micro_batch = mb;
  x.transfer.dst = dst;
  // Megatron-LM sends 1/t of the activation per TP rank and all-gathers it
  // over NVLink on arrival (the scatter/gather optimisation, Narayanan et al.
  // SC'21 §4.1); with sequence parallelism it is already split.
  x.transfer.bytes = Bytes{static_cast<double>(shape_.tokens()) * shape_.hidden * shape_.element_bytes() / plan_.tp};
  x.transfer.group = pair;
  return t_.Add(x, {after});
}

bool StepBuilder::CanRun(int rank, const PipelineStep& st) const {
  const int stage = layout_.Stage(rank, st.chunk);
  switch (st.pass) {
    case Pass::kForward:
      return stage == 0 || fwd_out_[st.micro_batch][stage - 1] >= 0;
    case Pass::kBackward:
    case Pass::kBackwardInput:
      return stage == last_stage() || bwd_out_[st.micro_batch][stage + 1] >= 0;
    case Pass::kWeight:
      return true;  // after its B pass, earlier on the same rank
  }
  return false;
}

std::vector<TaskId> StepBuilder::PassDeps(int rank, TaskId received, int mb) {
  std::vector<TaskId> deps;
  if (received >= 0) deps.push_back(received);
  if (plan_.pp_blocking_sends && last_send_[rank] >= 0) deps.push_back(last_send_[rank]);
  if (received >= 0 && !pp_recv_gather_.ops.empty()) deps = {Emit(rank, pp_recv_gather_, deps, -1, mb)};
  return deps;
}

TaskId StepBuilder::SendOut(int rank, int stage, int mb, bool forward, TaskId after) {
  const int dst = layout_.Rank(forward ? stage + 1 : stage - 1, mb);
  // Pairs are placed lower rank first: r -> r+1 (forward in copy 0, backward
  // in DualPipe's copy 1) uses this rank's "next" pair.
  const bool up = (layout_.Direction(mb) == 0) == forward;
  const trace::GroupId pair = up ? groups_.next_pair[rank] : groups_.prev_pair[rank];
  last_send_[rank] = Send(rank, mb, dst, pair, forward ? n_xfer_fwd_ : n_xfer_bwd_, after);
  return last_send_[rank];
}

PassEmission StepBuilder::EmitForward(int rank, PipelineStep st, bool overlapped) {
  const int vs = layout_.Stage(rank, st.chunk);
  const int mb = st.micro_batch;
  const bool zero3 = plan_.sharding == Sharding::kZero3;
  std::vector<TaskId> deps = PassDeps(rank, vs > 0 ? fwd_out_[mb][vs - 1] : -1, mb);
  if (!chunk_gather_[rank].empty() && chunk_gather_[rank][st.chunk] >= 0) deps.push_back(chunk_gather_[rank][st.chunk]);
  TaskId last = -1;
  if (vs == 0) {
    last = Emit(rank, emb_f_, deps, -1, mb);
    deps = {last};
  }
  for (int l = first_layer_[vs]; l < first_layer_[vs] + layers_[vs]; ++l) {
    if (zero3) deps.push_back(GatheredLayer(rank, l, mb, -1));
    Cursor c;
    c.list = &fwd_[Kind(l)];
    c.first_micro_batch = mb == FirstMicroBatch(st.chunk);
    c.first_deps = deps;
    while (!c.done()) {
      EmitSome(rank, c, l, mb, overlapped);
      if (!c.done()) co_yield 0;
    }
    if (c.prev >= 0) last = last_compute_[rank] = c.prev;
    deps = {last};
  }
  last = AmaxReduction(rank, vs, mb, /*forward=*/true, last);
  deps = {last};
  if (vs == last_stage()) {
    last = Emit(rank, head_f_, deps, -1, mb);
  } else {
    fwd_out_[mb][vs] = SendOut(rank, vs, mb, true, last);
  }
}

void StepBuilder::AddGradients(int rank, Bytes dense, Bytes expert, TaskId after) {
  if (buckets_.Add(rank, dense, expert)) FlushGradients(rank, after);
}

void StepBuilder::FlushGradients(int rank, TaskId after) {
  const GradientBuckets::Pending pending = buckets_.Take(rank);
  const CollectiveKind kind = plan_.sharding == Sharding::kNone || plan_.zero_grad_all_reduce
                                  ? CollectiveKind::kAllReduce
                                  : CollectiveKind::kReduceScatter;
  // Expert gradients go over the expert-data-parallel group (the ranks that
  // hold the same experts); in the same bucket cadence as the rest.
  if (pending.expert > 0 && edp_ > 1) {
    dp_tasks_[rank].push_back(Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "expert-grad-reduce", kind,
                                         Bytes{pending.expert}, groups_.edp[rank], {after}));
  }
  if (pending.dense <= 0 || phase_ == DpSyncPhase::kWithoutGradientReduction) return;
  // plan.dp_sync (dp_sync.h): DiLoCo's inner steps reduce within the worker;
  // compression sends a share of the bytes after its kernels.
  const config::DpSync& sync = plan_.dp_sync;
  trace::GroupId group = sync.method == config::DpSyncMethod::kDiLoCo ? groups_.dp_local[rank] : groups_.dp[rank];
  if (sync.method == config::DpSyncMethod::kDiLoCo && plan_.dp / sync.workers == 1) return;
  double bytes = pending.dense;
  if (sync.method == config::DpSyncMethod::kCompression) {
    after = EmitGradientCompression(t_, rank, compute_, Bytes{bytes}, sync.compression_passes, after);
    last_compute_[rank] = after;
    bytes *= sync.compression_ratio;
  }
  dp_tasks_[rank].push_back(Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "grad-reduce", kind,
                                       Bytes{bytes}, group, {after}));
}

void StepBuilder::WeightGradientsDone(int rank, int layer, int mb, TaskId last, bool last_micro_batch) {
  if (plan_.sharding == Sharding::kZero3) {
    // FSDP reduce-scatters each layer's gradients as soon as they exist: the
    // dense part over the shard group, the routed experts over the
    // expert-data-parallel group.
    const int k = Kind(layer);
    TaskId reduced = last;
    const double reduce_bytes = config::PrecisionBytes(plan_.GradReducePrecision());
    const double elements = sizes_.dense[k].value / reduce_bytes;  // the layer's dense gradients on this rank
    if (KeepsGathered()) {
      // FSDP2 without gradient sync (FSDPParam.to_accumulated_grad_if_needed,
      // accumulate_unsharded_grad_if_needed in the post-backward hook, on the
      // compute stream): the first micro-batch's 16-bit gradients are cast
      // into the reduce dtype's unsharded accumulator, later ones added to it.
      if (reduce_bytes != shape_.element_bytes()) {
        const double per_element = shape_.element_bytes() + reduce_bytes + (mb == 0 ? 0.0 : reduce_bytes);
        last = t_.Add(MemoryPass(rank, compute_, trace::TaskRole::kMemoryBound, "fsdp-grad-accumulate",
                                 Bytes{elements * per_element}, 1, layer, mb),
                      {last});
        reduced = last;
      }
      if (!last_micro_batch) return;  // kept unsharded until the last micro-batch
    }
    if (plan_.FsdpShardRanks() > 1 && SyncGathers()) {
      // DeepSpeed v0.3.13 _reduce_scatter_gradients: one reduce_scatter per
      // parameter, through the list API (its inputs copied into a flat buffer).
      // The host's loop for a tensor waits only for the gradients and the
      // loops before it (the host stream's order), not for the previous
      // reduce-scatter, which DeepSpeed leaves running (async_op=True).
      const TaskId gradients = reduced;
      for (const FsdpTensor& tensor : fsdp_tensors_[k]) {
        const Bytes bytes = sizes_.dense[k] * tensor.share;
        TaskId views = RankLoopViews(rank, 2, {gradients}, layer, mb);
        TaskId flat = ListApiCopies(rank, bytes, {views}, layer, mb);
        reduced = Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "fsdp-reduce-scatter",
                             CollectiveKind::kReduceScatter, bytes, groups_.fsdp[rank], {flat}, -1, layer, mb);
        dp_tasks_[rank].push_back(reduced);
      }
    } else if (plan_.FsdpShardRanks() > 1) {
      TaskId input = last;
      if (plan_.fsdp_copies) {
        // FSDP2 (foreach_reduce_scatter_copy_in): the unsharded gradients
        // (16-bit, or the reduce dtype's accumulator under KeepsGathered) are
        // copied into the flat reduce-scatter input, in the reduce dtype, on
        // the reduce-scatter stream.
        const double read = KeepsGathered() ? reduce_bytes : shape_.element_bytes();
        const Bytes bytes = sizes_.dense[k] + Bytes{elements * read};
        input = t_.Add(MemoryPass(rank, dp_stream_, trace::TaskRole::kDpComm, "fsdp-reduce-copy-in", bytes, 1, layer, mb),
                       {last});
      }
      reduced = Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "fsdp-reduce-scatter",
                           CollectiveKind::kReduceScatter, sizes_.dense[k], groups_.fsdp[rank], {input}, -1, layer, mb);
      dp_tasks_[rank].push_back(reduced);
    }
    TaskId experts_reduced = last;
    if (sizes_.expert[k].value > 0 && edp_ > 1) {
      experts_reduced = Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "fsdp-expert-reduce-scatter",
                                   CollectiveKind::kReduceScatter, sizes_.expert[k], groups_.edp[rank], {last}, -1,
                                   layer, mb);
      dp_tasks_[rank].push_back(experts_reduced);
    }
    // Hybrid sharding: the replicas of each shard all-reduce it, once per
    // step after the last micro-batch's reduce-scatter (the shard accumulates
    // locally before, as FSDP2's set_requires_all_reduce(False) does for
    // gradient accumulation). The routed experts' shards likewise: the same
    // experts sit at the same place of every shard group.
    if (last_micro_batch && plan_.FsdpReplicas() > 1) {
      dp_tasks_[rank].push_back(Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "hsdp-grad-allreduce",
                                           CollectiveKind::kAllReduce,
                                           sizes_.dense[k] / static_cast<double>(plan_.FsdpShardRanks()),
                                           groups_.fsdp_replica[rank], {reduced}, -1, layer, mb));
      if (sizes_.expert[k].value > 0) {
        dp_tasks_[rank].push_back(Collective(rank, dp_stream_, trace::TaskRole::kDpComm, "hsdp-expert-grad-allreduce",
                                             CollectiveKind::kAllReduce, sizes_.expert[k] / static_cast<double>(edp_),
                                             groups_.fsdp_replica[rank], {experts_reduced}, -1, layer, mb));
      }
    }
  } else if (last_micro_batch) {
    LayerGradientsDone(rank, layer, last);
  }
}

void StepBuilder::LayerGradientsDone(int rank, int layer, TaskId last) {
  if (plan_.sharding == Sharding::kZero3 || plan_.dp * plan_.cp == 1) return;
  AddGradients(rank, sizes_.dense[Kind(layer)], sizes_.expert[Kind(layer)], last);
}

void StepBuilder::StageGradientsDone(int rank, int stage, TaskId last) {
  if (stage == 0 || stage == last_stage()) embedding_grad_ready_[rank] = last;
  if (plan_.sharding == Sharding::kZero3 || plan_.dp * plan_.cp == 1) return;
  if ((stage == 0 || stage == last_stage()) && !plan_.finetune.frozen_base()) {  // frozen embeddings: no gradient
    double emb = static_cast<double>(s_.model.vocab_size) * s_.model.hidden_size / plan_.tp;
    bool has_copy = stage == 0 || !s_.model.tie_word_embeddings || last_stage() > 0;
    if (has_copy) AddGradients(rank, Bytes{emb * config::PrecisionBytes(plan_.GradReducePrecision())}, Bytes{0}, last);
  }
  if (plan_.overlap_grad_reduce) FlushGradients(rank, last);
}

PassEmission StepBuilder::EmitBackward(int rank, PipelineStep st, bool overlapped) {
  const int vs = layout_.Stage(rank, st.chunk);
  const int mb = st.micro_batch;
  const bool zero3 = plan_.sharding == Sharding::kZero3;
  const bool split = st.pass == Pass::kBackwardInput;
  // Gradients are complete after this chunk's last micro-batch (whole backward).
  const bool grads_done = !split && mb == LastMicroBatch(st.chunk);
  std::vector<TaskId>* async_out = split ? &b_async_[{mb, vs}] : nullptr;
  std::vector<TaskId> deps = PassDeps(rank, vs < last_stage() ? bwd_out_[mb][vs + 1] : -1, mb);
  TaskId last = -1;
  if (vs == last_stage()) {
    last = Emit(rank, split ? head_b_input_ : head_b_, deps, -1, mb, async_out);
    deps = {last};
  }
  // Zero3Gather::kPipelined: the next layer's gather is queued before this
  // layer's reduce-scatter and runs while this layer computes; otherwise it
  // is issued when its own backward starts, behind the reduce-scatter.
  const bool pipelined = zero3 && plan_.zero3_gather == Zero3Gather::kPipelined;
  TaskId prefetched = -1;
  for (int l = first_layer_[vs] + layers_[vs] - 1; l >= first_layer_[vs]; --l) {
    if (zero3) {
      deps.push_back(GatheredLayer(rank, l, mb, prefetched));
      prefetched = -1;
      if (pipelined && l > first_layer_[vs] && !KeptGathered(rank, l - 1)) {
        gather_gate_[rank] = last_compute_[rank];
        prefetched = FsdpGather(rank, l - 1, mb);
      }
    }
    if (plan_.RecomputesLayer(l - first_layer_[vs])) {
      last = Emit(rank, recompute_full_[Kind(l)], deps, l, mb);
      deps = {last};
      if (zero3 && SyncGathers()) {
        const std::vector<int> again = RegatheredTensors(Kind(l));
        if (!again.empty()) deps.push_back(SyncParameterGathers(rank, l, mb, again));
      }
    } else if (plan_.recompute == config::Recompute::kSelective && !recompute_sel_[Kind(l)].ops.empty()) {
      last = Emit(rank, recompute_sel_[Kind(l)], deps, l, mb);
      deps = {last};
    }
    Cursor c;
    c.list = split ? &bwd_input_[Kind(l)] : &bwd_[Kind(l)];
    c.first_deps = deps;
    c.async_out = async_out;
    while (!c.done()) {
      EmitSome(rank, c, l, mb, overlapped);
      if (!c.done()) co_yield 0;
    }
    if (c.prev >= 0) last = last_compute_[rank] = c.prev;
    deps = {last};
    if (!split) WeightGradientsDone(rank, l, mb, last, grads_done);
  }
  last = AmaxReduction(rank, vs, mb, /*forward=*/false, last);
  deps = {last};
  if (vs == 0) {
    if (plan_.recompute == config::Recompute::kFull) {
      last = Emit(rank, emb_recompute_, deps, -1, mb);
      deps = {last};
    }
    last = Emit(rank, emb_b_, deps, -1, mb);
  }
  if (!split && AccumulatesSeparately(st.chunk, mb)) last = last_compute_[rank] = GradientAccumulation(rank, mb, last);
  if (vs > 0) bwd_out_[mb][vs] = SendOut(rank, vs, mb, false, last);
  if (grads_done) StageGradientsDone(rank, vs, last);
}

TaskId StepBuilder::AmaxReduction(int rank, int vs, int mb, bool forward, TaskId after) {
  if (groups_.stage[rank] == trace::kNoGroup || after < 0) return after;
  int gemms = 0;
  for (int l = first_layer_[vs]; l < first_layer_[vs] + layers_[vs]; ++l) gemms += fp8_gemms_[Kind(l)];
  if (gemms == 0) return after;
  // Transformer Engine keeps three scaling factors per FP8 GEMM in the
  // forward (input, weight, output) and two in the backward (output
  // gradient, input gradient), one fp32 amax each.
  const Bytes bytes{4.0 * (forward ? 3 : 2) * gemms};
  const TaskId reduced = Collective(rank, compute_, trace::TaskRole::kDpComm, "fp8-amax-reduce",
                                    CollectiveKind::kAllReduce, bytes, groups_.stage[rank], {after}, -1, -1, mb);
  last_compute_[rank] = reduced;
  return reduced;
}

bool StepBuilder::AccumulatesSeparately(int chunk, int mb) const {
  const config::GradAccumulation g = plan_.grad_accumulation;
  return g != config::GradAccumulation::kFused &&
         (mb != FirstMicroBatch(chunk) || config::GradAccumulationOnFirstMicroBatch(g));
}

TaskId StepBuilder::GradientAccumulation(int rank, int mb, TaskId after) {
  // The pass that adds this micro-batch's 16-bit gradients into the step's
  // buffer (PlanConfig::grad_accumulation), on the compute stream after the
  // chunk's backward, so the gradient sent upstream waits for it: DeepSpeed's
  // pipeline engine calls update_hp_grads before its next instruction;
  // Megatron-LM's hooks and autograd's accumulation run inside the backward,
  // priced here at its end. Over the chunk's share of the rank's parameters.
  double& bytes = accumulation_bytes_[rank];
  if (bytes == 0) {
    bytes = StageTrainableParameters(s_, rank) / v_ * config::GradAccumulationBytesPerParam(plan_.grad_accumulation);
  }
  return t_.Add(MemoryPass(rank, compute_, trace::TaskRole::kMemoryBound, "grad-accumulate", Bytes{bytes}, 2, -1, mb),
                {after});
}

void StepBuilder::EmitWeight(int rank, const PipelineStep& st) {
  const int vs = layout_.Stage(rank, st.chunk);
  const int mb = st.micro_batch;
  const bool grads_done = mb == LastMicroBatch(st.chunk);
  std::vector<TaskId> deps = b_async_[{mb, vs}];
  b_async_.erase({mb, vs});
  deps.push_back(last_compute_[rank]);
  TaskId last = deps.back();
  if (vs == last_stage()) {
    last = Emit(rank, head_b_weight_, deps, -1, mb);
    deps = {last};
  }
  for (int l = first_layer_[vs] + layers_[vs] - 1; l >= first_layer_[vs]; --l) {
    last = Emit(rank, bwd_weight_[Kind(l)], deps, l, mb);
    deps = {last};
    WeightGradientsDone(rank, l, mb, last, grads_done);
  }
  // Split backward: the weight gradients exist after W, so the accumulation
  // pass follows it.
  if (AccumulatesSeparately(st.chunk, mb)) last = last_compute_[rank] = GradientAccumulation(rank, mb, last);
  if (grads_done) StageGradientsDone(rank, vs, last);
}

void StepBuilder::EmitStepEnd() {
  // Tied input and output embeddings on different stages keep two copies whose
  // gradients are summed across the first and last stage.
  if (s_.model.tie_word_embeddings && p_ > 1 && !plan_.finetune.frozen_base()) {
    double bytes = static_cast<double>(s_.model.vocab_size) * s_.model.hidden_size / plan_.tp *
                   config::PrecisionBytes(plan_.GradReducePrecision());
    int instance = next_instance_++;
    for (int r : {0, p_ - 1}) {
      dp_tasks_[r].push_back(Collective(r, dp_stream_, trace::TaskRole::kDpComm, "embedding-grad-allreduce",
                                        CollectiveKind::kAllReduce, Bytes{bytes}, groups_.embedding,
                                        {embedding_grad_ready_[r]}, instance));
    }
  }
  const bool sharded_optimizer = plan_.sharding != Sharding::kNone;
  for (int r = 0; r < p_; ++r) {
    if (!plan_.overlap_grad_reduce) FlushGradients(r, last_compute_[r]);
    if (layout_.dual()) {
      // Sum with the mirror rank's gradients of the same stages (this rank's
      // reduced shard; DualPipe keeps two copies of every stage).
      const double all = StageTrainableParameters(s_, r);
      const double expert = static_cast<double>(StageExpertParameters(s_, r));
      const double shard = plan_.sharding == Sharding::kNone ? all : (all - expert) / (plan_.dp * plan_.cp) + expert / edp_;
      std::vector<TaskId> deps = dp_tasks_[r];
      deps.push_back(last_compute_[r]);
      dp_tasks_[r].push_back(Collective(r, dp_stream_, trace::TaskRole::kDpComm, "dualpipe-mirror-grad-allreduce",
                                        CollectiveKind::kAllReduce,
                                        Bytes{shard * config::PrecisionBytes(plan_.GradReducePrecision())},
                                        groups_.mirror[r], deps, mirror_instance_[r]));
    }
    const double expert = static_cast<double>(StageExpertParameters(s_, r));
    // ZeRO-3/FSDP steps its shard of the dense parameters (over the shard group x cp).
    const int dense_shards = plan_.sharding == Sharding::kZero3 ? plan_.FsdpShardRanks() : plan_.dp;
    double params = sharded_optimizer
                        ? (StageTrainableParameters(s_, r) - expert) / dense_shards + expert / edp_
                        : StageTrainableParameters(s_, r);
    trace::Task opt;
    opt.kind = TaskKind::kCompute;
    opt.rank = r;
    opt.stream = compute_;
    opt.role = trace::TaskRole::kOptimizer;
    opt.label = t_.RoleLabel(opt.role);
    opt.name = t_.InternName("optimizer-step");
    opt.compute = OptimizerStepOp(params, GpuOptimizerShare(plan_));  // the rest: offload.h
    std::vector<TaskId> deps = dp_tasks_[r];
    deps.push_back(last_compute_[r]);
    TaskId step = t_.Add(opt, deps);
    step = EmitOffloadedOptimizerStep(t_, s_, r, params, deps, step);  // `step` itself without offload
    if (phase_ == DpSyncPhase::kOuterSyncStep) {
      OuterSync sync;
      sync.params = params;
      sync.local = plan_.dp / plan_.dp_sync.workers;
      sync.element_bytes = shape_.element_bytes();
      sync.outer_precision = plan_.dp_sync.outer_precision;
      sync.outer_group = groups_.dp_outer[r];
      sync.local_group = groups_.dp_local[r];
      step = EmitOuterSync(t_, r, compute_, dp_stream_, sync, {step});
    }
    last_compute_[r] = step;
    if (SyncGathers() && plan_.FsdpShardRanks() > 1) PersistentGather(r, step);
    // The distributed optimizer all-gathers the updated 16-bit parameters.
    if ((plan_.sharding == Sharding::kZero1 || plan_.sharding == Sharding::kZero2) && plan_.dp > 1 &&
        !plan_.overlap_param_gather) {
      // FP8 weights (plan.fp8_params): one byte a parameter (the 16-bit
      // embedding and head counted at one byte too, a small shortfall).
      double bytes = StageTrainableParameters(s_, r) * (plan_.Fp8Weights() ? 1.0 : shape_.element_bytes());
      Collective(r, dp_stream_, trace::TaskRole::kDpComm, "param-gather", CollectiveKind::kAllGather, Bytes{bytes}, groups_.dp[r],
                 {step});
    }
  }
}

trace::Trace StepBuilder::Build() {
  layout_ = PipelineLayout::Of(plan_);
  p_ = layout_.p;
  v_ = layout_.chunks();
  m_ = layout_.m;
  shape_ = LayerShape::From(s_.model, plan_, s_.seq_len, s_.profile);
  layers_ = LayersPerVirtualStage(static_cast<int>(s_.model.PipelineLayerCount()), p_, layout_.v);
  first_layer_.assign(layers_.size(), 0);
  for (size_t i = 1; i < layers_.size(); ++i) first_layer_[i] = first_layer_[i - 1] + layers_[i - 1];

  t_.SetRankCount(p_);
  compute_ = t_.InternStream("compute");
  t_.SetComputeStream(compute_);
  tp_stream_ = t_.InternStream("tp");
  dp_stream_ = t_.InternStream("dp");
  pp_stream_ = t_.InternStream("pp");
  if (layout_.paired()) ep_stream_ = t_.InternStream("ep");
  if (SyncGathers()) host_stream_ = t_.InternStream("host");
  for (trace::TaskRole r : {trace::TaskRole::kGemm, trace::TaskRole::kAttention, trace::TaskRole::kMemoryBound,
                            trace::TaskRole::kOptimizer, trace::TaskRole::kTpComm, trace::TaskRole::kDpComm,
                            trace::TaskRole::kPpComm, trace::TaskRole::kEpComm}) {
    t_.RoleLabel(r);
  }
  n_xfer_fwd_ = t_.InternName("send-activation");
  n_xfer_bwd_ = t_.InternName("send-gradient");

  const auto present = s_.model.LayerKindsPresent();
  for (int kind = 0; kind < config::kNumLayerKinds; ++kind) {
    if (!present[kind]) continue;
    LayerShape ls = shape_.Kind(s_.model, plan_, static_cast<config::LayerKind>(kind), DomainSize(s_.topology));
    fwd_[kind] = Intern(LayerForward(ls));
    for (const Op& op : fwd_[kind].ops) {
      if (!op.is_collective && op.compute.op_class == trace::OpClass::kGemm &&
          op.compute.precision == config::Precision::kFp8) {
        fp8_gemms_[kind] += static_cast<int>(op.compute.batch);
      }
    }
    bwd_[kind] = Intern(LayerBackward(ls));
    recompute_full_[kind] = Intern(AsRecompute(LayerForward(ls)));
    recompute_sel_[kind] = Intern(SelectiveRecompute(ls));
    auto [b, w] = SplitWeightGradients(LayerBackward(ls));
    bwd_input_[kind] = Intern(std::move(b));
    bwd_weight_[kind] = Intern(std::move(w));
    // The layer's weight tensors, from its weight-gradient GEMMs (one per
    // weight; the backward runs them in reverse forward order). Routed
    // experts are gathered separately (FsdpShard::expert).
    std::vector<FsdpTensor>& tensors = fsdp_tensors_[kind];
    const std::vector<Op>& ops = bwd_[kind].ops;
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      if (it->is_collective || !it->weight_grad || it->expert) continue;
      FsdpTensor t;
      t.elements = static_cast<double>(it->compute.m) * it->compute.n * it->compute.batch;
      tensors.push_back(t);
    }
    double total = 0;
    for (const FsdpTensor& t : tensors) total += t.elements;
    if (tensors.empty() || total <= 0) tensors.assign(1, FsdpTensor{});
    for (FsdpTensor& t : tensors) t.share = total > 0 ? t.elements / total : 1.0;
    for (int i = 0; i < static_cast<int>(tensors.size()); ++i) all_tensors_[kind].push_back(i);
  }
  edp_ = plan_.ExpertDpRanks();
  if (plan_.pp > 1 && plan_.tp > 1 && !plan_.sequence_parallel) {
    pp_recv_gather_ = Intern(std::vector<Op>{workload::Collective(
        "pp-recv-gather", trace::CollectiveKind::kAllGather,
        static_cast<double>(shape_.tokens()) * static_cast<double>(shape_.hidden) * shape_.element_bytes())});
  }
  emb_f_ = Intern(EmbeddingForward(shape_));
  emb_b_ = Intern(EmbeddingBackward(shape_));
  emb_recompute_ = Intern(AsRecompute(EmbeddingForward(shape_)));
  {
    // The head, then what each MTP module adds to it (its layer is a
    // pipeline layer); their backward runs first.
    std::vector<Op> head_f = HeadForward(shape_);
    std::vector<Op> head_b;
    for (int64_t k = 0; k < s_.model.mtp_modules; ++k) {
      AppendOps(head_f, MtpHeadForward(shape_));
      AppendOps(head_b, MtpHeadBackward(shape_));
    }
    AppendOps(head_b, HeadBackward(shape_));
    head_f_ = Intern(std::move(head_f));
    head_b_ = Intern(std::vector<Op>(head_b));
    auto [b, w] = SplitWeightGradients(std::move(head_b));
    head_b_input_ = Intern(std::move(b));
    head_b_weight_ = Intern(std::move(w));
  }

  sizes_ = ComputeGradientSizes(s_);

  groups_ = AddStageGroups(t_, s_, p_, layout_.dual());
  if (layout_.dual()) {
    // DualPipe: ranks r and p-1-r share one gradient all-reduce instance.
    mirror_instance_.assign(p_, -1);
    for (int r = 0; r < p_ / 2; ++r) mirror_instance_[r] = mirror_instance_[p_ - 1 - r] = next_instance_++;
  }

  const int vstages = layout_.stages();
  fwd_out_.assign(m_, std::vector<TaskId>(vstages, -1));
  bwd_out_.assign(m_, std::vector<TaskId>(vstages, -1));
  buckets_ = GradientBuckets(p_, plan_.grad_bucket, plan_.overlap_grad_reduce);
  dp_tasks_.assign(p_, {});
  last_compute_.assign(p_, -1);
  last_send_.assign(p_, -1);
  accumulation_bytes_.assign(p_, 0.0);
  last_gather_.assign(p_, -1);
  gather_gate_.assign(p_, -1);
  kept_gather_.assign(p_, std::vector<TaskId>(KeepsGathered() ? s_.model.PipelineLayerCount() : 0, -1));
  chunk_gather_.assign(p_, {});
  embedding_grad_ready_.assign(p_, -1);

  // Distributed optimizer with the parameter all-gather overlapped with the
  // next step's forward (Megatron-LM overlap_param_gather): each chunk's
  // gather runs at the start of the step and its first forward waits for it.
  if ((plan_.sharding == Sharding::kZero1 || plan_.sharding == Sharding::kZero2) && plan_.dp > 1 &&
      plan_.overlap_param_gather) {
    for (int r = 0; r < p_; ++r) {
      chunk_gather_[r].assign(v_, -1);
      for (int c = 0; c < v_; ++c) {
        const int vs = layout_.Stage(r, c);
        double params = 0, expert = 0;
        for (int l = first_layer_[vs]; l < first_layer_[vs] + layers_[vs]; ++l) {
          double e = s_.model.IsMoeLayer(l) ? static_cast<double>(s_.model.ExpertParameterCount()) : 0.0;
          params += plan_.finetune.frozen_base() ? LayerAdapterParameters(s_.model, plan_)
                                                 : (static_cast<double>(s_.model.LayerParameterCount(l)) - e) / plan_.tp;
          expert += e / plan_.ExpertShards();
        }
        double embedding = 0;
        if ((vs == 0 || vs == vstages - 1) && !plan_.finetune.frozen_base()) {
          embedding = static_cast<double>(s_.model.vocab_size) * s_.model.hidden_size / plan_.tp;
        }
        // FP8 weights (plan.fp8_params) gather one byte a parameter; the
        // embedding and head stay 16-bit.
        const double layer_bytes = plan_.Fp8Weights() ? 1.0 : shape_.element_bytes();
        std::vector<TaskId> gathers;
        if (expert > 0 && edp_ > 1) {
          gathers.push_back(Collective(r, dp_stream_, trace::TaskRole::kDpComm, "expert-param-gather", CollectiveKind::kAllGather,
                                       Bytes{expert * layer_bytes}, groups_.edp[r], {}));
        }
        chunk_gather_[r][c] = Collective(r, dp_stream_, trace::TaskRole::kDpComm, "param-gather", CollectiveKind::kAllGather,
                                         Bytes{params * layer_bytes + embedding * shape_.element_bytes()},
                                         groups_.dp[r], gathers);
      }
    }
  }

  auto schedule = BuildSchedule(layout_);
  std::vector<size_t> next(p_, 0);
  size_t remaining = 0;
  for (const auto& steps : schedule) remaining += steps.size();
  // Emit in an order that respects cross-stage dependencies (trace tasks may
  // only depend on earlier ones): advance each stage while it can.
  while (remaining > 0) {
    bool progressed = false;
    for (int r = 0; r < p_; ++r) {
      while (next[r] < schedule[r].size() && CanRun(r, schedule[r][next[r]])) {
        const PipelineStep& st = schedule[r][next[r]];
        auto pass = [&](const PipelineStep& step, bool overlapped) {
          return step.forward() ? EmitForward(r, step, overlapped) : EmitBackward(r, step, overlapped);
        };
        if (st.pass == Pass::kWeight) {
          EmitWeight(r, st);
        } else if (st.overlap_with_next) {
          const PipelineStep& other = schedule[r][next[r] + 1];
          if (!CanRun(r, other)) break;
          // A forward and a backward chunk overlapped: alternate between
          // them at every expert-parallel all-to-all, backward first. A
          // backward layer opens with a short segment (up to its combine
          // all-to-all) and a forward one with attention, so each all-to-all
          // is issued just before the other chunk's long stretch of compute:
          // the backward's combine under the forward's attention, the
          // forward's dispatch under the backward's expert GEMMs, and so on
          // (DeepSeek-V3 report §3.2.1, Figure 4).
          PassEmission a = pass(other, true), b = pass(st, true);
          bool more_a = true, more_b = true;
          while (more_a || more_b) {
            if (more_a) more_a = a.Resume();
            if (more_b) more_b = b.Resume();
          }
          ++next[r];
          --remaining;
        } else {
          pass(st, false).RunToEnd();
        }
        ++next[r];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocks");
  }
  EmitStepEnd();
  return std::move(t_);
}

}  // namespace

trace::ComputeOp OptimizerStepOp(double params, double gpu_share) {
  trace::ComputeOp op;
  op.op_class = trace::OpClass::kMemoryBound;
  op.precision = config::Precision::kFp32;
  op.bytes = Bytes{params * kOptimizerBytesPerParam * gpu_share};
  op.flops = Flops{0};
  op.kernels = 4;  // grad-norm, clip, multi-tensor Adam, zero-grad (fused multi-tensor kernels)
  return op;
}

trace::Trace BuildTrainingStep(const config::ScenarioConfig& s, DpSyncPhase phase) {
  if (phase == DpSyncPhase::kOuterSyncStep && s.plan.dp_sync.method != config::DpSyncMethod::kDiLoCo) {
    throw std::logic_error("an outer synchronisation step needs plan.dp_sync diloco");
  }
  return StepBuilder(s, phase).Build();
}

}  // namespace stacksim::workload
