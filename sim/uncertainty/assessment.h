// How far one prediction can be trusted: a step-time range from the errors
// stacksim made on validated runs like it, and warnings where the scenario
// lies outside what validation covers.
//
// The range. Take the runs of the error table that match the prediction's
// GPU class, scale band and parallelism family; with fewer than
// RangeOptions::min_runs, widen in a fixed order (other scale bands, then all
// GPUs, then any parallelism: see kLevels in assessment.cc) and say so. Of
// their errors e = predicted/measured - 1 take the low and high predictive
// quantiles (Hyndman & Fan type 6: for a new run exchangeable with the n
// similar ones, the interval between them holds its error with probability
// high - low). Runs of a new source are not exchangeable with them (a
// source's errors move together), so the table's calibrated margin widens
// the interval on each side, in log(1 + e), until runs of left-out sources
// fall inside as often as claimed. The true step then lies
// in predicted / (1 + e) over that interval: low_s = predicted / (1 + e_high),
// high_s = predicted / (1 + e_low).
// Times are seconds per optimizer step.
#ifndef STACKSIM_SIM_UNCERTAINTY_ASSESSMENT_H_
#define STACKSIM_SIM_UNCERTAINTY_ASSESSMENT_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/uncertainty/error_table.h"

namespace stacksim::uncertainty {

struct RangeOptions {
  double low_quantile = 0.10;
  double high_quantile = 0.90;
  int min_runs = 5;  // fewer similar runs than this: widen
  // Added below the low and above the high quantile, in log(1 + e)
  // (ErrorTable::calibration; 0: the quantiles as they are).
  double margin = 0;
  // With an exclude_id: leave out every run of its source (RunSource), not
  // only the run itself.
  bool exclude_source = false;
};

// The options a table asks for: its calibrated margin, if any.
RangeOptions OptionsFor(const ErrorTable& table);

// A validation run's source: its id up to the first '-' ("dgxc" of
// "dgxc-gpt3-175b-bf16-128gpu").
std::string RunSource(const std::string& run_id);

// Fits RangeCalibration::margin on the table's runs: the smallest margin,
// on a grid of 0.01 from 0 to 1, at which at least 80% of the runs fall
// inside the range the runs of the other sources give them. Also counts the
// same with the margin refitted without each source (that source's runs
// inside the range at its own refitted margin). REQUIRES: runs from at
// least two sources.
RangeCalibration CalibrateRangeMargin(const ErrorTable& table);

// The q-quantile of `values` (any order) by Hyndman & Fan's type 6 (position
// q (n + 1), 1-based, linear between order statistics, clamped to the
// smallest and largest value): stacksim::PredictiveQuantile of
// sim/util/statistics.h on the sorted values. REQUIRES: values not empty,
// 0 <= q <= 1.
double PredictiveQuantile(std::vector<double> values, double q);

struct StepRange {
  double predicted_s = 0;
  double low_s = 0, high_s = 0;
  double error_low = 0, error_high = 0;  // the quantiles of the similar runs' errors
  double low_quantile = 0, high_quantile = 0;
  double margin = 0;                  // RangeOptions::margin applied
  int n = 0;                          // similar runs used
  std::string basis;                  // "p10-p90 of the errors of 9 validated hopper runs with tp/pp"
  std::string widened;                // "" or what was given up and why
  std::vector<std::string> run_ids;   // the similar runs

  // Whether a measured step lies in [low_s, high_s].
  bool Holds(double measured_s) const { return measured_s >= low_s && measured_s <= high_s; }
};

// nullopt when the table has no runs (after excluding `exclude_id`: the
// leave-one-out range of a validation run). REQUIRES: predicted_s > 0.
std::optional<StepRange> EstimateStepRange(const ErrorTable& table, const RunFeatures& f, double predicted_s,
                                           const RangeOptions& options = {}, const std::string& exclude_id = "");

// Where the scenario lies outside what validation covers: a profile that is
// datasheet-only or projected, a GPU or GPU class without validated runs, more
// GPUs than any validated run (of the class), parallelism dimensions never (or
// rarely) validated, alone or together, and a precision, pipeline schedule,
// attention kind, offload or sequence length no validated run had.
std::vector<std::string> CoverageWarnings(const ErrorTable& table, const RunFeatures& f,
                                          const RangeOptions& options = {}, const std::string& exclude_id = "");

// A plan family: the parallelism signature, with pipeline parallelism the
// pipeline schedule, and the recomputation: the finest grouping the table
// can tell apart ("pp+cp+zero1 with dualpipe (recompute none)", "cp+zero3
// (recompute full)").
std::string PlanFamilyName(const RunFeatures& f);
// Validated runs of the table in f's plan family (same signature and
// recomputation, and same schedule when pipelined), leaving out `exclude_id`.
int PlanFamilyRuns(const ErrorTable& table, const RunFeatures& f, const std::string& exclude_id = "");

struct Assessment {
  std::optional<StepRange> range;
  std::vector<std::string> warnings;
  std::string plan_family;    // PlanFamilyName ("" without a table)
  int plan_family_runs = -1;  // PlanFamilyRuns; -1 without a table
  bool plan_family_validated() const { return plan_family_runs > 0; }
};

Assessment Assess(const ErrorTable& table, const RunFeatures& f, double predicted_s, const RangeOptions& options = {},
                  const std::string& exclude_id = "");

// The assessment, range and warnings, of one predicted step of `scenario`
// against a loaded table: what simulate prints, and what search, compare and
// serve-search attach to every ranked plan. predicted_s <= 0 (not simulated):
// warnings only.
Assessment AssessScenario(const ErrorTable& table, const config::ScenarioConfig& scenario, double predicted_s);

// {"name", "validated_runs", "validated"}
nlohmann::json PlanFamilyJson(const Assessment& a);

// For `simulate`: the assessment of a scenario's predicted step against the
// table at `table_path` (DefaultErrorTablePath()). A missing table is a
// warning (no range), a malformed one an InputError. `network` is the network
// model used: the table's errors are from the analytic model, so "simgrid"
// adds a warning.
Assessment AssessPrediction(const config::ScenarioConfig& scenario, double predicted_s, const std::string& network,
                            const std::string& table_path);

// {"low_s", "high_s", "predicted_s", "error_low", "error_high", "quantiles",
//  "basis", "n", "widened", "runs"}
nlohmann::json StepRangeJson(const StepRange& r);
// "likely 6.10-7.90 s: p10-p90 of ..." (one line, no newline)
std::string StepRangeText(const StepRange& r);
// The "uncertainty" section of simulate's text report: the range and its
// basis, then the coverage warnings. Ends with a newline.
std::string AssessmentText(const Assessment& a);
// The report line that goes under the step time ("step range          6.10 -
// 7.90 s ..."), with a newline; "" without a range.
std::string StepRangeLine(const Assessment& a);

}  // namespace stacksim::uncertainty

#endif  // STACKSIM_SIM_UNCERTAINTY_ASSESSMENT_H_
