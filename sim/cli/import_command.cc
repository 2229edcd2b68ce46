// stacksim import FILE: a Megatron-LM launch script or argument list, a
// DeepSpeed config JSON or a torchtitan TOML job config turned into a
// scenario (sim/importer/import.h, docs/import.md). The scenario goes to
// --out or standard output; what the file says that stacksim did not
// understand is listed on standard error (and in the scenario's
// "import.unmapped").
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/importer/import.h"
#include "sim/util/error.h"

namespace stacksim::cli {
namespace {

struct ImportArgs {
  std::string file;
  std::string format;
  importer::ImportOptions options;
};

int RunImport(ImportArgs a) {
  if (!a.format.empty()) a.options.format = importer::ParseImportFormat(a.format);
  importer::ImportResult r = importer::ImportFile(a.file, a.options);
  const std::string text = r.scenario.dump(2) + "\n";
  if (a.options.out.empty()) {
    std::cout << text;
  } else {
    std::ofstream out(a.options.out);
    if (!(out << text)) throw InputError(a.options.out, "", "cannot write the scenario");
  }
  const importer::ImportedJob& job = r.job;
  std::cerr << "import: " << a.file << " read as " << importer::ImportFormatName(job.format) << ": " << job.mapped.size()
            << " mapped, " << job.ignored.size() << " ignored (no effect on a step), " << job.unmapped.size()
            << " unmapped" << (a.options.out.empty() ? "" : "; scenario written to " + a.options.out) << "\n";
  for (const importer::FlagNote& n : job.unmapped) {
    std::cerr << "  unmapped: " << n.flag << (n.value.empty() ? "" : " " + n.value) << ": " << n.note << "\n";
  }
  return 0;
}

}  // namespace

RunFunction AddImportOptions(CLI::App* cmd) {
  auto a = std::make_shared<ImportArgs>();
  cmd->add_option("file", a->file, "Megatron-LM launch script or argument list, DeepSpeed config JSON, torchtitan TOML, or Megatron-Bridge config YAML")
      ->required();
  cmd->add_option("--format", a->format, "The file's format (default: detected)")
      ->check(CLI::IsMember({"megatron", "deepspeed", "torchtitan", "megatron-bridge"}));
  cmd->add_option("--model", a->options.model, "Model name (models/) or file, where the file does not define it");
  cmd->add_option("--topology", a->options.topology, "Topology name (topologies/) or file the job runs on");
  cmd->add_option("--gpus", a->options.gpus, "GPUs the job runs on, where the file does not say")
      ->check(WholeIn(1, int64_t{1} << 24));
  cmd->add_option("--seq-len", a->options.seq_len, "Tokens per sequence, where the file does not say")
      ->check(WholeIn(1, int64_t{1} << 24));
  cmd->add_option("--out", a->options.out, "Write the scenario to this file (default: standard output)");
  return [a] { return RunImport(*a); };
}

}  // namespace stacksim::cli
