#include "sim/config/model.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "sim/config/scenario.h"
#include "tests/input_error.h"

namespace stacksim::config {
namespace {

const std::string kSourceDir = STACKSIM_SOURCE_DIR;

using testing::ErrorFrom;

// A Llama-2-7B config as Hugging Face ships it (minus token ids).
nlohmann::json Llama7b() {
  return nlohmann::json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 11008, "max_position_embeddings": 4096, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
    "rms_norm_eps": 1e-05, "rope_scaling": null, "tie_word_embeddings": false,
    "torch_dtype": "float16", "vocab_size": 32000})");
}

ModelConfig Parse(const nlohmann::json& doc) { return ParseModel(JsonNode(doc, "m.json", "")); }

InputError ParseError(const nlohmann::json& doc) {
  return ErrorFrom([&] { Parse(doc); });
}

TEST(Model, ParsesHuggingFaceLlamaConfig) {
  ModelConfig m = Parse(Llama7b());
  EXPECT_EQ(m.name, "m");  // file stem when no name is given
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.num_layers, 32);
  EXPECT_EQ(m.num_kv_heads, 32);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.activation, Activation::kSwiglu);
  EXPECT_TRUE(m.gated_mlp());
  EXPECT_EQ(m.norm, NormKind::kRmsNorm);
  EXPECT_FALSE(m.learned_position_embeddings);
  EXPECT_EQ(m.max_position_embeddings, 4096);
}

TEST(Model, Llama2_7bHasItsPublishedParameterCount) {
  // 6,738,415,616: the count Hugging Face reports for meta-llama/Llama-2-7b-hf.
  EXPECT_EQ(Parse(Llama7b()).ParameterCount(), 6738415616);
}

TEST(Model, CountsEveryWeightOfASmallModelByHand) {
  // h 8, 2 heads of 4, 1 KV head, gated ffn 16, vocab 10, layernorm, biases,
  // learned positions 6, untied.
  nlohmann::json doc = nlohmann::json::parse(R"({
    "hidden_size": 8, "num_hidden_layers": 3, "num_attention_heads": 2, "num_key_value_heads": 1,
    "intermediate_size": 16, "vocab_size": 10, "hidden_act": "geglu", "norm_type": "layernorm",
    "attention_bias": true, "mlp_bias": true, "position_embedding_type": "learned",
    "max_position_embeddings": 6, "tie_word_embeddings": false})");
  ModelConfig m = Parse(doc);
  // q 8x8 + k,v 8x4 each + o 8x8 = 192; biases 8 + 4 + 4 + 8 = 24.
  // MLP 3x8x16 = 384; biases 16 + 16 + 8 = 40. Norms 2 x 16 = 32.
  EXPECT_EQ(m.LayerParameterCount(), 192 + 24 + 384 + 40 + 32);
  EXPECT_EQ(m.EmbeddingParameterCount(), 10 * 8 + 6 * 8);
  EXPECT_EQ(m.OutputHeadParameterCount(), 80);
  EXPECT_EQ(m.ParameterCount(), 3 * 672 + 128 + 16 + 80);
}

TEST(Model, Gpt3_175bMatchesMegatronShapesAndNarayananFormula) {
  ModelConfig m = LoadModelFile(kSourceDir + "/models/gpt3-175b.json");
  const double l = 96, h = 12288, V = 51200, s = 2048;
  // Exact: l(12h^2 + 13h) + (V + s)h + final LayerNorm 2h.
  EXPECT_EQ(m.ParameterCount(), 96 * (12 * 12288LL * 12288 + 13 * 12288) + (51200 + 2048) * 12288LL + 2 * 12288);
  EXPECT_EQ(m.ParameterCount(), 174615846912);
  // Narayanan et al. SC'21 §5.1: P = 12lh^2 (1 + 13/(12h) + (V + s)/(12lh)).
  double narayanan = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  EXPECT_NEAR(m.ParameterCount() / narayanan, 1.0, 1e-3);
  EXPECT_NEAR(m.ParameterCount() / 174.6e9, 1.0, 1e-3);
}

TEST(Model, Sc21TableOneSizesMatchTheirFormula) {
  struct Row { const char* file; double nominal; };
  for (Row r : {Row{"gpt-1.7b", 1.7e9}, Row{"gpt-3.6b", 3.6e9}, Row{"gpt-7.5b", 7.5e9}, Row{"gpt-18.4b", 18.4e9},
                Row{"gpt-39.1b", 39.1e9}, Row{"gpt-76.1b", 76.1e9}, Row{"gpt-145.6b", 145.6e9},
                Row{"gpt-310.1b", 310.1e9}, Row{"gpt-529.6b", 529.6e9}, Row{"gpt-1t", 1008e9}}) {
    SCOPED_TRACE(r.file);
    ModelConfig m = LoadModelFile(kSourceDir + "/models/" + r.file + ".json");
    const double l = m.num_layers, h = m.hidden_size, V = m.vocab_size, s = m.max_position_embeddings;
    double narayanan = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
    EXPECT_NEAR(m.ParameterCount() / narayanan, 1.0, 1e-5);
    EXPECT_NEAR(m.ParameterCount() / r.nominal, 1.0, 0.03);  // the table rounds (1.65B is "1.7B")
  }
}

