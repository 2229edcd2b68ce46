#include "sim/serve/serve_uncertainty.h"

#include <gtest/gtest.h>

#include "sim/serve/serve_test_util.h"
#include "sim/util/error.h"

namespace stacksim::serve {
namespace {

ServingErrorRow Row(const std::string& id, const char* metric, double error) {
  ServingErrorRow r;
  r.id = id;
  r.source = "src";
  r.metric = metric;
  r.key = "measured.x";
  r.gpu = "h100-sxm-80gb";
  r.engine = "vllm";
  r.scheduler = "continuous";
  r.weights = "bf16";
  r.measured = 1.0;
  r.predicted = 1.0 + error;
  r.error = error;
  return r;
}

// Nine TTFT errors -0.4, -0.3, ..., +0.4: type-6 p10 sits at position 1.0
// (-0.4) and p90 at 9.0 (+0.4); the true TTFT is predicted / (1 + e).
TEST(ServeUncertainty, TheRangeInvertsTheSimilarMetricsErrors) {
  ServingErrorTable t;
  for (int i = 0; i < 9; ++i) t.rows.push_back(Row("r" + std::to_string(i), "ttft", -0.4 + 0.1 * i));
  auto r = EstimateLatencyRange(t, MetricKind::kTtft, 2.0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 9);
  EXPECT_NEAR(r->error_low, -0.4, 1e-12);
  EXPECT_NEAR(r->error_high, 0.4, 1e-12);
  EXPECT_NEAR(r->low_s, 2.0 / 1.4, 1e-12);
  EXPECT_NEAR(r->high_s, 2.0 / 0.6, 1e-12);
  // Leaving an entry out drops its rows.
  EXPECT_EQ(EstimateLatencyRange(t, MetricKind::kTtft, 2.0, "r0")->n, 8);
}

TEST(ServeUncertainty, TooFewRowsOfTheMetricWidenToEveryLatencyMetric) {
  ServingErrorTable t;
  for (int i = 0; i < 6; ++i) t.rows.push_back(Row("t" + std::to_string(i), "ttft", 0.1 * i));
  t.rows.push_back(Row("p", "tpot", -0.2));
  t.rows.push_back(Row("x", "output_tokens_per_s", 5.0));  // throughput never counts
  auto r = EstimateLatencyRange(t, MetricKind::kTpot, 0.05);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->n, 7);
  EXPECT_NE(r->basis.find("fewer than"), std::string::npos) << r->basis;
  EXPECT_FALSE(EstimateLatencyRange(ServingErrorTable{}, MetricKind::kTtft, 1.0));
}

TEST(ServeUncertainty, WarningsSayWhatNoValidatedEntryHad) {
  ServingErrorTable t;
  t.rows.push_back(Row("a", "ttft", 0.0));
  ServeConfig c = ParseServeScenario(TestServeDoc(), "t.json");  // no engine, continuous, bf16, H100
  ServeAssessment a = AssessServe(&t, c, 1.0, 0.05);
  ASSERT_EQ(a.warnings.size(), 1u);
  EXPECT_NE(a.warnings[0].find("no engine named"), std::string::npos);
  nlohmann::json doc = TestServeDoc();
  doc["engine"] = "tensorrt-llm";
  doc["topology"] = "hgx-h200";
  doc["precision"] = {{"weights", "int4"}};
  doc["scheduler"]["kind"] = "chunked-prefill";
  a = AssessServe(&t, ParseServeScenario(doc, "t.json"), 1.0, 0.05);
  EXPECT_EQ(a.warnings.size(), 4u);  // engine, GPU, chunked-prefill scheduler, int4 weights
  EXPECT_EQ(AssessServe(nullptr, c, 1.0, 0.05).warnings.size(), 1u);
}

TEST(ServeUncertainty, TableRoundTripsAndRejectsMalformedRows) {
  ServingErrorTable t;
  t.validation_file = "runs.json";
  t.rows.push_back(Row("a", "tpot", 0.25));
  nlohmann::json j = ServingErrorTableToJson(t);
  ServingErrorTable back = ParseServingErrorTable(j, "t.json");
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(back.rows[0].error, 0.25);
  j["rows"][0]["error"] = -1.5;
  EXPECT_THROW(ParseServingErrorTable(j, "t.json"), InputError);
  j["rows"][0]["error"] = 0.1;
  j["rows"][0]["metric"] = "latency";
  try {
    ParseServingErrorTable(j, "t.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("rows[0].metric"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stacksim::serve
