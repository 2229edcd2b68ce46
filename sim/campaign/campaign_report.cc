#include "sim/campaign/campaign_report.h"

#include <fmt/format.h>

#include "sim/util/number_text.h"

namespace stacksim::campaign {
namespace {

constexpr double kDay = 86400.0;

// "4.2 min", "3.09 h", "2.84 s": a duration in the unit a person reads it in.
std::string Human(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.2f} s", s);
  if (s < 2 * 3600) return fmt::format("{:.1f} min", s / 60);
  if (s < 3 * kDay) return fmt::format("{:.2f} h", s / 3600);
  return fmt::format("{:.2f} days", s / kDay);
}

std::string Size(double bytes) {
  if (bytes >= 1e12) return fmt::format("{:.2f} TB", bytes / 1e12);
  if (bytes >= 1e9) return fmt::format("{:.1f} GB", bytes / 1e9);
  return fmt::format("{:.1f} MB", bytes / 1e6);
}

std::string Rate(double bytes_per_s) { return fmt::format("{:.4g} GB/s", bytes_per_s / 1e9); }

double Interval(const TrainingCampaign& c) {
  return c.job.step.seconds() * static_cast<double>(c.policy.steps_per_checkpoint);
}

nlohmann::json SpreadJson(const Spread& s, double scale = 1) {
  return {{"mean", s.mean / scale}, {"sd", s.sd / scale}, {"p10", s.p10 / scale}, {"p50", s.p50 / scale},
          {"p90", s.p90 / scale}};
}

// Each part of the wall-clock time: name, mean seconds.
std::vector<std::pair<std::string, double>> Parts(const CampaignStats& s) {
  return {{"useful steps", s.useful_s},
          {"lost work (steps redone since the last checkpoint)", s.lost_work_s},
          {"checkpoint stalls", s.checkpoint_stall_s},
          {"detection", s.detection_s},
          {"waiting for repair (no spare free)", s.repair_wait_s},
          {"restart", s.restart_s},
          {"checkpoint read", s.reload_s}};
}

}  // namespace

