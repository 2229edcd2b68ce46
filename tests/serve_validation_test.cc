// Validation of the serving simulator against published measurements
// (validation/serving_runs.json, schema stacksim.validation.serving/1; each
// entry cites its source): every entry is listed, entries that cannot be
// modelled carry a reason, and the mean absolute error over the scored
// entries stays under a ceiling set just above what was measured.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace {

TEST(ServeValidation, PublishedMeasurementsArePredictedWithinCeiling) {
  std::string file = std::string(STACKSIM_SOURCE_DIR) + "/validation/serving_runs.json";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "validation/serving_runs.json is not in this checkout";
  stacksim::testing::CmdResult run = stacksim::testing::Stacksim("serve-validate " + file + " --format json");
  ASSERT_EQ(run.status, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  auto input = nlohmann::json::parse(std::ifstream(file));
  ASSERT_EQ(j.at("runs").size(), input.at("runs").size());  // none dropped
  for (const auto& r : j.at("runs")) {
    EXPECT_TRUE(r.contains("metrics") || !r.at("error").get<std::string>().empty()) << r.dump();
  }
  // Measured: 9.5% over 52 metrics of 32 of 32 scored entries (throughput
  // 6.6%, TTFT 16.2%, TPOT 8.4%, e2e 4.8%; by source trtllm10 7.9%, nim
  // 11.0%, lmdeploy 11.7%, trtllm05 12.0%, trtllm061 2.6%, vllm 4.8%), after
  // the datasheet profiles took their GEMM ratios from calibrate (9.0% and
  // TTFT 15.1% before, with the PyTorch bootstrap's ratios); 9.0% at best,
  // 15.3% after the first round and 32.2% before it (docs/serve.md). The
  // ceilings sit a little above; they guard against regressions. Issue 23's
  // targets: 12% overall, TTFT 15%, no source above 20%, every scored entry
  // modelled. The two vLLM ShareGPT entries are not scored (their request
  // lengths are a dataset sample the source does not publish; the entries
  // say so) and are still listed as not modelled, with the reason.
  EXPECT_EQ(j.at("scored_total").get<int>(), j.at("scored_predicted").get<int>());
  EXPECT_GE(j.at("scored_predicted").get<int>(), 32);
  EXPECT_LE(j.at("overall").at("mape_pct").get<double>(), 9.2);  // 9.1% (2026-12-03)
  EXPECT_LE(j.at("by_metric").at("output_tokens_per_s").at("mape_pct").get<double>(), 7.0);
  EXPECT_LE(j.at("by_metric").at("ttft").at("mape_pct").get<double>(), 15.0);  // 14.7%, the target
  EXPECT_LE(j.at("by_metric").at("tpot").at("mape_pct").get<double>(), 9.0);
  // 8.1% since FP8 GEMMs pay their own K overhead and the host time was
  // refitted (2.34 -> 2.50 ms); 7.9% before.
  EXPECT_LE(j.at("by_source").at("trtllm10").at("mape_pct").get<double>(), 8.3);
  EXPECT_LE(j.at("by_source").at("trtllm061").at("mape_pct").get<double>(), 2.5);
  EXPECT_LE(j.at("by_source").at("trtllm05").at("mape_pct").get<double>(), 12.0);
  EXPECT_LE(j.at("by_source").at("nim").at("mape_pct").get<double>(), 12.0);
  EXPECT_LE(j.at("by_source").at("lmdeploy").at("mape_pct").get<double>(), 11.5);
  EXPECT_LE(j.at("by_source").at("vllm").at("mape_pct").get<double>(), 5.0);
  // The one fitted constant is named with its held-out record, and held
  // out it does better than no host time at all (9.3% against 11.4%).
  const auto& fitted = j.at("fitted_constants");
  EXPECT_GT(fitted.at("serving_iteration_overhead_s").get<double>(), 0);
  EXPECT_LT(fitted.at("leave_one_source_out_mape_pct").get<double>(), fitted.at("unfitted_mape_pct").get<double>());
  // The likely ranges serve and serve-search print: leave one entry out,
  // about 80% of the measured TTFT/TPOT values fall inside (measured 79.2%).
  EXPECT_GE(j.at("range_coverage").at("fraction").get<double>(), 0.70);
}

// serve and serve-search read validation/serving_error_table.json; it must
// be what serve-validate gives today (regenerate it in any commit that moves
// serving errors: serve-validate validation/serving_runs.json
// --write-error-table validation/serving_error_table.json).
TEST(ServeValidation, CommittedServingErrorTableMatchesAFreshValidation) {
  const std::string src = STACKSIM_SOURCE_DIR;
  const std::string committed = src + "/validation/serving_error_table.json";
  if (!std::filesystem::exists(committed)) GTEST_SKIP() << "no committed serving error table";
  const std::string fresh = ::testing::TempDir() + "/serving_error_table_fresh.json";
  stacksim::testing::CmdResult run = stacksim::testing::Stacksim(
      "serve-validate " + src + "/validation/serving_runs.json --format json --write-error-table " + fresh);
  ASSERT_EQ(run.status, 0) << run.err;
  auto a = nlohmann::json::parse(std::ifstream(committed));
  auto b = nlohmann::json::parse(std::ifstream(fresh));
  ASSERT_EQ(a.at("rows").size(), b.at("rows").size());
  for (size_t i = 0; i < a.at("rows").size(); ++i) {
    const auto& x = a.at("rows")[i];
    const auto& y = b.at("rows")[i];
    EXPECT_EQ(x.at("id"), y.at("id"));
    EXPECT_EQ(x.at("key"), y.at("key"));
    EXPECT_NEAR(x.at("error").get<double>(), y.at("error").get<double>(), 0.005) << x.at("id") << " " << x.at("key");
  }
}

}  // namespace

namespace {

// serve and serve-search put the likely range on what they print.
TEST(ServeValidation, ServeAndServeSearchCarryLikelyRanges) {
  const std::string scenario = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/serve-llama3-70b-8xh100.json";
  stacksim::testing::CmdResult serve = stacksim::testing::Stacksim("serve " + scenario + " --requests 200 --format json");
  ASSERT_EQ(serve.status, 0) << serve.err;
  auto j = nlohmann::json::parse(serve.out);
  for (const char* m : {"ttft", "tpot"}) {
    const auto& u = j.at("uncertainty").at(m);
    ASSERT_TRUE(u.is_object()) << m;
    EXPECT_GT(u.at("low_s").get<double>(), 0);
    EXPECT_LT(u.at("low_s").get<double>(), u.at("high_s").get<double>());
    EXPECT_GE(u.at("n").get<int>(), 5);
  }
  EXPECT_TRUE(j.at("warnings").is_array());
  stacksim::testing::CmdResult search = stacksim::testing::Stacksim(
      "serve-search " + scenario + " --slo ttft_p99=2s,tpot_p99=100ms --requests 200 --tp 4,8 --top 3 --format json");
  ASSERT_EQ(search.status, 0) << search.err;
  auto s = nlohmann::json::parse(search.out);
  ASSERT_FALSE(s.at("ranked").empty());
  for (const auto& c : s.at("ranked")) {
    const auto& t = c.at("uncertainty").at("ttft");
    EXPECT_LT(t.at("low_s").get<double>(), t.at("high_s").get<double>());
    // The range is of the p99 the SLO reads.
    EXPECT_NEAR(t.at("predicted_s").get<double>(), c.at("ttft_p99_s").get<double>(), 1e-12);
    EXPECT_TRUE(c.at("warnings").is_array());
  }
}

}  // namespace
