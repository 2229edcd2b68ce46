// Validation errors by source, and the leave-one-source-out error.
//
// A run's source is its id's prefix before the first '-' ("sc21",
// "llmfoundry", "dgxc", "nemo2407"): the publication or recipe collection it
// was copied from. Runs of one source share authors, software and habits, so
// an error that is the same across a source says more about stacksim than
// one run does. Errors are percentages, (predicted - measured) / measured *
// 100; "within 10%" means |error| <= 10.
//
// Leave-one-source-out: a constant fitted to end-to-end step times would make
// the error over the runs it was fitted on optimistic. Refitting it without
// one source and predicting that source with the refitted value measures how
// it transfers. One constant is fitted to these runs, kOverlapCommSms; its
// fit is a grid of whole validations (FitOverlapCommSms, validate.h), so its
// leave-one-source-out check is made when it is fitted and stored with it
// (validation/fitted_constants.json), and `validate` prints it. The hooks
// below serve a constant cheap enough to refit at every validation:
// RefitConstants fits it (nothing today), ApplyConstants sets constants in a
// run's scenario, and LeaveOneSourceOutError re-predicts each source with the
// constants fitted on the others.
#ifndef STACKSIM_SIM_VALIDATE_SOURCE_REPORT_H_
#define STACKSIM_SIM_VALIDATE_SOURCE_REPORT_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/scenario.h"
#include "sim/validate/run_outcome.h"

namespace stacksim::validate {

// The id's prefix before the first '-' (the whole id when it has none).
std::string SourceOf(const std::string& run_id);

// Scored runs count once each; a scored run that could not be predicted
// counts as scored but not modelled, and as not within 10%.
struct SourceSummary {
  std::string source;
  int runs = 0;            // listed
  int scored = 0;
  int modelled = 0;        // scored and predicted
  double mape_pct = 0;     // mean |error| over the modelled runs (0 when none)
  int within_10 = 0;       // modelled runs with |error| <= 10%
  double within_10_pct = 0;  // within_10 / scored * 100 (0 when none scored)
  std::string worst_id;    // the modelled run with the largest |error| ("" when none)
  double worst_error_pct = 0;
};

// Summary of a set of runs: all of them (as `source` "") and per source,
// sorted by source name.
struct Summary {
  SourceSummary all;
  int not_modelled = 0;    // listed runs (scored or not) that could not be predicted
  std::vector<SourceSummary> sources;
};

Summary Summarize(const std::vector<RunOutcome>& runs);

// Constants fitted to end-to-end measurements, by name (the unit in the
// name). The one a validation run takes: kOverlapCommSms (SMs a collective
// takes from the compute beside it, sim/cost/comm_overlap.h), fitted by
// FitOverlapCommSms (validate.h); a run without it in the set uses the
// value in validation/fitted_constants.json.
inline constexpr const char* kOverlapCommSms = "overlap_comm_sms";
struct FittedConstants {
  std::map<std::string, double> values;
  bool empty() const { return values.empty(); }
};

// Fits the constants on `fit_on` (scored, predicted runs: the other sources'
// when one is left out). Fits nothing today and returns an empty set.
FittedConstants RefitConstants(const std::vector<RunOutcome>& fit_on);

// Sets the constants in a run's scenario before it is simulated. An empty set
// changes nothing. REQUIRES: every constant has an application here (a name
// without one throws std::logic_error, so a new constant cannot be fitted and
// silently ignored).
void ApplyConstants(const FittedConstants& constants, config::ScenarioConfig& scenario);

using RefitFunction = std::function<FittedConstants(const std::vector<RunOutcome>& fit_on)>;
// The run predicted again with these constants: its step in seconds, or
// nullopt when it cannot be predicted.
using RepredictFunction = std::function<std::optional<double>(const RunOutcome& run, const FittedConstants&)>;

struct LeaveOneSourceOut {
  bool fitted = false;   // some source got a non-empty set (else the errors are the in-sample ones)
  int runs = 0;          // scored runs predicted with their source left out
  double mape_pct = 0;   // mean |error| over them
  std::map<std::string, double> source_mape_pct;
  std::string note;      // one line for people
};

// For each source of the scored, predicted runs: refit on the others, and
// predict the source's runs again with those constants (repredict is not
// called when the set is empty: the prediction is the one already made).
LeaveOneSourceOut LeaveOneSourceOutError(const std::vector<RunOutcome>& runs, const RefitFunction& refit,
                                         const RepredictFunction& repredict);

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_SOURCE_REPORT_H_
