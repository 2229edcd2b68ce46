#include "sim/report/html_pages.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/config/scenario.h"
#include "sim/search/plan_space.h"

namespace stacksim::report {
namespace {

const std::string kScenario = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-8xh100.json";

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

void ExpectNoExternalReference(const std::string& html) {
  for (const char* bad : {"http://", "https://", "src=", "<script", "<link", "url(", "@import"}) {
    EXPECT_FALSE(Has(html, bad)) << bad;
  }
}

// Llama 3 8B on one node, as two pipeline stages so that every section has
// something to draw (the scenario itself is pure data parallelism).
const simulate::SimulationResult& TwoStageRun() {
  static const simulate::SimulationResult result = [] {
    config::ScenarioOptions opts;
    opts.overrides = {"plan.pp=2", "plan.dp=4"};
    simulate::Options sim;
    sim.keep_trace = true;
    return simulate::Simulate(config::LoadScenario(kScenario, opts), sim);
  }();
  return result;
}

TEST(HtmlPages, SimulatePageHasEverySection) {
  const simulate::SimulationResult& r = TwoStageRun();
  ASSERT_FALSE(r.out_of_memory);
  ASSERT_TRUE(r.trace);
  std::string html = SimulateHtml(r, {});
  for (const char* s : {"Llama 3 8B on one DGX H100", "Summary", "Where the step goes", "Per pipeline stage",
                        "stage 1", "Memory per GPU", "HBM ", "Timeline of one step", "rank 1 compute",
                        "class=\"box\"", "class=\"seg\"", "tokens/s", "MFU", "TP 1 PP 2 DP 4"}) {
    EXPECT_TRUE(Has(html, s)) << s;
  }
  EXPECT_EQ(Has(html, ">Notes</h2>"), !r.notes.empty());
  ExpectNoExternalReference(html);
  EXPECT_EQ(html, SimulateHtml(r, {}));
  // Without the trace the page is whole, less the timeline.
  simulate::SimulationResult no_trace = r;
  no_trace.trace.reset();
  no_trace.replay.reset();
  std::string plain = SimulateHtml(no_trace, {});
  EXPECT_FALSE(Has(plain, "Timeline of one step"));
  EXPECT_TRUE(Has(plain, "Where the step goes"));
}

TEST(HtmlPages, MemoryChartMarksStagesAboveCapacity) {
  simulate::SimulationResult r;
  r.capacity = Bytes{80 * kGiB};
  r.out_of_memory = true;
  simulate::StageMemory fits{0, Bytes{20 * kGiB}, Bytes{10 * kGiB}, Bytes{10 * kGiB}, Bytes{20 * kGiB},
                             Bytes{2 * kGiB}};
  simulate::StageMemory over = fits;
  over.stage = 1;
  over.activations = Bytes{48 * kGiB};  // 90 GiB
  r.memory = {fits, over};
  std::string html = StageMemoryHtml(r);
  EXPECT_TRUE(Has(html, "Out of memory: stage 1 exceeds the capacity.")) << html;
  EXPECT_TRUE(Has(html, ">90.0 GiB: 10.0 GiB over</text>"));
  EXPECT_TRUE(Has(html, ">62.0 GiB</text>"));
  EXPECT_TRUE(Has(html, ">HBM 80.0 GiB</text>"));
  EXPECT_FALSE(Has(html, "stage 0 exceeds"));
  // Out of memory: no time sections, and the page says so.
  std::string page = SimulateHtml(r, {});
  EXPECT_FALSE(Has(page, "Where the step goes"));
  EXPECT_TRUE(Has(page, "out of memory"));
}

TEST(HtmlPages, SearchPageRanksPlansAndShowsTheBestPlansStep) {
  search::SearchResult r;
  r.scenario = "test search";
  r.model = "llama3-8b";
  r.gpu_counts = {8};
  r.objective_unit = "s";
  for (int i = 0; i < 3; ++i) {
    search::RankedPlan p;
    p.point.gpus = 8;
    p.point.tp = 1 << i;
    p.point.dp = 8 >> i;
    p.step = Time::Ms(1000 + 100 * i);
    p.objective = p.step.seconds();
    p.score = p.objective;
    p.mfu = 0.4;
    p.capacity = Bytes{80 * kGiB};
    p.peak_memory = Bytes{60 * kGiB};
    r.plans.push_back(p);
  }
  r.counts.enumeration.enumerated = 100;
  r.counts.enumeration.invalid["plan.tp"] = 40;
  r.counts.enumeration.invalid_example["plan.tp"] = "tp must divide <heads>";
  r.counts.out_of_memory = 50;
  r.counts.evaluated = 10;
  std::string html = SearchHtml(r, &TwoStageRun());
  for (const char* s : {"Ranking", "#1 tp1 ", "#3 tp4 ", "+20.0%", "What the search pruned", "plan.tp",
                        "tp must divide &lt;heads&gt;", "Best plan: Where the step goes",
                        "Best plan: Timeline of one step", "<td class=\"num\">20.0</td>"}) {
    EXPECT_TRUE(Has(html, s)) << s;
  }
  ExpectNoExternalReference(html);
  EXPECT_FALSE(Has(SearchHtml(r, nullptr), "Best plan: "));
}

TEST(HtmlPages, DiagnosisPageShowsTheWaterfallAndRemedies) {
  diagnose::Diagnosis d;
  d.result = TwoStageRun();
  d.result.trace.reset();
  d.result.replay.reset();
  d.step = d.result.iteration;
  d.ideal = d.step * 0.5;
  for (Time& gap : d.layer_gap) gap = d.step * 0.1;
  d.layer_findings[diagnose::StackLayer::kParallelization] = {"pipeline bubble is 8% of the step"};
  d.step_class = diagnose::StepClass::kComputeBound;
  diagnose::Remedy faster;
  faster.layer = diagnose::StackLayer::kParallelization;
  faster.change = "schedule interleaved";
  faster.finding = "bubble";
  faster.status = diagnose::RemedyStatus::kSimulated;
  faster.predicted = d.step * 0.9;
  faster.gain = d.step - faster.predicted;
  diagnose::Remedy invalid;
  invalid.layer = diagnose::StackLayer::kCompilation;
  invalid.change = "kernels fused";
  invalid.status = diagnose::RemedyStatus::kInvalid;
  invalid.reason = "already fused";
  d.remedies = {faster, invalid};
  std::string html = DiagnosisHtml(d, {});
  for (const char* s : {"Gap to the ideal step, by layer", "class=\"step\"", "2 parallelization",
                        "pipeline bubble is 8% of the step", "Remedies", "[2] schedule interleaved",
                        "current step", "invalid: already fused", "Baseline: Where the step goes",
                        "Baseline: Memory per GPU"}) {
    EXPECT_TRUE(Has(html, s)) << s;
  }
  EXPECT_FALSE(Has(html, "Timeline of one step"));
  ExpectNoExternalReference(html);
}

}  // namespace
}  // namespace stacksim::report