TEST(Model, Llama3_70bMatchesMetasConfig) {
  ModelConfig m = LoadModelFile(kSourceDir + "/models/llama3-70b.json");
  EXPECT_EQ(m.num_kv_heads, 8);
  EXPECT_EQ(m.ParameterCount(), 70553706496);
  EXPECT_NEAR(m.ParameterCount() / 70.55e9, 1.0, 5e-3);
}

TEST(Model, Llama3_8bMatchesMetasConfig) {
  EXPECT_EQ(LoadModelFile(kSourceDir + "/models/llama3-8b.json").ParameterCount(), 8030261248);
}

TEST(Model, Llama31_405bHas405_8BillionParameters) {
  ModelConfig m = LoadModelFile(kSourceDir + "/models/llama3.1-405b.json");
  EXPECT_EQ(m.ParameterCount(), 405853388800);
  EXPECT_NEAR(m.ParameterCount() / 405.8e9, 1.0, 1e-3);
}

TEST(Model, MptHasNoBiasesNoPositionTableAndTiedEmbeddings) {
  ModelConfig m = LoadModelFile(kSourceDir + "/models/mpt-7b.json");
  EXPECT_EQ(m.position_embedding, PositionEmbedding::kAlibi);
  EXPECT_FALSE(m.norm_bias);
  // 32 x (12h^2 + 2 norms of h) + vocab x h + final norm.
  EXPECT_EQ(m.ParameterCount(), 32 * (12 * 4096LL * 4096 + 2 * 4096) + 50432LL * 4096 + 4096);
}

TEST(Model, DropoutIsOnWhenAnyProbabilityIsAboveZero) {
  EXPECT_FALSE(Parse(Llama7b()).dropout);
  nlohmann::json doc = Llama7b();
  doc["attention_dropout"] = 0.0;
  EXPECT_FALSE(Parse(doc).dropout);
  doc["hidden_dropout"] = 0.1;
  EXPECT_TRUE(Parse(doc).dropout);
  doc["hidden_dropout"] = 1.0;
  EXPECT_EQ(ParseError(doc).key_path(), "hidden_dropout");
  EXPECT_TRUE(LoadModelFile(kSourceDir + "/models/gpt3-175b.json").dropout);  // Megatron-LM GPT: 0.1
  EXPECT_FALSE(LoadModelFile(kSourceDir + "/models/mpt-7b.json").dropout);
}

TEST(Model, HeadDimDefaultsToHiddenOverHeadsAndMayBeGiven) {
  nlohmann::json doc = Llama7b();
  doc["num_attention_heads"] = 24;  // 4096 / 24 is not whole
  doc["num_key_value_heads"] = 8;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "m.json");
  EXPECT_EQ(e.key_path(), "num_attention_heads");
  doc["head_dim"] = 128;
  EXPECT_EQ(Parse(doc).head_dim, 128);
}

TEST(Model, UnknownKeyIsAnError) {
  nlohmann::json doc = Llama7b();
  doc["hidden_sise"] = 4096;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "m.json");
  EXPECT_EQ(e.key_path(), "hidden_sise");
  EXPECT_NE(std::string(e.what()).find("unknown key"), std::string::npos);
}

TEST(Model, MissingKeyIsAnError) {
  nlohmann::json doc = Llama7b();
  doc.erase("vocab_size");
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "vocab_size");
  EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
}

TEST(Model, WrongTypeIsAnError) {
  nlohmann::json doc = Llama7b();
  doc["hidden_size"] = "4096";
  EXPECT_EQ(ParseError(doc).key_path(), "hidden_size");
  doc = Llama7b();
  doc["tie_word_embeddings"] = "no";
  EXPECT_EQ(ParseError(doc).key_path(), "tie_word_embeddings");
}

TEST(Model, ZeroOrNegativeSizeIsAnError) {
  nlohmann::json doc = Llama7b();
  doc["num_hidden_layers"] = 0;
  EXPECT_EQ(ParseError(doc).key_path(), "num_hidden_layers");
  doc = Llama7b();
  doc["intermediate_size"] = -11008;
  EXPECT_EQ(ParseError(doc).key_path(), "intermediate_size");
  doc = Llama7b();
  doc["hidden_size"] = 4096.5;
  EXPECT_EQ(ParseError(doc).key_path(), "hidden_size");
}

TEST(Model, KvHeadsMustDivideHeads) {
  nlohmann::json doc = Llama7b();
  doc["num_key_value_heads"] = 5;
  EXPECT_EQ(ParseError(doc).key_path(), "num_key_value_heads");
  doc["num_key_value_heads"] = 64;  // more KV heads than heads
  EXPECT_EQ(ParseError(doc).key_path(), "num_key_value_heads");
}

TEST(Model, UnknownActivationIsAnError) {
  nlohmann::json doc = Llama7b();
  doc["hidden_act"] = "swish";
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "hidden_act");
  EXPECT_NE(std::string(e.what()).find("'silu'"), std::string::npos);  // the error lists the choices
}

