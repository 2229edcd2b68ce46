#include "sim/compare/compare.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "sim/report/compare_html.h"
#include "sim/search/search.h"
#include "sim/simulate/simulate.h"
#include "tests/input_error.h"

namespace stacksim::compare {
namespace {

// f must throw an InputError whose file contains `file`, at key `key`, with
// `text` in its message.
void ExpectError(const std::function<void()>& f, const std::string& file, const std::string& key,
                 const std::string& text) {
  InputError e = testing::ErrorFrom(f);
  EXPECT_NE(e.file().find(file), std::string::npos) << e.what();
  EXPECT_EQ(e.key_path(), key) << e.what();
  EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
}

TEST(CompareSpecTest, ParsesTopologyCountAndPrice) {
  ClusterSpec a = ParseClusterSpec("dgx-h100:1024");
  EXPECT_EQ(a.topology, "dgx-h100");
  EXPECT_EQ(a.gpus, "1024");
  EXPECT_EQ(a.gpu_hour_usd, 0);
  ClusterSpec b = ParseClusterSpec("topologies/gb200-nvl72.json:72..576@4.5");
  EXPECT_EQ(b.topology, "topologies/gb200-nvl72.json");
  EXPECT_EQ(b.gpus, "72..576");
  EXPECT_DOUBLE_EQ(b.gpu_hour_usd, 4.5);
  EXPECT_EQ(b.text, "topologies/gb200-nvl72.json:72..576@4.5");
}

TEST(CompareSpecTest, RejectsMalformedSpecsNamingTheOption) {
  for (const char* bad : {"dgx-h100", "dgx-h100:", ":64", "dgx-h100:64@", "dgx-h100:64@-2", "dgx-h100:64@abc",
                          "dgx-h100:64@0"}) {
    ExpectError([&] { ParseClusterSpec(bad); }, "--cluster", "", bad);
  }
}

// A small dense model on one node of each cluster: searches take well under
// a second.
CompareRequest SmallRequest(std::vector<std::string> clusters) {
  CompareRequest r;
  r.base = BaseScenario("gpt-1.7b", 2048, 64, config::Precision::kBf16);
  for (const std::string& c : clusters) r.clusters.push_back(ParseClusterSpec(c));
  r.tokens = 300'000'000'000;
  return r;
}

TEST(CompareTest, EachClusterGetsItsSearchsBestPlanAndTheBudgetFollowsFromIt) {
  CompareRequest request = SmallRequest({"dgx-h100:8", "dgx-a100:8"});
  Comparison c = Compare(request);
  ASSERT_EQ(c.clusters.size(), 2u);
  for (const ClusterResult& r : c.clusters) {
    ASSERT_TRUE(r.ok()) << r.spec.text << ": " << r.failure;
    // The same search run directly ranks the same plan first.
    search::SearchSpace space;
    space.scenario = r.scenario;
    space.gpu_counts = {8};
    search::SearchOptions so;
    so.top = 1;
    search::SearchResult direct = search::Search(space, so);
    ASSERT_FALSE(direct.plans.empty());
    EXPECT_EQ(direct.plans[0].point, r.best().point);
    EXPECT_EQ(direct.plans[0].step, r.best().step);

    const double tokens_per_s = 2048.0 * 64 / r.best().step.seconds();
    EXPECT_NEAR(r.days, 3e11 / tokens_per_s / 86400, 1e-9 * r.days);
    EXPECT_NEAR(r.gpu_hours, 8 * r.days * 24, 1e-9 * r.gpu_hours);
    EXPECT_NEAR(r.cost_usd, r.gpu_hours * r.search.economics.gpu_hour_usd, 1e-6);
    EXPECT_NEAR(r.energy_mwh, r.gpu_hours * r.search.economics.gpu_watts / 1e6, 1e-9);
    EXPECT_GT(r.cost_usd, 0);
    EXPECT_GT(r.energy_mwh, 0);
  }
  // An H100 (989 dense BF16 TFLOP/s, 3.35 TB/s) beats an A100 (312, 2.0 TB/s)
  // on the same node shape: it is the best by time.
  EXPECT_LT(c.clusters[0].days, c.clusters[1].days);
  EXPECT_EQ(c.best, 0);
}

TEST(CompareTest, CostObjectivePicksTheCheaperClusterForTheBudget) {
  // Prices given per cluster make the answer known: the H100 is under 4x
  // faster here, so at 10x its price per hour the A100 trains the budget for
  // less; at a tenth of the A100's price the H100 does.
  CompareOptions options;
  options.objective = search::Objective::kCost;
  Comparison dear_h100 = Compare(SmallRequest({"dgx-h100:8@20", "dgx-a100:8@2"}), options);
  ASSERT_TRUE(dear_h100.clusters[0].ok() && dear_h100.clusters[1].ok());
  const double speedup = dear_h100.clusters[1].days / dear_h100.clusters[0].days;
  ASSERT_GT(speedup, 1.0);
  ASSERT_LT(speedup, 10.0);
  EXPECT_EQ(dear_h100.best, 1);
  Comparison cheap_h100 = Compare(SmallRequest({"dgx-h100:8@0.2", "dgx-a100:8@2"}), options);
  EXPECT_EQ(cheap_h100.best, 0);
  // Both prices came with --cluster: one basis, no warning about it.
  for (const std::string& w : cheap_h100.warnings) EXPECT_EQ(w.find("different bases"), std::string::npos) << w;
}

TEST(CompareTest, AClusterWhereNothingFitsSaysWhyAndTheOthersAreStillCompared) {
  CompareRequest request;
  request.base = BaseScenario("llama3.1-405b", 4096, 64, config::Precision::kBf16);
  request.clusters = {ParseClusterSpec("dgx-a100-40gb:8"), ParseClusterSpec("dgx-h100:8")};
  request.tokens = 1'000'000'000;
  Comparison c = Compare(request);
  for (const ClusterResult& r : c.clusters) {
    EXPECT_FALSE(r.ok()) << r.spec.text;
    EXPECT_NE(r.failure.find("out of GPU memory"), std::string::npos) << r.failure;
  }
  EXPECT_EQ(c.best, -1);
  EXPECT_NE(ComparisonText(c).find("no plan is valid and fits"), std::string::npos);
  EXPECT_TRUE(ComparisonJson(c)["best"].is_null());
}

TEST(CompareTest, WarnsWhenPricesAreOfDifferentBasesOrMissing) {
  // economics/gpus.json: the A100 40GB price is AWS's, the H100's Spheron's;
  // the H800 has none.
  Comparison c = Compare(SmallRequest({"dgx-h100:8", "dgx-a100-40gb:8", "h800-node:8"}));
  bool bases = false, missing = false;
  for (const std::string& w : c.warnings) {
    bases |= w.find("different bases") != std::string::npos;
    missing |= w.find("h800-node:8: no price") != std::string::npos;
  }
  EXPECT_TRUE(bases);
  EXPECT_TRUE(missing);
  EXPECT_EQ(c.clusters[2].cost_usd, 0);
  EXPECT_TRUE(ComparisonJson(c)["clusters"][2]["cost_usd"].is_null());
}

TEST(CompareTest, CostObjectiveWithoutAPriceIsAnErrorNamingTheField) {
  CompareOptions options;
  options.objective = search::Objective::kCost;
  ExpectError([&] { Compare(SmallRequest({"h800-node:8"}), options); }, "", "gpu_hour_usd",
                            "h800-sxm-80gb");
}

TEST(CompareTest, UnknownFilesAreErrorsNamingTheOption) {
  ExpectError([&] { Compare(SmallRequest({"no-such-topology:8"})); }, "--cluster", "",
                            "no-such-topology");
  ExpectError([&] { BaseScenario("no-such-model", 2048, 64, config::Precision::kBf16); }, "--model",
                            "", "no-such-model");
}

TEST(CompareTest, JsonListsEveryClusterWithItsRankingAndBest) {
  Comparison c = Compare(SmallRequest({"dgx-h100:8", "dgx-a100:8"}));
  nlohmann::json j = ComparisonJson(c);
  EXPECT_EQ(j["best"], "dgx-h100:8");
  ASSERT_EQ(j["clusters"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& e = j["clusters"][i];
    EXPECT_EQ(e["gpus"], 8);
    ASSERT_GE(e["plans"].size(), 1u);
    EXPECT_DOUBLE_EQ(e["plans"][0]["step_time_s"].get<double>(), c.clusters[i].best().step.seconds());
    EXPECT_DOUBLE_EQ(e["days"].get<double>(), c.clusters[i].days);
    EXPECT_TRUE(e["economics"].contains("price_basis"));
  }
  // Same request, same bytes.
  EXPECT_EQ(j.dump(), ComparisonJson(Compare(SmallRequest({"dgx-h100:8", "dgx-a100:8"}))).dump());
}

TEST(CompareHtmlTest, PageHasTheChartsTheTableAndEachBestPlansStep) {
  Comparison c = Compare(SmallRequest({"dgx-h100:8", "dgx-a100:8", "h800-node:8"}));
  simulate::SimulationResult h100 = simulate::Simulate(c.clusters[0].scenario);
  const std::string html = report::ComparisonHtml(c, {&h100, nullptr, nullptr});
  for (const char* section : {"Days to train the budget", "Cost", "GPU energy", "MFU of the best plan",
                              "Clusters side by side", "Prices and their sources", "Warnings",
                              "Best plan on dgx-h100:8"}) {
    EXPECT_NE(html.find(section), std::string::npos) << section;
  }
  EXPECT_EQ(html.find("Best plan on dgx-a100:8"), std::string::npos);  // not simulated: no section
  // The best cluster's bar has its own colour, once per chart (days, cost,
  // energy, MFU; the page without step sections, which use it for memory).
  const std::string charts = report::ComparisonHtml(c, {});
  size_t best_bars = 0;
  for (size_t at = charts.find("#59a14f"); at != std::string::npos; at = charts.find("#59a14f", at + 1)) ++best_bars;
  EXPECT_EQ(best_bars, 4u);
  // Self-contained and deterministic.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html, report::ComparisonHtml(c, {&h100, nullptr, nullptr}));
}

}  // namespace
}  // namespace stacksim::compare
