// Megatron-LM's command line as an ImportedJob: a launch script (a bash
// script whose training command runs pretrain_*.py or another *.py under
// torchrun / python / deepspeed; shell_script.h says what of bash is read) or
// a bare argument list (lines of --flags). Flag names and defaults are
// Megatron-LM's own (megatron/training/arguments.py, 2024-2026 releases;
// docs/import.md has the table). The launcher's --nproc_per_node x --nnodes
// (torchrun) or --num_gpus x --num_nodes (deepspeed) give the GPU count when
// both are numbers.
#ifndef STACKSIM_SIM_IMPORTER_MEGATRON_ARGS_H_
#define STACKSIM_SIM_IMPORTER_MEGATRON_ARGS_H_

#include <string>

#include "sim/importer/imported_job.h"

namespace stacksim::importer {

// Throws InputError naming the file and the flag for a value that is not a
// number, a variable the script does not set where a value is needed, and
// flags that contradict each other (--bf16 with --fp16, both virtual-pipeline
// flags, layers that do not split into the virtual stages).
ImportedJob ReadMegatron(const std::string& text, const std::string& file);

}  // namespace stacksim::importer

#endif  // STACKSIM_SIM_IMPORTER_MEGATRON_ARGS_H_
