#include "sim/campaign/training_campaign.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "sim/util/token_count.h"

namespace stacksim::campaign {

void CheckCampaignRequest(const CampaignRequest& r) {
  if (r.mc.trials < 1) throw InputError("--trials", "", "need at least one trial");
  if (r.mc.threads < 1) throw InputError("--threads", "", "need at least one thread");
  if (r.spares < 0) throw InputError("--spares", "", "spare nodes cannot be negative");
  if ((r.tokens > 0) == (r.duration > Time::Zero())) {
    throw InputError("--tokens", "", "give either a token budget (--tokens 15T) or a wall-clock span (--duration 54d)");
  }
  if (r.interval && *r.interval <= Time::Zero()) {
    throw InputError("--checkpoint-interval", "", "the interval must be positive (or 'auto')");
  }
}

int64_t ParseTokens(const std::string& text) { return ParseTokenCount(text, "--tokens"); }

std::optional<Time> ParseInterval(const std::string& text, const std::string& option) {
  if (text == "auto") return std::nullopt;
  Time t = ParseDuration(text, option, "");
  if (t <= Time::Zero()) throw InputError(option, "", "the interval must be positive (or 'auto')");
  return t;
}

TrainingCampaign RunTrainingCampaign(const config::ScenarioConfig& scenario, Time step,
                                     const CampaignRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  CheckCampaignRequest(request);
  TrainingCampaign c;
  c.scenario = scenario;
  c.request = request;

  // Storage: never a silent default; checkpoint costs hang on it.
  const auto& topo_storage = scenario.topology.storage;
  if (!topo_storage && !(request.storage_write && request.storage_read)) {
    throw InputError(scenario.topology_file.empty() ? scenario.topology.name : scenario.topology_file, "storage",
                     "the topology gives no checkpoint storage: add \"storage\": {\"write_bandwidth\", "
                     "\"read_bandwidth\", \"source\"}, or pass --storage-write and --storage-read");
  }
  if (topo_storage) {
    c.storage = *topo_storage;
    c.storage_from = "topology " + scenario.topology.name;
  }
  if (request.storage_write || request.storage_read) {
    if (request.storage_write) c.storage.write_bandwidth = *request.storage_write;
    if (request.storage_read) c.storage.read_bandwidth = *request.storage_read;
    c.storage.source = "command line";
    c.storage_from = topo_storage ? "topology " + scenario.topology.name + ", overridden on the command line"
                                  : "command line";
  }

  c.parameters = scenario.model.ParameterCount() + scenario.model.MtpParameterCount();
  c.checkpoint_bytes_per_parameter = CheckpointBytesPerParameter(scenario.plan);
  c.checkpoint = CheckpointCostOf(scenario, c.storage);
  c.components.gpus = scenario.gpus;
  c.components.nodes = scenario.nodes();
  c.components.nics = static_cast<int64_t>(scenario.nodes()) * scenario.topology.nics.per_node;

  CampaignJob& job = c.job;
  job.step = step;
  if (request.tokens > 0) {
    const int64_t per_step = scenario.tokens_per_step();
    job.steps = (request.tokens + per_step - 1) / per_step;
    // steps x step time must stay within int64 nanoseconds (and the trials'
    // clocks, which add failures on top, too).
    const double years = static_cast<double>(job.steps) * step.seconds() / (365.25 * 86400.0);
    if (!(static_cast<double>(job.steps) * step.seconds() <= kMaxInputSeconds)) {
      throw InputError("--tokens", "",
                       fmt::format("{} tokens take {:.3g} years without failures ({} steps of {:.3f} s); stacksim "
                                   "simulates campaigns of at most 100 years",
                                   request.tokens, years, job.steps, step.seconds()));
    }
  }
  job.checkpoint_write = c.checkpoint.write;
  job.checkpoint_read = c.checkpoint.read;
  job.checkpoint_snapshot = c.checkpoint.snapshot;
  const std::vector<double> rates = CauseRatesPerHour(request.reliability, c.components);
  for (size_t i = 0; i < rates.size(); ++i) {
    const FailureCause& cause = request.reliability.causes[i];
    job.causes.push_back({cause.name, rates[i], cause.takes_node_out});
  }
  job.detection = request.reliability.detection;
  job.restart = request.reliability.restart;
  job.repair = request.reliability.repair;
  c.failure_free_wall = Time::Ns(step.ns() * job.steps);

  CampaignPolicy& policy = c.policy;
  policy.async_checkpoint = request.async_checkpoint;
  policy.spares = request.spares;
  policy.duration = request.duration;
  c.sweep = SweepInterval(job, policy, request.mc);
  if (request.interval) {
    if (*request.interval < step) {
      throw InputError("--checkpoint-interval", "",
                       fmt::format("shorter than one step ({:.3f} s): checkpoints fall between steps", step.seconds()));
    }
    policy.steps_per_checkpoint = std::max<int64_t>(1, std::llround(request.interval->seconds() / step.seconds()));
  } else if (c.sweep.best >= 0) {
    policy.steps_per_checkpoint = c.sweep.points[c.sweep.best].steps_per_checkpoint;
    c.interval_from_sweep = true;
  } else {
    // No interruptions, or none of the swept intervals lets the job finish:
    // checkpoint once an hour, so the campaign still says what happens.
    policy.steps_per_checkpoint = std::max<int64_t>(1, std::llround(3600.0 / step.seconds()));
  }
  c.stats = RunCampaign(job, policy, request.mc);
  c.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

}  // namespace stacksim::campaign
