#include "sim/validate/layout_choice.h"

#include <set>
#include <string>
#include <tuple>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/validate/plan_choice.h"
#include "tests/coverage_runs.h"
#include "tests/input_error.h"

namespace stacksim::validate {
namespace {

using testing::CoverageRun;
using testing::kCoverageRuns;

// A run on 16 B200 (8 per node) that states neither tp, pp nor dp.
nlohmann::json OpenLayoutRun() {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["plan"]["tp"] = nullptr;
  run["plan"]["pp"] = nullptr;
  run["plan"]["dp"] = nullptr;
  run["plan"]["micro_batch"] = nullptr;
  run["plan"]["recompute"] = nullptr;
  return run;
}

std::tuple<int, int, int> Layout(const nlohmann::json& c) {
  return {c["plan"]["tp"].get<int>(), c["plan"]["pp"].get<int>(), c["plan"]["dp"].get<int>()};
}

void Nothing(RunScenario&) {}

TEST(LayoutChoice, OnlyRunsWithANullTpPpOrDpAreOpen) {
  EXPECT_FALSE(LayoutIsOpen(CoverageRun("synthetic-b200-tp2")));
  EXPECT_TRUE(LayoutIsOpen(OpenLayoutRun()));
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["plan"].erase("pp");  // left out counts as null
  EXPECT_TRUE(LayoutIsOpen(run));
}

// Every candidate uses all the GPUs, keeps tp within one 8-GPU node as a
// power of two, and leaves each data-parallel rank whole sequences.
TEST(LayoutChoice, CandidatesFillTheGpusWithinTheNode) {
  nlohmann::json run = OpenLayoutRun();
  const auto candidates = LayoutCandidates(run, kCoverageRuns, "runs[1]");
  std::set<std::tuple<int, int, int>> seen;
  for (const auto& c : candidates) {
    const auto [tp, pp, dp] = Layout(c);
    EXPECT_EQ(tp * pp * dp, 16);
    EXPECT_LE(tp, 8);
    EXPECT_EQ(tp & (tp - 1), 0) << tp;
    EXPECT_LE(pp, 8);  // the model's layers
    EXPECT_EQ(16 % dp, 0);  // global batch 16
    EXPECT_TRUE(seen.insert(Layout(c)).second);
    EXPECT_EQ(c["id"], run["id"]);  // the rest of the run as it was
  }
  EXPECT_TRUE(seen.count({1, 1, 16}));
  EXPECT_TRUE(seen.count({8, 2, 1}));
  EXPECT_FALSE(seen.count({16, 1, 1}));  // beyond one node

  // Given fields stay as given.
  run["plan"]["tp"] = 2;
  for (const auto& c : LayoutCandidates(run, kCoverageRuns, "runs[1]")) EXPECT_EQ(std::get<0>(Layout(c)), 2);
  run["plan"]["dp"] = 4;
  const auto one = LayoutCandidates(run, kCoverageRuns, "runs[1]");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(Layout(one[0]), std::make_tuple(2, 2, 4));
}

TEST(LayoutChoice, NoLayoutOrAMalformedFieldIsAnErrorNamingTheField) {
  nlohmann::json run = OpenLayoutRun();
  run["hardware"]["gpus"] = 7;  // tp 2 divides no layout of 7 GPUs
  run["plan"]["tp"] = 2;
  InputError e = testing::ErrorFrom([&] { LayoutCandidates(run, kCoverageRuns, "runs[1]"); });
  EXPECT_EQ(e.key_path(), "runs[1].plan");
  EXPECT_NE(std::string(e.what()).find("no parallel layout"), std::string::npos);

  nlohmann::json bad = OpenLayoutRun();
  bad["plan"]["tp"] = "two";
  EXPECT_EQ(testing::ErrorFrom([&] { LayoutCandidates(bad, kCoverageRuns, "runs[1]"); }).key_path(),
            "runs[1].plan.tp");
}

// When every layout is refused for the same reason, the reason is not the
// layout: the error is that field's (here a GPU without FP8), not the plan's.
TEST(LayoutChoice, ARefusalEveryLayoutSharesIsTheError) {
  nlohmann::json run = OpenLayoutRun();
  run["hardware"]["gpu"] = "a100-sxm-80gb";
  run["plan"]["precision"] = "fp8";
  InputError e = testing::ErrorFrom([&] { ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing); });
  EXPECT_EQ(e.key_path(), "plan.precision");
  EXPECT_NE(std::string(e.what()).find("no fp8 GEMM rate"), std::string::npos);
}

// The chosen layout is the fastest of the candidates that fit, each built
// and searched as a run that gave its layout would be; the choices say so.
TEST(LayoutChoice, ChoosesTheFastestLayoutThatFits) {
  const nlohmann::json run = OpenLayoutRun();
  LayoutOutcome chosen = ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing);
  ASSERT_FALSE(chosen.choices.empty());
  EXPECT_NE(chosen.choices.front().find("the run leaves the layout open"), std::string::npos);
  EXPECT_TRUE(FitsWithHeadroom(chosen.run.scenario));
  const config::PlanConfig& plan = chosen.run.scenario.plan;
  EXPECT_EQ(plan.tp * plan.pp * plan.dp, 16);
  for (const auto& c : LayoutCandidates(run, kCoverageRuns, "runs[1]")) {
    RunScenario rs = ScenarioForRun(c, kCoverageRuns, "runs[1]");
    simulate::SimulationResult r;
    std::vector<std::string> choices;
    FillOpenFields(rs, &r, &choices);
    if (FitsWithHeadroom(rs.scenario)) EXPECT_LE(chosen.result.iteration, r.iteration) << c["plan"].dump();
  }
}

