// A DeepSpeed config JSON (ds_config.json) as an ImportedJob. Key names and
// defaults are DeepSpeed's own (deepspeed/runtime/constants.py,
// deepspeed/runtime/zero/config.py and offload_config.py; docs/import.md has
// the table). DeepSpeed's config says nothing about the model or sequence
// length (--model and --seq-len give them); its data-parallel size follows
// from train_batch_size / (train_micro_batch_size_per_gpu x
// gradient_accumulation_steps) when all three are numbers.
#ifndef STACKSIM_SIM_IMPORTER_DEEPSPEED_CONFIG_H_
#define STACKSIM_SIM_IMPORTER_DEEPSPEED_CONFIG_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/importer/imported_job.h"

namespace stacksim::importer {

// True when the document has a key only a DeepSpeed config has (format
// detection).
bool LooksLikeDeepSpeed(const nlohmann::json& doc);

// Throws InputError naming the file and the key path for a value of the
// wrong type, fp16 and bf16 both enabled, and batch sizes that do not
// multiply (train_batch_size not a multiple of micro x accumulation).
ImportedJob ReadDeepSpeed(const nlohmann::json& doc, const std::string& file);

}  // namespace stacksim::importer

#endif  // STACKSIM_SIM_IMPORTER_DEEPSPEED_CONFIG_H_
