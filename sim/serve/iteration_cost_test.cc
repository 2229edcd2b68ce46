#include "sim/serve/iteration_cost.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/serve/serve_test_util.h"

namespace stacksim::serve {
namespace {

ServeConfig Llama70bTp8() { return ParseServeScenario(TestServeDoc(), "test.json"); }

// A decode step streams every weight and the batch's KV cache from HBM once;
// at batch 64 the GEMMs and attention are memory-bound, so their time is
// those bytes over the profile's achievable bandwidth (hbm_bandwidth x
// copy_efficiency = 3350 GB/s x 0.866 on h100-sxm-80gb).
TEST(IterationCost, DecodeStepReadsWeightsAndKvAtHbmBandwidth) {
  ServeConfig c = Llama70bTp8();
  IterationCost cost(c);
  BatchShape b;
  for (int i = 0; i < 64; ++i) b.AddDecode(1024);
  IterationBreakdown t = cost.Breakdown(b);

  // Per GPU (TP8): the GEMMs' (k, n) and their 64-token activations in bf16.
  const double m = 64, h = 8192;
  struct G { double k, n; } gemms[] = {
      {h, (64 + 2 * 8) * 128 / 8.0},  // qkv: 8 query heads + 1 K + 1 V head per rank
      {64 / 8 * 128.0, h},            // attention output projection
      {h, 2 * 28672 / 8.0},           // fc1 (gate and up)
      {28672 / 8.0, h},               // fc2
  };
  double layer = 0;
  for (const G& g : gemms) layer += (g.k * g.n + m * g.k + m * g.n) * 2.0;
  // Attention: 1 KV head per rank, K and V of 128 bf16 = 512 B per token and
  // layer, over 64 x 1024 cached tokens; plus q and o of the 8 local heads.
  layer += 64.0 * 1024 * 512 + m * 8 * (128 + 128) * 2.0;
  const double vocab_rank = 128256 / 8.0;
  const double logits = (vocab_rank * h + m * h + m * vocab_rank) * 2.0;
  const double bytes = 80 * layer + logits;
  const double expected_s = bytes / (3350e9 * 0.866);
  EXPECT_NEAR((t.gemm + t.attention).seconds(), expected_s, expected_s * 0.005);
  // About 20.6 GB, 7.1 ms of reads; communication and small kernels come on top.
  EXPECT_NEAR(expected_s, 7.08e-3, 0.02e-3);
  EXPECT_GT(t.communication, Time::Zero());
  EXPECT_GT(t.total(), t.gemm + t.attention);
}

// Masked MHA (one thread block per query head) converts each cached K and V
// element of an 8-bit cache once per query head on the CUDA cores: Llama 3
// 70B at TP2 has 32 query heads per GPU, so a decode over 64 x 2048 cached
// tokens converts 64 x 2048 x 32 x 256 x 80 = 85.9e9 elements, at 16 per
// clock per SM (h100-sxm-80gb: 67 TFLOP/s fp32 = 132 SMs x 128 lanes x 2 x
// 1.98 GHz, 4.19e12 conversions/s): 20.5 ms, where reading the fp8 cache
// once takes about 4 ms. A 16-bit cache is read at its read time.
TEST(IterationCost, PerQueryHeadDecodeAttentionConvertsAnFp8CacheOncePerQueryHead) {
  nlohmann::json doc = TestServeDoc();
  doc["replica"]["tp"] = 2;
  doc["precision"] = {{"weights", "fp8"}, {"kv_cache", "fp8"}, {"compute", "fp8"}};
  ServeConfig shared = ParseServeScenario(doc, "t.json");
  doc["decode_attention"] = "per-query-head";
  ServeConfig per_head = ParseServeScenario(doc, "t.json");
  BatchShape b;
  for (int i = 0; i < 64; ++i) b.AddDecode(2048);
  const double a = IterationCost(shared).Breakdown(b).attention.seconds();
  const double q = IterationCost(per_head).Breakdown(b).attention.seconds();
  const double conversions = 64.0 * 2048 * 32 * 256 * 80;
  const double rate = 67e12 / (2 * 128) * 16;
  EXPECT_NEAR(q, conversions / rate, 1e-6);
  EXPECT_NEAR(q, 20.5e-3, 0.1e-3);
  EXPECT_LT(a, 0.3 * q);
  // A prefill is untouched (a fused context kernel reads K and V once).
  BatchShape p;
  p.AddPrefill(2048, 0, true);
  EXPECT_EQ(IterationCost(shared).Breakdown(p).attention, IterationCost(per_head).Breakdown(p).attention);
  // A bf16 cache: the per-query-head kernel decodes at its read time.
  doc["precision"]["kv_cache"] = "bf16";
  ServeConfig bf16_per_head = ParseServeScenario(doc, "t.json");
  doc.erase("decode_attention");
  ServeConfig bf16_shared = ParseServeScenario(doc, "t.json");
  EXPECT_EQ(IterationCost(bf16_per_head).Breakdown(b).attention, IterationCost(bf16_shared).Breakdown(b).attention);
}

TEST(IterationCost, KvCapacityOfLlama3_70bTp8OnH100MatchesHandCount) {
  IterationCost cost(Llama70bTp8());
  const KvCachePlan& p = cost.kv_plan();
  const double gib = 1024.0 * 1024 * 1024;
  // Parameters: 80 x (attention 8192 x 10240 + 8192 x 8192, MLP 3 x 8192 x
  // 28672, two norms 2 x 8192) + embedding and LM head 128256 x 8192 each +
  // final norm = 70,553,706,496; bf16 over 8 GPUs.
  const double weights = 70553706496.0 * 2 / 8;
  EXPECT_NEAR(p.weights.value, weights, 1.0);
  // Activations at 8192 batched tokens: (3 x 8192 + 1280 + 3 x 3584) x 2 B
  // per token, plus fp32 logits of 256 sequences over 16032 vocabulary rows.
  const double activations = 8192.0 * (3 * 8192 + 1280 + 3 * 3584) * 2 + 256.0 * 16032 * 4;
  EXPECT_NEAR(p.activations.value, activations, 1.0);
  const double kv = 80 * gib * 0.9 - weights - activations - 1 * gib;
  EXPECT_NEAR(p.kv_capacity.value, kv, 1.0);
  EXPECT_EQ(p.kv_bytes_per_token.value, 80 * 512);  // 1 KV head x 128 x K,V x 2 B x 80 layers
  EXPECT_EQ(p.blocks, static_cast<int64_t>(kv / (80 * 512 * 16)));
  EXPECT_NEAR(p.tokens(), 1.415e6, 0.005e6);
}

// SGLang's mem_fraction_static: weights and the KV pool share the fraction
// of what the GPU had once the runtime was up (80 GiB less the 1 GiB
// runtime); activations live in the rest, so they do not shrink the pool.
TEST(IterationCost, StaticKvRuleSharesTheFractionBetweenWeightsAndKv) {
  ServeConfig c = Llama70bTp8();
  c.kv_memory = KvMemoryRule::kStatic;
  c.gpu_memory_utilization = 0.81;
  IterationCost cost(c);
  const KvCachePlan& p = cost.kv_plan();
  const double gib = 1024.0 * 1024 * 1024;
  const double weights = 70553706496.0 * 2 / 8;
  EXPECT_NEAR(p.kv_capacity.value, (80 * gib - 1 * gib) * 0.81 - weights, 1.0);
  // The shown reserve leaves out the activations, which live in it.
  EXPECT_NEAR(p.reserve.value + p.activations.value, (80 * gib - 1 * gib) * 0.19, 1.0);
  EXPECT_NEAR(p.reserve.value + p.weights.value + p.activations.value + p.runtime.value + p.kv_capacity.value, 80 * gib,
              1.0);
  // A fraction that leaves no room for the activations is refused.
  c.gpu_memory_utilization = 0.999;
  EXPECT_THROW(IterationCost{c}, InputError);
  c.gpu_memory_utilization = 0.81;
  // The same fraction under the total rule leaves less: activations come
  // out of the pool there.
  c.kv_memory = KvMemoryRule::kTotal;
  EXPECT_LT(IterationCost(c).kv_plan().kv_capacity.value, p.kv_capacity.value);
}

TEST(IterationCost, CheaperWeightFormatsShortenDecode) {
  nlohmann::json doc = TestServeDoc();
  BatchShape b;
  for (int i = 0; i < 8; ++i) b.AddDecode(512);
  IterationCost bf16(ParseServeScenario(doc, "t.json"));
  doc["precision"] = {{"weights", "int4"}, {"compute", "bf16"}};
  IterationCost int4(ParseServeScenario(doc, "t.json"));
  Time a = bf16.Breakdown(b).gemm, q = int4.Breakdown(b).gemm;
  // The layers' weights shrink 2 / (0.5 + 2/128); the bf16 LM head does not.
  EXPECT_LT(q.seconds(), 0.35 * a.seconds());
  EXPECT_GT(int4.kv_plan().blocks, bf16.kv_plan().blocks);
}

// A server stores fp8 weights as fp8: unlike FP8 training, no cast of the
// weight matrices before each GEMM (that pass over every weight would cost
// as much as the GEMMs themselves at decode).
TEST(IterationCost, Fp8WeightsAreNotCastEveryIteration) {
  nlohmann::json doc = TestServeDoc();
  BatchShape b;
  b.AddDecode(1024);
  IterationCost bf16(ParseServeScenario(doc, "t.json"));
  doc["precision"] = {{"weights", "fp8"}, {"compute", "fp8"}};
  IterationCost fp8(ParseServeScenario(doc, "t.json"));
  const IterationBreakdown x = bf16.Breakdown(b), y = fp8.Breakdown(b);
  // Norms, activations and residuals of one token: the same small work (the
  // activation casts to fp8 are a few KB), far below the weight GEMMs.
  EXPECT_LT(y.memory_ops.seconds(), 2 * x.memory_ops.seconds());
  EXPECT_LT(y.memory_ops.seconds(), 0.2 * y.gemm.seconds());
  // Half the weight bytes (the bf16 LM head aside).
  EXPECT_LT(y.gemm.seconds(), 0.6 * x.gemm.seconds());
  EXPECT_LT(y.total(), x.total());
}

TEST(IterationCost, AttentionGrowsWithContextAndGraphsCutLaunches) {
  nlohmann::json doc = TestServeDoc();
  IterationCost cost(ParseServeScenario(doc, "t.json"));
  BatchShape short_ctx, long_ctx;
  short_ctx.AddDecode(100);
  long_ctx.AddDecode(100000);
  EXPECT_GT(cost.Breakdown(long_ctx).attention.seconds(), 20 * cost.Breakdown(short_ctx).attention.seconds());
  doc["cuda_graphs"] = false;
  IterationCost eager(ParseServeScenario(doc, "t.json"));
  EXPECT_GT(eager.Cost(short_ctx), cost.Cost(short_ctx));
}

// GPT-OSS-120B: half its layers see only the last 128 tokens. A long decode
// reads about half the cache a full-attention model of the same shape
// would; a batch built without the window prices every layer as full.
TEST(IterationCost, SlidingWindowLayersReadOnlyTheWindow) {
  nlohmann::json doc = TestServeDoc();
  doc["model"] = "gpt-oss-120b";
  doc["replica"] = {{"tp", 4}};
  ServeConfig c = ParseServeScenario(doc, "test.json");
  ASSERT_EQ(c.model.sliding_window, 128);
  IterationCost cost(c);
  BatchShape windowed, full;
  windowed.window = c.model.sliding_window;
  for (int i = 0; i < 32; ++i) {
    windowed.AddDecode(100000);
    full.AddDecode(100000);
  }
  EXPECT_EQ(windowed.decode_context_window, 32 * 128);
  const double w = cost.Breakdown(windowed).attention.seconds(), f = cost.Breakdown(full).attention.seconds();
  EXPECT_LT(w, 0.55 * f);
  EXPECT_GT(w, 0.45 * f);
  // A prefill chunk of 1000 after 500 cached: with a 128-token window the
  // pairs are 1000 x 128 (every query past the window), not 1000 x 500 +
  // 1000 x 1001 / 2.
  BatchShape chunk;
  chunk.window = 128;
  chunk.AddPrefill(1000, 500, true);
  EXPECT_DOUBLE_EQ(chunk.prefill_pairs_window, 1000.0 * 128);
  EXPECT_DOUBLE_EQ(chunk.prefill_pairs, 1000.0 * 500 + 1000.0 * 1001 / 2);
  BatchShape first;
  first.window = 128;
  first.AddPrefill(200, 0, true);  // 1..128, then 72 queries of 128
  EXPECT_DOUBLE_EQ(first.prefill_pairs_window, 128.0 * 129 / 2 + 72.0 * 128);
}

// Llama 4's chunked attention: a query sees the earlier tokens of its own
// 8192-token chunk.
TEST(IterationCost, ChunkedAttentionLayersSeeTheirOwnChunk) {
  BatchShape b;
  b.chunk = 8192;
  b.AddDecode(10000);
  EXPECT_EQ(b.decode_context_chunk, 10000 - 8192);
  b.AddPrefill(1000, 8000, true);  // positions 8001..9000: 8001..8192 keys, then 1..808
  const double tail = (8001.0 + 8192) * 192 / 2, head = 808.0 * 809 / 2;
  EXPECT_DOUBLE_EQ(b.prefill_pairs_chunk, tail + head);
  EXPECT_DOUBLE_EQ(b.prefill_reads_chunk, 9000.0);  // from the chunk's start at 0
  nlohmann::json doc = TestServeDoc();
  doc["model"] = "llama4-scout";
  doc["replica"] = {{"tp", 4}};
  IterationCost cost(ParseServeScenario(doc, "t.json"));
  BatchShape chunked, full;
  chunked.chunk = 8192;
  for (int i = 0; i < 32; ++i) {
    chunked.AddDecode(100000 + i);
    full.AddDecode(100000 + i);
  }
  // 12 of 48 layers read the whole context, 36 a few thousand tokens.
  EXPECT_LT(cost.Breakdown(chunked).attention.seconds(), 0.35 * cost.Breakdown(full).attention.seconds());
}

// Mixtral 8x7B routes each token to 2 of 8 experts: a one-sequence decode
// step reads about a quarter of the expert weights, a 64-sequence step all
// of them (1 - 0.75^64 ~ 1). Counting every local expert's weights at batch
// 1 would make the two steps' GEMM time nearly equal (both memory-bound).
TEST(IterationCost, MoeDecodeReadsOnlyTheRoutedExpertsWeights) {
  nlohmann::json doc = TestServeDoc();
  doc["model"] = "mixtral-8x7b";
  doc["replica"] = {{"tp", 2}};
  ServeConfig c = ParseServeScenario(doc, "test.json");
  IterationCost cost(c);
  BatchShape one, many;
  one.AddDecode(100);
  for (int i = 0; i < 64; ++i) many.AddDecode(100);
  const double g1 = cost.Breakdown(one).gemm.seconds(), g64 = cost.Breakdown(many).gemm.seconds();
  // Experts hold ~45 of Mixtral's ~46.7 B parameters: one token reads
  // ~1.7 + 45 / 4 = ~13 B of them, 64 tokens all ~46.7 B.
  EXPECT_LT(g1, 0.4 * g64);
  EXPECT_GT(g1, 0.2 * g64);
  EXPECT_NEAR(cost.ExpertsTouched(8, 1), 2.0, 1e-12);
  EXPECT_NEAR(cost.ExpertsTouched(8, 64), 8.0 * (1.0 - std::pow(0.75, 64)), 1e-12);
}

// MLA prefills in the decompressed multi-head form (keys 128 + 64, values
// 128 wide per head) and decodes in the latent form (576 / 512): a long
// DeepSeek-V3 prefill's attention takes less time than its FLOPs would at
// the GPU's peak in the latent form (3.4x the decompressed FLOPs).
TEST(IterationCost, MlaPrefillsDecompressedAndDecodesInTheLatentSpace) {
  nlohmann::json doc = TestServeDoc();
  doc["model"] = "deepseek-v3";
  doc["topology"] = "hgx-h200";
  doc["replica"] = {{"tp", 8}, {"ep", 8}};
  doc["precision"] = {{"weights", "fp8"}, {"kv_cache", "bf16"}, {"compute", "fp8"}};
  const ServeConfig c = ParseServeScenario(doc, "test.json");
  IterationCost cost(c);
  BatchShape prefill;
  prefill.AddPrefill(16384, 0, true);
  const double pairs = 16384.0 * 16385.0 / 2;
  const double heads = 128.0 / 8, layers = 61;
  const double peak = c.profile.Peak(config::Precision::kBf16)->value;
  const double decompressed = 2 * pairs * heads * (192 + 128) * layers / peak;
  const double latent = 2 * pairs * heads * (576 + 512) * layers / peak;
  const double t = cost.Breakdown(prefill).attention.seconds();
  EXPECT_GT(t, decompressed);
  EXPECT_LT(t, latent);
}

// Serving's fused MoE under TP attention: every rank holds all the tokens
// and runs its share of the experts (a 1/tp slice of each with ep 1, whole
// experts with ep = tp), then one all-reduce per MoE layer. Doubling TP
// halves a prefill's expert work per GPU; ep 1 and ep = tp read the same
// bytes and move the same all-reduces, none of them the top-k copies.
TEST(IterationCost, MoeUnderTpSplitsTheExpertWorkAndAllReducesOnce) {
  auto breakdown = [](int tp, int ep, const BatchShape& b) {
    nlohmann::json doc = TestServeDoc();
    doc["model"] = "mixtral-8x7b";
    doc["replica"] = {{"tp", tp}, {"ep", ep}};
    IterationCost cost(ParseServeScenario(doc, "test.json"));
    return cost.Breakdown(b);
  };
  BatchShape prefill;
  prefill.AddPrefill(4096, 0, true);
  const IterationBreakdown tp2 = breakdown(2, 1, prefill), tp4 = breakdown(4, 1, prefill);
  const IterationBreakdown tp4_ep4 = breakdown(4, 4, prefill);
  EXPECT_LT(tp4.gemm.seconds(), 0.65 * tp2.gemm.seconds());
  EXPECT_GT(tp4.gemm.seconds(), 0.4 * tp2.gemm.seconds());
  EXPECT_NEAR(tp4_ep4.gemm.seconds(), tp4.gemm.seconds(), 0.1 * tp4.gemm.seconds());
  EXPECT_DOUBLE_EQ(tp4_ep4.communication.seconds(), tp4.communication.seconds());
  // 32 layers, each two all-reduces of the 4096 x 4096 bf16 hidden states
  // (32 MiB): the MoE's costs what the attention's does.
  const double per_all_reduce = tp4.communication.seconds() / (2 * 32);
  EXPECT_GT(per_all_reduce, 32.0 * (1 << 20) / 900e9);  // not faster than NVLink's peak
  EXPECT_LT(per_all_reduce, 2e-3);
}

}  // namespace
}  // namespace stacksim::serve
