#include "sim/cluster/cluster_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace stacksim::cluster {
namespace {

constexpr double kHour = 3600.0;

// "42 s", "12.5 min", "3.2 h", "4.1 d".
std::string Duration(Time t) {
  const double s = t.seconds();
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < kHour) return fmt::format("{:.1f} min", s / 60);
  if (s < 48 * kHour) return fmt::format("{:.1f} h", s / kHour);
  return fmt::format("{:.1f} d", s / 86400);
}

const char* ReasonText(IdleReason r) {
  switch (r) {
    case IdleReason::kNoDemand: return "idle, nothing waiting";
    case IdleReason::kHeadBlocked: return "idle, head job needs more nodes";
    case IdleReason::kFragmentation: return "idle, fragmentation (leaf shape)";
    case IdleReason::kUnusedInNode: return "idle, unused in allocated nodes";
    case IdleReason::kDown: return "down (node failures)";
  }
  return "?";
}

}  // namespace

nlohmann::json ClusterJson(const ClusterResult& r) {
  nlohmann::json j;
  j["name"] = r.name;
  j["topology"] = r.topology;
  j["nodes"] = r.shape.nodes;
  j["gpus"] = r.shape.gpus();
  j["gpus_per_node"] = r.shape.gpus_per_node;
  j["nodes_per_leaf"] = r.shape.nodes_per_leaf;
  j["scheduler"] = SchedulerName(r.options.scheduler);
  j["placement"] = PlacementName(r.options.placement);
  j["leaf_wait_s"] = r.options.leaf_wait.seconds();
  j["jobs"] = r.jobs.size();
  j["simulations"] = r.simulations;
  j["first_submit_s"] = r.first_submit.seconds();
  j["last_end_s"] = r.last_end.seconds();
  j["makespan_s"] = r.makespan.seconds();
  j["utilization"] = r.utilization;
  nlohmann::json idle;
  for (int k = 0; k < kIdleReasons; ++k) idle[IdleReasonName(static_cast<IdleReason>(k))] = r.idle_gpu_s[k] / kHour;
  j["gpu_time"] = {{"total_gpu_h", r.total_gpu_s / kHour}, {"busy_gpu_h", r.busy_gpu_s / kHour}, {"idle_gpu_h", idle}};
  j["wait_s"] = {{"mean", r.wait.mean.seconds()}, {"p50", r.wait.p50.seconds()}, {"p90", r.wait.p90.seconds()},
                 {"p99", r.wait.p99.seconds()}, {"max", r.wait.max.seconds()}};
  j["placement_slowdown"] = {{"jobs_slowed", r.jobs_slowed},
                             {"mean_of_slowed", r.mean_slowdown_of_slowed},
                             {"max", r.max_slowdown},
                             {"lost_gpu_h", r.placement_lost_gpu_s / kHour}};
  j["failures"] = {{"node_failures", r.node_failures},
                   {"jobs_killed", r.jobs_killed},
                   {"lost_work_gpu_h", r.lost_work_gpu_s / kHour}};
  nlohmann::json series;
  series["resolution_s"] = r.options.resolution.seconds();
  std::vector<double> start, busy, queued, running;
  std::vector<std::vector<double>> idle_series(kIdleReasons);
  for (const SeriesPoint& p : r.series) {
    start.push_back(p.start.seconds());
    busy.push_back(p.busy_gpus);
    queued.push_back(p.queued_jobs);
    running.push_back(p.running_jobs);
    for (int k = 0; k < kIdleReasons; ++k) idle_series[k].push_back(p.idle_gpus[k]);
  }
  series["start_s"] = start;
  series["busy_gpus"] = busy;
  nlohmann::json idle_gpus;
  for (int k = 0; k < kIdleReasons; ++k) idle_gpus[IdleReasonName(static_cast<IdleReason>(k))] = idle_series[k];
  series["idle_gpus"] = idle_gpus;
  series["queued_jobs"] = queued;
  series["running_jobs"] = running;
  j["series"] = series;
  nlohmann::json list = nlohmann::json::array();
  for (const JobOutcome& o : r.jobs) {
    list.push_back({{"id", o.id},
                    {"user", o.user},
                    {"gpus", o.gpus},
                    {"nodes", o.nodes},
                    {"submit_s", o.submit.seconds()},
                    {"start_s", o.start.seconds()},
                    {"end_s", o.end.seconds()},
                    {"wait_s", o.wait.seconds()},
                    {"duration_s", o.duration.seconds()},
                    {"placement_slowdown", o.placement_slowdown},
                    {"leaves", o.leaves},
                    {"min_leaves", o.min_leaves},
                    {"restarts", o.restarts}});
  }
  j["job_list"] = list;
  j["notes"] = r.notes;
  return j;
}

