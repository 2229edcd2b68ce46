#include "sim/workload/moe_dispatch.h"

#include <string>

#include "sim/workload/moe_routing.h"
#include "sim/workload/op_builders.h"

namespace stacksim::workload {
namespace {

using config::EagerKernel;
using config::Precision;
using trace::CollectiveKind;

double D(int64_t v) { return static_cast<double>(v); }

// GPU idle per host synchronisation of the token dispatcher. Once the host
// has waited for the token counts the GPU runs dry until the host issues the
// next work: about one device-to-host round trip. ASSUMPTION: 26 us, the
// round trip measured on bare-metal Linux with an RTX 3090 (jingyaogong/
// minimind PR #837, "device->host round trip: 26.11 us"); not measured on a
// Hopper node (a calibrate candidate). Megatron issues permutation 1 before it
// waits, so the length of that kernel hides part of it: not modelled (an
// upper bound by at most one permute per dispatch).
constexpr double kDispatchHostSyncUs = 26.0;

// FP8 dispatch: one fp32 scale per 1x128 tile of the activation (DeepSeek-V3
// §3.3.2, fine-grained quantization).
constexpr double kFp8TileScaleBytes = 4.0 / 128;

bool Hierarchical(const LayerShape& s) { return s.moe.dispatcher == config::MoeDispatcher::kHierarchical; }

// Bytes per element of a dispatched token row; `toward_experts`: the forward
// dispatch and the backward's output gradient sent to the experts.
double DispatchElementBytes(const LayerShape& s, bool toward_experts) {
  return toward_experts && Fp8Dispatch(s) ? 1.0 + kFp8TileScaleBytes : s.element_bytes();
}

// Token rows this rank's dispatch delivers per micro-batch: every routed copy
// (alltoall), or one per distinct destination GPU (hierarchical).
double DispatchRows(const LayerShape& s) {
  const MoeShape& e = s.moe;
  const double Tl = s.routed_tokens();
  if (!Hierarchical(s)) return Tl * D(e.top_k);
  return Tl * ExpectedDistinctUnits(e.experts, e.top_k, e.ep, e.expert_groups, e.expert_groups_per_token);
}

// Hierarchical: rows this rank sends off its node, one per distinct remote
// destination node. A token's own node is among its D destination nodes with
// probability D/n by symmetry, so (n-1)/n of them are remote.
double ScaleOutRows(const LayerShape& s) {
  const MoeShape& e = s.moe;
  const int n = e.ep_nodes();
  if (n <= 1) return 0;
  const double nodes = ExpectedDistinctUnits(e.experts, e.top_k, n, e.expert_groups, e.expert_groups_per_token);
  return s.routed_tokens() * nodes * (n - 1.0) / n;
}

// Serving's replicated tokens: the routed copies that go to this rank's
// experts (MoeShape::tp_replicated_tokens).
double LocalCopies(const LayerShape& s) {
  return s.routed_tokens() * D(s.moe.top_k) * D(s.moe.local_experts()) / D(s.moe.experts);
}

// Routed copies (rows) the busiest rank receives from its EP all-to-all.
double ExpertRows(const LayerShape& s) { return s.routed_tokens() * D(s.moe.top_k) * s.moe.load_factor; }

// Expert tensor parallelism (Megatron-Core's alltoall dispatcher with
// expert_tensor_parallel_size > 1, token_dispatcher.py): after the EP
// all-to-all the received rows are all-gathered over the expert-TP group
// (here the TP group), and before the combine all-to-all the experts'
// partial outputs are reduce-scattered back; the backward runs the
// reverse. Bytes: the gathered rows of all etp ranks.
void AddExpertTpCollective(std::vector<Op>& ops, const std::string& name, CollectiveKind kind, const LayerShape& s) {
  if (s.moe.etp <= 1) return;
  ops.push_back(Collective(name, kind, ExpertRows(s) * D(s.moe.etp) * D(s.moe_hidden()) * s.element_bytes()));
}

// The dispatch or combine all-to-all of token rows; the busiest rank
// receives load_factor times the mean, which sets the pace.
Op EpAllToAll(const std::string& name, const LayerShape& s, bool toward_experts) {
  const double row = D(s.moe_hidden()) * DispatchElementBytes(s, toward_experts) * s.moe.load_factor;
  Op op = Collective(name, CollectiveKind::kAllToAll, DispatchRows(s) * row);
  if (Hierarchical(s)) op.scale_out_bytes = Bytes{ScaleOutRows(s) * row};
  op.role = trace::TaskRole::kEpComm;
  op.ep_group = true;
  return op;
}

// Megatron's second all-to-all of a dispatch: the routed copies' fp32 router
// probabilities (applied in the expert activation since Megatron-Core 0.13).
Op EpProbsAllToAll(const std::string& name, const LayerShape& s) {
  Op op = Collective(name, CollectiveKind::kAllToAll, s.routed_tokens() * D(s.moe.top_k) * 4.0 * s.moe.load_factor);
  op.role = trace::TaskRole::kEpComm;
  op.ep_group = true;
  return op;
}

Op HostSync(const std::string& name) {
  Op op;
  op.name = name;
  op.role = trace::TaskRole::kHostSync;
  op.host_wait = Time::Us(kDispatchHostSyncUs);
  return op;
}

// Megatron-Core's sort of the received chunks by local expert
// (sort_chunks_by_idxs, Transformer Engine's moe_sort_chunks_by_index: a map
// kernel and the copy), and the reverse before the combine: read and write
// every received row and its probability. Only when tokens arrive from
// several ranks for several local experts.
void AddSortChunks(std::vector<Op>& ops, const std::string& name, const LayerShape& s) {
  if (Hierarchical(s) || s.moe.ep <= 1 || s.moe.local_experts() <= 1) return;
  ops.push_back(Memory(name, ExpertRows(s) * D(s.moe.etp) * (2.0 * D(s.moe_hidden()) * s.element_bytes() + 8.0), s, 2));
}

// Alltoall dispatcher, token counting (MoEAlltoAllTokenDispatcher.preprocess):
// routing_map.sum over tokens, then the splits and per-local-expert counts
// (seven small PyTorch kernels, counted in the code), with the counts
// all-gathered over the EP group (ep x experts int64), copied to the host and
// waited for. Then permutation 1 (Transformer Engine moe_permute with a
// routing map): three kernels build the [tokens, experts] int32 row map
// (read the bool map, write the row map, read-modify-write it), one gathers
// the rows: read each token once, write its top_k copies and their
// probabilities.
void AlltoAllDispatchPrologue(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double te = Tl * D(s.moe.experts);
  const double h = D(s.moe_hidden());
  const double copies = Tl * D(s.moe.top_k);
  ops.push_back(Memory("dispatch-preprocess", te, s, 7));
  if (s.moe.ep > 1) {
    Op counts = Collective("ep-token-counts", CollectiveKind::kAllGather, D(s.moe.ep) * D(s.moe.experts) * 8.0);
    counts.role = trace::TaskRole::kEpComm;
    counts.ep_group = true;
    ops.push_back(counts);
  }
  ops.push_back(Memory("permute-index", te * (1.0 + 4.0 + 8.0), s, 3));
  ops.push_back(Memory("permute", ActBytes(s, Tl * h + copies * h) + te * 4.0 + copies * 4.0, s, 1,
                       EagerKernel::kElementwise, 1.0, 5));
  // The grouped GEMM needs the counts on the host too, so even without EP
  // Megatron waits ("before_finish"); padded capacity buffers need none.
  if (!s.moe.capacity_padded) ops.push_back(HostSync("dispatch-sync"));
}

}  // namespace

bool Fp8Dispatch(const LayerShape& s) { return Hierarchical(s) && s.kernels.precision == Precision::kFp8; }

void TokenDispatch(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double h = D(s.moe_hidden());
  if (s.moe.tp_replicated_tokens) {
    // Align the routed copies by expert (vLLM's moe_align_block_size) and
    // gather the rows of this rank's experts: no collective, no host wait.
    ops.push_back(Memory("permute", ActBytes(s, Tl * h + LocalCopies(s) * h) + Tl * D(s.moe.top_k) * 8.0, s, 2));
    return;
  }
  if (Hierarchical(s)) {
    // DeepEP get_dispatch_layout: read the top-k indices, write per-rank
    // flags and counts; then the host waits for the received counts.
    ops.push_back(Memory("dispatch-layout", Tl * (D(s.moe.top_k) * 8.0 + D(s.moe.ep)), s));
    if (!s.moe.capacity_padded) ops.push_back(HostSync("dispatch-sync"));
    if (s.moe.ep > 1) {
      AddCast(ops, "ep-dispatch-cast", Tl * h, s);  // FP8 dispatch: quantize once, before sending
      ops.push_back(EpAllToAll("ep-dispatch", s, /*toward_experts=*/true));
    }
    // Expand each received row into its local experts' rows.
    ops.push_back(Memory("permute", (DispatchRows(s) * s.moe.load_factor + ExpertRows(s)) * h *
                                        DispatchElementBytes(s, true), s, 2));
    return;
  }
  AlltoAllDispatchPrologue(ops, s);
  if (s.moe.ep > 1) {
    ops.push_back(EpAllToAll("ep-dispatch", s, /*toward_experts=*/true));
    ops.push_back(EpProbsAllToAll("ep-dispatch-probs", s));
  }
  AddExpertTpCollective(ops, "etp-gather", CollectiveKind::kAllGather, s);
  AddSortChunks(ops, "sort-chunks", s);
}

void TokenCombine(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double h = D(s.moe_hidden());
  const double copies = Tl * D(s.moe.top_k);
  if (s.moe.tp_replicated_tokens) {
    // Sum this rank's expert outputs per token, then all-reduce the partial
    // sums over the TP group (the ranks that hold the other experts or
    // expert slices).
    ops.push_back(Memory("unpermute", ActBytes(s, LocalCopies(s) * h + Tl * h), s, 1));
    AddReduce(ops, "tp-moe", s);
    return;
  }
  if (Hierarchical(s)) {
    // Sum each token's local expert outputs into one row per token.
    ops.push_back(Memory("unpermute", ActBytes(s, (ExpertRows(s) + DispatchRows(s) * s.moe.load_factor) * h), s, 2));
    if (s.moe.ep > 1) ops.push_back(EpAllToAll("ep-combine", s, /*toward_experts=*/false));
    return;
  }
  AddSortChunks(ops, "unsort-chunks", s);
  AddExpertTpCollective(ops, "etp-reduce-scatter", CollectiveKind::kReduceScatter, s);
  if (s.moe.ep > 1) ops.push_back(EpAllToAll("ep-combine", s, /*toward_experts=*/false));
  // Unpermutation 1: sum each token's top_k rows back into place.
  ops.push_back(Memory("unpermute", ActBytes(s, copies * h + Tl * h) + Tl * D(s.moe.experts) * 4.0, s, 1,
                       EagerKernel::kElementwise, 1.0, 3));
}

void TokenCombineBackward(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double h = D(s.moe_hidden());
  const double copies = Tl * D(s.moe.top_k);
  if (Hierarchical(s)) {
    // The combine's backward sends the output gradient to the experts (FP8
    // under fp8 training), where it is expanded to the experts' rows. The
    // splits are known from the forward: no host wait.
    if (s.moe.ep > 1) {
      AddCast(ops, "ep-combine-bwd-cast", Tl * h, s);
      ops.push_back(EpAllToAll("ep-combine-bwd", s, /*toward_experts=*/true));
    }
    ops.push_back(Memory("unpermute-bwd", (DispatchRows(s) * s.moe.load_factor + ExpertRows(s)) * h *
                                              DispatchElementBytes(s, true), s, 2));
    return;
  }
  // Unpermutation 1 backward: each token's gradient copied to its top_k rows.
  ops.push_back(Memory("unpermute-bwd", ActBytes(s, Tl * h + copies * h) + Tl * D(s.moe.experts) * 4.0, s, 1,
                       EagerKernel::kElementwise, 1.0, 3));
  if (s.moe.ep > 1) ops.push_back(EpAllToAll("ep-combine-bwd", s, /*toward_experts=*/true));
  AddExpertTpCollective(ops, "etp-gather-bwd", CollectiveKind::kAllGather, s);
  AddSortChunks(ops, "unsort-chunks-bwd", s);
}

void TokenDispatchBackward(std::vector<Op>& ops, const LayerShape& s) {
  const double Tl = s.routed_tokens();
  const double h = D(s.moe_hidden());
  const double copies = Tl * D(s.moe.top_k);
  if (Hierarchical(s)) {
    // Sum the input gradient of a token's local experts, send it back (bf16).
    ops.push_back(Memory("permute-bwd", ActBytes(s, (ExpertRows(s) + DispatchRows(s) * s.moe.load_factor) * h), s, 2));
    if (s.moe.ep > 1) ops.push_back(EpAllToAll("ep-dispatch-bwd", s, /*toward_experts=*/false));
    return;
  }
  AddSortChunks(ops, "sort-chunks-bwd", s);
  AddExpertTpCollective(ops, "etp-reduce-scatter-bwd", CollectiveKind::kReduceScatter, s);
  if (s.moe.ep > 1) {
    ops.push_back(EpAllToAll("ep-dispatch-bwd", s, /*toward_experts=*/false));
    ops.push_back(EpProbsAllToAll("ep-dispatch-probs-bwd", s));
  }
  // Permutation 1 backward: sum each token's top_k row gradients; scatter
  // the probabilities' gradient into [tokens, experts] fp32.
  ops.push_back(Memory("permute-bwd", ActBytes(s, copies * h + Tl * h) + copies * 4.0 + Tl * D(s.moe.experts) * 8.0,
                       s, 2, EagerKernel::kElementwise, 1.0, 5));
}

}  // namespace stacksim::workload
