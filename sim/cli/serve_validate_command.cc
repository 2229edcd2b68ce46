// stacksim serve-validate FILE: serving predictions against published
// measurements.
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include <fmt/format.h>

#include "sim/serve/serve_uncertainty.h"
#include "sim/serve/serve_validate.h"
#include "sim/util/error.h"

namespace stacksim::cli {
namespace {

struct ServeValidateArgs {
  std::string file;
  std::string only;  // --run
  std::string format = "text";
  std::string write_table;  // --write-error-table
};

int RunServeValidate(const ServeValidateArgs& a) {
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
  PrintResult(
      a.format,
      [&] {
        nlohmann::json j = serve::ServingValidationJson(rep);
        j["range_coverage"] = {{"rows", cov.rows}, {"inside", cov.inside}, {"fraction", cov.fraction()},
                               {"claimed", 0.8}};
        return j;
      },
      [&] {
        return serve::ServingValidationText(rep) +
               fmt::format("likely-range coverage (leave one entry out, TTFT and TPOT): {} of {} measured values "
                           "inside ({:.1f}%, claimed 80%)\n",
                           cov.inside, cov.rows, cov.fraction() * 100);
      });
  return 0;
}

}  // namespace

RunFunction AddServeValidateOptions(CLI::App* cmd) {
  auto a = std::make_shared<ServeValidateArgs>();
  cmd->add_option("file", a->file, "Validation file (schema stacksim.validation.serving/1)")->required();
  cmd->add_option("--run", a->only, "Validate only the entry with this id");
  cmd->add_option("--write-error-table", a->write_table,
                  "Write the serving error table (validation/serving_error_table.json) that serve and serve-search "
                  "take their likely ranges from");
  AddFormat(cmd, &a->format);
  return [a] { return RunServeValidate(*a); };
}

}  // namespace stacksim::cli
