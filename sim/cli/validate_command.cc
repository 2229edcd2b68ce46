// stacksim validate FILE...: predictions against published training runs, and
// the error table the uncertainty ranges come from (--write-error-table).
// Progress goes to standard error (--quiet: none); results to standard output.
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/scenario.h"
#include "sim/uncertainty/error_table.h"
#include "sim/util/error.h"
#include "sim/util/progress.h"
#include "sim/validate/validate.h"

namespace stacksim::cli {
namespace {

struct ValidateArgs {
  std::vector<std::string> files;
  std::string only;  // --run
  std::string error_table_path;
  std::string scenario_path;  // --write-scenario
  std::string format = "text";
  int threads = 0;
  bool quiet = false;
};

int RunValidate(const ValidateArgs& a) {
  if (!a.only.empty() && !a.error_table_path.empty()) {
    throw InputError("--write-error-table", "", "needs every run: it cannot be combined with --run");
  }
  if (!a.scenario_path.empty() && a.only.empty()) {
    throw InputError("--write-scenario", "", "writes the scenario of one run: give the run with --run");
  }
  validate::ValidationOptions opts;
  opts.only_id = a.only;
  opts.keep_scenarios = !a.scenario_path.empty();
  opts.threads = a.threads;
  // Progress on standard error (util/progress.h), from the moment the runs
  // are read: the heaviest runs go first and take most of a minute.
  std::unique_ptr<ProgressMeter> progress;
  int64_t reported = 0;
  if (!a.quiet) {
    opts.progress = [&](int done, int total) {
      if (!progress) progress = std::make_unique<ProgressMeter>("validate", "runs", total);
      progress->Add(done - reported);
      reported = done;
    };
  }
  validate::ValidationReport rep = validate::RunValidation(a.files, opts);
  if (!a.error_table_path.empty()) {
    validate::StampErrorTable(rep.error_table, config::DataRoot());
    std::ofstream out(a.error_table_path);
    out << uncertainty::ErrorTableToJson(rep.error_table).dump(2) << "\n";
    if (!out) throw InputError(a.error_table_path, "", "cannot write the error table");
  }
  if (!a.scenario_path.empty()) {
    const validate::RunOutcome& run = rep.runs.front();
    if (!run.scenario) throw InputError(a.scenario_path, "", "run '" + run.id + "' was not simulated: " + run.error);
    std::ofstream out(a.scenario_path);
    out << run.scenario->dump(2) << "\n";
    if (!out) throw InputError(a.scenario_path, "", "cannot write the scenario");
  }
  PrintResult(a.format, [&] { return validate::ValidationJson(rep); },
              [&] { return validate::ValidationText(rep); });
  return 0;
}

}  // namespace

RunFunction AddValidateOptions(CLI::App* cmd) {
  auto a = std::make_shared<ValidateArgs>();
  cmd->add_option("file", a->files, "Validation files (schema stacksim.validation.training/1), one or more")
      ->required();
  cmd->add_option("--run", a->only, "Validate only the run with this id");
  cmd->add_option("--write-error-table", a->error_table_path,
                  "Also write the per-run errors and features of every file given to FILE (validation/error_table.json)");
  cmd->add_option("--write-scenario", a->scenario_path,
                  "With --run: also write the scenario simulated (open plan fields filled) to FILE, for simulate");
  AddThreads(cmd, &a->threads, "Runs simulated at once (default: all cores)");
  cmd->add_flag("--quiet", a->quiet, "No progress on standard error");
  AddFormat(cmd, &a->format);
  return [a] { return RunValidate(*a); };
}

}  // namespace stacksim::cli