std::string CampaignText(const TrainingCampaign& c) {
  const CampaignStats& s = c.stats;
  const bool budget = c.job.steps > 0;
  std::string o;
  o += fmt::format("campaign: {}\n", c.scenario.name);
  o += fmt::format("job: {} GPUs on {} node{}, step {:.3f} s simulated ({} tokens)", Grouped(c.scenario.gpus),
                   Grouped(c.components.nodes), c.components.nodes == 1 ? "" : "s", c.job.step.seconds(),
                   Grouped(static_cast<double>(c.scenario.tokens_per_step())));
  if (budget) {
    o += fmt::format("; {} tokens = {} steps = {:.2f} days without interruptions or checkpoints\n",
                     Grouped(static_cast<double>(c.request.tokens)),
                     Grouped(static_cast<double>(c.job.steps)), c.failure_free_wall.seconds() / kDay);
  } else {
    o += fmt::format("; a fixed span of {:.2f} days\n", c.request.duration.seconds() / kDay);
  }
  o += fmt::format("checkpoint: {} ({:.0f} B/parameter x {}), {} per GPU; write {} at {}, read {} at {} ({}); "
                   "async snapshot {} per GPU over its {} host link\n",
                   Size(c.checkpoint.bytes.value), c.checkpoint_bytes_per_parameter,
                   Grouped(static_cast<double>(c.parameters)), Size(c.checkpoint.bytes_per_gpu.value),
                   Human(c.checkpoint.write.seconds()), Rate(c.storage.write_bandwidth.value),
                   Human(c.checkpoint.read.seconds()), Rate(c.storage.read_bandwidth.value), c.storage_from,
                   Human(c.checkpoint.snapshot.seconds()), Rate(c.scenario.topology.pcie_bandwidth.value));
  const double rate = c.job.TotalRatePerHour();
  o += fmt::format("reliability: {} ({}): {:.4f} interruptions/h for this job (MTBF {}); detection {}, restart {}, "
                   "repair {}; {} spare node{}\n",
                   c.request.reliability.name, c.request.reliability.file, rate,
                   rate > 0 ? Human(3600.0 / rate) : "none", Human(c.job.detection.seconds()),
                   Human(c.job.restart.seconds()), Human(c.job.repair.seconds()), c.policy.spares,
                   c.policy.spares == 1 ? "" : "s");
  o += fmt::format("policy: {} checkpoints every {} ({} steps{}); {} trials, seed {}\n",
                   c.policy.async_checkpoint ? "asynchronous" : "synchronous", Human(Interval(c)),
                   Grouped(static_cast<double>(c.policy.steps_per_checkpoint)),
                   c.interval_from_sweep ? ", the sweep's best" : "", s.trials, c.request.mc.seed);
  if (s.unfinished > 0) {
    o += fmt::format("WARNING: {} of {} trials gave up after 1,000,000 interruptions: the job cannot make progress\n",
                     s.unfinished, s.trials);
  }
  o += "\n";
  if (budget) {
    o += fmt::format("time to train (days)        mean      p10      p50      p90\n");
    o += fmt::format("  wall clock            {:8.2f} {:8.2f} {:8.2f} {:8.2f}\n", s.wall_s.mean / kDay,
                     s.wall_s.p10 / kDay, s.wall_s.p50 / kDay, s.wall_s.p90 / kDay);
    o += fmt::format("  expected {:.2f} days, 95% confidence interval [{:.2f}, {:.2f}] ({} trials)\n",
                     s.wall_s.mean / kDay, s.wall_mean_ci95_s[0] / kDay, s.wall_mean_ci95_s[1] / kDay, s.trials);
  } else {
    const double tokens = static_cast<double>(c.scenario.tokens_per_step());
    o += fmt::format("tokens trained in {:.2f} days: mean {}, p10 {}, p50 {}, p90 {}\n",
                     c.request.duration.seconds() / kDay, Grouped(s.steps.mean * tokens),
                     Grouped(s.steps.p10 * tokens), Grouped(s.steps.p50 * tokens),
                     Grouped(s.steps.p90 * tokens));
  }
  o += fmt::format("goodput {:.1f}% (useful steps / wall clock); time running steps {:.1f}% (incl. steps later redone)\n",
                   100 * s.goodput, 100 * s.training_fraction);
  o += fmt::format("unexpected interruptions: {:.1f} expected, sd {:.1f}, p10 {:.0f}, p90 {:.0f}\n\n",
                   s.interruptions.mean, s.interruptions.sd, s.interruptions.p10, s.interruptions.p90);

  o += "where the wall clock goes (mean)                      days   % of wall\n";
  for (const auto& [name, secs] : Parts(s)) {
    o += fmt::format("  {:<50} {:8.2f}   {:5.1f}%\n", name, secs / kDay, s.wall_s.mean > 0 ? 100 * secs / s.wall_s.mean : 0);
  }
  o += "\ninterruptions by cause (expected)\n";
  for (size_t i = 0; i < c.job.causes.size(); ++i) {
    const FailureCause& cause = c.request.reliability.causes[i];
    o += fmt::format("  {:<26} {:8.1f}   per {}{}\n", cause.name, s.interruptions_by_cause[i], ComponentName(cause.per),
                     cause.takes_node_out ? ", takes a node out" : "");
  }
  if (!c.sweep.points.empty()) {
    o += fmt::format("\ncheckpoint interval sweep ({} trials each, same seeds)\n", s.trials);
    o += "    interval      steps   goodput   mean days\n";
    for (size_t i = 0; i < c.sweep.points.size(); ++i) {
      const SweepPoint& p = c.sweep.points[i];
      o += fmt::format("  {:>10} {:>10}   {:>6}   {:>9}{}\n", Human(p.interval.seconds()),
                       Grouped(static_cast<double>(p.steps_per_checkpoint)),
                       p.finished ? fmt::format("{:.2f}%", 100 * p.goodput) : "-",
                       budget && p.finished ? fmt::format("{:.2f}", p.wall_mean_s / kDay) : "-",
                       static_cast<int>(i) == c.sweep.best ? "  <- best" : "");
    }
    o += fmt::format("  Young/Daly sqrt(2 x {} x MTBF {}) = {}", Human(c.sweep.checkpoint_cost.seconds()),
                     Human(c.sweep.mtbf.seconds()), Human(c.sweep.young_daly.seconds()));
    if (c.sweep.best >= 0) {
      const double best = c.sweep.points[c.sweep.best].interval.seconds();
      o += fmt::format("; best swept {} ({:.2f}x)", Human(best), best / c.sweep.young_daly.seconds());
    }
    o += "\n";
  }
  o += fmt::format("\n(stacksim took {:.2f} s)\n", c.wall_seconds);
  return o;
}

