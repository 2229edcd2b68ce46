// stacksim validate-memory FILE: the memory model against measured per-GPU
// peaks (schema stacksim.validation.memory/1), and --fit-reserve OUT, which
// fits the caching allocator's one constant and writes it with its
// leave-one-source-out error.
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
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
    // Other constants in the file (serving's) stay as they are.
    nlohmann::json doc = std::filesystem::exists(a.fit_path) ? ReadJsonFile(a.fit_path) : nlohmann::json::object();
    for (const auto& [k, v] : validate::FittedConstantsJson(rep, fraction, command).items()) doc[k] = v;
    std::ofstream out(a.fit_path);
    out << doc.dump(2) << "\n";
    if (!out) throw InputError(a.fit_path, "", "cannot write the fitted constants");
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
