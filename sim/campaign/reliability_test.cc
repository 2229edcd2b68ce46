#include "sim/campaign/reliability.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tests/input_error.h"

namespace stacksim::campaign {
namespace {

using testing::ErrorFrom;

const std::string kShipped = std::string(STACKSIM_SOURCE_DIR) + "/reliability/llama3-16k-h100.json";

nlohmann::json Shipped() { return ReadJsonFile(kShipped); }

InputError ParseError(const nlohmann::json& doc) {
  return ErrorFrom([&] { ParseReliability(JsonNode(doc, "r.json", "")); });
}

TEST(Reliability, ShippedRatesGiveBackLlama3CountsOver54Days) {
  // Llama 3 Table 5 (shared/reference/hardware.md section 5): 419 unexpected
  // interruptions in 54 days on 16,384 H100 (2,048 nodes, 8 NICs each).
  ReliabilityConfig r = LoadReliabilityFile(kShipped);
  const ComponentCounts meta{16384, 2048, 16384};
  const std::vector<double> rates = CauseRatesPerHour(r, meta);
  const double hours = 54 * 24;
  double total = 0;
  std::map<std::string, double> count;
  for (size_t i = 0; i < rates.size(); ++i) {
    total += rates[i] * hours;
    count[r.causes[i].name] = rates[i] * hours;
  }
  EXPECT_NEAR(total, 419, 0.05);
  EXPECT_NEAR(count["gpu"], 148, 0.01);
  EXPECT_NEAR(count["hbm"], 72, 0.01);
  EXPECT_NEAR(count["software"], 54, 0.01);
  EXPECT_NEAR(count["network"], 35, 0.01);
  EXPECT_NEAR(count["nic"], 7, 0.01);
  EXPECT_EQ(r.causes.size(), 18u);
  EXPECT_NEAR(3600 * 54 * 24 / total, 3.09 * 3600, 0.01 * 3600);  // hardware.md's 3.09 h mean time to interrupt
  for (const FailureCause& c : r.causes) {
    EXPECT_NE(c.source.find("Table 5"), std::string::npos) << c.name;
  }
  EXPECT_FALSE(r.detection_source.empty());
  EXPECT_EQ(r.detection, Time::FromSeconds(300));
  EXPECT_EQ(r.repair, Time::FromSeconds(4 * 3600));
}

TEST(Reliability, RatesScaleWithTheirComponent) {
  ReliabilityConfig r = LoadReliabilityFile(kShipped);
  const std::vector<double> full = CauseRatesPerHour(r, {16384, 2048, 16384});
  const std::vector<double> half = CauseRatesPerHour(r, {8192, 1024, 8192});
  for (size_t i = 0; i < full.size(); ++i) {
    // A job's software bugs do not depend on its size; hardware scales with it.
    EXPECT_DOUBLE_EQ(half[i], r.causes[i].per == Component::kJob ? full[i] : full[i] / 2) << r.causes[i].name;
  }
}

TEST(Reliability, BadFilesNameFileAndKey) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string key;
  };
  const std::vector<Case> cases = {
      {[](nlohmann::json& d) { d["causes"][0]["rate_per_component_hour"] = -1; }, "causes[0].rate_per_component_hour"},
      {[](nlohmann::json& d) { d["causes"][2]["per"] = "rack"; }, "causes[2].per"},
      {[](nlohmann::json& d) { d["causes"][1]["rate_per_hour"] = 1; }, "causes[1].rate_per_hour"},
      {[](nlohmann::json& d) { d["causes"][3].erase("source"); }, "causes[3].source"},
      {[](nlohmann::json& d) { d["causes"][1]["name"] = "gpu"; }, "causes[1].name"},
      {[](nlohmann::json& d) { d["detection"]["time"] = "5"; }, "detection.time"},
      {[](nlohmann::json& d) { d["restart"]["time"] = "10 parsecs"; }, "restart.time"},
      {[](nlohmann::json& d) { d.erase("repair"); }, "repair"},
      {[](nlohmann::json& d) { d["causes"] = nlohmann::json::array(); }, "causes"},
      {[](nlohmann::json& d) { d["mtbf"] = "3 h"; }, "mtbf"},
  };
  for (const Case& c : cases) {
    nlohmann::json doc = Shipped();
    c.edit(doc);
    InputError e = ParseError(doc);
    EXPECT_EQ(e.file(), "r.json");
    EXPECT_EQ(e.key_path(), c.key) << e.what();
  }
}

TEST(Reliability, MissingFileIsAnInputErrorNamingIt) {
  InputError e = ErrorFrom([] { LoadReliabilityFile("/nonexistent/rates.json"); });
  EXPECT_NE(std::string(e.what()).find("/nonexistent/rates.json"), std::string::npos);
}

TEST(Reliability, DurationsTakeMinutesHoursAndDays) {
  EXPECT_EQ(ParseDuration("54d", "f", "k"), Time::FromSeconds(54 * 86400.0));
  EXPECT_EQ(ParseDuration("1.5 d", "f", "k"), Time::FromSeconds(1.5 * 86400.0));
  EXPECT_EQ(ParseDuration("30min", "f", "k"), Time::FromSeconds(1800));
  EXPECT_EQ(ParseDuration("4 h", "f", "k"), Time::FromSeconds(4 * 3600.0));
  EXPECT_EQ(ParseDuration("90 s", "f", "k"), Time::FromSeconds(90));
  for (const char* bad : {"5", "5 parsecs", "d", "-1 d", "x d"}) {
    InputError e = ErrorFrom([&] { ParseDuration(bad, "f", "k"); });
    EXPECT_EQ(e.key_path(), "k") << bad;
  }
}

}  // namespace
}  // namespace stacksim::campaign