// Plans simulated two at a time: the same layout, plan, step and words;
// and a refusal shared by every layout is still the error.
TEST(LayoutChoice, WorkersChangeNothing) {
  const nlohmann::json run = OpenLayoutRun();
  const LayoutOutcome one = ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing);
  const LayoutOutcome two = ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing, [] { return 2; });
  EXPECT_EQ(two.choices, one.choices);
  EXPECT_EQ(two.result.iteration, one.result.iteration);
  EXPECT_EQ(config::ScenarioFileJson(two.run.scenario), config::ScenarioFileJson(one.run.scenario));
  nlohmann::json fp8 = run;
  fp8["hardware"]["gpu"] = "a100-sxm-80gb";
  fp8["plan"]["precision"] = "fp8";
  EXPECT_EQ(testing::ErrorFrom([&] { ChooseLayout(fp8, kCoverageRuns, "runs[1]", Nothing, [] { return 2; }); })
                .key_path(),
            "plan.precision");
}

// A framework without model parallelism is given none: PyTorch FSDP runs
// data-parallel only, whatever would be faster.
TEST(LayoutChoice, OnlyTheFrameworksOwnModelParallelism) {
  nlohmann::json run = OpenLayoutRun();
  run["framework"] = "PyTorch FSDP";
  run["plan"]["sharding"] = "zero3";
  LayoutOutcome chosen = ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing);
  EXPECT_EQ(chosen.run.scenario.plan.tp, 1);
  EXPECT_EQ(chosen.run.scenario.plan.pp, 1);
  EXPECT_EQ(chosen.run.scenario.plan.dp, 16);
  // What the run states is kept even where the framework's profile lacks it.
  run["plan"]["tp"] = 2;
  EXPECT_EQ(ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing).run.scenario.plan.tp, 2);
  // One sequence per step over 16 GPUs leaves only layouts with model
  // parallelism FSDP's profile lacks: the run ran, so it is modelled with the
  // fastest of them, and the choice says the profile does not list it.
  run["plan"]["tp"] = nullptr;
  run["plan"]["global_batch"] = 1;
  const LayoutOutcome forced = ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing);
  EXPECT_EQ(forced.run.scenario.plan.dp, 1);
  EXPECT_EQ(forced.run.scenario.plan.tp * forced.run.scenario.plan.pp, 16);
  ASSERT_FALSE(forced.choices.empty());
  EXPECT_NE(forced.choices.front().find("pytorch-fsdp's profile lists no such model parallelism"), std::string::npos)
      << forced.choices.front();
  // A batch no layout divides is still an error naming the plan: at pp 1,
  // dp = 16 / tp (tp at most 8) never divides 3 sequences.
  run["plan"]["global_batch"] = 3;
  run["plan"]["pp"] = 1;
  EXPECT_EQ(testing::ErrorFrom([&] { ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing); }).key_path(),
            "runs[1].plan");
}

// A framework no profile names is modelled with the profile of the stack its
// plan describes, and the choice says it was assumed.
// The synthetic 16-B200 run as a mixture-of-experts model (8 experts, top 2)
// whose ep the run leaves open.
nlohmann::json OpenEpRun() {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"]["moe"] = {{"experts", 8}, {"top_k", 2}, {"expert_ffn_hidden", 2048}, {"shared_experts", 0},
                         {"dense_layers", 0}};
  run["plan"]["ep"] = nullptr;
  return run;
}

// A null ep is part of the layout for a mixture-of-experts model only: the
// candidates are the powers of two up to the experts and tp x dp x cp, and
// the choice names the one it took.
TEST(LayoutChoice, AnOpenEpOfAMixtureOfExpertsModelIsChosen) {
  nlohmann::json dense = CoverageRun("synthetic-b200-tp2");
  dense["plan"]["ep"] = nullptr;
  EXPECT_FALSE(LayoutIsOpen(dense));
  const nlohmann::json run = OpenEpRun();
  ASSERT_TRUE(LayoutIsOpen(run));
  std::set<int> eps;
  for (const auto& c : LayoutCandidates(run, kCoverageRuns, "runs[1]")) {
    EXPECT_EQ(Layout(c), std::make_tuple(2, 1, 8));  // as given
    eps.insert(c["plan"]["ep"].get<int>());
  }
  EXPECT_EQ(eps, (std::set<int>{1, 2, 4, 8}));
  const LayoutOutcome chosen = ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing);
  const int ep = chosen.run.scenario.plan.ep;
  EXPECT_TRUE(eps.count(ep)) << ep;
  ASSERT_FALSE(chosen.choices.empty());
  EXPECT_NE(chosen.choices.front().find("ep=" + std::to_string(ep) + " (the run leaves the layout open"),
            std::string::npos)
      << chosen.choices.front();
  // No candidate that fits is faster.
  for (const auto& c : LayoutCandidates(run, kCoverageRuns, "runs[1]")) {
    RunScenario rs = ScenarioForRun(c, kCoverageRuns, "runs[1]");
    simulate::SimulationResult r;
    std::vector<std::string> why;
    FillOpenFields(rs, &r, &why);
    if (!r.out_of_memory && FitsWithHeadroom(rs.scenario)) EXPECT_GE(r.iteration, chosen.result.iteration);
  }
}

