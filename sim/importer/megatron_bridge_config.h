// Megatron-Bridge's configuration dump (the ConfigContainer YAML its
// training scripts and `--dryrun` write: sections model, train, ddp,
// mixed_precision, optimizer, dataset, dist and the run-keeping ones) as an
// ImportedJob. The model, ddp, mixed_precision, optimizer, train and dist
// fields are Megatron-Core's own (TransformerConfig, DistributedDataParallelConfig,
// OptimizerConfig) and are read through Megatron-LM's flag of the same
// meaning (megatron_args.h); every other leaf is listed as ignored (logging,
// checkpoints, schedules, data loading, numerics) or unmapped, under its YAML
// path. Framework: megatron-bridge.
#ifndef STACKSIM_SIM_IMPORTER_MEGATRON_BRIDGE_CONFIG_H_
#define STACKSIM_SIM_IMPORTER_MEGATRON_BRIDGE_CONFIG_H_

#include <string>

#include <nlohmann/json.hpp>

#include "sim/importer/imported_job.h"

namespace stacksim::importer {

// True for a document with Megatron-Bridge's model and train sections (or
// its ConfigContainer _target_).
bool LooksLikeMegatronBridge(const nlohmann::json& doc);

// Throws InputError naming the file and the YAML path (as the Megatron-LM
// flag reader does for flags).
ImportedJob ReadMegatronBridge(const nlohmann::json& doc, const std::string& file);

}  // namespace stacksim::importer

#endif  // STACKSIM_SIM_IMPORTER_MEGATRON_BRIDGE_CONFIG_H_