TEST(Model, NormIsInferredFromEpsilonOrRequired) {
  nlohmann::json doc = Llama7b();
  doc.erase("rms_norm_eps");
  EXPECT_EQ(ParseError(doc).key_path(), "norm_type");
  doc["layer_norm_epsilon"] = 1e-5;
  EXPECT_EQ(Parse(doc).norm, NormKind::kLayerNorm);
  doc["norm_type"] = "rmsnorm";
  EXPECT_EQ(Parse(doc).norm, NormKind::kRmsNorm);
  doc["norm_bias"] = true;  // RMSNorm has no bias
  EXPECT_EQ(ParseError(doc).key_path(), "norm_bias");
}

TEST(Model, LearnedPositionsNeedTheirTableSize) {
  nlohmann::json doc = Llama7b();
  doc.erase("max_position_embeddings");
  doc["position_embedding_type"] = "learned";
  EXPECT_EQ(ParseError(doc).key_path(), "position_embedding_type");
}

TEST(Model, AbsurdSizesAreRejectedBeforeTheyOverflow) {
  nlohmann::json doc = Llama7b();
  doc["hidden_size"] = 4096000000;
  doc["head_dim"] = 128;
  EXPECT_EQ(ParseError(doc).key_path(), "hidden_size");
}

TEST(Model, ErrorsInsideAScenarioCarryTheNestedPath) {
  nlohmann::json doc = {{"model", Llama7b()}};
  doc["model"]["num_hidden_layers"] = -1;
  InputError e = ErrorFrom([&] { ParseModel(JsonNode(doc["model"], "s.json", "model")); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "model.num_hidden_layers");
}

TEST(Model, MalformedJsonNamesFileLineAndColumn) {
  std::string path = kSourceDir + "/tests/data/config/malformed.json";
  InputError e = ErrorFrom([&] { LoadModelFile(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.key_path(), "");
  EXPECT_NE(std::string(e.what()).find("line 4 column"), std::string::npos) << e.what();
}

TEST(Model, MissingFileIsAnInputError) {
  InputError e = ErrorFrom([] { LoadModelFile("/nonexistent/model.json"); });
  EXPECT_EQ(e.file(), "/nonexistent/model.json");
}

// Sliding windows as Hugging Face configs give them: GPT-OSS's layer_types
// (every other layer of 128 tokens), Qwen's switch (off in Qwen3),
// Mixtral's null, Mistral's window on every layer, Qwen2's
// max_window_layers.
TEST(Model, ReadsSlidingWindowsAsConfigsGiveThem) {
  ModelConfig oss = LoadModelFile(kSourceDir + "/models/gpt-oss-120b.json");
  EXPECT_EQ(oss.sliding_window, 128);
  EXPECT_EQ(oss.sliding_window_layers, 18);
  // Pairs within a 128-token window of 4096: (128 x 129 / 2 + 3968 x 128) /
  // (4096 x 4097 / 2) = 0.0615 on half the layers.
  const double f = (128.0 * 129 / 2 + 3968.0 * 128) / (4096.0 * 4097 / 2);
  EXPECT_NEAR(oss.AttentionWorkFraction(4096), (1 + f) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(oss.AttentionWorkFraction(128), 1.0);  // the window covers the sequence
  EXPECT_EQ(LoadModelFile(kSourceDir + "/models/qwen3-30b-a3b.json").sliding_window, 0);
  EXPECT_EQ(LoadModelFile(kSourceDir + "/models/mixtral-8x7b.json").sliding_window, 0);

  nlohmann::json doc = nlohmann::json::parse(std::ifstream(kSourceDir + "/models/llama3-8b.json"));
  doc["sliding_window"] = 4096;  // Mistral's convention: every layer
  ModelConfig all = Parse(doc);
  EXPECT_EQ(all.sliding_window_layers, all.num_layers);
  doc["use_sliding_window"] = true;
  doc["max_window_layers"] = 28;  // Qwen2: layers 28.. slide
  EXPECT_EQ(Parse(doc).sliding_window_layers, all.num_layers - 28);
  doc["use_sliding_window"] = false;
  EXPECT_EQ(Parse(doc).sliding_window, 0);
  doc.erase("use_sliding_window");
  doc.erase("max_window_layers");
  doc["layer_types"] = {"sliding_attention", "full_attention"};  // not one per layer
  EXPECT_EQ(ParseError(doc).key_path(), "layer_types");
  doc.erase("layer_types");
  doc["sliding_window_layers"] = all.num_layers + 1;
  EXPECT_EQ(ParseError(doc).key_path(), "sliding_window_layers");
}

// Llama 4 (models/llama4-*.json): experts intermediate_size wide, dense
// layers intermediate_size_mlp, one shared expert per MoE layer, MoE on
// every other layer for Maverick; chunked attention of 8192 tokens on 36 of
// the 48 layers (Hugging Face's no_rope_layer_interval 4). Meta's model
// cards: Maverick 400B total, Scout 109B, both 17B active.
TEST(Model, Llama4HasInterleavedExpertsAndChunkedAttention) {
  ModelConfig mav = LoadModelFile(kSourceDir + "/models/llama4-maverick.json");
  EXPECT_EQ(mav.intermediate_size, 16384);
  EXPECT_EQ(mav.moe_intermediate_size, 8192);
  EXPECT_EQ(mav.shared_expert_intermediate_size, 8192);
  EXPECT_EQ(mav.MoeLayerCount(), 24);
  EXPECT_FALSE(mav.IsMoeLayer(0));
  EXPECT_TRUE(mav.IsMoeLayer(1));
  EXPECT_NEAR(mav.ParameterCount() / 400e9, 1.0, 0.01);
  EXPECT_NEAR(mav.ActiveParameterCount() / 17e9, 1.0, 0.02);
  ModelConfig scout = LoadModelFile(kSourceDir + "/models/llama4-scout.json");
  EXPECT_EQ(scout.MoeLayerCount(), 48);
  EXPECT_NEAR(scout.ParameterCount() / 109e9, 1.0, 0.015);
  EXPECT_NEAR(scout.ActiveParameterCount() / 17e9, 1.0, 0.02);
  EXPECT_EQ(mav.attention_chunk, 8192);
  EXPECT_EQ(mav.chunked_attention_layers, 36);
  // 32768 tokens: a chunked layer does 4 chunks of 8192 x 8193 / 2 pairs.
  const double chunked = 4.0 * 8192 * 8193 / (32768.0 * 32769);
  EXPECT_NEAR(mav.AttentionWorkFraction(32768), (12 + 36 * chunked) / 48, 1e-12);
  EXPECT_DOUBLE_EQ(mav.AttentionWorkFraction(8192), 1.0);

  nlohmann::json doc = nlohmann::json::parse(std::ifstream(kSourceDir + "/models/llama4-scout.json"));
  doc["no_rope_layers"] = {1, 0};  // not one per layer
  EXPECT_EQ(ParseError(doc).key_path(), "no_rope_layers");
  doc.erase("no_rope_layers");
  doc.erase("attention_chunk_size");
  doc["no_rope_layer_interval"] = 4;  // without a chunk size
  EXPECT_EQ(ParseError(doc).key_path(), "no_rope_layer_interval");
}

TEST(Model, WritesBackWhatItReads) {
  for (const char* name : {"gpt3-175b", "llama3.1-405b", "mpt-30b", "deepseek-v3", "gpt-oss-120b", "llama4-maverick"}) {
    SCOPED_TRACE(name);
    ModelConfig m = LoadModelFile(kSourceDir + "/models/" + name + ".json");
    nlohmann::json j = ModelToJson(m);
    ModelConfig back = Parse(j);
    EXPECT_EQ(back.name, m.name);
    EXPECT_EQ(back.ParameterCount(), m.ParameterCount());
    EXPECT_EQ(back.activation, m.activation);
    EXPECT_EQ(back.position_embedding, m.position_embedding);
    EXPECT_EQ(back.num_kv_heads, m.num_kv_heads);
    EXPECT_EQ(back.dropout, m.dropout);
    EXPECT_EQ(back.ActiveParameterCount(), m.ActiveParameterCount());
    EXPECT_EQ(back.head_dim, m.head_dim);
    EXPECT_EQ(back.expert_groups, m.expert_groups);
    EXPECT_EQ(back.mtp_modules, m.mtp_modules);
    EXPECT_EQ(back.sliding_window, m.sliding_window);
    EXPECT_EQ(back.sliding_window_layers, m.sliding_window_layers);
    EXPECT_EQ(back.attention_chunk, m.attention_chunk);
    EXPECT_EQ(back.chunked_attention_layers, m.chunked_attention_layers);
    EXPECT_EQ(ModelToJson(back), j);
  }
}

// DeepSeek-V3's config.json (models/deepseek-v3.json): MLA, group-limited
// routing and one MTP module.
TEST(Model, ParsesDeepSeekV3LatentAttentionAndGroupLimitedRouting) {
  ModelConfig m = LoadModelFile(kSourceDir + "/models/deepseek-v3.json");
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.q_lora_rank, 1536);
  EXPECT_EQ(m.kv_lora_rank, 512);
  EXPECT_EQ(m.qk_nope_head_dim, 128);
  EXPECT_EQ(m.qk_rope_head_dim, 64);
  EXPECT_EQ(m.v_head_dim, 128);
  EXPECT_EQ(m.head_dim, 192);  // query/key width: nope + rope
  EXPECT_EQ(m.num_kv_heads, 128);
  EXPECT_EQ(m.num_experts, 256);
  EXPECT_EQ(m.experts_per_token, 8);
  EXPECT_EQ(m.shared_expert_intermediate_size, 2048);  // one shared expert of 2048
  EXPECT_EQ(m.first_k_dense, 3);
  EXPECT_EQ(m.MoeLayerCount(), 58);
  EXPECT_EQ(m.expert_groups, 8);
  EXPECT_EQ(m.expert_groups_per_token, 4);
  EXPECT_EQ(m.mtp_modules, 1);
  EXPECT_EQ(m.norm, NormKind::kRmsNorm);
  EXPECT_FALSE(m.tie_word_embeddings);
}

// Hand count (h 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128, rope 64,
// v 128): W_DQ 7168 x 1536 = 11,010,048; q norm 1536; W_UQ 1536 x 128 x 192 =
// 37,748,736; W_DKV+W_KR 7168 x 576 = 4,128,768; kv norm 512; W_UK/W_UV 512 x
// 128 x 256 = 16,777,216; W_O 16,384 x 7168 = 117,440,512: attention
// 187,107,328. Dense layer + 3 x 7168 x 18432 + two norms = 583,483,392; MoE
// layer: router 7168 x 256 = 1,835,008, 257 experts of 3 x 7168 x 2048 =
// 44,040,192 each, two norms: 11,507,286,016. 3 dense + 58 MoE layers +
// embedding and head 2 x 129280 x 7168 + final norm = 671,026,404,352.
// Active: 248 fewer experts per MoE layer = 37,552,282,624.
// Kimi-K2 (models/kimi-k2.json): DeepSeek-V3's layout with 64 heads, 384
// experts and one dense layer. Hand count: attention 11,010,048 + 1,536 +
// 1536 x 64 x 192 (18,874,368) + 4,128,768 + 512 + 512 x 64 x 256
// (8,388,608) + 8,192 x 7168 (58,720,256) = 101,124,096; dense layer
// + 396,361,728 + two norms = 497,500,160; MoE layer: router 7168 x 384 =
// 2,752,512, 385 experts of 44,040,192, two norms: 17,059,364,864. 1 dense +
// 60 MoE + embedding and head 2 x 163840 x 7168 + final norm =
// 1,026,408,209,408 (the Kimi K2 report, arXiv:2507.20534: "1 trillion
// total"); active: 376 fewer experts per MoE layer = 32,861,477,888 ("32
// billion activated").
TEST(Model, KimiK2HasDeepSeekV3sLayoutWith384Experts) {
  ModelConfig m = LoadModelFile(kSourceDir + "/models/kimi-k2.json");
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.AttentionParameterCount(), 101124096);
  EXPECT_EQ(m.LayerParameterCount(0), 497500160);
  EXPECT_EQ(m.LayerParameterCount(1), 17059364864);
  EXPECT_EQ(m.ParameterCount(), 1026408209408);
  EXPECT_EQ(m.ActiveParameterCount(), 32861477888);
  EXPECT_EQ(m.mtp_modules, 0);
  EXPECT_EQ(m.expert_groups, 1);  // one group (n_group 1): every token may reach every expert
}

// DeepSeek-V2 (models/deepseek-v2.json; arXiv:2405.04434 3.1.1: 236B
// total, 21B activated). Hand count (h 5120, 128 heads, q_lora 1536,
// kv_lora 512, nope 128, rope 64, v 128): W_DQ 7,864,320 + q norm 1,536 +
// W_UQ 37,748,736 + W_DKV/W_KR 5120 x 576 = 2,949,120 + kv norm 512 +
// W_UK/W_UV 16,777,216 + W_O 16,384 x 5120 = 83,886,080: attention
// 149,227,520. Dense layer + 3 x 5120 x 12288 + two norms = 337,981,440; MoE
// layer: router 5120 x 160 = 819,200, 162 experts of 3 x 5120 x 1536 =
// 23,592,960, two norms: 3,972,116,480. 1 dense + 59 MoE + embedding and
// head 2 x 102400 x 5120 + final norm = 235,741,434,880; active: 154 fewer
// experts per MoE layer = 21,375,800,320.
// DeepSeek-V2-Lite (Appendix B: 15.7B total, 2.4B activated, the embedding
// not counted): no query compression, W_Q 2048 x 16 x 192 = 6,291,456 +
// 1,179,648 + 512 + 2,097,152 + W_O 4,194,304 = 13,763,072; dense layer
// 81,007,104; MoE layer 584,847,872 (66 experts of 3 x 2048 x 1408);
// 1 dense + 26 MoE + 2 x 102400 x 2048 + 2048 = 15,706,484,224; active
// 2,661,150,208 (2,451,435,008 without the input embedding).
TEST(Model, DeepSeekV2AndV2LiteMatchTheirPublishedCounts) {
  ModelConfig v2 = LoadModelFile(kSourceDir + "/models/deepseek-v2.json");
  EXPECT_TRUE(v2.is_mla());
  EXPECT_EQ(v2.AttentionParameterCount(), 149227520);
  EXPECT_EQ(v2.LayerParameterCount(0), 337981440);
  EXPECT_EQ(v2.LayerParameterCount(1), 3972116480);
  EXPECT_EQ(v2.ParameterCount(), 235741434880);
  EXPECT_EQ(v2.ActiveParameterCount(), 21375800320);
  EXPECT_EQ(v2.expert_groups, 8);
  EXPECT_EQ(v2.expert_groups_per_token, 3);
  EXPECT_EQ(v2.mtp_modules, 0);
  ModelConfig lite = LoadModelFile(kSourceDir + "/models/deepseek-v2-lite.json");
  EXPECT_TRUE(lite.is_mla());
  EXPECT_EQ(lite.q_lora_rank, 0);
  EXPECT_EQ(lite.AttentionParameterCount(), 13763072);
  EXPECT_EQ(lite.ParameterCount(), 15706484224);
  EXPECT_EQ(lite.ActiveParameterCount(), 2661150208);
}

TEST(Model, DeepSeekV3Has671BParametersAnd37BActivated) {
  ModelConfig m = LoadModelFile(kSourceDir + "/models/deepseek-v3.json");
  EXPECT_EQ(m.AttentionParameterCount(), 187107328);
  EXPECT_EQ(m.MlaReplicatedParameterCount(), 11010048 + 1536 + 4128768 + 512);
  EXPECT_EQ(m.LayerParameterCount(0), 583483392);
  EXPECT_EQ(m.LayerParameterCount(3), 11507286016);
  EXPECT_EQ(m.ParameterCount(), 671026404352);
  EXPECT_EQ(m.ActiveParameterCount(), 37552282624);
  // DeepSeek-V3 technical report (arXiv:2412.19437), abstract: 671B total.
  EXPECT_NEAR(m.ParameterCount() / 671e9, 1.0, 0.01);
  // Its "37B activated" leaves out the input embedding (a lookup, no
  // compute): README_WEIGHTS.md gives 36.6B activated including the 0.9B
  // output head. With the embedding counted it is 37.55B, 1.5% over 37B.
  const double active_without_embedding = m.ActiveParameterCount() - m.EmbeddingParameterCount();
  EXPECT_NEAR(active_without_embedding / 37e9, 1.0, 0.011);
  EXPECT_NEAR(active_without_embedding / 36.6e9, 1.0, 0.01);
  EXPECT_NEAR(m.ActiveParameterCount() / 37e9, 1.0, 0.016);
  // MTP module (README_WEIGHTS.md: 11.5B unique parameters): a MoE layer,
  // enorm, hnorm, the output norm and eh_proj 14336 x 7168 = 102,760,448:
  // 11,610,067,968. The Hugging Face checkpoint (685B) stores the main model,
  // the MTP module and its own copies of embedding and head.
  EXPECT_EQ(m.MtpParameterCount(), 11610067968);
  EXPECT_NEAR(m.MtpParameterCount() / 11.5e9, 1.0, 0.01);
  const double checkpoint = static_cast<double>(m.ParameterCount() + m.MtpParameterCount() +
                                                m.EmbeddingParameterCount() + m.OutputHeadParameterCount());
  EXPECT_NEAR(checkpoint / 685e9, 1.0, 0.005);
}

// DeepSeek-V2-Lite (q_lora_rank null: W_Q straight from the hidden state):
// attention 2048 x 16 x 192 + 2048 x 576 + 512 + 512 x 16 x 256 + 2048 x 2048
// = 13,763,072; 1 dense layer (ffn 10944) of 81,007,104, 26 MoE layers
// (router 2048 x 64, 64 experts and 2 shared of 1408) of 584,847,872,
// embedding and head 2 x 102400 x 2048: 15,706,484,224 (DeepSeek-V2 paper,
// arXiv:2405.04434, Appendix B: 15.7B total).
TEST(Model, DeepSeekV2LiteHasNoQueryCompression) {
  nlohmann::json doc = nlohmann::json::parse(R"({
    "hidden_size": 2048, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
    "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
    "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 1, "topk_group": 1,
    "topk_method": "greedy", "q_lora_rank": null, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400, "hidden_act": "silu",
    "rms_norm_eps": 1e-06, "tie_word_embeddings": false, "max_position_embeddings": 163840})");
  ModelConfig m = Parse(doc);
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.q_lora_rank, 0);
  EXPECT_EQ(m.AttentionParameterCount(), 13763072);
  EXPECT_EQ(m.MlaReplicatedParameterCount(), 2048 * 576 + 512);
  EXPECT_EQ(m.ParameterCount(), 15706484224);
  EXPECT_NEAR(m.ParameterCount() / 15.7e9, 1.0, 0.01);
  EXPECT_EQ(m.mtp_modules, 0);
  EXPECT_EQ(m.MtpParameterCount(), 0);
}