// A run that leaves its layers null to a shipped published config (the
// schema cannot state a hybrid model's blocks) has its open layout bounded
// by that config's layers, as its scenario takes them.
TEST(LayoutChoice, NullLayersAreThePublishedConfigs) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["model"] = {{"name", "Nemotron 3 Nano"}, {"layers", nullptr}, {"hidden", nullptr}, {"heads", nullptr},
                  {"kv_heads", nullptr}, {"ffn_hidden", nullptr}, {"vocab", nullptr}, {"seq_len", 8192},
                  {"activation", "squared-relu"}, {"attention", "mha-gqa"},
                  {"moe", {{"experts", 128}, {"top_k", 6}, {"expert_ffn_hidden", nullptr}, {"shared_experts", 1},
                           {"dense_layers", 0}}}};
  run["plan"]["tp"] = 1;
  run["plan"]["pp"] = nullptr;
  run["plan"]["dp"] = 2;
  run["plan"]["ep"] = 2;
  std::set<int> pps;
  for (const auto& c : LayoutCandidates(run, kCoverageRuns, "runs[1]")) pps.insert(c["plan"]["pp"].get<int>());
  EXPECT_EQ(pps, (std::set<int>{8}));  // 16 GPUs at tp 1, dp 2: within the config's 52 layers
  const LayoutOutcome chosen = ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing);
  EXPECT_EQ(chosen.run.scenario.model.num_layers, 52);
  EXPECT_EQ(chosen.run.scenario.plan.pp, 8);

  // A model without a shipped config still needs its layers.
  run["model"]["name"] = "Unshipped hybrid";
  EXPECT_EQ(testing::ErrorFrom([&] { LayoutCandidates(run, kCoverageRuns, "runs[1]"); }).key_path(),
            "runs[1].model.layers");
}

// A null cp splits a sequence only into pieces of at least 4,096 tokens.
TEST(LayoutChoice, AnOpenCpSplitsOnlyLongSequences) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["plan"]["cp"] = nullptr;
  ASSERT_TRUE(LayoutIsOpen(run));
  for (const auto& c : LayoutCandidates(run, kCoverageRuns, "runs[1]")) EXPECT_EQ(c["plan"]["cp"], 1);  // 2,048 tokens
  run["model"]["seq_len"] = 16384;
  run["plan"]["dp"] = nullptr;
  std::set<int> cps;
  for (const auto& c : LayoutCandidates(run, kCoverageRuns, "runs[1]")) {
    const int cp = c["plan"]["cp"].get<int>();
    cps.insert(cp);
    EXPECT_EQ(c["plan"]["tp"].get<int>() * c["plan"]["pp"].get<int>() * c["plan"]["dp"].get<int>() * cp, 16);
  }
  EXPECT_EQ(cps, (std::set<int>{1, 2, 4}));
}

TEST(LayoutChoice, AnUnknownFrameworkTakesTheProfileItsPlanDescribes) {
  nlohmann::json run = CoverageRun("synthetic-b200-tp2");
  run["framework"] = "Zorblax trainer 0.1";
  RunScenario model_parallel = ScenarioForRun(run, kCoverageRuns, "runs[1]");
  EXPECT_EQ(model_parallel.framework->name, "megatron-core");
  bool said = false;
  for (const auto& c : model_parallel.choices) said |= c.find("assumed: no profile matches 'Zorblax trainer 0.1'") != std::string::npos;
  EXPECT_TRUE(said);

  run["plan"]["sharding"] = "zero3";  // fully sharded, even beside tp 2
  EXPECT_EQ(ScenarioForRun(run, kCoverageRuns, "runs[1]").framework->name, "pytorch-fsdp");
  // Every layout tried for an open run takes the same profile: data parallel
  // only, as PyTorch FSDP offers.
  run["plan"]["tp"] = nullptr;
  run["plan"]["dp"] = nullptr;
  LayoutOutcome chosen = ChooseLayout(run, kCoverageRuns, "runs[1]", Nothing);
  EXPECT_EQ(chosen.run.framework->name, "pytorch-fsdp");
  EXPECT_EQ(chosen.run.scenario.plan.dp, 16);
}

}  // namespace
}  // namespace stacksim::validate
