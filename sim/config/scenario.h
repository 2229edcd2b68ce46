// A scenario joins a model, a topology (and its GPU's profile), a cluster size,
// a parallel plan and a training batch: one question a user asks.
//
// scenarios/*.json refer to models, topologies and profiles by name
// ("gpt3-175b" -> <data root>/models/gpt3-175b.json) or by a path relative to
// the scenario file (anything containing '/' or ending in ".json").
#ifndef STACKSIM_SIM_CONFIG_SCENARIO_H_
#define STACKSIM_SIM_CONFIG_SCENARIO_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/model.h"
#include "sim/config/plan.h"
#include "sim/config/profile.h"
#include "sim/config/topology.h"

namespace stacksim::config {

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
  int64_t seq_len = 0;         // tokens per sequence
  PlanConfig plan;

  int nodes() const { return (gpus + topology.gpus_per_node - 1) / topology.gpus_per_node; }
  int64_t tokens_per_step() const { return plan.global_batch * seq_len; }
};

struct ScenarioOptions {
  std::vector<std::string> overrides;   // "plan.tp=4" (--set)
  std::string profile_path;             // --profile, replaces the topology's GPU profile
};

// The folder holding models/, topologies/, profiles/, scenarios/:
// $STACKSIM_DATA_DIR if set, else the source tree stacksim was built from.
std::string DataRoot();
// Resolves a reference to a data file: a bare name is looked up in
// <DataRoot()>/<kind>/<name>.json; a path is taken relative to `relative_to`.
std::string ResolveDataFile(const std::string& kind, const std::string& ref, const std::string& relative_to);

ScenarioConfig LoadScenario(const std::string& path, const ScenarioOptions& options);
// Builds from an already-parsed scenario document (used by LoadScenario and tests).
ScenarioConfig ParseScenario(const nlohmann::json& doc, const std::string& file, const ScenarioOptions& options);

// Checks that the plan can run this model on this cluster: every product and
// divisibility rule, each failure an InputError naming `file` and the key.
void ValidatePlan(const ScenarioConfig& s, const std::string& file);

// The fully resolved configuration, for --print-config and JSON reports.
nlohmann::json ResolvedConfigJson(const ScenarioConfig& s);

}  // namespace stacksim::config

#endif  // STACKSIM_SIM_CONFIG_SCENARIO_H_