TEST(Model, BadLatentAttentionKeysAreErrors) {
  const nlohmann::json v3 = ReadJsonFile(kSourceDir + "/models/deepseek-v3.json");
  auto key_of = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json doc = v3;
    edit(doc);
    InputError e = ParseError(doc);
    EXPECT_EQ(e.file(), "m.json");
    return e.key_path();
  };
  EXPECT_EQ(key_of([](nlohmann::json& d) { d.erase("q_lora_rank"); }), "q_lora_rank");  // null, not absent
  EXPECT_EQ(key_of([](nlohmann::json& d) { d.erase("v_head_dim"); }), "v_head_dim");
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["qk_rope_head_dim"] = 0; }), "qk_rope_head_dim");
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["kv_lora_rank"] = -512; }), "kv_lora_rank");
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["q_lora_rank"] = "1536"; }), "q_lora_rank");
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["num_key_value_heads"] = 1; }), "num_key_value_heads");
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["head_dim"] = 64; }), "head_dim");
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["attention_bias"] = true; }), "attention_bias");
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["n_group"] = 7; }), "n_group");      // 256 experts
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["topk_group"] = 9; }), "topk_group");  // > n_group
  EXPECT_EQ(key_of([](nlohmann::json& d) { d.erase("topk_group"); }), "n_group");
  EXPECT_EQ(key_of([](nlohmann::json& d) { d["num_nextn_predict_layers"] = -1; }), "num_nextn_predict_layers");
  // MLA keys on a model without kv_lora_rank.
  EXPECT_EQ(key_of([](nlohmann::json& d) { d.erase("kv_lora_rank"); }), "q_lora_rank");
  nlohmann::json llama = Llama7b();
  llama["qk_nope_head_dim"] = 128;
  EXPECT_EQ(ParseError(llama).key_path(), "qk_nope_head_dim");
  // A head_dim equal to nope + rope is accepted.
  nlohmann::json ok = v3;
  ok["head_dim"] = 192;
  EXPECT_EQ(Parse(ok).ParameterCount(), 671026404352);
}

