// stacksim import: a training framework's own configuration (a Megatron-LM
// launch script or argument list, a DeepSpeed config JSON, a torchtitan TOML
// job config) turned into a scenario document (docs/formats.md) that
// `stacksim simulate` reads. What the file does not say comes from the
// options (--model, --topology, --gpus, --seq-len); a contradiction between
// the two, or inside the file (batch sizes that do not multiply, model
// parallel degrees that do not divide the GPUs, a model shape that is not
// --model's), is an InputError naming the file and the flag. The scenario
// records how every flag of the file was read under "import" (mapped,
// ignored, unmapped). docs/import.md.
#ifndef STACKSIM_SIM_IMPORTER_IMPORT_H_
#define STACKSIM_SIM_IMPORTER_IMPORT_H_

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/importer/imported_job.h"

namespace stacksim::importer {

// Reads a format name ("megatron", "deepspeed", "torchtitan"); nullopt otherwise.
std::optional<ImportFormat> ParseImportFormat(const std::string& name);

// The format of a file: by its extension (.toml: torchtitan; .json: JSON),
// else by its contents: JSON with a DeepSpeed key (deepspeed), TOML with a
// [table] (torchtitan), else shell words with --flags (megatron). A JSON document without DeepSpeed keys is an InputError
// (a Hugging Face config.json is a model: --model).
ImportFormat DetectFormat(const std::string& text, const std::string& file);

struct ImportOptions {
  std::optional<ImportFormat> format;  // --format; detected when absent
  std::string model;                   // --model: a name in models/ or a path to a model file ("" when not given)
  std::string topology;                // --topology: a name in topologies/ or a path
  int64_t gpus = 0;                    // --gpus (0: not given)
  int64_t seq_len = 0;                 // --seq-len (0: not given)
  // Where the scenario will be written ("" for standard output): model and
  // topology paths are written relative to its folder (absolute for
  // standard output), as scenarios resolve them.
  std::string out;
};

struct ImportResult {
  nlohmann::json scenario;
  ImportedJob job;  // the file's flags: mapped, ignored, unmapped
};

// Reads `path` and builds the scenario. Throws InputError (file and flag, or
// the option to give) on anything it cannot build, including a scenario
// that config::ParseScenario refuses (named by the flag that set the key).
ImportResult ImportFile(const std::string& path, const ImportOptions& options);

// The same from text already read (tests).
ImportResult ImportText(const std::string& text, const std::string& path, const ImportOptions& options);

}  // namespace stacksim::importer

#endif  // STACKSIM_SIM_IMPORTER_IMPORT_H_
