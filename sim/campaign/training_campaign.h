// A scenario's whole training run: the simulated step time, the checkpoint
// the model and plan imply, the cluster's storage and a reliability file,
// joined into a Monte Carlo campaign (campaign.h), with the checkpoint
// interval either given or chosen by sweeping.
#ifndef STACKSIM_SIM_CAMPAIGN_TRAINING_CAMPAIGN_H_
#define STACKSIM_SIM_CAMPAIGN_TRAINING_CAMPAIGN_H_

#include <optional>
#include <string>

#include "sim/campaign/campaign.h"
#include "sim/campaign/checkpoint.h"
#include "sim/campaign/reliability.h"
#include "sim/config/scenario.h"

namespace stacksim::campaign {

struct CampaignRequest {
  int64_t tokens = 0;                 // token budget; 0: run for `duration`
  Time duration;                      // > 0: a fixed wall-clock span (e.g. Llama 3's 54 days)
  std::optional<Time> interval;       // checkpoint interval; nullopt: the sweep's best
  bool async_checkpoint = false;
  int spares = 0;
  ReliabilityConfig reliability;
  // Storage from the command line: each replaces the topology's figure; a
  // topology without "storage" needs both.
  std::optional<Bandwidth> storage_write, storage_read;
  MonteCarlo mc;
};

struct TrainingCampaign {
  config::ScenarioConfig scenario;
  CampaignRequest request;
  config::ClusterStorage storage;     // as used
  std::string storage_from;           // "topology meta-h100-roce" or "command line"
  CheckpointCost checkpoint;
  double checkpoint_bytes_per_parameter = 0;
  int64_t parameters = 0;
  ComponentCounts components;
  CampaignJob job;
  CampaignPolicy policy;              // as run (the interval chosen)
  bool interval_from_sweep = false;
  IntervalSweep sweep;
  CampaignStats stats;
  Time failure_free_wall;             // steps x step time, no checkpoints, no interruptions
  double wall_seconds = 0;            // time stacksim took
};

// Resolves storage (InputError naming the topology file and key `storage`
// when neither the topology nor the request gives it), builds the job and
// runs the campaign. REQUIRES: step > 0.
TrainingCampaign RunTrainingCampaign(const config::ScenarioConfig& scenario, Time step, const CampaignRequest& request);

// Checks the request before any simulation: trials >= 1, tokens or duration,
// an interval of at least one step. Errors name the command-line option.
void CheckCampaignRequest(const CampaignRequest& request);

// "15T", "300B": the token budget (as `stacksim compare` reads it).
int64_t ParseTokens(const std::string& text);
// "30min", "2 h", "auto" (nullopt). Errors name `option`.
std::optional<Time> ParseInterval(const std::string& text, const std::string& option);

}  // namespace stacksim::campaign

#endif  // STACKSIM_SIM_CAMPAIGN_TRAINING_CAMPAIGN_H_