// A small hybrid stack in Hugging Face's NemotronH keys.
nlohmann::json Hybrid() {
  nlohmann::json j = Llama7b();
  j["num_hidden_layers"] = 4;
  j["hybrid_override_pattern"] = "M*M-";
  j["mamba_num_heads"] = 64;
  j["mamba_head_dim"] = 64;
  j["ssm_state_size"] = 128;
  j["n_groups"] = 8;
  return j;
}

TEST(Model, ReadsHybridMambaPatternsAndRejectsBadOnes) {
  const ModelConfig m = Parse(Hybrid());
  EXPECT_TRUE(m.is_hybrid());
  EXPECT_EQ(m.LayerKindAt(0), LayerKind::kMamba);
  EXPECT_EQ(m.LayerKindAt(1), LayerKind::kAttention);
  EXPECT_EQ(m.LayerKindAt(3), LayerKind::kMlp);
  EXPECT_EQ(m.mamba.inner(), 4096);
  EXPECT_EQ(m.mamba.chunk, 128);  // Megatron-Core's default
  EXPECT_EQ(m.AttentionLayerCount(), 1);
  // Written back and read again, the same model.
  const ModelConfig again = ParseModel(JsonNode(ModelToJson(m), "back.json", ""));
  EXPECT_EQ(again.hybrid_pattern, "M*M-");
  EXPECT_EQ(again.ParameterCount(), m.ParameterCount());

  auto fails_at = [](nlohmann::json j, const std::string& key) {
    const InputError e = ParseError(j);
    EXPECT_EQ(e.key_path(), key) << e.what();
  };
  nlohmann::json j = Hybrid();
  j["hybrid_override_pattern"] = "M*M";  // three layers, four said
  fails_at(j, "hybrid_override_pattern");
  j = Hybrid();
  j["hybrid_override_pattern"] = "M*MX";
  fails_at(j, "hybrid_override_pattern");
  j = Hybrid();
  j["hybrid_override_pattern"] = "M*ME";  // MoE blocks, no experts
  fails_at(j, "hybrid_override_pattern");
  j = Hybrid();
  j["n_groups"] = 5;
  fails_at(j, "n_groups");
  j = Hybrid();
  j.erase("ssm_state_size");
  fails_at(j, "ssm_state_size");
  j = Llama7b();
  j["mamba_num_heads"] = 64;  // without a pattern
  fails_at(j, "mamba_num_heads");
  j = Hybrid();
  j["num_nextn_predict_layers"] = 1;  // MTP without its layer's pattern
  fails_at(j, "hybrid_override_pattern");
  j["mtp_hybrid_override_pattern"] = "*E";  // a MoE layer in a dense model
  fails_at(j, "mtp_hybrid_override_pattern");
  j = Llama7b();
  j["moe_latent_size"] = 1024;  // without experts
  fails_at(j, "moe_latent_size");
  j = Hybrid();
  j["mamba_num_heads"] = 4000000000;  // a typo: refused before any count overflows
  j["n_groups"] = 8;
  fails_at(j, "hidden_size");
}