std::string ClusterText(const ClusterResult& r) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  line(fmt::format("cluster: {}", r.name));
  line(fmt::format("  {} nodes x {} GPUs = {} GPUs ({}), {} nodes per leaf switch group", r.shape.nodes,
                   r.shape.gpus_per_node, r.shape.gpus(), r.topology, r.shape.nodes_per_leaf));
  line(fmt::format("  scheduler {}, placement {}{}; {} jobs{}", SchedulerName(r.options.scheduler),
                   PlacementName(r.options.placement),
                   r.options.leaf_wait > Time::Zero() ? ", leaf wait " + Duration(r.options.leaf_wait) : "",
                   r.jobs.size(),
                   r.simulations > 0 ? fmt::format(" ({} step simulations for model jobs)", r.simulations) : ""));
  line("");
  line(fmt::format("makespan {} (first submit to last completion)", Duration(r.makespan)));
  line(fmt::format("GPU utilization {:.1f}%", 100 * r.utilization));
  line(fmt::format("  {:<40} {:>12} {:>7}", "GPU-time", "GPU-hours", "share"));
  const double total = std::max(r.total_gpu_s, 1e-9);
  line(fmt::format("  {:<40} {:>12.0f} {:>6.1f}%", "busy", r.busy_gpu_s / kHour, 100 * r.busy_gpu_s / total));
  for (int k = 0; k < kIdleReasons; ++k) {
    line(fmt::format("  {:<40} {:>12.0f} {:>6.1f}%", ReasonText(static_cast<IdleReason>(k)), r.idle_gpu_s[k] / kHour,
                     100 * r.idle_gpu_s[k] / total));
  }
  line(fmt::format("  {:<40} {:>12.0f}", "total (GPUs x makespan)", r.total_gpu_s / kHour));
  line(fmt::format("queue wait: mean {}, p50 {}, p90 {}, p99 {}, max {}", Duration(r.wait.mean), Duration(r.wait.p50),
                   Duration(r.wait.p90), Duration(r.wait.p99), Duration(r.wait.max)));
  if (r.jobs_slowed > 0) {
    line(fmt::format("placement: {} jobs ran beyond their minimal leaf set, slowed x{:.3f} on average (max x{:.3f}); "
                     "{:.0f} GPU-hours lost to placement",
                     r.jobs_slowed, r.mean_slowdown_of_slowed, r.max_slowdown, r.placement_lost_gpu_s / kHour));
  } else {
    line("placement: no job was slowed by its placement");
  }
  if (r.node_failures > 0) {
    line(fmt::format("failures: {} node failures killed {} job runs; {:.0f} GPU-hours of work lost", r.node_failures,
                     r.jobs_killed, r.lost_work_gpu_s / kHour));
  }
  if (!r.series.empty()) {
    // Fold the series into at most ~30 rows for the terminal.
    const size_t fold = (r.series.size() + 29) / 30;
    line("");
    line(fmt::format("over time (rows of {}; per row: average GPUs busy and idle, jobs queued):",
                     Duration(r.options.resolution * static_cast<double>(fold))));
    line(fmt::format("  {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}", "from", "busy%", "no-demand", "head-blk",
                     "fragment", "in-node", "down", "queued"));
    for (size_t b = 0; b < r.series.size(); b += fold) {
      const size_t e = std::min(r.series.size(), b + fold);
      double busy = 0, queued = 0;
      std::array<double, kIdleReasons> idle{};
      for (size_t i = b; i < e; ++i) {
        busy += r.series[i].busy_gpus;
        queued += r.series[i].queued_jobs;
        for (int k = 0; k < kIdleReasons; ++k) idle[k] += r.series[i].idle_gpus[k];
      }
      const double n = static_cast<double>(e - b);
      line(fmt::format("  {:>9} {:>6.1f}% {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>8.1f}",
                       Duration(r.series[b].start), 100 * busy / n / r.shape.gpus(), idle[0] / n, idle[1] / n,
                       idle[2] / n, idle[3] / n, idle[4] / n, queued / n));
    }
  }
  for (const std::string& n : r.notes) line("note: " + n);
  return out;
}

}  // namespace stacksim::cluster
