// The time of one serving iteration (a forward pass over a batch of prefill
// chunks and decode tokens) on one replica, and the replica's KV-cache budget.
//
// Built from the training cost path: each layer's non-attention ops are
// workload::LayerForward's for the batch's tokens, costed by
// cost::ProfileCostModel, with the GEMMs' weight traffic counted at the
// serving weight format (decode GEMMs are memory-bound: weights dominate);
// TP/EP collectives and PP sends are costed by net::AnalyticNetwork. Attention
// is two fused kernels per layer, one over the prefill chunks and one over the
// decode tokens, whose FLOPs and KV-cache reads follow each request's context
// length (passed in aggregated form, see BatchShape).
//
// Pipeline stages run one batch after another (no overlapped micro-batches):
// the iteration time is the sum of the stages and the sends between them.
// Non-attention costs are cached by token count (the class is not
// thread-safe). Units: Time for times, Bytes for sizes.
#ifndef STACKSIM_SIM_SERVE_ITERATION_COST_H_
#define STACKSIM_SIM_SERVE_ITERATION_COST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cost/profile_cost_model.h"
#include "sim/net/analytic_network.h"
#include "sim/serve/serve_config.h"
#include "sim/util/units.h"
#include "sim/workload/layer_ops.h"

namespace stacksim::serve {

// A batch, in the aggregates the cost depends on.
struct BatchShape {
  int64_t prefill_tokens = 0;       // prompt tokens computed this iteration (all chunks)
  // Causal query-key pairs of the prefill chunks: a chunk of c tokens after p
  // cached tokens has c*p + c*(c+1)/2.
  double prefill_pairs = 0;
  int64_t prefill_cached = 0;       // cached tokens the prefill chunks read (sum of p)
  int64_t decode_seqs = 0;          // one new token each
  int64_t decode_context = 0;       // tokens each decode attends to, summed (cache + the new one)
  // Speculative decoding: the draft tokens the decodes verify beside their
  // own (query tokens beyond one per sequence), and the query-key pairs
  // they add.
  int64_t verify_tokens = 0;
  double verify_pairs = 0;
  int64_t sampled = 0;              // positions whose logits are computed (a token each, or a verified draft)
  // Sliding-window layers (ModelConfig::sliding_window; 0: none): each query
  // sees at most `window` tokens, so these layers' pairs and cache reads are
  // the same sums with every context clamped to the window.
  int64_t window = 0;
  double prefill_pairs_window = 0;
  double prefill_reads_window = 0;  // cache and chunk tokens the sliding layers read
  int64_t decode_context_window = 0;
  double verify_pairs_window = 0;
  // Chunked-attention layers (ModelConfig::attention_chunk; 0: none): a
  // query sees the earlier tokens of its own chunk only.
  int64_t chunk = 0;
  double prefill_pairs_chunk = 0;
  double prefill_reads_chunk = 0;
  int64_t decode_context_chunk = 0;
  double verify_pairs_chunk = 0;

  int64_t tokens() const { return prefill_tokens + decode_seqs + verify_tokens; }
  // Adds a prefill chunk of `chunk` tokens after `cached` tokens.
  void AddPrefill(int64_t chunk, int64_t cached, bool last_chunk);
  void AddDecode(int64_t context);
  // A decode step that also verifies `drafts` draft tokens: drafts + 1
  // query tokens over `context` tokens (the last one's context).
  void AddVerify(int64_t context, int64_t drafts);
};

struct IterationBreakdown {
  Time gemm;          // linear layers and logits
  Time attention;
  Time memory_ops;    // norms, activations, residuals, embedding, RoPE
  Time communication; // TP/EP collectives, PP sends, logits gather
  Time overhead;      // host scheduling per iteration
  Time draft;         // speculative decoding: the draft forwards of the decodes
  Time total() const { return gemm + attention + memory_ops + communication + overhead + draft; }
};

// HBM of one GPU of the replica, as the KV cache budget sees it.
struct KvCachePlan {
  Bytes hbm;                 // profile hbm_capacity
  Bytes reserve;             // (1 - gpu_memory_utilization) of HBM (KvMemoryRule::kTotal), of what weights, activations and runtime leave (kFree), or of HBM less the runtime, less the activations that live in it (kStatic)
  Bytes weights;             // the largest pipeline stage's weights on one GPU
  Bytes activations;         // peak forward activations/workspace at max_batched_tokens
  Bytes runtime;             // CUDA context, NCCL buffers, CUDA graphs (assumption)
  Bytes kv_capacity;         // what is left, per GPU
  Bytes kv_bytes_per_token;  // per GPU, all the stage's layers
  int64_t blocks = 0;        // KV blocks per replica
  int64_t block_tokens = 0;
  int64_t tokens() const { return blocks * block_tokens; }
};

class IterationCost {
 public:
  // REQUIRES: c passes ValidateServeConfig.
  explicit IterationCost(const ServeConfig& c);

  Time Cost(const BatchShape& b) { return Breakdown(b).total(); }
  IterationBreakdown Breakdown(const BatchShape& b);
  const KvCachePlan& kv_plan() const { return kv_plan_; }
  // KV bytes of one token across the whole replica (all layers, all GPUs):
  // what disaggregation moves and swapping copies.
  Bytes kv_bytes_per_token_replica() const { return kv_replica_token_; }
  // Time to move `tokens` of KV cache between a prefill and a decode replica
  // (each GPU sends its shard to its peer in another node in parallel).
  Time KvTransferTime(int64_t tokens) const;
  // Time to copy `tokens` of KV cache between a GPU and host memory (PCIe).
  Time KvSwapTime(int64_t tokens) const;

  // Of the rank's `local` experts, how many `tokens` tokens route to
  // (expected; uniform top-k routing): what an expert GEMM reads weights of.
  double ExpertsTouched(int64_t local, int64_t tokens) const;

 private:
  // Everything but attention and the output head for `tokens` tokens, all
  // layers of the replica (cached).
  const IterationBreakdown& LinearPart(int64_t tokens, bool graphs);
  // Adds `times` x the cost of `ops` (layer_ops lists) for an iteration of
  // `tokens` tokens to `out`.
  void AddOps(const std::vector<workload::Op>& ops, double times, int64_t tokens, const cost::ProfileCostModel& model,
              IterationBreakdown& out) const;

  // The draft (head or model) of speculative decoding, costed as a replica
  // of its own on the same GPUs (no KV plan, no host time).
  struct DraftOnly {};
  IterationCost(const ServeConfig& c, DraftOnly);
  std::unique_ptr<IterationCost> draft_;

  ServeConfig c_;
  cost::ProfileCostModel eager_;
  cost::ProfileCostModel graphs_;
  net::AnalyticNetwork network_;
  KvCachePlan kv_plan_;
  Bytes kv_replica_token_;
  double kv_layer_token_gpu_ = 0;  // KV bytes per token per layer on one GPU
  int64_t q_heads_rank_ = 0;
  // Masked MHA over an 8-bit KV cache: the CUDA cores' conversions per
  // second, 0 when the decode kernel converts nothing.
  double decode_conversions_per_s_ = 0;
  config::PlanConfig plan_;
  std::unordered_map<int64_t, IterationBreakdown> linear_eager_, linear_graphs_;
};

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_ITERATION_COST_H_
