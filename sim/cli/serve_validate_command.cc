// stacksim serve-validate FILE: serving predictions against published
// measurements.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/fitted_constants.h"
#include "sim/serve/engine_profile.h"
#include "sim/serve/serve_uncertainty.h"
#include "sim/serve/serve_validate.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::cli {
namespace {

struct ServeValidateArgs {
  std::string file;
  std::string only;  // --run
  std::string format = "text";
  std::string write_table;  // --write-error-table
  std::string fit_path;     // --fit-overhead
};

int RunServeValidate(const ServeValidateArgs& a) {
  if (!a.fit_path.empty()) {
    // Fit first, write, then validate with what was written.
    const serve::OverheadFit fit = serve::FitIterationOverhead(a.file);
    config::WriteFittedConstant(
        a.fit_path, "serving_iteration_overhead",
        serve::OverheadFitJson(fit, a.file, "stacksim serve-validate " + a.file + " --fit-overhead " + a.fit_path,
                               config::FitDate()));
    std::cerr << fmt::format("fitted host time per iteration: {:.3f} ms ({} entries, {:.1f}%, {:.1f}% without; leave one "
                             "source out {:.1f}%)\n",
                             fit.value_s * 1e3, fit.entries, fit.mape_pct, fit.unfitted_mape_pct, fit.loso_mape_pct);
  }
  serve::ServingValidationReport rep = serve::RunServingValidation(a.file, a.only);
  if (!a.only.empty() && rep.runs.empty()) throw InputError(a.file, "runs", "no entry with id '" + a.only + "'");
  // The serving ranges' honesty check: leave-one-out coverage of the p10-p90
  // range over the TTFT and TPOT metrics (serve_uncertainty.h).
  const serve::ServingErrorTable table = serve::ServingErrorTableFrom(rep, a.file);
  const serve::RangeCoverage cov = serve::LeaveOneOutCoverage(table);
  if (!a.write_table.empty()) {
    if (!a.only.empty()) throw InputError("--write-error-table", "", "needs every entry (drop --run)");
    std::ofstream out(a.write_table);
    out << serve::ServingErrorTableToJson(table).dump(2) << "\n";
    if (!out) throw InputError(a.write_table, "", "cannot write the serving error table");
  }
  // The fitted constant the predictions used, with its held-out record.
  nlohmann::json fitted = nlohmann::json::object();
  std::string fitted_line = "fitted constants: none (no serving_iteration_overhead in " +
                            serve::DefaultFittedConstantsPath() + ")\n";
  if (std::filesystem::exists(serve::DefaultFittedConstantsPath())) {
    const nlohmann::json doc = ReadJsonFile(serve::DefaultFittedConstantsPath());
    if (doc.contains("serving_iteration_overhead")) {
      const nlohmann::json& f = doc["serving_iteration_overhead"];
      const double value = f.value("value_s", 0.0);
      const double loso = f.contains("leave_one_source_out") ? f["leave_one_source_out"].value("mape_pct", 0.0) : 0.0;
      fitted = {{"serving_iteration_overhead_s", value}, {"leave_one_source_out_mape_pct", loso},
                {"unfitted_mape_pct", f.value("unfitted_mape_pct", 0.0)}};
      fitted_line = fmt::format(
          "fitted constants: host time per iteration {:.2f} ms for every engine (validation/fitted_constants.json "
          "serving_iteration_overhead; leave one source out {:.1f}%, {:.1f}% without it)\n",
          value * 1e3, loso, f.value("unfitted_mape_pct", 0.0));
    }
  }
  PrintResult(
      a.format,
      [&] {
        nlohmann::json j = serve::ServingValidationJson(rep);
        j["range_coverage"] = {{"rows", cov.rows}, {"inside", cov.inside}, {"fraction", cov.fraction()},
                               {"claimed", 0.8}};
        j["fitted_constants"] = fitted;
        return j;
      },
      [&] {
        return serve::ServingValidationText(rep) +
               fmt::format("likely-range coverage (leave one entry out, TTFT and TPOT): {} of {} measured values "
                           "inside ({:.1f}%, claimed 80%)\n",
                           cov.inside, cov.rows, cov.fraction() * 100) +
               fitted_line;
      });
  return 0;
}

}  // namespace

RunFunction AddServeValidateOptions(CLI::App* cmd) {
  auto a = std::make_shared<ServeValidateArgs>();
  cmd->add_option("file", a->file, "Validation file (schema stacksim.validation.serving/1)")->required();
  cmd->add_option("--run", a->only, "Validate only the entry with this id");
  cmd->add_option("--fit-overhead", a->fit_path,
                  "Fit the per-iteration host time (one value for every engine) on the scored entries and write it into this "
                  "fitted-constants file (validation/fitted_constants.json), then validate with it");
  cmd->add_option("--write-error-table", a->write_table,
                  "Write the serving error table (validation/serving_error_table.json) that serve and serve-search "
                  "take their likely ranges from");
  AddFormat(cmd, &a->format);
  return [a] { return RunServeValidate(*a); };
}

}  // namespace stacksim::cli
