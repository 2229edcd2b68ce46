// A scenario joins a model, a topology (and its GPU's profile), a cluster size,
// a parallel plan and a training batch: one question a user asks.
//
// scenarios/*.json refer to models, topologies and profiles by name
// ("gpt3-175b" -> <data root>/models/gpt3-175b.json) or by a path relative to
// the scenario file (anything containing '/' or ending in ".json"), or give
// them inline as JSON objects. The profile is, in order of precedence: the
// --profile file, the scenario's "profile", the profile named by the
// topology's node.gpu.
#ifndef STACKSIM_SIM_CONFIG_SCENARIO_H_
#define STACKSIM_SIM_CONFIG_SCENARIO_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/model.h"
#include "sim/config/plan.h"
#include "sim/config/profile.h"
#include "sim/config/topology.h"

namespace stacksim::config {

// How the job's nodes sit in the fabric: packed in consecutive nodes (leaf
// groups filled one after another), or scattered round-robin over the leaf
// groups, as a fragmented cluster's scheduler hands them out.
enum class NodeOrder { kPacked, kScattered };
const char* NodeOrderName(NodeOrder o);  // "packed", "scattered"

// training.data_loader: the input pipeline of each data-parallel replica
// (simulate/input_pipeline.h). Absent: input never stalls the step.
struct DataLoaderConfig {
  Time preprocess_per_sample;        // host time to read, decode and tokenize or pack one sample
  int workers = 0;                   // DataLoader worker processes per loader (0: the training process loads)
  double host_cores_per_gpu = 0;     // host cores the node has per GPU
  Bytes sample_bytes;                // read from storage per sample (zero: storage not modelled)
  Bandwidth storage_read_bandwidth;  // per node
  int prefetch_factor = 2;           // batches in flight per worker (PyTorch DataLoader's default)
};

struct ScenarioConfig {
  std::string name;
  std::string file;            // where it was read from ("" if built in code)
  ModelConfig model;
  std::string model_file;
  TopologyConfig topology;
  std::string topology_file;
  ProfileConfig profile;
  std::string profile_file;
  int gpus = 0;
  NodeOrder node_order = NodeOrder::kPacked;
  int64_t seq_len = 0;         // tokens per sequence
  PlanConfig plan;
  int64_t token_budget = 0;    // training.tokens: tokens to train (0: not given)
  std::optional<DataLoaderConfig> data_loader;
  // The framework the scenario names (frameworks/<name>.json), whose facts
  // are the plan's defaults; "" when it names none (PlanConfig's defaults).
  std::string framework;
  // Added with the parser (backward compatible): free text from the file, and
  // the --set overrides that were applied.
  std::string question;
  std::string notes;
  std::string source;
  std::vector<std::string> overrides;

  int nodes() const { return (gpus + topology.gpus_per_node - 1) / topology.gpus_per_node; }
  int64_t tokens_per_step() const { return plan.global_batch * seq_len; }
};

struct ScenarioOptions {
  std::vector<std::string> overrides;   // "plan.tp=4" (--set)
  std::string profile_path;             // --profile, replaces the topology's GPU profile
};

// The folder holding models/, topologies/, profiles/, scenarios/:
// $STACKSIM_DATA_DIR if set, else the source tree stacksim was built from
// when it still has models/, else the folder above the one holding the
// running program (a checkout moved with its build/ inside).
std::string DataRoot();
// Resolves a reference to a data file: a bare name is looked up in
// <DataRoot()>/<kind>/<name>.json; a path is taken relative to `relative_to`.
std::string ResolveDataFile(const std::string& kind, const std::string& ref, const std::string& relative_to);

ScenarioConfig LoadScenario(const std::string& path, const ScenarioOptions& options);
// Builds from an already-parsed scenario document (used by LoadScenario and tests):
// applies options.overrides to a copy of `doc`, parses, loads the referenced
// files and runs ValidatePlan. An error at a key that an override set names
// the file "--set".
ScenarioConfig ParseScenario(const nlohmann::json& doc, const std::string& file, const ScenarioOptions& options);

// Checks that the plan can run this model on this cluster: every product and
// divisibility rule, each failure an InputError naming `file` and the key:
//   tp*pp*dp*cp == gpus (plan.dp); heads % tp == 0 and kv_heads % tp == 0 or
//   tp % kv_heads == 0 (plan.tp); TP inside one NVLink domain, tp dividing it
//   (plan.tp; a PCIe node counts as the domain); layers % (pp*vp) == 0
//   (plan.pp / plan.vp); global_batch % (micro_batch*dp) == 0 and, for the
//   interleaved schedule, micro-batches % pp == 0 (training.global_batch);
//   vp > 1 needs pp > 1 (plan.vp); gpus within max_nodes and whole nodes
//   unless smaller than one (gpus); seq_len within learned positions and, with
//   sequence parallelism, divisible by tp (training.seq_len); layers x
//   micro-batches per pipeline at most kMaxLayerPasses (training.global_batch).
void ValidatePlan(const ScenarioConfig& s, const std::string& file);

// Representation limits, each an InputError naming the field beyond it.
inline constexpr int64_t kMaxGpus = int64_t{1} << 24;         // gpus
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 24;       // training.seq_len
inline constexpr int64_t kMaxLayerPasses = int64_t{1} << 18;  // layers x micro-batches per pipeline
// The offload part of ValidatePlan (called by it): offload_optimizer needs a
// sharded optimizer and node.host (nvme: node.nvme); offload_params needs
// offload_optimizer, zero3, the whole optimizer offloaded and (nvme)
// node.nvme. Errors name the plan key and the missing topology field. Whether
// the offloaded state fits host memory / NVMe needs per-stage parameter
// counts: memory::CheckOffloadCapacity does that (Simulate calls it).
void ValidateOffload(const ScenarioConfig& s, const std::string& file);
// The plan.dp_sync part of ValidatePlan (called by it): a method other than
// every-step needs dp x cp > 1, sharding none, a dense model, no dualpipe and
// no offload; diloco's workers divide dp (and cp is 1).
void ValidateDpSync(const ScenarioConfig& s, const std::string& file);

// The fully resolved configuration, for --print-config and JSON reports: the
// scenario keys with model, topology and profile inline and every plan field
// explicit (ParseScenario reads that part back), plus "files" (where each part
// came from), "overrides" and "derived" (parameters, nodes, micro-batches,
// tokens per step).
nlohmann::json ResolvedConfigJson(const ScenarioConfig& s);

// The scenario as a file `simulate` reads: ResolvedConfigJson's scenario keys
// only (without "files", "overrides", "derived" and "version").
nlohmann::json ScenarioFileJson(const ScenarioConfig& s);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_SCENARIO_H_
