#include "sim/search/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "sim/memory/memory_model.h"
#include "sim/search/economics.h"
#include "sim/search/search_report.h"
#include "sim/simulate/simulate.h"
#include "sim/uncertainty/assessment.h"
#include "sim/workload/training_step.h"
#include "tests/fixtures.h"
#include "tests/input_error.h"

namespace stacksim::search {
namespace {

using config::PipelineScheduleKind;
using config::Recompute;
using config::Sharding;

SearchSpace TinySpace(std::vector<int> gpus, int64_t global_batch) {
  config::PlanConfig plan;
  plan.global_batch = global_batch;
  SearchSpace space;
  space.scenario = testing::Scenario(testing::GptModel(4, 512, 8, 2048), gpus.front(), 512, plan);
  space.scenario.topology.host = config::HostResources{Bytes{2e12}, Bandwidth{400e9}};
  space.gpu_counts = gpus;
  return space;
}

struct Expected {
  double score;
  Time step;
  Bytes peak;
  PlanPoint point;
  bool operator<(const Expected& o) const {
    return std::tie(score, step, peak, point) < std::tie(o.score, o.step, o.peak, o.point);
  }
};

// Every candidate simulated, no bounds: what the search must reproduce.
std::vector<Expected> Exhaustive(const SearchSpace& space, const SearchOptions& options, int64_t* out_of_memory) {
  EnumerationCounts counts;
  std::vector<Expected> all;
  const double mtokens = static_cast<double>(space.scenario.tokens_per_step()) / 1e6;
  for (const PlanPoint& p : EnumeratePlans(space, &counts)) {
    config::ScenarioConfig s = space.scenario;
    s.gpus = p.gpus;
    s.plan = ApplyPoint(space.scenario.plan, p);
    Bytes peak;
    for (const auto& f : memory::EstimateMemory(s)) peak = std::max(peak, f.total());
    if (peak + memory::PlanningReserve(s, peak, options.headroom).required > s.profile.hbm_capacity.value) {
      ++*out_of_memory;
      continue;
    }
    Time step = SimulateStep(s, s.plan);
    double factor = 1.0;
    if (options.ranking == Ranking::kPessimistic) {
      // The range's high end per predicted second, from the range itself.
      factor = uncertainty::AssessScenario(*options.error_table, s, 1.0).range->high_s;
    }
    if (options.objective == Objective::kCost) factor *= options.economics.gpu_hour_usd * p.gpus / 3600.0 / mtokens;
    if (options.objective == Objective::kEnergy) factor *= options.economics.gpu_watts * p.gpus / 3.6e6 / mtokens;
    all.push_back({factor * step.seconds(), step, peak, p});
  }
  std::sort(all.begin(), all.end());
  return all;
}

void ExpectSameTop(const SearchSpace& space, const SearchOptions& options) {
  int64_t oom = 0;
  std::vector<Expected> want = Exhaustive(space, options, &oom);
  SearchResult got = Search(space, options);
  ASSERT_EQ(got.plans.size(), std::min<size_t>(options.top, want.size()));
  for (size_t i = 0; i < got.plans.size(); ++i) {
    EXPECT_EQ(PlanName(got.plans[i].point), PlanName(want[i].point)) << "rank " << i + 1;
    EXPECT_EQ(got.plans[i].point.gpus, want[i].point.gpus) << "rank " << i + 1;
    EXPECT_EQ(got.plans[i].step, want[i].step) << "rank " << i + 1;
    EXPECT_LE(got.plans[i].bound, got.plans[i].step);
  }
  // The bounds did their job: most plans were never simulated.
  EXPECT_LT(got.counts.evaluated, static_cast<int64_t>(want.size()) / 2);
}

// Branch and bound against brute force: the top list is exact.
TEST(Search, TopListEqualsExhaustiveSimulation) {
  SearchSpace space = TinySpace({8}, 16);
  SearchOptions options;
  options.top = 12;
  options.threads = 2;
  options.batch = 4;
  ExpectSameTop(space, options);
}

// A hybrid stack's blocks cost less than transformer layers: the bound
// prices each block kind on its own and stays below every simulated step.
TEST(Search, TopListEqualsExhaustiveSimulationForAHybridStack) {
  SearchSpace space = TinySpace({8}, 16);
  config::ModelConfig& m = space.scenario.model;
  m.hybrid_pattern = "M*M-";
  m.mamba.heads = 16;
  m.mamba.head_dim = 64;
  m.mamba.state = 64;
  m.mamba.groups = 2;
  SearchOptions options;
  options.top = 8;
  options.threads = 2;
  options.batch = 4;
  ExpectSameTop(space, options);
}

TEST(Search, TopListEqualsExhaustiveSimulationForCostOverGpuCounts) {
  SearchSpace space = TinySpace({8, 16}, 16);
  // A little HBM, so that memory prunes some plans too: the runtime's own
  // memory (CUDA context, NCCL buffers per communicator, workspaces: 0.5 to
  // 1 GiB here, memory/reserve.h) plus a quarter GiB for the model.
  space.scenario.profile.hbm_capacity.value = Bytes{0.85 * kGiB};
  SearchOptions options;
  options.headroom.fixed = Bytes{0};  // the default reserve alone is more than this HBM
  options.top = 8;
  options.threads = 2;
  options.objective = Objective::kCost;
  options.economics.gpu_hour_usd = 2.0;
  ExpectSameTop(space, options);
  SearchResult r = Search(space, options);
  EXPECT_GT(r.counts.out_of_memory, 0);
  // Cost per million tokens from the price: USD/h x GPUs x step / tokens.
  const RankedPlan& best = r.plans.front();
  EXPECT_NEAR(best.cost_per_mtok_usd,
              2.0 * best.point.gpus * best.step.seconds() / 3600.0 / (space.scenario.tokens_per_step() / 1e6), 1e-12);
  EXPECT_DOUBLE_EQ(best.objective, best.cost_per_mtok_usd);
}

// A small model on one 8-GPU node with a large batch: every plan does the
// same FLOPs; tensor parallelism adds blocking collectives and thinner
// GEMMs, pipelining a bubble, context parallelism a K/V exchange, while data
// parallelism only adds a gradient all-reduce that overlaps the backward.
// Pure data parallelism must win, with few micro-batches (fewer kernels).
TEST(Search, SmallModelOnOneNodeIsBestDataParallel) {
  SearchSpace space = TinySpace({8}, 64);
  SearchOptions options;
  options.top = 5;
  SearchResult r = Search(space, options);
  ASSERT_FALSE(r.plans.empty());
  const PlanPoint& best = r.plans[0].point;
  EXPECT_EQ(best.tp, 1);
  EXPECT_EQ(best.pp, 1);
  EXPECT_EQ(best.cp, 1);
  EXPECT_EQ(best.dp, 8);
  EXPECT_EQ(best.recompute, Recompute::kNone);
  EXPECT_FALSE(best.offload);
  EXPECT_GE(best.micro_batch, 4);
  for (size_t i = 1; i < r.plans.size(); ++i) EXPECT_GE(r.plans[i].score, r.plans[i - 1].score);
}

// A GPU count beyond the topology's max_nodes grows the fabric (one leaf of
// one node becomes a leaf group per node) rather than invalidating every plan.
TEST(Search, GpuCountsBeyondTheFabricGrowIt) {
  SearchSpace space = TinySpace({16}, 16);
  space.scenario.topology.fabric.levels = {config::FatTreeLevel{"leaf", 1, 1.0, Time::Ns(500)}};
  space.scenario.topology.max_nodes = 1;
  SearchResult r = Search(space, SearchOptions{});
  EXPECT_EQ(r.counts.enumeration.invalid.count("gpus"), 0u);
  EXPECT_FALSE(r.plans.empty());
}

// Across two nodes, TP may not leave the NVLink domain: those plans are
// invalid, counted under plan.tp, and never ranked.
TEST(Search, TensorParallelismStaysInTheNode) {
  SearchSpace space = TinySpace({16}, 16);
  SearchOptions options;
  options.top = 20;
  SearchResult r = Search(space, options);
  EXPECT_GT(r.counts.enumeration.invalid.at("plan.tp"), 0);
  for (const RankedPlan& p : r.plans) EXPECT_LE(p.point.tp, 8);
}

TEST(Search, CountsAddUpToTheEnumeratedPlans) {
  SearchSpace space = TinySpace({8, 16}, 16);
  space.scenario.profile.hbm_capacity.value = Bytes{2.25 * kGiB};
  SearchResult r = Search(space, {});
  const SearchCounts& c = r.counts;
  EXPECT_EQ(c.enumeration.enumerated, c.enumeration.invalid_total() + c.enumeration.equivalent + c.out_of_memory +
                                          c.host_memory + c.bounded + c.evaluated);
  EXPECT_LE(c.simulations, c.evaluated);
  EXPECT_GT(c.bounded, 0);
}

TEST(Search, SameOutputWhateverTheThreadCount) {
  SearchSpace space = TinySpace({8, 16}, 16);
  SearchOptions one;
  one.threads = 1;
  one.top = 7;
  SearchOptions three = one;
  three.threads = 3;
  EXPECT_EQ(SearchJson(Search(space, one)).dump(), SearchJson(Search(space, three)).dump());
}

TEST(Search, CostAndEnergyNeedAPriceAndAPower) {
  SearchSpace space = TinySpace({8}, 16);
  SearchOptions options;
  options.objective = Objective::kCost;
  InputError e = testing::ErrorFrom([&] { Search(space, options); });
  EXPECT_EQ(e.key_path(), "gpu_hour_usd");
  EXPECT_NE(std::string(e.what()).find("--gpu-hour-usd"), std::string::npos);
  options.objective = Objective::kEnergy;
  e = testing::ErrorFrom([&] { Search(space, options); });
  EXPECT_NE(e.key_path().find("tdp_watts"), std::string::npos);
}

TEST(Search, SimulateStepIsSimulatesIterationAndMfuMatches) {
  SearchSpace space = TinySpace({8}, 16);
  SearchResult r = Search(space, {});
  ASSERT_FALSE(r.plans.empty());
  config::ScenarioConfig s = space.scenario;
  s.plan = r.plans[0].plan;
  simulate::SimulationResult full = simulate::Simulate(s);
  EXPECT_EQ(full.iteration, r.plans[0].step);
  EXPECT_NEAR(full.mfu, r.plans[0].mfu, 1e-12);
  EXPECT_NEAR(full.tokens_per_s, r.plans[0].tokens_per_s, 1e-6);
  Bytes peak;
  for (const auto& m : full.memory) peak = std::max(peak, m.total());
  EXPECT_EQ(peak, r.plans[0].peak_memory);
}

// The search replays zero1 and zero2 once (and, without data parallelism,
// none as well): their traces must really be the same.
TEST(Search, PlansSharingAReplayBuildTheSameTrace) {
  SearchSpace space = TinySpace({8}, 16);
  auto replay = [&](int dp, Sharding sh) {
    PlanPoint p;
    p.gpus = 8;
    p.tp = 8 / dp / 2;
    p.pp = 2;
    p.dp = dp;
    p.sharding = sh;
    config::ScenarioConfig s = space.scenario;
    s.plan = ApplyPoint(s.plan, p);
    return std::make_pair(workload::BuildTrainingStep(s).size(), SimulateStep(s, s.plan));
  };
  EXPECT_EQ(replay(2, Sharding::kZero1), replay(2, Sharding::kZero2));
  EXPECT_NE(replay(2, Sharding::kZero1), replay(2, Sharding::kNone));
  EXPECT_EQ(replay(1, Sharding::kNone), replay(1, Sharding::kZero1));
  EXPECT_EQ(replay(1, Sharding::kNone), replay(1, Sharding::kZero2));
}

TEST(GpuRange, WholeNodesInTheRange) {
  config::TopologyConfig t = testing::DgxTopology();
  EXPECT_EQ(ParseGpuRange("32..64", t), (std::vector<int>{32, 40, 48, 56, 64}));
  EXPECT_EQ(ParseGpuRange("30..42", t), (std::vector<int>{32, 40}));
  EXPECT_EQ(ParseGpuRange("16", t), (std::vector<int>{16}));
  EXPECT_EQ(ParseGpuRange("4", t), (std::vector<int>{4}));  // less than a node, asked for alone
  EXPECT_EQ(testing::ErrorFrom([&] { ParseGpuRange("3..5", t); }).file(), "--gpus");
  EXPECT_EQ(testing::ErrorFrom([&] { ParseGpuRange("64..32", t); }).file(), "--gpus");
  EXPECT_EQ(testing::ErrorFrom([&] { ParseGpuRange("lots", t); }).file(), "--gpus");
  EXPECT_EQ(testing::ErrorFrom([&] { ParseGpuRange("8..", t); }).file(), "--gpus");
}

TEST(Objective, ParsesItsNames) {
  EXPECT_EQ(ParseObjective("time"), Objective::kTime);
  EXPECT_EQ(ParseObjective("throughput"), Objective::kThroughput);
  EXPECT_EQ(ParseObjective("cost"), Objective::kCost);
  EXPECT_EQ(ParseObjective("energy"), Objective::kEnergy);
  EXPECT_EQ(testing::ErrorFrom([] { ParseObjective("speed"); }).file(), "--objective");
}

TEST(Economics, ShippedPricesAndPowerCarrySources) {
  config::ScenarioConfig s;
  s.topology = testing::DgxTopology();
  s.topology.gpu = "h100-sxm-80gb";
  Economics e = LookUpEconomics(s);
  EXPECT_NEAR(e.gpu_hour_usd, 2.90, 0.001);  // Spheron on-demand, May 2026
  EXPECT_EQ(e.price_basis, "Spheron on-demand, 2026");
  EXPECT_EQ(e.gpu_watts, 700);
  EXPECT_NE(e.price_source.find("H100 SXM5"), std::string::npos);
  EXPECT_NE(e.power_source.find("700 W"), std::string::npos);
  // A topology's own price wins.
  s.topology.gpu_hour_usd = 2.5;
  e = LookUpEconomics(s);
  EXPECT_EQ(e.gpu_hour_usd, 2.5);
  EXPECT_NE(e.price_source.find("gpu_hour_usd of topology"), std::string::npos);
  EXPECT_NE(e.price_basis.find("topology"), std::string::npos);
  // Unknown GPU: nothing.
  s.topology.gpu = "no-such-gpu";
  s.topology.gpu_hour_usd = 0;
  e = LookUpEconomics(s);
  EXPECT_EQ(e.gpu_hour_usd, 0);
  EXPECT_EQ(e.gpu_watts, 0);
}

TEST(Economics, TopologyPriceIsTheTopologysElseTheShippedOne) {
  config::TopologyConfig t = testing::DgxTopology();
  t.gpu = "h100-sxm-80gb";
  Economics e = LookUpTopologyPrice(t);
  EXPECT_NEAR(e.gpu_hour_usd, 2.90, 0.001);
  EXPECT_EQ(e.price_basis, "Spheron on-demand, 2026");
  EXPECT_EQ(e.gpu_watts, 0);  // a price only
  t.gpu_hour_usd = 2.5;
  e = LookUpTopologyPrice(t);
  EXPECT_EQ(e.gpu_hour_usd, 2.5);
  EXPECT_EQ(e.price_basis, "topology file");
  t.gpu = "no-such-gpu";
  t.gpu_hour_usd = 0;
  e = LookUpTopologyPrice(t);
  EXPECT_EQ(e.gpu_hour_usd, 0);
  EXPECT_EQ(e.price_basis, "");
}

}  // namespace
}  // namespace stacksim::search

