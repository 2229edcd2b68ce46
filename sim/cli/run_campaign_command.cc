// stacksim run-campaign SCENARIO: Monte Carlo of a whole training run
// (failures, restarts, checkpoints) on the scenario's simulated step time.
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "sim/campaign/campaign_report.h"
#include "sim/campaign/training_campaign.h"
#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/scenario.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/progress.h"

namespace stacksim::cli {
namespace {

struct CampaignArgs {
  std::string scenario;
  config::ScenarioOptions opts;
  std::string format = "text";
  std::string tokens, duration;
  std::string interval = "auto";
  bool async_checkpoint = false;
  int spares = 0;
  std::string reliability;
  std::string storage_write, storage_read;
  int trials = 200;
  uint64_t seed = 1;
  int threads = 0;
};

int RunCampaign(const CampaignArgs& a) {
  campaign::CampaignRequest request;
  if (!a.tokens.empty()) request.tokens = campaign::ParseTokens(a.tokens);
  if (!a.duration.empty()) request.duration = campaign::ParseDuration(a.duration, "--duration", "");
  request.interval = campaign::ParseInterval(a.interval, "--checkpoint-interval");
  request.async_checkpoint = a.async_checkpoint;
  request.spares = a.spares;
  if (!a.storage_write.empty()) request.storage_write = ParseBandwidth(a.storage_write, "--storage-write", "");
  if (!a.storage_read.empty()) request.storage_read = ParseBandwidth(a.storage_read, "--storage-read", "");
  request.mc.trials = a.trials;
  request.mc.seed = a.seed;
  request.mc.threads = a.threads > 0 ? a.threads : std::max(1u, std::thread::hardware_concurrency());
  campaign::CheckCampaignRequest(request);  // before the step is simulated
  request.reliability = campaign::LoadReliabilityFile(
      a.reliability.empty() ? campaign::DefaultReliabilityFile() : a.reliability);
  config::ScenarioConfig scenario = config::LoadScenario(a.scenario, a.opts);
  simulate::SimulationResult step = simulate::Simulate(scenario);
  if (step.out_of_memory) {
    throw InputError(scenario.file, "plan", "the plan does not fit GPU memory: no step time to run a campaign on");
  }
  // The interval sweep and the final run count their trials as they go: a
  // million trials of a long campaign take minutes.
  ProgressMeter progress("run-campaign", "trials", 0);
  request.mc.progress = &progress;
  campaign::TrainingCampaign c = campaign::RunTrainingCampaign(scenario, step.iteration, request);
  PrintResult(a.format, [&] { return campaign::CampaignJson(c); },
              [&] { return campaign::CampaignText(c); });
  return 0;
}

}  // namespace

RunFunction AddRunCampaignOptions(CLI::App* cmd) {
  auto a = std::make_shared<CampaignArgs>();
  cmd->add_option("scenario", a->scenario, "Scenario JSON file (its step time is simulated)")->required();
  cmd->add_option("--tokens", a->tokens, "Token budget to train, e.g. 15T, 300B");
  cmd->add_option("--duration", a->duration, "Instead of --tokens: a wall-clock span, e.g. 54d");
  cmd->add_option("--checkpoint-interval", a->interval,
                  "Training time between checkpoints, e.g. 30min, 2h, or auto (the sweep's best)");
  cmd->add_flag("--async-checkpoint", a->async_checkpoint,
                "Snapshot to host memory, write in the background (default: the job stops for the write)");
  cmd->add_option("--spares", a->spares, "Spare nodes (0: a failed node's job waits for its repair)")
      ->check(WholeIn(0, 1000000));
  cmd->add_option("--reliability", a->reliability,
                  "Failure rates and recovery times (default: reliability/llama3-16k-h100.json)");
  cmd->add_option("--storage-write", a->storage_write,
                  "Checkpoint write bandwidth, e.g. '2 TB/s' (overrides the topology)");
  cmd->add_option("--storage-read", a->storage_read, "Checkpoint read bandwidth (overrides the topology)");
  cmd->add_option("--trials", a->trials, "Monte Carlo trials (progress and time left on standard error)")
      ->check(WholeIn(1, 1000000));
  cmd->add_option("--seed", a->seed, "Random seed (trial i uses (seed, i): same output for any --threads)")
      ->check(SeedValue());
  AddThreads(cmd, &a->threads);
  AddSet(cmd, &a->opts.overrides);
  AddProfile(cmd, &a->opts.profile_path);
  AddFormat(cmd, &a->format);
  return [a] { return RunCampaign(*a); };
}

}  // namespace stacksim::cli
