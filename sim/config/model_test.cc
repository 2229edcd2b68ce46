#include "sim/config/model.h"

#include <cmath>
#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

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

TEST(Model, WritesBackWhatItReads) {
  for (const char* name : {"gpt3-175b", "llama3.1-405b", "mpt-30b"}) {
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
    EXPECT_EQ(ModelToJson(back), j);
  }
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
