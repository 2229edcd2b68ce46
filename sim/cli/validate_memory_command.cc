// stacksim validate-memory FILE: the memory model against measured per-GPU
// peaks (schema stacksim.validation.memory/1), and --fit-reserve OUT, which
// fits the caching allocator's one constant and writes it with its
// leave-one-source-out error.
#include <memory>
#include <string>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/fitted_constants.h"
#include "sim/validate/memory_validation.h"

namespace stacksim::cli {
namespace {

struct ValidateMemoryArgs {
  std::string file;
  std::string fit_path;
  std::string format = "text";
};

int RunValidateMemory(const ValidateMemoryArgs& a) {
  if (!a.fit_path.empty()) {
    const double fraction = validate::FitCacheFraction(validate::ReadMemoryRuns(a.file));
    validate::MemoryValidationReport rep =
        validate::RunMemoryValidation(a.file, memory::AllocatorReserve{fraction, a.fit_path + " (just fitted)"});
    const std::string command = "stacksim validate-memory " + a.file + " --fit-reserve " + a.fit_path;
    // Other constants in the file (the overlap and serving ones) stay as they are.
    const nlohmann::json fitted = validate::FittedConstantsJson(rep, fraction, command);
    config::WriteFittedConstant(a.fit_path, "allocator_cache_fraction", fitted.at("allocator_cache_fraction"));
    PrintResult(a.format, [&] { return validate::MemoryValidationJson(rep); },
                [&] { return validate::MemoryValidationText(rep); });
    return 0;
  }
  validate::MemoryValidationReport rep = validate::RunMemoryValidation(a.file);
  PrintResult(a.format, [&] { return validate::MemoryValidationJson(rep); },
              [&] { return validate::MemoryValidationText(rep); });
  return 0;
}

}  // namespace

RunFunction AddValidateMemoryOptions(CLI::App* cmd) {
  auto a = std::make_shared<ValidateMemoryArgs>();
  cmd->add_option("file", a->file, "Measured peaks (schema stacksim.validation.memory/1)")->required();
  cmd->add_option("--fit-reserve", a->fit_path,
                  "Fit the allocator cache fraction on FILE and write it to this path "
                  "(validation/fitted_constants.json)");
  AddFormat(cmd, &a->format);
  return [a] { return RunValidateMemory(*a); };
}

}  // namespace stacksim::cli
