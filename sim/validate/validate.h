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
//
// One or more files are validated in one call: each run keeps the file it
// came from, the summary is per file and over all of them, and each run's
// uncertainty range comes from the other runs of its own file. Runs are
// simulated on several threads; the report does not depend on how many.
#ifndef STACKSIM_SIM_VALIDATE_VALIDATE_H_
#define STACKSIM_SIM_VALIDATE_VALIDATE_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"
#include "sim/uncertainty/assessment.h"
#include "sim/uncertainty/error_table.h"
#include "sim/validate/run_outcome.h"
#include "sim/validate/source_report.h"

namespace stacksim::validate {

// One validation file's share of a report.
struct FileReport {
  std::string file;        // as given
  int runs = 0;            // runs listed (after --run)
  double mape_dense_pct = 0;
  int scored_dense_predicted = 0;
  int ranged = 0;          // scored runs with a range from the other sources' runs (all files)
  int inside_range = 0;
  Summary summary;
};

struct ValidationReport {
  std::vector<RunOutcome> runs;  // the files' runs in file order, each file's in its order
  double mape_pct = 0;   // mean absolute error over scored, predicted runs
  int scored_predicted = 0;
  double mape_dense_pct = 0;  // the same over the dense (non-MoE) runs
  int scored_dense_predicted = 0;
  int scored_total = 0;
  // The error table of this validation (scored, predicted runs; the commit
  // and date are left for the caller to stamp; its range calibration fitted
  // when the runs come from two sources or more), and how many scored runs
  // got a range from the other sources' runs, and for how many the measured
  // step fell inside it.
  uncertainty::ErrorTable error_table;
  int ranged = 0;
  int inside_range = 0;
  // Over all files: by source, the share within 10%, the runs not modelled.
  Summary summary;
  std::vector<FileReport> files;
  LeaveOneSourceOut leave_one_source_out;
};

struct ValidationOptions {
  std::string only_id;   // "" = all runs
  bool keep_scenarios = false;  // fill RunOutcome::scenario
  int threads = 0;       // runs simulated at once (0: one per core)
  // Called after each run is validated, one call at a time, from any thread:
  // runs done so far and runs in all (after only_id).
  std::function<void(int done, int total)> progress;
  // The leave-one-source-out refit (RefitConstants; tests pass their own).
  RefitFunction refit = RefitConstants;
  // Constants set in every run's scenario (empty: the fitted file's values).
  FittedConstants constants;
};

// The error table of a report is that of its one file; with several files,
// their tables one after the other.
ValidationReport RunValidation(const std::vector<std::string>& paths, const ValidationOptions& options = {});
ValidationReport RunValidation(const std::string& path, const ValidationOptions& options = {});

// Stamps the table with the commit of the git checkout at `source_dir` ("+
// uncommitted changes" when sim/, profiles/, topologies/ or models/ differ
// from it; "unknown" without git) and today's date (UTC).
void StampErrorTable(uncertainty::ErrorTable& table, const std::string& source_dir);

// The fit of kOverlapCommSms on the scored runs of `paths`: every run
// validated at each value of `grid`, the value with the least mean |error|
// over all of them (ties: the smaller), and the leave-one-source-out check
// (each source predicted at the value that fits the other sources best).
struct OverlapFitPoint {
  int sms = 0;
  double mape_pct = 0;
};
struct OverlapFitGroup {
  std::string held_out;
  int runs = 0;
  int sms = 0;           // fitted without this source
  double mape_pct = 0;   // this source's runs at that value
};
struct OverlapFit {
  int sms = 0;
  double mape_pct = 0;
  int runs = 0;
  std::vector<OverlapFitPoint> grid;
  std::vector<OverlapFitGroup> groups;
  double loso_mape_pct = 0;  // over all runs, each at its source's left-out value
};
// REQUIRES: grid not empty. `progress` as ValidationOptions::progress, over
// grid.size() x runs.
OverlapFit FitOverlapCommSms(const std::vector<std::string>& paths, const std::vector<int>& grid, int threads,
                             const std::function<void(int done, int total)>& progress = {});
// The fit as a stacksim.fitted_constants/1 entry.
nlohmann::json OverlapFitJson(const OverlapFit& fit, const std::vector<std::string>& paths, const std::string& command,
                              const std::string& date);

nlohmann::json ValidationJson(const ValidationReport& report);
std::string ValidationText(const ValidationReport& report);

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_VALIDATE_H_
