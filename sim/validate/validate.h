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
};

// The error table of a report is that of its one file; with several files,
// their tables one after the other.
ValidationReport RunValidation(const std::vector<std::string>& paths, const ValidationOptions& options = {});
ValidationReport RunValidation(const std::string& path, const ValidationOptions& options = {});

// Stamps the table with the commit of the git checkout at `source_dir` ("+
// uncommitted changes" when sim/, profiles/, topologies/ or models/ differ
// from it; "unknown" without git) and today's date (UTC).
void StampErrorTable(uncertainty::ErrorTable& table, const std::string& source_dir);

nlohmann::json ValidationJson(const ValidationReport& report);
std::string ValidationText(const ValidationReport& report);

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_VALIDATE_H_
