#include "sim/importer/yaml_subset.h"

#include <gtest/gtest.h>

#include "sim/util/error.h"

namespace stacksim::importer {
namespace {

// The shapes a configuration dump writes (Megatron-Bridge's to_yaml):
// nested mappings, sequences at the key's own indentation, nested
// sequences, mapping items, scalars of every kind and comments.
TEST(YamlSubset, ReadsWhatAConfigDumpWrites) {
  const std::string text =
      "_target_: megatron.bridge.training.config.ConfigContainer\n"
      "model:  # the model\n"
      "  num_layers: 61\n"
      "  layernorm_epsilon: 1.0e-06\n"
      "  init_method_std: 0.006\n"
      "  fp8: null\n"
      "  bf16: true\n"
      "  gated: False\n"
      "  name: 'it''s'\n"
      "  quoted: \"a # not a comment\"\n"
      "  layout: Et|(tt|)*30mL\n"
      "  recompute_modules:\n"
      "  - mla_up_proj\n"
      "  - mlp\n"
      "  window_size: [127, 0]\n"
      "  empty_list: []\n"
      "  empty_map: {}\n"
      "  stages:\n"
      "  - - embedding\n"
      "    - decoder\n"
      "  - - decoder\n"
      "    - loss\n"
      "  params_dtype:\n"
      "    _call_: false\n"
      "    _target_: torch.bfloat16\n"
      "recipes:\n"
      "- models:\n"
      "  - DeepSeek-V3\n"
      "  dispatcher: flex\n"
      "- ~\n"
      "train:\n"
      "  global_batch_size: 8192\n"
      "  big: 4294967296\n";
  const nlohmann::json j = ParseYamlSubset(text, "c.yaml");
  EXPECT_EQ(j["_target_"], "megatron.bridge.training.config.ConfigContainer");
  const nlohmann::json& m = j["model"];
  EXPECT_EQ(m["num_layers"], 61);
  EXPECT_DOUBLE_EQ(m["layernorm_epsilon"].get<double>(), 1.0e-06);
  EXPECT_TRUE(m["fp8"].is_null());
  EXPECT_EQ(m["bf16"], true);
  EXPECT_EQ(m["gated"], false);
  EXPECT_EQ(m["name"], "it's");
  EXPECT_EQ(m["quoted"], "a # not a comment");
  EXPECT_EQ(m["layout"], "Et|(tt|)*30mL");
  EXPECT_EQ(m["recompute_modules"], nlohmann::json::array({"mla_up_proj", "mlp"}));
  EXPECT_EQ(m["window_size"], nlohmann::json::array({127, 0}));
  EXPECT_TRUE(m["empty_list"].is_array() && m["empty_list"].empty());
  EXPECT_TRUE(m["empty_map"].is_object() && m["empty_map"].empty());
  EXPECT_EQ(m["stages"], nlohmann::json::parse(R"([["embedding", "decoder"], ["decoder", "loss"]])"));
  EXPECT_EQ(m["params_dtype"]["_target_"], "torch.bfloat16");
  ASSERT_EQ(j["recipes"].size(), 2u);
  EXPECT_EQ(j["recipes"][0]["models"][0], "DeepSeek-V3");
  EXPECT_EQ(j["recipes"][0]["dispatcher"], "flex");
  EXPECT_TRUE(j["recipes"][1].is_null());
  EXPECT_EQ(j["train"]["global_batch_size"], 8192);
  EXPECT_EQ(j["train"]["big"].get<int64_t>(), 4294967296LL);
}

TEST(YamlSubset, RefusesWhatItDoesNotReadNamingTheLine) {
  struct Case {
    const char* text;
    const char* line;
  };
  for (const Case& c : {Case{"a: 1\nb: &anchor 2\n", "line 2"}, Case{"a: 1\n  b: 2\n", "line 2"},
                        Case{"a: |\n  text\n", "line 1"}, Case{"a: {b: 1}\n", "line 1"},
                        Case{"a: 1\na: 2\n", "line 2"}, Case{"a: 'open\n", "line 1"},
                        Case{"a:\n\t- b\n", "line 2"}, Case{"just words\n", "line 1"},
                        Case{"a: 1\nb: 1e999\n", "line 2"}}) {
    try {
      ParseYamlSubset(c.text, "bad.yaml");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), "bad.yaml");
      EXPECT_EQ(e.key_path(), c.line) << c.text << " -> " << e.what();
    }
  }
}

}  // namespace
}  // namespace stacksim::importer
