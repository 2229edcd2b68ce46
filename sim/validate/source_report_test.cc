#include "sim/validate/source_report.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace stacksim::validate {
namespace {

RunOutcome Outcome(const std::string& id, bool scored, std::optional<double> predicted, double measured) {
  RunOutcome o;
  o.id = id;
  o.source = SourceOf(id);
  o.scored = scored;
  o.measured_s = measured;
  o.predicted_s = predicted;
  if (predicted) o.error_pct = (*predicted - measured) / measured * 100.0;
  return o;
}

TEST(SourceReport, SourceIsTheIdPrefixBeforeTheFirstDash) {
  EXPECT_EQ(SourceOf("llmfoundry-mpt-7b-8xh100"), "llmfoundry");
  EXPECT_EQ(SourceOf("nemo2407-llama3-70b"), "nemo2407");
  EXPECT_EQ(SourceOf("nodash"), "nodash");
}

TEST(SourceReport, SummarizesBySourceWithUnmodelledRunsOutsideTenPercent) {
  std::vector<RunOutcome> runs = {
      Outcome("a-1", true, 10.5, 10.0),     // +5%
      Outcome("a-2", true, 8.0, 10.0),      // -20%
      Outcome("a-3", true, std::nullopt, 10.0),  // scored, not modelled
      Outcome("b-1", true, 10.9, 10.0),     // +9%
      Outcome("b-2", false, 20.0, 10.0),    // not scored: listed only
      Outcome("b-3", false, std::nullopt, 10.0),
  };
  Summary s = Summarize(runs);
  ASSERT_EQ(s.sources.size(), 2u);
  const SourceSummary& a = s.sources[0];
  EXPECT_EQ(a.source, "a");
  EXPECT_EQ(a.runs, 3);
  EXPECT_EQ(a.scored, 3);
  EXPECT_EQ(a.modelled, 2);
  EXPECT_NEAR(a.mape_pct, 12.5, 1e-9);
  EXPECT_EQ(a.within_10, 1);
  EXPECT_NEAR(a.within_10_pct, 100.0 / 3, 1e-9);
  EXPECT_EQ(a.worst_id, "a-2");
  EXPECT_NEAR(a.worst_error_pct, -20.0, 1e-9);
  const SourceSummary& b = s.sources[1];
  EXPECT_EQ(b.runs, 3);
  EXPECT_EQ(b.scored, 1);
  EXPECT_EQ(b.modelled, 1);
  EXPECT_NEAR(b.within_10_pct, 100.0, 1e-9);
  EXPECT_EQ(s.all.runs, 6);
  EXPECT_EQ(s.all.scored, 4);
  EXPECT_EQ(s.all.within_10, 2);
  EXPECT_NEAR(s.all.within_10_pct, 50.0, 1e-9);
  EXPECT_NEAR(s.all.mape_pct, (5.0 + 20.0 + 9.0) / 3, 1e-9);
  EXPECT_EQ(s.not_modelled, 2);
  EXPECT_EQ(s.all.worst_id, "a-2");
}

TEST(SourceReport, WithoutFittedConstantsLeaveOneSourceOutIsTheInSampleError) {
  std::vector<RunOutcome> runs = {Outcome("a-1", true, 10.5, 10.0), Outcome("b-1", true, 8.0, 10.0)};
  int repredicted = 0;
  auto loso = LeaveOneSourceOutError(runs, RefitConstants, [&](const RunOutcome&, const FittedConstants&) {
    ++repredicted;
    return std::optional<double>(0.0);
  });
  EXPECT_FALSE(loso.fitted);
  EXPECT_EQ(repredicted, 0);
  EXPECT_EQ(loso.runs, 2);
  EXPECT_NEAR(loso.mape_pct, 12.5, 1e-9);
  EXPECT_EQ(loso.note, "no constants are fitted to these runs: leave-one-source-out error equals the error above");
}

// A fake constant: the mean measured/predicted ratio of the runs it is fitted
// on, which the re-prediction multiplies in. Each source is then predicted
// with the other sources' ratio, never its own.
TEST(SourceReport, LeaveOneSourceOutRefitsWithoutTheSourceAndPredictsItAgain) {
  std::vector<RunOutcome> runs = {Outcome("a-1", true, 5.0, 10.0), Outcome("a-2", true, 10.0, 20.0),
                                  Outcome("b-1", true, 10.0, 11.0), Outcome("c-1", false, 1.0, 10.0)};
  std::vector<std::string> fitted_on;
  auto refit = [&](const std::vector<RunOutcome>& fit_on) {
    FittedConstants c;
    double sum = 0;
    for (const auto& o : fit_on) {
      sum += *o.measured_s / *o.predicted_s;
      fitted_on.push_back(o.id);
    }
    c.values["step_scale"] = sum / fit_on.size();
    return c;
  };
  auto repredict = [](const RunOutcome& o, const FittedConstants& c) {
    return std::optional<double>(*o.predicted_s * c.values.at("step_scale"));
  };
  auto loso = LeaveOneSourceOutError(runs, refit, repredict);
  EXPECT_TRUE(loso.fitted);
  EXPECT_EQ(loso.runs, 3);  // the unscored run is neither fitted on nor predicted
  // Source a, fitted on b (ratio 1.1): 5.5 vs 10 and 11 vs 20, -45% each.
  EXPECT_NEAR(loso.source_mape_pct.at("a"), 45.0, 1e-9);
  // Source b, fitted on a (ratio 2): 20 vs 11, +81.8%.
  EXPECT_NEAR(loso.source_mape_pct.at("b"), 900.0 / 11, 1e-9);
  EXPECT_NEAR(loso.mape_pct, (45.0 + 45.0 + 900.0 / 11) / 3, 1e-9);
  EXPECT_EQ(fitted_on, (std::vector<std::string>{"b-1", "a-1", "a-2"}));
}

TEST(SourceReport, AConstantWithoutAnApplicationIsAnError) {
  config::ScenarioConfig s;
  ApplyConstants({}, s);  // nothing fitted: nothing to apply
  FittedConstants c;
  c.values["step_scale"] = 1.1;
  EXPECT_THROW(ApplyConstants(c, s), std::logic_error);
}

}  // namespace
}  // namespace stacksim::validate