namespace stacksim::search {
namespace {

TEST(Search, NothingFitsGivesAnEmptyRankingWithTheCounts) {
  SearchSpace space = TinySpace({8}, 64);
  space.scenario.profile.hbm_capacity.value = Bytes{1};  // no plan fits
  SearchOptions options;
  options.top = 3;
  SearchResult r = Search(space, options);
  EXPECT_TRUE(r.plans.empty());
  const SearchCounts& c = r.counts;
  EXPECT_GT(c.out_of_memory, 0);
  EXPECT_EQ(c.evaluated, 0);
  EXPECT_EQ(c.enumeration.enumerated,
            c.enumeration.invalid_total() + c.enumeration.equivalent + c.out_of_memory + c.host_memory + c.bounded);
}

}  // namespace
}  // namespace stacksim::search

namespace stacksim::search {
namespace {

// A table in which data-parallel plans (dp, sharded-dp) of the test GPU were
// predicted half as long as measured (the high end doubles them) and
// model-parallel plans were exact.
uncertainty::ErrorTable SkewedTable() {
  uncertainty::ErrorTable t;
  int id = 0;
  for (const char* family : {"dp", "sharded-dp", "tp/pp"}) {
    for (int i = 0; i < 5; ++i) {
      uncertainty::ErrorTableRun r;
      r.id = "run" + std::to_string(id++);
      r.features.gpu = "round";
      r.features.gpu_kind = "datasheet";
      r.features.gpu_class = uncertainty::GpuClass("round");
      r.features.gpus = 8;
      r.features.scale_band = uncertainty::ScaleBand(8);
      r.features.family = family;
      r.features.parallelism = std::string(family) == "tp/pp" ? "tp+pp" : "dp";
      r.features.precision = "bf16";
      r.features.schedule = "1f1b";
      r.features.attention = "mha-gqa";
      r.features.offload = "none";
      r.features.seq_len = 512;
      r.error = std::string(family) == "tp/pp" ? 0.01 * i : -0.5 + 0.02 * i;
      r.measured_s = 1;
      r.predicted_s = 1 + r.error;
      t.runs.push_back(r);
    }
  }
  return t;
}

// The pessimistic ranking is exact too (each plan's bound scaled by its
// range's high end), and here it differs from the expected one: the
// data-parallel winner reads twice as slow at its high end.
TEST(Search, PessimisticTopListEqualsExhaustiveSimulation) {
  const uncertainty::ErrorTable table = SkewedTable();
  SearchSpace space = TinySpace({8}, 64);
  SearchOptions options;
  options.top = 6;
  options.threads = 2;
  options.batch = 4;
  options.error_table = &table;
  const SearchResult expected = Search(space, options);
  ASSERT_FALSE(expected.plans.empty());
  EXPECT_EQ(expected.plans[0].point.tp * expected.plans[0].point.pp, 1);
  options.ranking = Ranking::kPessimistic;
  ExpectSameTop(space, options);
  const SearchResult pessimistic = Search(space, options);
  ASSERT_FALSE(pessimistic.plans.empty());
  const RankedPlan& top = pessimistic.plans[0];
  EXPECT_GT(top.point.tp * top.point.pp, 1) << PlanName(top.point);
  EXPECT_EQ(pessimistic.ranking, Ranking::kPessimistic);
  for (size_t i = 0; i < pessimistic.plans.size(); ++i) {
    const RankedPlan& p = pessimistic.plans[i];
    ASSERT_TRUE(p.assessment.range);
    EXPECT_DOUBLE_EQ(p.pessimistic_s, p.assessment.range->high_s);
    if (i > 0) EXPECT_GE(p.pessimistic_s, pessimistic.plans[i - 1].pessimistic_s);
  }
}

TEST(Search, RankedPlansCarryTheAssessmentSimulatePrints) {
  const uncertainty::ErrorTable table = SkewedTable();
  SearchSpace space = TinySpace({8}, 16);
  SearchOptions options;
  options.top = 4;
  options.error_table = &table;
  SearchResult r = Search(space, options);
  ASSERT_FALSE(r.plans.empty());
  for (const RankedPlan& p : r.plans) {
    config::ScenarioConfig s = space.scenario;
    s.plan = p.plan;
    const uncertainty::Assessment want = uncertainty::AssessScenario(table, s, p.step.seconds());
    ASSERT_TRUE(p.assessment.range);
    EXPECT_DOUBLE_EQ(p.assessment.range->low_s, want.range->low_s);
    EXPECT_DOUBLE_EQ(p.assessment.range->high_s, want.range->high_s);
    EXPECT_EQ(p.assessment.warnings, want.warnings);
    EXPECT_EQ(p.assessment.plan_family_runs, want.plan_family_runs);
    EXPECT_LT(p.assessment.range->low_s, p.assessment.range->high_s);
  }
  // A pessimistic ranking needs a table with runs.
  uncertainty::ErrorTable empty;
  options.error_table = &empty;
  options.ranking = Ranking::kPessimistic;
  EXPECT_NE(std::string(testing::ErrorFrom([&] { Search(space, options); }).what()).find("error table"),
            std::string::npos);
}

// The default reserve keeps every ranked plan at least 1 GiB (or the
// allocator's fitted cache) below capacity; a larger --min-headroom prunes
// plans that fit HBM, counted apart.
TEST(Search, EveryRankedPlanKeepsTheReserve) {
  SearchSpace space = TinySpace({8}, 16);
  space.scenario.profile.hbm_capacity.value = Bytes{2 * kGiB};
  SearchOptions options;
  options.top = 30;
  SearchResult r = Search(space, options);
  ASSERT_FALSE(r.plans.empty());
  for (const RankedPlan& p : r.plans) {
    EXPECT_GE(p.reserve.required.value, kGiB);
    EXPECT_GE(p.headroom().value, p.reserve.required.value) << PlanName(p.point);
  }
  options.headroom.fixed = Bytes{1.5 * kGiB};
  SearchResult tight = Search(space, options);
  EXPECT_GT(tight.counts.inside_reserve, 0);
  for (const RankedPlan& p : tight.plans) EXPECT_GE(p.headroom().value, 1.5 * kGiB) << PlanName(p.point);
  options.headroom.fixed = Bytes{0};
  SearchResult loose = Search(space, options);
  EXPECT_EQ(loose.counts.inside_reserve, 0);
  EXPECT_LT(loose.counts.out_of_memory, r.counts.out_of_memory);
}

RankedPlan PlanWithRange(int tp, double step_s, double low_s, double high_s) {
  RankedPlan p;
  p.point.tp = tp;
  p.point.gpus = 8;
  p.step = Time::FromSeconds(step_s);
  p.score = step_s;
  p.pessimistic_s = high_s;
  uncertainty::StepRange range;
  range.predicted_s = step_s;
  range.low_s = low_s;
  range.high_s = high_s;
  p.assessment.range = range;
  return p;
}

TEST(SearchReport, GapSentenceSaysWhetherTheSimulatorCanTellPlansApart) {
  SearchResult r;
  r.plans = {PlanWithRange(1, 10.0, 9.0, 12.0), PlanWithRange(2, 10.3, 9.3, 12.4)};
  std::string s = GapSentence(r, 0, 1);
  EXPECT_NE(s.find("3.0% slower than plan 1"), std::string::npos) << s;
  EXPECT_NE(s.find("treat the two as equally good"), std::string::npos) << s;
  r.plans[1] = PlanWithRange(2, 14.0, 12.5, 16.0);
  s = GapSentence(r, 0, 1);
  EXPECT_NE(s.find("40.0% slower"), std::string::npos) << s;
  EXPECT_NE(s.find("do not overlap"), std::string::npos) << s;
  r.plans[1].assessment.range.reset();
  EXPECT_NE(GapSentence(r, 0, 1).find("cannot be weighed"), std::string::npos);
}

}  // namespace
}  // namespace stacksim::search
