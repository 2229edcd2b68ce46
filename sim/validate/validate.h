// Validation against published training runs: schema
// stacksim.validation.training/1 (see shared/validation/README.md).
//
// Each run becomes a scenario (run_scenario.h: the run's model shapes, the
// GPU's shipped profile and system topology, its plan and what its framework
// did). Null plan fields are filled the way a tuned run of that framework
// would (the fastest valid choice that fits in memory), and the choices are
// reported. Each run is simulated and scored against its measured iteration
// time (seconds); runs stacksim cannot model yet are listed with the reason,
// never dropped.
#ifndef STACKSIM_SIM_VALIDATE_VALIDATE_H_
#define STACKSIM_SIM_VALIDATE_VALIDATE_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/uncertainty/assessment.h"
#include "sim/uncertainty/error_table.h"

namespace stacksim::validate {

struct RunOutcome {
  std::string id;
  std::string tier;
  bool scored = false;
  std::string gpu;
  int gpus = 0;
  bool moe = false;                  // a mixture-of-experts model
  std::optional<double> measured_s;
  std::optional<double> predicted_s;
  double error_pct = 0;              // (predicted - measured) / measured * 100
  std::string error;                 // why it could not be predicted ("" if predicted)
  std::string plan;                  // the plan simulated, one line
  std::vector<std::string> choices;  // null fields stacksim filled, and how
  std::vector<std::string> warnings; // e.g. the memory model says it would not fit
  // Predicted runs: the features of the plan simulated. Scored, predicted
  // runs: the range the run would get from the other runs' errors (leave one
  // out, so its own error does not define it) and its coverage warnings.
  std::optional<uncertainty::RunFeatures> features;
  std::optional<uncertainty::StepRange> range;
  std::vector<std::string> coverage;
};

struct ValidationReport {
  std::vector<RunOutcome> runs;
  double mape_pct = 0;   // mean absolute error over scored, predicted runs
  int scored_predicted = 0;
  double mape_dense_pct = 0;  // the same over the dense (non-MoE) runs
  int scored_dense_predicted = 0;
  int scored_total = 0;
  // The error table of this validation (scored, predicted runs; the commit
  // and date are left for the caller to stamp), and the calibration of the
  // ranges: how many scored runs got a leave-one-out range, and for how many
  // the measured step fell inside it.
  uncertainty::ErrorTable error_table;
  int ranged = 0;
  int inside_range = 0;
};

struct ValidationOptions {
  std::string only_id;   // "" = all runs
};

ValidationReport RunValidation(const std::string& path, const ValidationOptions& options = {});

// Stamps the table with the commit of the git checkout at `source_dir` ("+
// uncommitted changes" when sim/, profiles/, topologies/ or models/ differ
// from it; "unknown" without git) and today's date (UTC).
void StampErrorTable(uncertainty::ErrorTable& table, const std::string& source_dir);

nlohmann::json ValidationJson(const ValidationReport& report);
std::string ValidationText(const ValidationReport& report);

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_VALIDATE_H_
