// One validated training run: what was measured, what stacksim predicted for
// the plan it simulated, and why a run could not be predicted. Times are
// seconds per iteration (one optimizer step); errors are percentages,
// (predicted - measured) / measured * 100.
#ifndef STACKSIM_SIM_VALIDATE_RUN_OUTCOME_H_
#define STACKSIM_SIM_VALIDATE_RUN_OUTCOME_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/uncertainty/assessment.h"
#include "sim/uncertainty/error_table.h"

namespace stacksim::validate {

struct RunOutcome {
  std::string id;
  std::string file;                  // the validation file the run came from, as given
  std::string source;                // the id's prefix before the first '-' (SourceOf)
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
  // With ValidationOptions::keep_scenarios, predicted runs: the scenario
  // simulated (plan fields filled), as a file `simulate` reads back.
  std::optional<nlohmann::json> scenario;
};

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_RUN_OUTCOME_H_
