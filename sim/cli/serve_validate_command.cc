// stacksim serve-validate FILE: serving predictions against published
// measurements.
#include <iostream>
#include <memory>
#include <string>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/serve/serve_validate.h"
#include "sim/util/error.h"

namespace stacksim::cli {
namespace {

struct ServeValidateArgs {
  std::string file;
  std::string only;  // --run
  std::string format = "text";
};

int RunServeValidate(const ServeValidateArgs& a) {
  serve::ServingValidationReport rep = serve::RunServingValidation(a.file, a.only);
  if (!a.only.empty() && rep.runs.empty()) throw InputError(a.file, "runs", "no entry with id '" + a.only + "'");
  PrintResult(a.format, [&] { return serve::ServingValidationJson(rep); },
              [&] { return serve::ServingValidationText(rep); });
  return 0;
}

}  // namespace

RunFunction AddServeValidateOptions(CLI::App* cmd) {
  auto a = std::make_shared<ServeValidateArgs>();
  cmd->add_option("file", a->file, "Validation file (schema stacksim.validation.serving/1)")->required();
  cmd->add_option("--run", a->only, "Validate only the entry with this id");
  AddFormat(cmd, &a->format);
  return [a] { return RunServeValidate(*a); };
}

}  // namespace stacksim::cli
