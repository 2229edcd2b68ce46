// What one framework configuration file says about a training job, in
// stacksim's terms, before the command line fills in what the file does not
// say (sim/importer/import.h). Each reader (Megatron-LM arguments, DeepSpeed
// config JSON, torchtitan TOML) fills one; AssembleScenario (import.cc) joins
// it with the options into a scenario document.
//
// Every flag or key of the file ends in exactly one of three lists: mapped
// (with the scenario field it set), ignored (understood, and without effect
// on a step's time or memory: learning rates, logging, paths; with the
// reason) or unmapped (not understood, or understood but not modelled; with
// the reason). Nothing is dropped silently.
#ifndef STACKSIM_SIM_IMPORTER_IMPORTED_JOB_H_
#define STACKSIM_SIM_IMPORTER_IMPORTED_JOB_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stacksim::importer {

enum class ImportFormat { kMegatron, kDeepSpeed, kTorchtitan, kMegatronBridge };
const char* ImportFormatName(ImportFormat f);  // "megatron", "deepspeed", "torchtitan", "megatron-bridge"

// One flag or key of the file and what became of it: the scenario field it
// set (mapped) or why it was left out (ignored, unmapped).
struct FlagNote {
  std::string flag;   // "--tensor-model-parallel-size", "zero_optimization.stage", "parallelism.tensor_parallel_degree"
  std::string value;  // as written ("" for a switch)
  std::string note;   // mapped: "plan.tp"; ignored / unmapped: the reason
};

// A number the file gives, with the flag it came from (for error messages).
struct Sourced {
  std::optional<int64_t> value;
  std::string flag;
  bool has() const { return value.has_value(); }
  int64_t operator*() const { return *value; }
  void Set(int64_t v, std::string from) {
    value = v;
    flag = std::move(from);
  }
};

// A model-shape fact the file states, checked against --model: the model key
// ("num_hidden_layers") and its value as JSON (number, string or bool).
struct ShapeClaim {
  std::string flag;
  std::string model_key;
  nlohmann::json value;
};

// A key of the file (or a prefix: a table ending in '.', or a field-name
// stem ending in '_' such as "model.init_") that a reader knows, and why it
// is ignored or left unmapped.
struct KnownKey {
  const char* path;
  const char* why;
};
// The first entry of [begin, end) that `path` is or falls under; nullptr if none.
const KnownKey* FindKnownKey(const std::string& path, const KnownKey* begin, const KnownKey* end);

// A JSON leaf as the notes show it: a string as it is, anything else as JSON.
std::string LeafText(const nlohmann::json& v);

struct ImportedJob {
  std::string file;
  ImportFormat format = ImportFormat::kMegatron;
  std::string framework;  // a frameworks/ name, or ""

  // Plan keys the file sets other than tp, pp, cp and micro_batch (which are
  // below, with their flags); dp is derived.
  nlohmann::json plan = nlohmann::json::object();
  Sourced tp, pp, cp;
  Sourced micro_batch;     // sequences per micro-batch
  Sourced local_batch;     // sequences per data-parallel rank per forward-backward (torchtitan), a multiple of micro_batch
  Sourced global_batch;    // sequences per optimizer step
  Sourced grad_accum;      // gradient accumulation steps (DeepSpeed)
  Sourced dp;              // data-parallel size, when the file says it (DeepSpeed's batch arithmetic)
  // torchtitan's two data-parallel degrees: replicas (HSDP's replicate
  // degree) and the FSDP shard degree; dp_shard unset means -1, "the rest of
  // the GPUs". AssembleScenario turns them into dp, sharding and shard_group.
  Sourced dp_replicate, dp_shard;
  bool fsdp_degrees = false;  // the file is torchtitan's: apply the two degrees
  Sourced gpus;            // GPUs, when the file says it (launcher, DeepSpeed batch arithmetic)
  Sourced seq_len;

  // The model: a shipped model's name the file selects (torchtitan flavors),
  // or a model the file defines in full (Megatron-LM shape flags), or
  // neither (--model must say). claims are checked against --model.
  std::string model_name;
  std::string model_name_flag;
  nlohmann::json inline_model;             // null when the file does not define a whole model
  std::string inline_model_missing;        // why not, e.g. "--vocab-size is not given"
  std::vector<ShapeClaim> claims;

  std::vector<FlagNote> mapped, ignored, unmapped;

  void Map(const std::string& flag, const std::string& value, const std::string& to) {
    mapped.push_back({flag, value, to});
  }
  void Ignore(const std::string& flag, const std::string& value, const std::string& why) {
    ignored.push_back({flag, value, why});
  }
  void Unmapped(const std::string& flag, const std::string& value, const std::string& why) {
    unmapped.push_back({flag, value, why});
  }
};

}  // namespace stacksim::importer

#endif  // STACKSIM_SIM_IMPORTER_IMPORTED_JOB_H_
