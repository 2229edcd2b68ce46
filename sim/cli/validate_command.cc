// stacksim validate FILE...: predictions against published training runs, and
// the error table the uncertainty ranges come from (--write-error-table).
// Progress goes to standard error (--quiet: none); results to standard output.
#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/fitted_constants.h"
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
  std::string fit_path;  // --fit-overlap-sms
};

// The SMs an in-flight collective may take: 0 to 32 in steps of 2 (the
// fit's range; 32 is a quarter of an H100's 132 SMs).
std::vector<int> OverlapGrid() {
  std::vector<int> grid;
  for (int sms = 0; sms <= 32; sms += 2) grid.push_back(sms);
  return grid;
}

// Progress on standard error (util/progress.h), from the first count on:
// the (done, total) callback the validation calls; none when quiet.
class RunProgress {
 public:
  RunProgress(std::string what, bool quiet) : what_(std::move(what)), quiet_(quiet) {}
  std::function<void(int, int)> Callback() {
    if (quiet_) return {};
    return [this](int done, int total) {
      if (!meter_) meter_ = std::make_unique<ProgressMeter>(what_, "runs", total);
      meter_->Add(done - reported_);
      reported_ = done;
    };
  }

 private:
  std::string what_;
  bool quiet_;
  std::unique_ptr<ProgressMeter> meter_;
  int64_t reported_ = 0;
};

int RunFitOverlap(const ValidateArgs& a) {
  RunProgress progress("fit overlap_comm_sms", a.quiet);
  const validate::OverlapFit fit =
      validate::FitOverlapCommSms(a.files, OverlapGrid(), a.threads, progress.Callback());
  std::string command = "stacksim validate";
  for (const auto& f : a.files) command += " " + f;
  command += " --fit-overlap-sms " + a.fit_path;
  config::WriteFittedConstant(a.fit_path, "overlap_comm_sms",
                              validate::OverlapFitJson(fit, a.files, command, config::FitDate()));
  std::string text = fmt::format("overlap_comm_sms: {} SMs ({:.2f}% over {} runs); leave one source out {:.2f}%\n",
                                 fit.sms, fit.mape_pct, fit.runs, fit.loso_mape_pct);
  text += "  grid:";
  for (const auto& p : fit.grid) text += fmt::format(" {}={:.2f}%", p.sms, p.mape_pct);
  text += "\n";
  for (const auto& g : fit.groups) {
    text += fmt::format("  without {:<12} fitted {:>2} SMs, its {} runs {:.1f}%\n", g.held_out, g.sms, g.runs, g.mape_pct);
  }
  text += "written to " + a.fit_path + "\n";
  std::cout << text;
  return 0;
}

int RunValidate(const ValidateArgs& a) {
  if (!a.fit_path.empty()) {
    if (!a.only.empty() || !a.error_table_path.empty() || !a.scenario_path.empty()) {
      throw InputError("--fit-overlap-sms", "", "fits on every run of the files: it cannot be combined with --run, "
                                                "--write-error-table or --write-scenario");
    }
    return RunFitOverlap(a);
  }
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
  // From the moment the runs are read: the heaviest go first and take most
  // of a minute.
  RunProgress progress("validate", a.quiet);
  opts.progress = progress.Callback();
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
  cmd->add_option("--fit-overlap-sms", a->fit_path,
                  "Fit overlap_comm_sms (SMs an in-flight collective takes from compute) on the scored runs of the "
                  "files, with its leave-one-source-out check, and write it to FILE (validation/fitted_constants.json)");
  AddThreads(cmd, &a->threads, "Runs simulated at once (default: all cores)");
  cmd->add_flag("--quiet", a->quiet, "No progress on standard error");
  AddFormat(cmd, &a->format);
  return [a] { return RunValidate(*a); };
}

}  // namespace stacksim::cli
