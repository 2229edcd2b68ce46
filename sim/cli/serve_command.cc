// stacksim serve SCENARIO: serving requests (batching, KV cache, TTFT/TPOT,
// goodput) and what the deployment costs.
#include <fmt/format.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/search/economics.h"
#include "sim/util/error.h"
#include "sim/serve/bench_result.h"
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
  std::string requests_from;  // a benchmark client's result file
};

// Each statistic the benchmark result measured, beside stacksim's (the
// client's names; latencies in ms).
struct Compared {
  std::string name;
  double measured = 0, predicted = 0;
};

std::vector<Compared> CompareWithBenchmark(const serve::BenchmarkRun& run, const serve::ServeMetrics& m) {
  const std::vector<std::pair<std::string, double>> predicted = {
      {"duration", m.duration_s},
      {"completed", static_cast<double>(m.requests)},
      {"request_throughput", m.requests_per_s},
      {"output_throughput", m.output_tokens_per_s},
      {"total_token_throughput", m.tokens_per_s},
      {"mean_ttft_ms", m.ttft.mean * 1e3},
      {"median_ttft_ms", m.ttft.p50 * 1e3},
      {"p99_ttft_ms", m.ttft.p99 * 1e3},
      {"mean_tpot_ms", m.tpot.mean * 1e3},
      {"median_tpot_ms", m.tpot.p50 * 1e3},
      {"p99_tpot_ms", m.tpot.p99 * 1e3},
      {"mean_itl_ms", m.token_gap.mean * 1e3},
      {"median_itl_ms", m.token_gap.p50 * 1e3},
      {"p99_itl_ms", m.token_gap.p99 * 1e3},
      {"mean_e2el_ms", m.e2e.mean * 1e3},
      {"median_e2el_ms", m.e2e.p50 * 1e3},
      {"p99_e2el_ms", m.e2e.p99 * 1e3},
      {"mean_e2e_latency_ms", m.e2e.mean * 1e3},
      {"median_e2e_latency_ms", m.e2e.p50 * 1e3},
      {"p99_e2e_latency_ms", m.e2e.p99 * 1e3}};
  std::vector<Compared> out;
  for (const auto& [name, value] : predicted) {
    auto it = run.measured.find(name);
    if (it != run.measured.end()) out.push_back({name, it->second, value});
  }
  return out;
}

std::string ComparisonText(const serve::BenchmarkRun& run, const std::vector<Compared>& rows) {
  std::string out = "measured by the benchmark client (" + run.source + ")\n";
  out += fmt::format("  {:<24} {:>12} {:>12} {:>8}\n", "statistic", "measured", "stacksim", "error");
  for (const Compared& c : rows) {
    const std::string err = c.measured != 0 ? fmt::format("{:+.1f}%", (c.predicted - c.measured) / c.measured * 100) : "-";
    out += fmt::format("  {:<24} {:>12.4g} {:>12.4g} {:>8}\n", c.name, c.measured, c.predicted, err);
  }
  return out;
}

int RunServe(const ServeArgs& a) {
  serve::ServeOverrides o;
  o.rate_per_s = a.rate;
  o.requests = a.requests;
  o.seed = a.seed;
  if (!a.scheduler.empty()) o.scheduler = a.scheduler;
  serve::ServeConfig c = serve::LoadServeScenario(a.scenario, o);
  std::optional<serve::BenchmarkRun> bench;
  if (!a.requests_from.empty()) {
    if (a.rate || a.requests) {
      throw InputError("--requests-from", "", "the benchmark result gives the requests and their arrivals: "
                                              "it cannot be combined with --rate or --requests");
    }
    bench = serve::ReadBenchmarkResult(a.requests_from, c.workload.seed);
  }
  std::vector<serve::Request> requests = bench ? bench->requests : serve::GenerateRequests(c.workload);
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
        if (bench) {
          nlohmann::json rows = nlohmann::json::array();
          for (const Compared& x : CompareWithBenchmark(*bench, m)) {
            rows.push_back({{"statistic", x.name}, {"measured", x.measured}, {"predicted", x.predicted}});
          }
          j["benchmark"] = {{"file", bench->file}, {"source", bench->source}, {"failed", bench->failed},
                            {"compared", rows}};
        }
        return j;
      },
      [&] {
        std::string text =
            serve::ServeText(c, r, m) + "uncertainty (mean TTFT and TPOT)\n" + serve::ServeAssessmentText(u);
        if (bench) text += ComparisonText(*bench, CompareWithBenchmark(*bench, m));
        return text;
      });
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
  cmd->add_option("--requests-from", a->requests_from,
                  "Replay the requests of a benchmark client's result file (vLLM benchmark_serving.py / vllm bench "
                  "serve --save-result, SGLang bench_serving --output-details) and compare with what it measured");
  cmd->add_option("--scheduler", a->scheduler, "Scheduler (overrides scheduler.kind)")
      ->check(CLI::IsMember({"static", "continuous", "chunked-prefill", "prefill-first", "inflight", "persistent", "disaggregated"}));
  AddFormat(cmd, &a->format);
  return [a] { return RunServe(*a); };
}

}  // namespace stacksim::cli