// Newer NemotronH configs list the blocks instead of the pattern string and
// may leave num_hidden_layers out.
TEST(Model, ReadsHybridBlocksListedByName) {
  nlohmann::json j = Hybrid();
  j.erase("hybrid_override_pattern");
  j.erase("num_hidden_layers");
  j["layers_block_type"] = {"mamba", "attention", "mamba", "mlp"};
  const ModelConfig m = Parse(j);
  EXPECT_EQ(m.hybrid_pattern, "M*M-");
  EXPECT_EQ(m.num_layers, 4);
  EXPECT_EQ(m.ParameterCount(), Parse(Hybrid()).ParameterCount());
  j["hybrid_override_pattern"] = "M*MM";  // both given, and they differ
  EXPECT_EQ(ParseError(j).key_path(), "layers_block_type");
  j.erase("hybrid_override_pattern");
  j["layers_block_type"] = {"mamba", "attention", "ssm", "mlp"};
  EXPECT_EQ(ParseError(j).key_path(), "layers_block_type[2]");
}

TEST(Model, ReadsLinearAttentionLayersAndWritesThemBack) {
  nlohmann::json j = Llama7b();
  j["num_hidden_layers"] = 8;
  j["linear_num_key_heads"] = 16;
  j["linear_num_value_heads"] = 32;
  j["linear_key_head_dim"] = 128;
  j["linear_value_head_dim"] = 128;
  j["full_attention_interval"] = 4;
  const ModelConfig m = Parse(j);
  EXPECT_EQ(m.LayerKindAt(0), LayerKind::kGdnDense);
  EXPECT_EQ(m.LayerKindAt(3), LayerKind::kDense);
  EXPECT_EQ(m.AttentionLayerCount(), 2);
  const ModelConfig again = ParseModel(JsonNode(ModelToJson(m), "back.json", ""));
  EXPECT_EQ(again.ParameterCount(), m.ParameterCount());
  EXPECT_EQ(again.linear_layers, m.linear_layers);
  nlohmann::json bad = j;
  bad["linear_num_value_heads"] = 24;  // not a multiple of the 16 key heads
  EXPECT_EQ(ParseError(bad).key_path(), "linear_num_value_heads");
  bad = Llama7b();
  bad["linear_key_head_dim"] = 128;  // without the heads
  EXPECT_EQ(ParseError(bad).key_path(), "linear_key_head_dim");
}

