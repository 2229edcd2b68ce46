// How far a serving prediction can be trusted: a likely range for TTFT and
// TPOT from the errors `serve-validate` made on published measurements, and
// warnings where a deployment lies outside what those measurements cover.
// The serving counterpart of sim/uncertainty/ (docs/uncertainty.md).
//
// The table (validation/serving_error_table.json, schema
// stacksim.serving_error_table/1) is written by `stacksim serve-validate FILE
// --write-error-table OUT`: one row per compared metric of each scored
// entry, error = predicted / measured - 1. The range of a predicted latency
// takes the rows of the same metric (ttft, or tpot: TPOT, ITL and per-token
// latency), with fewer than kMinRows, every latency row (and says so); of
// their errors the 10th and 90th predictive percentiles (Hyndman & Fan
// type 6, as for training): low = predicted / (1 + e_p90), high = predicted
// / (1 + e_p10). Times in seconds.
#ifndef STACKSIM_SIM_SERVE_SERVE_UNCERTAINTY_H_
#define STACKSIM_SIM_SERVE_SERVE_UNCERTAINTY_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/serve/serve_config.h"
#include "sim/serve/serve_validate.h"

namespace stacksim::serve {

inline constexpr const char* kServingErrorTableSchema = "stacksim.serving_error_table/1";
inline constexpr int kMinRows = 5;

struct ServingErrorRow {
  std::string id, source, metric, key;  // metric: MetricKindName
  std::string gpu, engine, scheduler, weights;
  bool moe = false;
  double measured = 0, predicted = 0;
  double error = 0;  // predicted / measured - 1
};

struct ServingErrorTable {
  std::string validation_file;
  std::vector<ServingErrorRow> rows;
};

ServingErrorTable ServingErrorTableFrom(const ServingValidationReport& report, const std::string& validation_file);
nlohmann::json ServingErrorTableToJson(const ServingErrorTable& t);
// Strict; throws InputError naming the file and key.
ServingErrorTable ParseServingErrorTable(const nlohmann::json& doc, const std::string& file);
ServingErrorTable LoadServingErrorTable(const std::string& path);
// <DataRoot()>/validation/serving_error_table.json
std::string DefaultServingErrorTablePath();

struct LatencyRange {
  double predicted_s = 0, low_s = 0, high_s = 0;
  double error_low = 0, error_high = 0;
  int n = 0;
  std::string basis;  // "p10-p90 of the errors of 14 validated TTFT metrics"
};

// nullopt when no row fits (after leaving out `exclude_id`, the
// leave-one-out range of a validation entry). metric: kTtft or kTpot.
// REQUIRES: predicted_s > 0.
std::optional<LatencyRange> EstimateLatencyRange(const ServingErrorTable& t, MetricKind metric, double predicted_s,
                                                 const std::string& exclude_id = "");

struct ServeAssessment {
  // Ranges of the statistic a person reads first: p99 for serve-search's
  // SLOs, the mean for serve (the same errors scale any statistic).
  std::optional<LatencyRange> ttft, tpot;
  std::vector<std::string> warnings;
};

// The ranges of `ttft_s` and `tpot_s` and the coverage warnings (engine,
// GPU, weight format, MoE, scheduler no validated entry had). `table`
// null: no table (a warning says so).
ServeAssessment AssessServe(const ServingErrorTable* table, const ServeConfig& c, double ttft_s, double tpot_s);
// For serve and serve-search: loads the table at `path` (missing: a
// warning, no range; malformed: InputError) and assesses.
ServeAssessment AssessServePrediction(const std::string& path, const ServeConfig& c, double ttft_s, double tpot_s);

// {"ttft": {"predicted_s", "low_s", "high_s", "error_low", "error_high", "n", "basis"}, "tpot": {...}}
nlohmann::json ServeUncertaintyJson(const ServeAssessment& a);
// "likely TTFT 0.61-0.93 s, TPOT 71-95 ms (p10-p90 of ...)" lines, then the warnings; ends with a newline.
std::string ServeAssessmentText(const ServeAssessment& a);

// Leave-one-out check of the claim: for every row, the range from the other
// entries' rows, and whether the measured value falls inside.
struct RangeCoverage {
  int rows = 0, inside = 0;
  double fraction() const { return rows > 0 ? static_cast<double>(inside) / rows : 0; }
};
RangeCoverage LeaveOneOutCoverage(const ServingErrorTable& t);

}  // namespace stacksim::serve

#endif  // STACKSIM_SIM_SERVE_SERVE_UNCERTAINTY_H_