nlohmann::json CampaignJson(const TrainingCampaign& c) {
  const CampaignStats& s = c.stats;
  nlohmann::json j;
  j["scenario"] = c.scenario.name;
  j["gpus"] = c.scenario.gpus;
  j["nodes"] = c.components.nodes;
  j["step_s"] = c.job.step.seconds();
  j["tokens_per_step"] = c.scenario.tokens_per_step();
  if (c.job.steps > 0) {
    j["tokens"] = c.request.tokens;
    j["steps"] = c.job.steps;
    j["failure_free_days"] = c.failure_free_wall.seconds() / kDay;
  } else {
    j["duration_days"] = c.request.duration.seconds() / kDay;
  }
  j["checkpoint"] = {{"bytes", c.checkpoint.bytes.value},
                     {"bytes_per_parameter", c.checkpoint_bytes_per_parameter},
                     {"parameters", c.parameters},
                     {"bytes_per_gpu", c.checkpoint.bytes_per_gpu.value},
                     {"write_s", c.checkpoint.write.seconds()},
                     {"read_s", c.checkpoint.read.seconds()},
                     {"snapshot_s", c.checkpoint.snapshot.seconds()},
                     {"storage_write_GBps", c.storage.write_bandwidth.value / 1e9},
                     {"storage_read_GBps", c.storage.read_bandwidth.value / 1e9},
                     {"storage_from", c.storage_from},
                     {"storage_source", c.storage.source}};
  nlohmann::json causes = nlohmann::json::array();
  for (size_t i = 0; i < c.job.causes.size(); ++i) {
    const FailureCause& cause = c.request.reliability.causes[i];
    causes.push_back({{"name", cause.name},
                      {"per", ComponentName(cause.per)},
                      {"components", c.components.Of(cause.per)},
                      {"rate_per_hour", c.job.causes[i].per_hour},
                      {"takes_node_out", cause.takes_node_out},
                      {"expected_interruptions", s.interruptions_by_cause[i]}});
  }
  const double rate = c.job.TotalRatePerHour();
  j["reliability"] = {{"name", c.request.reliability.name},
                      {"file", c.request.reliability.file},
                      {"rate_per_hour", rate},
                      {"mtbf_s", rate > 0 ? 3600.0 / rate : 0.0},
                      {"detection_s", c.job.detection.seconds()},
                      {"restart_s", c.job.restart.seconds()},
                      {"repair_s", c.job.repair.seconds()},
                      {"causes", causes}};
  j["policy"] = {{"checkpoint", c.policy.async_checkpoint ? "async" : "sync"},
                 {"interval_s", Interval(c)},
                 {"steps_per_checkpoint", c.policy.steps_per_checkpoint},
                 {"interval_from_sweep", c.interval_from_sweep},
                 {"spares", c.policy.spares},
                 {"trials", s.trials},
                 {"seed", c.request.mc.seed}};
  j["wall_days"] = SpreadJson(s.wall_s, kDay);
  j["wall_mean_ci95_days"] = {s.wall_mean_ci95_s[0] / kDay, s.wall_mean_ci95_s[1] / kDay};
  j["steps_done"] = SpreadJson(s.steps);
  j["interruptions"] = SpreadJson(s.interruptions);
  j["goodput"] = s.goodput;
  j["training_fraction"] = s.training_fraction;
  j["unfinished_trials"] = s.unfinished;
  j["time_s"] = {{"useful", s.useful_s},           {"lost_work", s.lost_work_s}, {"checkpoint_stall", s.checkpoint_stall_s},
                 {"detection", s.detection_s},     {"repair_wait", s.repair_wait_s}, {"restart", s.restart_s},
                 {"reload", s.reload_s},           {"wall", s.wall_s.mean}};
  j["checkpoints"] = s.checkpoints;
  if (!c.sweep.points.empty()) {
    nlohmann::json points = nlohmann::json::array();
    for (const SweepPoint& p : c.sweep.points) {
      points.push_back({{"interval_s", p.interval.seconds()},
                        {"steps_per_checkpoint", p.steps_per_checkpoint},
                        {"goodput", p.goodput},
                        {"wall_mean_days", p.wall_mean_s / kDay},
                        {"finished", p.finished}});
    }
    j["sweep"] = {{"points", points},
                  {"best_interval_s", c.sweep.best >= 0 ? c.sweep.points[c.sweep.best].interval.seconds() : 0.0},
                  {"young_daly_s", c.sweep.young_daly.seconds()},
                  {"mtbf_s", c.sweep.mtbf.seconds()},
                  {"checkpoint_cost_s", c.sweep.checkpoint_cost.seconds()}};
  }
  j["wall_seconds"] = c.wall_seconds;
  return j;
}

}  // namespace stacksim::campaign
