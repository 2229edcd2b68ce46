#include "sim/util/json_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/input_error.h"

namespace stacksim {
namespace {

using testing::ErrorFrom;

std::string Nested(int levels, const std::string& inner = "1") {
  return std::string(levels, '[') + inner + std::string(levels, ']');
}

TEST(ParseJsonText, AcceptsNestingUpToTheLimit) {
  nlohmann::json j = ParseJsonText(Nested(kMaxJsonDepth), "deep.json");
  EXPECT_TRUE(j.is_array());
}

TEST(ParseJsonText, RefusesNestingBeyondTheLimitWithTheKeyPath) {
  InputError e = ErrorFrom([] { ParseJsonText(Nested(kMaxJsonDepth + 1), "deep.json"); });
  EXPECT_EQ(e.file(), "deep.json");
  EXPECT_NE(std::string(e.what()).find("nested deeper than 128 levels"), std::string::npos) << e.what();
}

// Hundreds of thousands of levels inside a value nobody reads (a free-text
// note) crashed the process before the limit: the document was walked
// recursively after parsing.
TEST(ParseJsonText, RefusesAMillionLevelsInAFreeTextFieldWithoutCrashing) {
  const std::string text = R"({"model": "llama3-8b", "notes": )" + Nested(500000) + "}";
  InputError e = ErrorFrom([&] { ParseJsonText(text, "scenario.json"); });
  EXPECT_EQ(e.key_path().rfind("notes[0][0]", 0), 0u) << e.key_path();
}

TEST(ParseJsonText, CountsObjectsAndArraysAlike) {
  std::string text;
  for (int i = 0; i <= kMaxJsonDepth; ++i) text += R"({"a":)";
  text += "1" + std::string(kMaxJsonDepth + 1, '}');
  EXPECT_NE(std::string(ErrorFrom([&] { ParseJsonText(text, "o.json"); }).what()).find("deeper"), std::string::npos);
}

TEST(ParseJsonText, RefusesAKeyGivenTwiceNamingItsPath) {
  InputError e = ErrorFrom([] { ParseJsonText(R"({"plan": {"tp": 1, "pp": 2, "tp": 4}})", "s.json"); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.key_path(), "plan.tp");
  EXPECT_NE(std::string(e.what()).find("given twice"), std::string::npos) << e.what();
}

TEST(ParseJsonText, NamesAKeyGivenTwiceInsideAnArray) {
  InputError e = ErrorFrom([] { ParseJsonText(R"({"runs": [{"id": "a"}, {"id": "b", "id": "c"}]})", "v.json"); });
  EXPECT_EQ(e.key_path(), "runs[1].id");
}

TEST(ParseJsonText, TheSameKeyInSiblingObjectsIsFine) {
  nlohmann::json j = ParseJsonText(R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 3}, {"x": 4}]})", "ok.json");
  EXPECT_EQ(j["c"][1]["x"], 4);
}

TEST(ApplyOverride, AJsonValueGetsTheSameChecks) {
  nlohmann::json doc = {{"plan", {{"tp", 1}}}};
  EXPECT_EQ(ErrorFrom([&] { ApplyOverride(doc, R"(plan.x={"a": 1, "a": 2})", "--set"); }).file(), "--set");
  EXPECT_EQ(ErrorFrom([&] { ApplyOverride(doc, "plan.x=" + Nested(1000), "--set"); }).file(), "--set");
  ApplyOverride(doc, "plan.tp=4", "--set");
  EXPECT_EQ(doc["plan"]["tp"], 4);
}

TEST(ReadJsonFile, ADirectoryIsAnInputErrorNamingIt) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  InputError e = ErrorFrom([&] { ReadJsonFile(dir); });
  EXPECT_EQ(e.file(), dir);
  EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
}

TEST(ReadJsonFile, AMissingFileSaysSo) {
  InputError e = ErrorFrom([] { ReadJsonFile("/nonexistent/stacksim/x.json"); });
  EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace stacksim
