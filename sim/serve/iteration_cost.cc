#include "sim/serve/iteration_cost.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "sim/util/error.h"

namespace stacksim::serve {
namespace {

// Assumption: CUDA context, NCCL buffers and captured graphs take about
// 1 GiB per GPU outside the model's tensors (vLLM reports 0.5-1.5 GiB of
// "non-torch memory" in its startup profile on H100).
constexpr double kRuntimeBytes = 1.0 * kGiB;
// Assumption: sampling (temperature, softmax, top-p/top-k) reads the fp32
// logits a few times in about five kernels.
constexpr int kSamplingKernels = 5;
constexpr double kSamplingPasses = 3.0;

double D(int64_t v) { return static_cast<double>(v); }

// Type conversions the CUDA cores of one GPU complete per second: 16 per
// clock per SM for the conversions outside the fast integer-widening ones
// (CUDA C++ Programming Guide, "Arithmetic Instructions", throughput of
// native arithmetic instructions, compute capability 8.x and 9.0), at the
// clock the fp32 peak implies with 128 FP32 lanes per SM (two FLOPs per
// lane and clock; Ada, Hopper and Blackwell, the GPUs with fp8: H100 SXM
// 67 TFLOP/s = 132 SMs x 128 x 2 x 1.98 GHz, 4.2e12 conversions/s).
double ConversionsPerSecond(const config::ProfileConfig& p) {
  constexpr double kConversionsPerClock = 16, kFp32LanesPerSm = 128;
  const auto fp32 = p.Peak(config::Precision::kFp32);
  const double clock_sm_s = fp32 ? fp32->value / (2.0 * kFp32LanesPerSm) : 0;  // SM clocks per second, all SMs
  if (clock_sm_s <= 0) throw InputError(p.name, "peak_flops.fp32", "needed for the decode attention's conversions");
  return clock_sm_s * kConversionsPerClock;
}

// Bytes of the weights of layers [first, last) in `format`, with the
// embedding and the output head (and final norm) when asked, those in 16
// bits (quantized checkpoints such as AWQ, GPTQ and FP8 keep them
// unquantized); for all tp ranks together.
double WeightBytesOf(const config::ModelConfig& m, int64_t first, int64_t last, WeightFormat format, bool embedding,
                     bool head) {
  double params = 0;
  for (int64_t l = first; l < last; ++l) params += D(m.LayerParameterCount(l));
  double bytes = params * WeightBytes(format);
  if (embedding) bytes += D(m.EmbeddingParameterCount()) * 2.0;
  if (head) bytes += D(m.OutputHeadParameterCount() + m.NormParameterCount()) * 2.0;
  return bytes;
}

// sum of min(i, w) for i = a..b (0 when b < a); w <= 0: no window.
double SumMin(int64_t a, int64_t b, int64_t w) {
  if (b < a) return 0;
  auto sum = [](int64_t x, int64_t y) { return (D(x) + D(y)) * D(y - x + 1) / 2; };
  if (w <= 0 || b <= w) return sum(a, b);
  if (a > w) return D(b - a + 1) * D(w);
  return sum(a, w) + D(b - w) * D(w);
}

// sum of ((i - 1) mod c) + 1 for i = a..b: the keys position i sees inside
// chunks of c tokens (c <= 0: all i of them).
double SumInChunk(int64_t a, int64_t b, int64_t c) {
  if (b < a) return 0;
  if (c <= 0) return SumMin(a, b, 0);
  auto upto = [c](int64_t n) {
    const double q = D(n / c), r = D(n % c);
    return q * D(c) * D(c + 1) / 2 + r * (r + 1) / 2;
  };
  return upto(b) - upto(a - 1);
}

// Keys a decode at context `context` sees inside chunks of c tokens.
int64_t InChunk(int64_t context, int64_t c) { return c > 0 ? (context - 1) % c + 1 : context; }

}  // namespace

void BatchShape::AddPrefill(int64_t chunk, int64_t cached, bool last_chunk) {
  prefill_tokens += chunk;
  prefill_pairs += D(chunk) * D(cached) + D(chunk) * D(chunk + 1) / 2;
  prefill_pairs_window += SumMin(cached + 1, cached + chunk, window);
  prefill_reads_window += D(window > 0 ? std::min(cached + chunk, window + chunk) : cached + chunk);
  prefill_pairs_chunk += SumInChunk(cached + 1, cached + chunk, this->chunk);
  // The chunk reads the keys from the start of the attention chunk it opens in.
  prefill_reads_chunk += D(this->chunk > 0 ? cached + chunk - (cached / this->chunk) * this->chunk : cached + chunk);
  prefill_cached += cached;
  if (last_chunk) ++sampled;
}

void BatchShape::AddDecode(int64_t context) {
  ++decode_seqs;
  decode_context += context;
  decode_context_window += window > 0 ? std::min(context, window) : context;
  decode_context_chunk += InChunk(context, chunk);
  ++sampled;
}

void BatchShape::AddVerify(int64_t context, int64_t drafts) {
  AddDecode(context);
  verify_tokens += drafts;
  // Draft i (1-based) sees i more tokens than the sequence's own position.
  verify_pairs += D(drafts) * D(context) + D(drafts) * D(drafts + 1) / 2;
  verify_pairs_window += SumMin(context + 1, context + drafts, window);
  verify_pairs_chunk += SumInChunk(context + 1, context + drafts, chunk);
  sampled += drafts;
}

IterationCost::IterationCost(const ServeConfig& c, DraftOnly)
    : c_(c), eager_(c.profile, false), graphs_(c.profile, true), network_(c.topology, c.profile) {
  const config::ModelConfig& m = c.model;
  plan_.tp = c.tp;
  plan_.pp = c.pp;
  plan_.ep = c.ep;
  // The routed experts spread over the replica's TP ranks (vLLM's and
  // SGLang's fused MoE): with ep 1 every rank holds a 1/tp slice of each
  // expert, with ep = tp whole experts, 1/ep of them (ep x etp = tp).
  plan_.etp = c.tp / c.ep;
  plan_.micro_batch = 1;
  plan_.precision = c.compute;
  q_heads_rank_ = m.num_attention_heads / c.tp;
  // KV bytes per token and layer on one GPU: K and V of the rank's KV heads
  // (a head is replicated when TP exceeds the KV heads); MLA caches one
  // latent (kv_lora_rank) plus the shared RoPE key, the same on every rank
  // (DeepSeek-V2 §2.1.3; vLLM's MLA backend).
  const double kv_bytes = KvBytes(c.kv);
  if (m.is_mla()) {
    kv_layer_token_gpu_ = D(m.kv_lora_rank + m.qk_rope_head_dim) * kv_bytes;
  } else {
    const int64_t kv_heads_rank = (m.num_kv_heads + c.tp - 1) / c.tp;
    kv_layer_token_gpu_ = D(kv_heads_rank) * D(m.head_dim) * 2.0 * kv_bytes;
  }
  if (c.decode_attention == DecodeAttention::kPerQueryHead && kv_bytes < 2.0) {
    decode_conversions_per_s_ = ConversionsPerSecond(c.profile);
  }
  kv_replica_token_ = Bytes{kv_layer_token_gpu_ * D(m.num_layers) * c.tp};
}

IterationCost::IterationCost(const ServeConfig& c) : IterationCost(c, DraftOnly{}) {
  const config::ModelConfig& m = c.model;
  const int64_t stage_layers = m.num_layers / c.pp;
  double draft_weights = 0, draft_kv_token = 0;  // per GPU
  if (c.speculative.enabled()) {
    ServeConfig d = c;
    d.model = c.speculative.draft_model;
    d.pp = 1;
    d.ep = d.model.is_moe() && d.model.num_experts % c.ep == 0 ? c.ep : 1;
    d.speculative = SpeculativeConfig{};
    d.iteration_overhead = Time::Zero();
    draft_ = std::unique_ptr<IterationCost>(new IterationCost(d, DraftOnly{}));
    // A draft head shares the target's embedding and output head; a draft
    // model has its own.
    const bool own_ends = c.speculative.method == SpeculativeConfig::Method::kDraftModel;
    draft_weights = WeightBytesOf(d.model, 0, d.model.num_layers, c.weights, own_ends, own_ends) / c.tp;
    draft_kv_token = draft_->kv_layer_token_gpu_ * D(d.model.num_layers);
  }

  // Weights on one GPU of the largest stage.
  KvCachePlan& p = kv_plan_;
  p.hbm = c.profile.hbm_capacity.value;
  p.reserve = p.hbm * (1.0 - c.gpu_memory_utilization);
  double worst = 0;
  for (int stage = 0; stage < c.pp; ++stage) {
    worst = std::max(worst, WeightBytesOf(m, stage * stage_layers, (stage + 1) * stage_layers, c.weights, stage == 0,
                                          stage == c.pp - 1));
  }
  p.weights = Bytes{worst / c.tp + draft_weights};
  // Peak activations of a forward over max_batched_tokens (what vLLM's
  // profile run measures): the residual stream, the norm output and the
  // attention output (3 x hidden), the QKV output, the gated FC1 output and
  // the activation output, in 16-bit; plus fp32 logits of max_sequences.
  const double T = D(c.max_batched_tokens);
  const double qkv = D((m.num_attention_heads + 2 * m.num_kv_heads) * m.head_dim) / c.tp;
  const double ffn = D(std::max(m.intermediate_size, m.moe_intermediate_size * m.experts_per_token)) / c.tp;
  p.activations = Bytes{T * (3.0 * D(m.hidden_size) + qkv + 3.0 * ffn) * 2.0 +
                        D(c.max_sequences) * D(m.vocab_size) / c.tp * 4.0};
  p.runtime = Bytes{kRuntimeBytes};
  if (c.kv_memory == KvMemoryRule::kFree) {
    // The KV cache takes its fraction of what is free once weights,
    // activations and runtime are in place; the rest stays free.
    const Bytes free = p.hbm - p.weights - p.activations - p.runtime;
    p.reserve = free * (1.0 - c.gpu_memory_utilization);
  }
  p.kv_capacity = p.hbm - p.reserve - p.weights - p.activations - p.runtime;
  if (c.kv_memory == KvMemoryRule::kStatic) {
    // Weights and the KV pool share the fraction of what the GPU had once
    // the runtime was up; activations and CUDA graphs use the rest (SGLang
    // model_runner: available memory after the weights less
    // (1 - mem_fraction_static) of the memory measured at start-up).
    // The reserve shown is that rest less the activations, so the printed
    // terms still add up to HBM.
    const Bytes rest = (p.hbm - p.runtime) * (1.0 - c.gpu_memory_utilization);
    if (rest.value < p.activations.value) {
      throw InputError(c.file, "memory.gpu_memory_utilization",
                       "the " + std::to_string(p.activations.value / kGiB) + " GiB of activations per GPU do not fit in the " +
                           std::to_string(rest.value / kGiB) +
                           " GiB the static fraction leaves outside weights and KV cache (lower the fraction)");
    }
    p.reserve = rest - p.activations;
    p.kv_capacity = (p.hbm - p.runtime) * c.gpu_memory_utilization - p.weights;
  }
  // The draft's own KV cache grows with the target's, token for token.
  p.kv_bytes_per_token = Bytes{kv_layer_token_gpu_ * D(stage_layers) + draft_kv_token};
  p.block_tokens = c.block_tokens;
  p.blocks = p.kv_capacity.value > 0
                 ? static_cast<int64_t>(std::floor(p.kv_capacity.value / (p.kv_bytes_per_token.value * D(c.block_tokens))))
                 : 0;
  if (p.blocks < 1) {
    throw InputError(c.file, "replica",
                     "no room for the KV cache: " + std::to_string(p.weights.value / kGiB) + " GiB of weights and " +
                         std::to_string(p.activations.value / kGiB) + " GiB of activations per GPU leave nothing of " +
                         std::to_string(p.hbm.value / kGiB) + " GiB (raise tp/pp or quantize)");
  }
}

double IterationCost::ExpertsTouched(int64_t local, int64_t tokens) const {
  // Each token picks top_k of the E experts: a given expert is missed by
  // one token with probability 1 - top_k / E, by all of them with that to
  // the power `tokens` (routing taken uniform and independent). A decode
  // step of a few sequences reads only the experts it routes to (vLLM's
  // fused_moe and TensorRT-LLM's MoE kernels skip experts with no tokens).
  const config::ModelConfig& m = c_.model;
  const double miss = 1.0 - D(m.experts_per_token) / D(m.num_experts);
  return D(local) * (1.0 - std::pow(std::max(0.0, miss), D(tokens)));
}

void IterationCost::AddOps(const std::vector<workload::Op>& ops, double times, int64_t tokens,
                           const cost::ProfileCostModel& model, IterationBreakdown& out) const {
  const double in_bytes = c_.compute == config::Precision::kFp8 ? 1.0 : 2.0;
  for (const workload::Op& op : ops) {
    // Compare the text: two uses of one string literal need not share an
    // address (ASan builds keep one copy per file; this test then missed
    // every attention op and costed prefill attention as memory traffic).
    if (op.role == trace::TaskRole::kAttention) continue;  // costed per request context
    // Training's FP8 recipe casts the bf16 master weights before every GEMM
    // ("...-cast-w"); a server stores the weights in their format already.
    if (op.name.size() > 7 && op.name.compare(op.name.size() - 7, 7, "-cast-w") == 0) continue;
    if (op.host_wait > Time::Zero()) {
      out.overhead += op.host_wait * times;
      continue;
    }
    if (op.is_collective) {
      const int size = op.ep_group ? c_.ep : c_.tp;
      if (size <= 1) continue;
      trace::CommOp comm;
      comm.kind = op.collective;
      comm.bytes = op.bytes;
      trace::CommGroup group;
      group.size = size;
      group.ranks_per_node = size;
      engine::CommCost cost = network_.Collective(comm, group);
      out.communication += (cost.latency + cost.transfer) * times;
      continue;
    }
    trace::ComputeOp k = op.compute;
    if (k.op_class == trace::OpClass::kGemm) {
      // Serving reads the stored weights (k x n per GEMM of the batch) at
      // their format's size; inputs at the compute precision, outputs 16-bit.
      // Routed-expert GEMMs (batch = the rank's experts) read the weights
      // of the experts the iteration's tokens route to.
      const double weight_sets = op.expert ? ExpertsTouched(k.batch, tokens) : D(k.batch);
      k.bytes = Bytes{weight_sets * D(k.k) * D(k.n) * WeightBytes(c_.weights) +
                      D(k.batch) * (D(k.m) * D(k.k) * in_bytes + D(k.m) * D(k.n) * 2.0)};
      out.gemm += model.ComputeTime(k) * times;
    } else {
      out.memory_ops += model.ComputeTime(k) * times;
    }
  }
}

const IterationBreakdown& IterationCost::LinearPart(int64_t tokens, bool graphs) {
  auto& cache = graphs ? linear_graphs_ : linear_eager_;
  auto it = cache.find(tokens);
  if (it != cache.end()) return it->second;
  const cost::ProfileCostModel& model = graphs ? graphs_ : eager_;
  const config::ModelConfig& m = c_.model;
  IterationBreakdown b;
  workload::LayerShape shape = workload::LayerShape::From(m, plan_, tokens, c_.profile);
  const int64_t moe_layers = m.is_moe() ? m.MoeLayerCount() : 0;
  AddOps(workload::LayerForward(shape), D(m.num_layers - moe_layers), tokens, model, b);
  if (moe_layers > 0) {
    workload::LayerShape moe = shape.Moe(m, plan_, c_.topology.gpus_per_node);
    moe.moe.tp_replicated_tokens = true;  // fused MoE under TP attention: no dispatch collective
    AddOps(workload::LayerForward(moe), D(moe_layers), tokens, model, b);
  }
  AddOps(workload::EmbeddingForward(shape), 1.0, tokens, model, b);
  // Activations pass between pipeline stages.
  if (c_.pp > 1) {
    const bool one_node = c_.gpus_per_replica() <= c_.topology.gpus_per_node;
    trace::TransferOp send;
    send.bytes = Bytes{D(tokens) * D(m.hidden_size) * 2.0};
    trace::CommGroup pair;
    pair.size = 2;
    pair.ranks_per_node = one_node ? 2 : 1;
    pair.nodes = one_node ? 1 : 2;
    engine::CommCost cost = network_.Transfer(send, pair);
    b.communication += (cost.latency + cost.transfer) * D(c_.pp - 1);
  }
  return cache.emplace(tokens, b).first->second;
}

IterationBreakdown IterationCost::Breakdown(const BatchShape& batch) {
  const bool graphs = c_.cuda_graphs && batch.prefill_tokens == 0 && batch.decode_seqs <= c_.cuda_graph_max_batch;
  const cost::ProfileCostModel& model = graphs ? graphs_ : eager_;
  const config::ModelConfig& m = c_.model;
  IterationBreakdown b;
  if (batch.tokens() == 0) return b;
  b = LinearPart(batch.tokens(), graphs);
  b.overhead += c_.iteration_overhead;

  // Attention: per layer, one fused kernel over the prefill chunks and one
  // over the decode tokens. MLA decodes in the latent space (absorbed
  // weights): keys kv_lora + rope wide, values kv_lora wide; it prefills in
  // the decompressed form, each head's keys qk_nope + qk_rope and values
  // v_head_dim wide (vLLM's MLA backend and SGLang: multi-head attention
  // for prefill, the absorbed multi-query form for decode).
  const double qk = D(m.is_mla() ? m.kv_lora_rank + m.qk_rope_head_dim : m.head_dim);
  const double v = D(m.is_mla() ? m.kv_lora_rank : (m.v_head_dim > 0 ? m.v_head_dim : m.head_dim));
  const double prefill_qk = m.is_mla() ? D(m.qk_nope_head_dim + m.qk_rope_head_dim) : qk;
  const double prefill_v = m.is_mla() ? D(m.v_head_dim) : v;
  const double heads = D(q_heads_rank_);
  // Layer groups: full attention over the whole context; sliding-window
  // layers (when the batch was built with the window) over the clamped
  // sums; chunked-attention layers over their own chunk.
  struct LayerGroup {
    double layers;
    double prefill_pairs, prefill_reads;
    double decode_context, verify_pairs;
  };
  const int64_t sliding = batch.window > 0 ? std::min(m.sliding_window_layers, m.num_layers) : 0;
  const int64_t chunked = batch.chunk > 0 ? std::min(m.chunked_attention_layers, m.num_layers - sliding) : 0;
  const LayerGroup groups[] = {
      {D(m.num_layers - sliding - chunked), batch.prefill_pairs, D(batch.prefill_cached + batch.prefill_tokens),
       D(batch.decode_context), batch.verify_pairs},
      {D(sliding), batch.prefill_pairs_window, batch.prefill_reads_window, D(batch.decode_context_window),
       batch.verify_pairs_window},
      {D(chunked), batch.prefill_pairs_chunk, batch.prefill_reads_chunk, D(batch.decode_context_chunk),
       batch.verify_pairs_chunk}};
  auto attention_layer = [&](double pairs, double kv_reads, double query_tokens, double qk, double v) {
    trace::ComputeOp op;
    op.op_class = trace::OpClass::kAttention;
    op.precision = config::Precision::kBf16;
    op.flops = Flops{2.0 * pairs * heads * (qk + v)};
    op.bytes = Bytes{kv_reads * kv_layer_token_gpu_ + query_tokens * heads * (qk + v) * 2.0};
    return model.ComputeTime(op);
  };
  if (batch.prefill_tokens > 0) {
    for (const LayerGroup& g : groups) {
      if (g.layers <= 0) continue;
      b.attention += attention_layer(g.prefill_pairs, g.prefill_reads, D(batch.prefill_tokens), prefill_qk, prefill_v) *
                     g.layers;
    }
  }
  if (batch.decode_seqs > 0) {
    // Verified drafts add query tokens and pairs; the cache is read once.
    const double queries = D(batch.decode_seqs + batch.verify_tokens);
    Time decode;
    double context_layers = 0;  // cached tokens read, summed over the layers
    for (const LayerGroup& g : groups) {
      if (g.layers <= 0) continue;
      decode += attention_layer(g.decode_context + g.verify_pairs, g.decode_context, queries, qk, v) * g.layers;
      context_layers += g.decode_context * g.layers;
    }
    if (decode_conversions_per_s_ > 0) {
      // A decode kernel with one thread block per query head (masked MHA's
      // grid is heads x sequences: TensorRT-LLM
      // decoderMaskedMultiheadAttentionLaunch.h, mmha_launch_kernel_ex)
      // converts every cached K and V element of an 8-bit cache to float
      // once per query head, on the CUDA cores; the re-reads of a KV head
      // by its query heads come from L2 (a 16-bit cache decodes at its
      // read time: TensorRT-LLM 0.6.1's A100 fp16 rows). The kernel takes
      // the longer of its reads and its conversions.
      const double conversions = context_layers * heads * (qk + v);
      decode = std::max(decode, Time::FromSeconds(conversions / decode_conversions_per_s_));
    }
    b.attention += decode;
  }

  // Output head for the sequences that sample: final norm, logits (bf16
  // weights), gather of the vocabulary shards, sampling in fp32.
  if (batch.sampled > 0) {
    const double s = D(batch.sampled);
    const int64_t v_rank = m.vocab_size / c_.tp;
    trace::ComputeOp norm;
    norm.bytes = Bytes{s * D(m.hidden_size) * 2.0 * 2.0};
    b.memory_ops += model.ComputeTime(norm);
    trace::ComputeOp logits;
    logits.op_class = trace::OpClass::kGemm;
    logits.precision = config::Precision::kBf16;
    logits.m = batch.sampled;
    logits.n = v_rank;
    logits.k = m.hidden_size;
    logits.flops = Flops{2.0 * s * D(v_rank) * D(m.hidden_size)};
    logits.bytes = Bytes{(D(v_rank) * D(m.hidden_size) + s * D(m.hidden_size) + s * D(v_rank)) * 2.0};
    b.gemm += model.ComputeTime(logits);
    if (c_.tp > 1) {
      trace::CommOp gather;
      gather.kind = trace::CollectiveKind::kAllGather;
      gather.bytes = Bytes{s * D(m.vocab_size) * 2.0};
      trace::CommGroup group;
      group.size = c_.tp;
      group.ranks_per_node = c_.tp;
      engine::CommCost cost = network_.Collective(gather, group);
      b.communication += cost.latency + cost.transfer;
    }
    trace::ComputeOp sampling;
    sampling.bytes = Bytes{s * D(m.vocab_size) * 4.0 * kSamplingPasses};
    sampling.kernels = kSamplingKernels;
    b.memory_ops += model.ComputeTime(sampling);
  }
  // Speculative decoding: every decoding sequence's drafts come from
  // draft_tokens forwards of the draft, one after another, each over one
  // token per sequence (the drafts' growing context left out).
  if (draft_ && batch.decode_seqs > 0) {
    BatchShape step;
    step.decode_seqs = batch.decode_seqs;
    step.decode_context = batch.decode_context;
    step.sampled = batch.decode_seqs;
    b.draft = draft_->Breakdown(step).total() * D(c_.speculative.draft_tokens);
  }
  return b;
}

Time IterationCost::KvTransferTime(int64_t tokens) const {
  // Every GPU of the prefill replica sends its shard to its peer in the
  // decode replica, all in parallel; the replicas sit in different nodes.
  trace::TransferOp send;
  send.bytes = kv_plan_.kv_bytes_per_token * D(tokens);
  trace::CommGroup pair;
  pair.size = 2;
  pair.ranks_per_node = 1;
  pair.nodes = 2;
  engine::CommCost cost = network_.Transfer(send, pair);
  return cost.latency + cost.transfer;
}

Time IterationCost::KvSwapTime(int64_t tokens) const {
  return TransferTime(kv_plan_.kv_bytes_per_token * D(tokens), c_.profile.host_bandwidth.value);
}

}  // namespace stacksim::serve
