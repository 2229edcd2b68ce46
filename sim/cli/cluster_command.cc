// stacksim cluster SCENARIO: many jobs sharing one cluster (scheduler,
// placement, failures).
#include <iostream>
#include <memory>
#include <string>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/report/cluster_html.h"
#include "sim/cluster/cluster_report.h"
#include "sim/cluster/cluster_scenario.h"
#include "sim/report/html.h"

namespace stacksim::cli {
namespace {

struct ClusterArgs {
  std::string scenario;
  std::string scheduler, placement;  // empty: the scenario's
  std::string format = "text";
  std::string html;
};

int RunCluster(const ClusterArgs& a) {
  cluster::ClusterScenario scenario = cluster::LoadClusterScenario(a.scenario);
  cluster::ClusterOptions options = scenario.options;
  if (!a.scheduler.empty()) options.scheduler = cluster::ParseScheduler(a.scheduler, "--scheduler");
  if (!a.placement.empty()) options.placement = cluster::ParsePlacement(a.placement, "--placement");
  cluster::ClusterResult result = cluster::RunClusterScenario(scenario, options);
  PrintResult(a.format, [&] { return cluster::ClusterJson(result); },
              [&] { return cluster::ClusterText(result); });
  if (!a.html.empty()) report::WriteHtmlFile(report::ClusterHtml(result), a.html);
  return 0;
}

}  // namespace

RunFunction AddClusterOptions(CLI::App* cmd) {
  auto a = std::make_shared<ClusterArgs>();
  cmd->add_option("scenario", a->scenario, "Cluster scenario JSON file (topology, nodes, jobs)")->required();
  cmd->add_option("--scheduler", a->scheduler, "Scheduler (default: the scenario's, else backfill)")
      ->check(CLI::IsMember({"fifo", "backfill", "fairshare"}));
  cmd->add_option("--placement", a->placement, "Placement policy (default: the scenario's, else topology)")
      ->check(CLI::IsMember({"topology", "first-fit"}));
  AddFormat(cmd, &a->format);
  AddHtml(cmd, &a->html);
  return [a] { return RunCluster(*a); };
}

}  // namespace stacksim::cli
