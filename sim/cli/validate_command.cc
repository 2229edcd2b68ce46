// stacksim validate FILE...: predictions against published training runs, and
// the error table the uncertainty ranges come from (--write-error-table).
// Progress goes to standard error (--quiet: none); results to standard output.
#include <unistd.h>

#include <chrono>
#include <cstdio>
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
#include "sim/validate/validate.h"

namespace stacksim::cli {
namespace {

struct ValidateArgs {
  std::vector<std::string> files;
  std::string only;  // --run
  std::string error_table_path;
  std::string format = "text";
  int threads = 0;
  bool quiet = false;
};

// Progress on standard error: on a terminal, one line rewritten in place at
// most every 0.2 s; otherwise a plain line every 25 runs or 10 s (and at the
// end), so that logs stay short. The line reads "validate progress: 37/274
// runs, 12 s elapsed".
class Progress {
 public:
  Progress() : terminal_(isatty(fileno(stderr)) == 1), start_(Clock::now()), last_(start_) {}

  void Update(int done, int total) {
    const auto now = Clock::now();
    const double since_last = std::chrono::duration<double>(now - last_).count();
    const bool end = done == total;
    const bool due = terminal_ ? since_last >= 0.2 : (done - last_done_ >= 25 || since_last >= 10);
    if (!due && !end) return;
    last_ = now;
    last_done_ = done;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "%svalidate progress: %d/%d runs, %.0f s elapsed%s", terminal_ ? "\r" : "", done, total,
                 elapsed, terminal_ && !end ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool terminal_;
  Clock::time_point start_, last_;
  int last_done_ = 0;
};

int RunValidate(const ValidateArgs& a) {
  if (!a.only.empty() && !a.error_table_path.empty()) {
    throw InputError("--write-error-table", "", "needs every run: it cannot be combined with --run");
  }
  validate::ValidationOptions opts;
  opts.only_id = a.only;
  opts.threads = a.threads;
  Progress progress;
  if (!a.quiet) opts.progress = [&progress](int done, int total) { progress.Update(done, total); };
  validate::ValidationReport rep = validate::RunValidation(a.files, opts);
  if (!a.error_table_path.empty()) {
    validate::StampErrorTable(rep.error_table, config::DataRoot());
    std::ofstream out(a.error_table_path);
    out << uncertainty::ErrorTableToJson(rep.error_table).dump(2) << "\n";
    if (!out) throw InputError(a.error_table_path, "", "cannot write the error table");
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
  AddThreads(cmd, &a->threads, "Runs simulated at once (default: all cores)");
  cmd->add_flag("--quiet", a->quiet, "No progress on standard error");
  AddFormat(cmd, &a->format);
  return [a] { return RunValidate(*a); };
}

}  // namespace stacksim::cli
