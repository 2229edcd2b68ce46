// One published training run (an element of a stacksim.validation.training/1
// file, see shared/validation/README.md) as the scenario stacksim simulates.
//
// The run's model shapes become a ModelConfig, with the architecture details
// the schema leaves out taken from the model family; its GPU selects the
// shipped profile and system topology, with the run's NIC bandwidth (Gb/s per
// GPU in the file, bytes/s in the scenario) and GPUs per node; its plan
// becomes a PlanConfig. What the run's framework did that the file does not
// say (attention kernels, kernel fusion, sequence parallelism, sharding,
// gradient-reduction overlap and dtype, which recomputation it could do)
// comes from the framework profile (frameworks/*.json) its free-text
// "framework" field selects (config::MatchFramework). Plan fields the run leaves
// null are not guessed here: they are listed for the validation to choose by
// simulation, as a tuned run would. The result owns its scenario.
#ifndef STACKSIM_SIM_VALIDATE_RUN_SCENARIO_H_
#define STACKSIM_SIM_VALIDATE_RUN_SCENARIO_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/framework.h"
#include "sim/config/scenario.h"

namespace stacksim::validate {

struct RunScenario {
  config::ScenarioConfig scenario;
  std::vector<std::string> open_fields;  // null plan fields to choose by search: "micro_batch", "vp", "recompute"
  std::vector<std::string> choices;      // what stacksim filled in, and how, in words
  std::string framework_text;            // the run's framework, as written
  const config::FrameworkProfile* framework = nullptr;  // the profile it selected (a shipped one)
  bool predates_selective_recompute = false;  // the framework could only recompute whole layers
  // Wider selective module sets to try before full recomputation
  // (FrameworkProfile::recompute_escalation).
  std::vector<config::RecomputeModules> recompute_escalation;
  // The framework's recipe for the model overlaps the expert all-to-alls
  // with the other micro-batch's compute (PlanConfig::moe_a2a_overlap). It
  // holds for every plan that can run it (config::MoeA2aOverlapRuns): Megatron-Core
  // needs virtual stages under pipeline parallelism.
  bool recipe_a2a_overlap = false;
};


// The framework profile a published run's (or memory entry's) framework
// text selects (config::FindFramework). A text no profile names, a
// framework stacksim has no profile of, is modelled with the profile of the
// stack its plan describes, marked assumed (FrameworkMatch::Describe says
// so): a fully sharded (zero3) run as PyTorch FSDP, any other as
// Megatron-Core, the 3-D parallel framework the shipped recipes descend
// from. `key` names the field in errors (a tie between two profiles).
config::FrameworkMatch FrameworkForText(const std::string& text, bool fully_sharded, const std::string& file,
                                        const std::string& key);

// Builds the scenario for one run: `run` is the run's JSON object, `file` the
// validation file and `path` the run's key path in it (both named in errors).
// Throws InputError for malformed runs and for runs stacksim cannot model yet
// (the message says why).
RunScenario ScenarioForRun(const nlohmann::json& run, const std::string& file, const std::string& path);

// The shipped published config (models/) whose name or an alias is the run's
// model name, compared in lower case without punctuation; nullptr if none.
// Shapes a run leaves null are that config's.
const config::ModelConfig* PublishedModelNamed(const std::string& name);

}  // namespace stacksim::validate

#endif  // STACKSIM_SIM_VALIDATE_RUN_SCENARIO_H_
