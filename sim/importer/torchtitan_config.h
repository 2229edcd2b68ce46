// A torchtitan TOML job config (torchtitan/models/*/train_configs/*.toml) as
// an ImportedJob, read with toml++ (Debian's libtomlplusplus-dev). torchtitan
// moved and renamed keys between releases; every name below is from its own
// config code: torchtitan/config_manager.py (2024-2025: [training]
// batch_size, data_parallel_*_degree, tensor_parallel_degree, compile;
// [experimental] pipeline_parallel_degree, enable_async_tensor_parallel,
// context_parallel_degree, pipeline_parallel_microbatches; [float8]
// enable_float8_linear) and torchtitan/config/job_config.py (2025-2026:
// [training] local_batch_size, global_batch_size; [parallelism] *_degree,
// pipeline_parallel_microbatch_size; [compile] enable; [model] converters),
// until torchtitan replaced TOML by Python config registries (February 2026).
// docs/import.md has the table. [model] name and flavor select a shipped model
// where one matches the flavor's shapes (llama3 8B/70B/405B, qwen3
// 30B-A3B/235B-A22B, deepseek_v3 671B).
#ifndef STACKSIM_SIM_IMPORTER_TORCHTITAN_CONFIG_H_
#define STACKSIM_SIM_IMPORTER_TORCHTITAN_CONFIG_H_

#include <string>

#include "sim/importer/imported_job.h"

namespace stacksim::importer {

// True when the text parses as TOML with at least one [table] (format
// detection).
bool LooksLikeToml(const std::string& text);

// Throws InputError naming the file and the line for malformed TOML, and the
// key for a value of the wrong type or one key given under two releases'
// names.
ImportedJob ReadTorchtitan(const std::string& text, const std::string& file);

}  // namespace stacksim::importer

#endif  // STACKSIM_SIM_IMPORTER_TORCHTITAN_CONFIG_H_
