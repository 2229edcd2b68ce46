// stacksim serve SCENARIO: serving requests (batching, KV cache, TTFT/TPOT,
// goodput) and what the deployment costs.
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/search/economics.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/serve_report.h"
#include "sim/serve/serve_sim.h"
#include "sim/serve/serve_uncertainty.h"

namespace stacksim::cli {
namespace {

struct ServeArgs {
  std::string scenario;
  std::string format = "text";
  std::optional<double> rate;
  std::optional<int64_t> requests;
  std::optional<uint64_t> seed;
  std::string scheduler;
};

int RunServe(const ServeArgs& a) {
  serve::ServeOverrides o;
  o.rate_per_s = a.rate;
  o.requests = a.requests;
  o.seed = a.seed;
  if (!a.scheduler.empty()) o.scheduler = a.scheduler;
  serve::ServeConfig c = serve::LoadServeScenario(a.scenario, o);
  std::vector<serve::Request> requests = serve::GenerateRequests(c.workload);
  serve::ServeResult r = serve::SimulateServing(c, requests);
  const search::Economics price = search::LookUpTopologyPrice(c.topology);
  serve::ServeMetrics m = serve::ComputeMetrics(c, r, price.gpu_hour_usd, price.price_basis);
  // The likely range of the mean TTFT and TPOT (the same errors scale any
  // statistic) from the serving validation errors.
  const serve::ServeAssessment u =
      serve::AssessServePrediction(serve::DefaultServingErrorTablePath(), c, m.ttft.mean, m.tpot.mean);
  PrintResult(
      a.format,
      [&] {
        nlohmann::json j = serve::ServeJson(c, r, m);
        j["uncertainty"] = serve::ServeUncertaintyJson(u);
        j["warnings"] = u.warnings;
        return j;
      },
      [&] { return serve::ServeText(c, r, m) + "uncertainty (mean TTFT and TPOT)\n" + serve::ServeAssessmentText(u); });
  return 0;
}

}  // namespace

RunFunction AddServeOptions(CLI::App* cmd) {
  auto a = std::make_shared<ServeArgs>();
  cmd->add_option("scenario", a->scenario, "Serving scenario JSON file")->required();
  cmd->add_option("--rate", a->rate, "Arrival rate, requests/s (overrides workload.rate_per_s)")
      ->check(PositiveReal());
  cmd->add_option("--requests", a->requests, "Requests to simulate (overrides workload.requests)")
      ->check(WholeIn(1, 100000000));
  cmd->add_option("--seed", a->seed, "Workload seed (overrides workload.seed)")->check(SeedValue());
  cmd->add_option("--scheduler", a->scheduler, "Scheduler (overrides scheduler.kind)")
      ->check(CLI::IsMember({"static", "continuous", "chunked-prefill", "prefill-first", "inflight", "persistent", "disaggregated"}));
  AddFormat(cmd, &a->format);
  return [a] { return RunServe(*a); };
}

}  // namespace stacksim::cli