TEST(Model, EveryShippedModelLoadsAndCitesItsSource) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/models")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    ModelConfig m = LoadModelFile(entry.path().string());
    EXPECT_FALSE(m.source.empty());
    EXPECT_GT(m.ParameterCount(), 0);
    ++count;
  }
  EXPECT_GE(count, 25);
}

}  // namespace
}  // namespace stacksim::config

namespace stacksim::config {
namespace {

TEST(ModelName, PublishedNamesReduceToTheShippedFilesKey) {
  EXPECT_EQ(ModelNameKey("meta-llama/Meta-Llama-3.1-8B-Instruct"), "llama3.18b");
  EXPECT_EQ(ModelNameKey("llama3.1-8b"), "llama3.18b");
  EXPECT_EQ(ModelNameKey("Llama 3.1 8B"), "llama3.18b");
  EXPECT_EQ(ModelNameKey("mistralai/Mixtral-8x7B-Instruct-v0.1"), "mixtral8x7b");
  EXPECT_EQ(ModelNameKey("nvidia/Llama-3.1-8B-Instruct-FP8"), "llama3.18b");
  EXPECT_NE(ModelNameKey("Llama-2-70b-hf"), ModelNameKey("llama2-7b"));
  EXPECT_EQ(FindShippedModel("meta-llama/Meta-Llama-3.1-8B-Instruct"), "llama3.1-8b");
  EXPECT_EQ(FindShippedModel("Llama-2-70b-hf"), "llama2-70b");
  EXPECT_EQ(FindShippedModel("Mixtral-8x7B-Instruct-v0.1"), "mixtral-8x7b");
  EXPECT_EQ(FindShippedModel("Qwen/Qwen3-30B-A3B"), "qwen3-30b-a3b");
  EXPECT_EQ(FindShippedModel("openai/gpt-oss-120b"), "gpt-oss-120b");
  EXPECT_EQ(FindShippedModel("nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8"), "llama4-maverick");
  EXPECT_EQ(FindShippedModel("meta-llama/Llama-4-Scout-17B-16E-Instruct"), "llama4-scout");
  EXPECT_EQ(FindShippedModel("moonshotai/Kimi-K2-Instruct"), "kimi-k2");
  EXPECT_EQ(FindShippedModel("01-ai/Yi-34B"), "");  // no file: no guess
  EXPECT_EQ(FindShippedModel("Meta-Llama-3-8B"), "llama3-8b");  // not 3.1
  // Aliases: the same architecture under another published name.
  EXPECT_EQ(FindShippedModel("deepseek-ai/DeepSeek-R1"), "deepseek-v3");
  EXPECT_EQ(FindShippedModel("meta-llama/Llama-3.3-70B-Instruct"), "llama3.1-70b");
  EXPECT_EQ(FindShippedModel("openai/gpt-oss-20b"), "gpt-oss-20b");
}

TEST(ModelName, AliasesNeedNamesAndASource) {
  nlohmann::json doc = ReadJsonFile(ResolveDataFile("models", "llama3-8b", ""));
  doc["aliases"] = {{"names", {"Other Name"}}};
  const InputError e = ErrorFrom([&] { ParseModel(JsonNode(doc, "m.json", "")); });
  EXPECT_EQ(e.key_path(), "aliases.source");
  doc["aliases"]["source"] = "same config";
  EXPECT_EQ(ParseModel(JsonNode(doc, "m.json", "")).aliases, std::vector<std::string>{"Other Name"});
  doc["aliases"]["names"] = nlohmann::json::array();
  EXPECT_THROW(ParseModel(JsonNode(doc, "m.json", "")), InputError);
}

}  // namespace
}  // namespace stacksim::config
