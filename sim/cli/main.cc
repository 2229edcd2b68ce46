// The stacksim command: parses arguments and calls the library.
//
// Exit status: 0 success, 2 bad input (InputError, bad arguments), 1 internal failure.
#include <CLI/CLI.hpp>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/fit/fit_profile.h"
#include "sim/campaign/campaign_report.h"
#include "sim/campaign/training_campaign.h"
#include "sim/chakra/chakra.h"
#include "sim/cluster/cluster_html.h"
#include "sim/cluster/cluster_report.h"
#include "sim/cluster/cluster_scenario.h"
#include "sim/compare/compare.h"
#include "sim/compare/compare_html.h"
#include "sim/config/scenario.h"
#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/diagnosis_report.h"
#include "sim/ingest/replay.h"
#include "sim/net/analytic_network.h"
#include "sim/net/simgrid_network.h"
#include "sim/report/html.h"
#include "sim/report/html_pages.h"
#include "sim/report/json_report.h"
#include "sim/report/perfetto.h"
#include "sim/report/text_report.h"
#include "sim/search/mpi_runner.h"
#include "sim/search/search.h"
#include "sim/search/search_report.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/serve_report.h"
#include "sim/serve/serve_search.h"
#include "sim/serve/serve_search_report.h"
#include "sim/serve/serve_sim.h"
#include "sim/serve/serve_validate.h"
#include "sim/simulate/simulate.h"
#include "sim/straggler/straggler.h"
#include "sim/straggler/straggler_report.h"
#include "sim/uncertainty/assessment.h"
#include "sim/util/error.h"
#include "sim/validate/validate.h"

namespace {

using namespace stacksim;

struct StragglerArgs {
  std::string spec;  // --stragglers: text form or a distribution file (.json)
  int steps = 1;
  uint64_t seed = 1;
  int threads = 1;
};

int RunSimulate(const std::string& path, const config::ScenarioOptions& opts, const std::string& format,
                const std::string& trace_path, bool print_config, const std::string& network,
                const std::string& html_path, const StragglerArgs& straggler_args,
                const std::string& chakra_dir, const std::string& chakra_format) {
  config::ScenarioConfig scenario = config::LoadScenario(path, opts);
  if (print_config) {
    std::cout << config::ResolvedConfigJson(scenario).dump(2) << "\n";
    return 0;
  }
  simulate::Options sim_opts;
  sim_opts.keep_trace = !trace_path.empty() || !html_path.empty() || !chakra_dir.empty();  // the page draws a timeline
  sim_opts.network = network;
  // Straggler input errors before the (possibly long) simulation.
  std::optional<straggler::StragglerSpec> spec;
  straggler::StragglerOptions straggler_opts;
  straggler_opts.steps = straggler_args.steps;
  straggler_opts.seed = straggler_args.seed;
  straggler_opts.threads = straggler_args.threads;
  straggler_opts.network = network;
  if (!straggler_args.spec.empty()) {
    spec = straggler::ParseStragglerArgument(straggler_args.spec, "--stragglers");
    straggler::CheckStragglerOptions(straggler_opts);
  }
  simulate::SimulationResult result = simulate::Simulate(scenario, sim_opts);
  std::optional<straggler::StragglerResult> stragglers;
  if (spec && result.out_of_memory) {
    std::cerr << "note: no straggler analysis: the plan was not simulated (out of memory)\n";
  } else if (spec) {
    stragglers = straggler::AnalyzeStragglers(scenario, *spec, straggler_opts);
  }
  if (!trace_path.empty()) {
    if (result.trace) {
      report::WritePerfettoTraceFile(*result.trace, *result.replay, scenario.name, trace_path);
    } else {
      std::cerr << "note: no trace written: the plan was not simulated (out of memory)\n";
    }
  }
  if (!chakra_dir.empty()) {
    if (result.trace) {
      chakra::WriteChakraDirectory(*result.trace, *result.replay, chakra_dir,
                                   chakra_format == "et" ? chakra::FileForm::kEt : chakra::FileForm::kJson);
    } else {
      std::cerr << "note: no Chakra trace written: the plan was not simulated (out of memory)\n";
    }
  }
  // How far the step can be trusted: a range from validated runs like it.
  uncertainty::Assessment trust = uncertainty::AssessPrediction(
      scenario, result.out_of_memory ? 0.0 : result.iteration.seconds(), network, uncertainty::DefaultErrorTablePath());
  if (format == "json") {
    nlohmann::json j = report::JsonReport(result);
    if (stragglers) j["stragglers"] = straggler::StragglerJson(*stragglers);
    j["uncertainty"] = trust.range ? uncertainty::StepRangeJson(*trust.range) : nlohmann::json(nullptr);
    j["warnings"] = trust.warnings;
    std::cout << j.dump(2) << "\n";
  } else {
    std::string text = report::TextReport(result);
    size_t step_line = text.find("\nstep time");
    size_t after = step_line == std::string::npos ? std::string::npos : text.find('\n', step_line + 1);
    if (after != std::string::npos) text.insert(after + 1, uncertainty::StepRangeLine(trust));
    std::cout << text << uncertainty::AssessmentText(trust);
    if (stragglers) std::cout << straggler::StragglerText(*stragglers);
  }
  if (!html_path.empty()) report::WriteHtmlFile(report::SimulateHtml(result), html_path);
  return 0;
}

// Replays Chakra execution traces on the scenario's hardware (topology and
// profile price the communication; the scenario's model and plan are unused).
int RunReplayChakra(const std::string& dir, const std::string& scenario_path, const config::ScenarioOptions& opts,
                    const std::string& network_name, bool recorded_comm, const std::string& format) {
  config::ScenarioConfig scenario = config::LoadScenario(scenario_path, opts);
  chakra::ImportOptions import;
  import.recorded_comm_durations = recorded_comm;
  import.ranks_per_node = scenario.topology.gpus_per_node;
  import.roofline = &scenario.profile;
  trace::Trace t = chakra::ReadChakraDirectory(dir, import);
  std::unique_ptr<engine::NetworkModel> network;
  if (network_name == "simgrid") {
    network = net::MakeSimGridNetwork(scenario.topology, scenario.profile, scenario.gpus, scenario.node_order);
  } else {
    network = std::make_unique<net::AnalyticNetwork>(scenario.topology, scenario.profile);
  }
  engine::FixedCostModel no_compute(FlopRate{1});  // imported compute nodes are fixed-duration tasks
  engine::ReplayResult replay = engine::Engine(no_compute, *network).Replay(t);
  if (format == "json") {
    nlohmann::json j = {{"chakra_dir", dir},        {"ranks", t.rank_count()},
                        {"tasks", t.size()},        {"network_model", network->name()},
                        {"step_time_s", replay.makespan.seconds()}, {"step_time_ns", replay.makespan.ns()}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "Chakra trace " << dir << ": " << t.rank_count() << " ranks, " << t.size() << " tasks\n"
              << "network model: " << network->name() << "\n"
              << "step time: " << replay.makespan.ms() << " ms\n";
  }
  return 0;
}

struct SearchArgs {
  std::string scenario;
  config::ScenarioOptions opts;
  std::string format = "text";
  std::string objective = "time";
  std::string gpus;
  int top = 10;
  int threads = 0;
  int batch = 16;
  double gpu_hour_usd = 0;
  double gpu_watts = 0;
  std::string html;
};

int RunSearch(const SearchArgs& a) {
  // Replays allocate and free traces of up to hundreds of MB, hundreds of
  // times: keep freed memory in the heap instead of returning it to the
  // kernel and faulting it in again (a third of the search's time otherwise).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  config::ScenarioConfig scenario = config::LoadScenario(a.scenario, a.opts);
  search::SearchSpace space;
  space.scenario = scenario;
  if (!a.gpus.empty()) space.gpu_counts = search::ParseGpuRange(a.gpus, scenario.topology);
  search::SearchOptions options;
  options.objective = search::ParseObjective(a.objective);
  options.top = a.top;
  options.batch = a.batch;
  options.economics = search::LookUpEconomics(scenario);
  if (a.gpu_hour_usd > 0) {
    options.economics.gpu_hour_usd = a.gpu_hour_usd;
    options.economics.price_source = "--gpu-hour-usd";
  }
  if (a.gpu_watts > 0) {
    options.economics.gpu_watts = a.gpu_watts;
    options.economics.power_source = "--gpu-watts";
  }
  search::MpiContext mpi;
  // Ranks sharing a machine share its cores.
  options.threads = a.threads > 0 ? a.threads : std::max(1, search::Workers(0) / mpi.local_size());
  search::MpiRunner runner(mpi, options.threads);
  if (mpi.active()) options.runner = &runner;
  search::SearchResult result = search::Search(space, options);
  if (mpi.rank() != 0) return result.plans.empty() ? 2 : 0;
  if (a.format == "json") {
    std::cout << search::SearchJson(result).dump(2) << "\n";
  } else if (a.format == "csv") {
    std::cout << search::SearchCsv(result);
  } else {
    std::cout << search::SearchText(result);
  }
  if (!a.html.empty()) {
    // The page shows the best plan's step as simulate would: simulate it
    // again, with its trace (the search keeps step times only).
    simulate::SimulationResult best;
    if (!result.plans.empty()) {
      config::ScenarioConfig best_scenario = scenario;
      best_scenario.gpus = result.plans.front().point.gpus;
      best_scenario.plan = result.plans.front().plan;
      simulate::Options sim_opts;
      sim_opts.keep_trace = true;
      best = simulate::Simulate(best_scenario, sim_opts);
    }
    report::WriteHtmlFile(report::SearchHtml(result, result.plans.empty() ? nullptr : &best), a.html);
  }
  if (result.plans.empty()) {
    std::cerr << "error: " << scenario.file << ": no plan of the search space is valid and fits in memory ("
              << result.counts.enumeration.invalid_total() << " invalid, " << result.counts.out_of_memory
              << " out of GPU memory, " << result.counts.host_memory << " out of host memory)\n";
    return 2;
  }
  return 0;
}

struct CompareArgs {
  std::string model, scenario;
  config::ScenarioOptions opts;   // --set and --profile apply to --scenario
  int64_t seq_len = 0, global_batch = 0;
  std::string precision = "bf16";
  std::string tokens;
  std::vector<std::string> clusters;
  std::string objective = "time";
  std::string format = "text";
  std::string html;
  int threads = 0;
};

// Sequences per step when only a model is given: about 4M tokens, the
// global batch of Llama 3's first pre-training stage (arXiv:2407.21783
// section 3.4.1), at the given sequence length.
constexpr int64_t kDefaultBatchTokens = int64_t{4} << 20;
constexpr int64_t kDefaultSeqLen = 4096;

int RunCompare(const CompareArgs& a) {
  mallopt(M_MMAP_MAX, 0);  // as RunSearch: replays reuse the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (a.model.empty() == a.scenario.empty()) {
    throw InputError("compare", "", "give either --model or --scenario (the model, batch and fixed plan fields)");
  }
  compare::CompareRequest request;
  if (!a.scenario.empty()) {
    if (a.precision != "bf16") {
      throw InputError("--precision", "", "applies to --model; with --scenario use --set plan.precision=...");
    }
    request.base = config::LoadScenario(a.scenario, a.opts);
    if (a.seq_len > 0) request.base.seq_len = a.seq_len;
    if (a.global_batch > 0) request.base.plan.global_batch = a.global_batch;
  } else {
    if (!a.opts.overrides.empty()) throw InputError("--set", "", "applies to --scenario, not to --model");
    const int64_t seq = a.seq_len > 0 ? a.seq_len : kDefaultSeqLen;
    const int64_t batch = a.global_batch > 0 ? a.global_batch : std::max<int64_t>(1, kDefaultBatchTokens / seq);
    request.base = compare::BaseScenario(a.model, seq, batch,
                                         a.precision == "fp8" ? config::Precision::kFp8 : config::Precision::kBf16);
  }
  request.tokens = compare::ParseTokenCount(a.tokens);
  for (const std::string& c : a.clusters) request.clusters.push_back(compare::ParseClusterSpec(c));
  compare::CompareOptions options;
  options.objective = search::ParseObjective(a.objective);
  search::MpiContext mpi;
  options.threads = a.threads > 0 ? a.threads : std::max(1, search::Workers(0) / mpi.local_size());
  search::MpiRunner runner(mpi, options.threads);
  if (mpi.active()) options.runner = &runner;
  compare::Comparison c = compare::Compare(request, options);
  if (mpi.rank() != 0) return 0;
  if (a.format == "json") {
    std::cout << compare::ComparisonJson(c).dump(2) << "\n";
  } else {
    std::cout << compare::ComparisonText(c);
  }
  if (!a.html.empty()) {
    // The page shows each best plan's breakdown and memory: simulate them.
    std::vector<simulate::SimulationResult> runs;
    for (const compare::ClusterResult& r : c.clusters) {
      if (r.ok()) runs.push_back(simulate::Simulate(r.scenario));
    }
    std::vector<const simulate::SimulationResult*> best_runs;
    size_t next = 0;
    for (const compare::ClusterResult& r : c.clusters) best_runs.push_back(r.ok() ? &runs[next++] : nullptr);
    report::WriteHtmlFile(compare::ComparisonHtml(c, best_runs), a.html);
  }
  return c.best >= 0 ? 0 : 2;
}

int RunDiagnose(const std::string& path, const config::ScenarioOptions& opts, const std::string& format,
                const std::string& network, const std::string& html_path) {
  config::ScenarioConfig scenario = config::LoadScenario(path, opts);
  diagnose::DiagnoseOptions options;
  options.network = network;
  diagnose::Diagnosis d = diagnose::Diagnose(scenario, options);
  if (format == "json") {
    std::cout << diagnose::DiagnosisJson(d).dump(2) << "\n";
  } else {
    std::cout << diagnose::DiagnosisText(d);
  }
  if (!html_path.empty()) report::WriteHtmlFile(report::DiagnosisHtml(d), html_path);
  return 0;
}

struct ClusterArgs {
  std::string scenario;
  std::string scheduler, placement;  // empty: the scenario's
  std::string format = "text";
  std::string html;
};

int RunClusterCommand(const ClusterArgs& a) {
  cluster::ClusterScenario scenario = cluster::LoadClusterScenario(a.scenario);
  cluster::ClusterOptions options = scenario.options;
  if (!a.scheduler.empty()) options.scheduler = cluster::ParseScheduler(a.scheduler, "--scheduler");
  if (!a.placement.empty()) options.placement = cluster::ParsePlacement(a.placement, "--placement");
  cluster::ClusterResult result = cluster::RunClusterScenario(scenario, options);
  if (a.format == "json") {
    std::cout << cluster::ClusterJson(result).dump(2) << "\n";
  } else {
    std::cout << cluster::ClusterText(result);
  }
  if (!a.html.empty()) report::WriteHtmlFile(cluster::ClusterHtml(result), a.html);
  return 0;
}

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
  campaign::TrainingCampaign c = campaign::RunTrainingCampaign(scenario, step.iteration, request);
  if (a.format == "json") {
    std::cout << campaign::CampaignJson(c).dump(2) << "\n";
  } else {
    std::cout << campaign::CampaignText(c);
  }
  return 0;
}

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
  double price = c.topology.gpu_hour_usd;
  std::string source = price > 0 ? "topology file" : "";
  const std::string econ = config::DataRoot() + "/economics/gpus.json";
  if (price <= 0 && std::filesystem::is_regular_file(econ)) {
    search::Economics e = search::LookUpEconomics(econ, c.topology.gpu);
    price = e.gpu_hour_usd;
    source = e.price_basis;
  }
  serve::ServeMetrics m = serve::ComputeMetrics(c, r, price, source);
  if (a.format == "json") {
    std::cout << serve::ServeJson(c, r, m).dump(2) << "\n";
  } else {
    std::cout << serve::ServeText(c, r, m);
  }
  return 0;
}

int RunServeValidate(const std::string& path, const std::string& format, const std::string& only) {
  serve::ServingValidationReport rep = serve::RunServingValidation(path, only);
  if (!only.empty() && rep.runs.empty()) throw InputError(path, "runs", "no entry with id '" + only + "'");
  if (format == "json") {
    std::cout << serve::ServingValidationJson(rep).dump(2) << "\n";
  } else {
    std::cout << serve::ServingValidationText(rep);
  }
  return 0;
}

struct ServeSearchArgs {
  std::string scenario;
  std::string slo;
  std::optional<double> rate;
  std::optional<int64_t> requests;
  std::optional<uint64_t> seed;
  serve::ServeSearchFlags flags;
  std::string objective = "cost-per-hour";
  std::string format = "text";
  int top = 5;
  int max_replicas = 64;
  int threads = 0;
};

int RunServeSearch(const ServeSearchArgs& a) {
  serve::ServeSearchOptions opts;
  opts.slo = serve::ParseSlo(a.slo, "--slo");
  opts.objective = serve::ParseServeObjective(a.objective, "--objective");
  serve::ServeOverrides o;
  o.seed = a.seed;
  if (a.rate) o.rate_per_s = a.rate;
  serve::ServeConfig base = serve::LoadServeScenario(a.scenario, o);
  opts.rate_per_s = base.workload.rate_per_s;
  if (a.requests) opts.requests = *a.requests;
  opts.max_replicas = a.max_replicas;
  opts.threads = a.threads;
  serve::ServeSearchSpace space = serve::BuildServeSearchSpace(base, a.flags);
  serve::ServeSearchResult r = serve::SearchServing(space, opts);
  if (a.format == "json") {
    std::cout << serve::ServeSearchJson(r, a.top).dump(2) << "\n";
  } else {
    std::cout << serve::ServeSearchText(r, a.top);
  }
  return 0;
}

int RunValidate(const std::string& path, const std::string& format, const std::string& only,
                const std::string& error_table_path) {
  if (!only.empty() && !error_table_path.empty()) {
    throw InputError("--write-error-table", "", "needs every run: it cannot be combined with --run");
  }
  validate::ValidationOptions opts;
  opts.only_id = only;
  validate::ValidationReport rep = validate::RunValidation(path, opts);
  if (!error_table_path.empty()) {
    validate::StampErrorTable(rep.error_table, config::DataRoot());
    std::ofstream out(error_table_path);
    out << uncertainty::ErrorTableToJson(rep.error_table).dump(2) << "\n";
    if (!out) throw InputError(error_table_path, "", "cannot write the error table");
  }
  if (format == "json") {
    std::cout << validate::ValidationJson(rep).dump(2) << "\n";
  } else {
    std::cout << validate::ValidationText(rep);
  }
  return 0;
}

// The calibration harness is a separate program (it needs CUDA); it sits
// beside this one when the build found CUDA.
std::string HarnessPath() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  auto harness = self.parent_path() / "stacksim-calibrate";
  return std::filesystem::exists(harness) ? harness.string() : "";
}

int RunCalibrate(std::vector<std::string> args) {
  std::string harness = HarnessPath();
  if (harness.empty()) {
    std::cerr << "stacksim calibrate: this build has no calibration harness (CUDA was not found when it was "
                 "configured); nothing measured\n";
    return 2;
  }
  args.insert(args.begin(), harness);
  if (std::find(args.begin(), args.end(), "--data-dir") == args.end()) {
    args.push_back("--data-dir");
    args.push_back(config::DataRoot());
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(harness.c_str(), argv.data());
  std::cerr << "stacksim calibrate: cannot run " << harness << "\n";
  return 1;
}

int RunProjectProfile(const std::string& measured_path, const std::string& target, const std::string& out) {
  nlohmann::json measured = ReadJsonFile(measured_path);
  config::ParseProfile(JsonNode(measured, measured_path, ""));  // validate
  std::string target_path = config::ResolveDataFile("profiles", target, measured_path);
  nlohmann::json datasheet = ReadJsonFile(target_path);
  config::ParseProfile(JsonNode(datasheet, target_path, ""));
  nlohmann::json projected = calibrate::ProjectProfile(measured, datasheet, measured_path, target);
  std::ofstream f(out);
  if (!f) throw InputError(out, "", "cannot write the projected profile");
  f << projected.dump(2) << "\n";
  if (!f) throw InputError(out, "", "cannot write the projected profile");
  std::cerr << "wrote " << out << " (" << target << " projected from " << measured_path << ")\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stacksim: predict how large-model training runs on GPU clusters"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for all subcommands");

  std::string format = "text";
  auto add_format = [&](CLI::App* cmd) {
    cmd->add_option("--format", format, "Output format")->check(CLI::IsMember({"text", "json"}));
  };

  CLI::App* sim = app.add_subcommand("simulate", "Simulate one training step of a scenario");
  std::string scenario_path, trace_path, network = "analytic";
  config::ScenarioOptions opts;
  bool print_config = false;
  sim->add_option("scenario", scenario_path, "Scenario JSON file")->required();
  add_format(sim);
  sim->add_option("--trace", trace_path, "Write a Chrome/Perfetto trace of the step to FILE");
  sim->add_option("--set", opts.overrides, "Override a scenario field: key.path=value (repeatable)");
  sim->add_option("--profile", opts.profile_path, "Use this hardware profile instead of the topology's");
  sim->add_option("--network", network, "Network model")->check(CLI::IsMember({"analytic", "simgrid"}));
  sim->add_flag("--print-config", print_config, "Print the fully resolved configuration and exit");
  std::string sim_html;
  sim->add_option("--html", sim_html, "Also write a self-contained HTML report with charts to FILE");
  StragglerArgs straggler_args;
  CLI::Option* stragglers_opt = sim->add_option(
      "--stragglers", straggler_args.spec,
      "Slow nodes/GPUs: FRACTION%:SLOWDOWNx terms (e.g. 0.1%:1.5x,gpu:0.5%:1.2x) or a distribution .json");
  sim->add_option("--straggler-steps", straggler_args.steps, "Steps to simulate; transient stragglers are redrawn each")
      ->check(CLI::Range(1, 1000000))
      ->needs(stragglers_opt);
  sim->add_option("--seed", straggler_args.seed, "Seed of the straggler draws");
  sim->add_option("--threads", straggler_args.threads, "Threads for the straggler replays (results do not depend on it)")
      ->check(CLI::Range(1, 4096));
  std::string chakra_dir, chakra_format = "json";
  CLI::Option* chakra_opt = sim->add_option(
      "--chakra", chakra_dir, "Write the replayed step as Chakra execution traces (one file per rank) to DIR");
  sim->add_option("--chakra-format", chakra_format, "Form of the --chakra files: json (as Chakra's jsonizer) or et (protobuf)")
      ->check(CLI::IsMember({"json", "et"}))
      ->needs(chakra_opt);

  CLI::App* rchk = app.add_subcommand("replay-chakra", "Replay Chakra execution traces (DIR/NAME.RANK.json or .et)");
  std::string rchk_dir, rchk_scenario, rchk_network = "analytic";
  config::ScenarioOptions rchk_opts;
  bool rchk_recorded = false;
  rchk->add_option("dir", rchk_dir, "Directory of Chakra files (JSON or protobuf .et), one per rank")->required();
  rchk->add_option("--scenario", rchk_scenario, "Scenario whose topology and profile price the communication")
      ->required();
  rchk->add_option("--set", rchk_opts.overrides, "Override a scenario field: key.path=value (repeatable)");
  rchk->add_option("--network", rchk_network, "Network model")->check(CLI::IsMember({"analytic", "simgrid"}));
  rchk->add_flag("--recorded-comm", rchk_recorded, "Time collectives by their recorded duration_micros");
  add_format(rchk);

  CLI::App* val = app.add_subcommand("validate", "Compare predictions with published training runs");
  std::string validation_path, only;
  val->add_option("file", validation_path, "Validation file (schema stacksim.validation.training/1)")->required();
  val->add_option("--run", only, "Validate only the run with this id");
  std::string error_table_path;
  val->add_option("--write-error-table", error_table_path,
                  "Also write the per-run errors and features to FILE (validation/error_table.json)");
  add_format(val);

  CLI::App* srch = app.add_subcommand("search", "Search parallel plans for a scenario's model, cluster and batch");
  SearchArgs search_args;
  srch->add_option("scenario", search_args.scenario, "Scenario JSON file (its plan fixes what is not searched)")->required();
  srch->add_option("--format", search_args.format, "Output format")->check(CLI::IsMember({"text", "json", "csv"}));
  srch->add_option("--top", search_args.top, "Plans to rank")->check(CLI::Range(1, 100000));
  srch->add_option("--objective", search_args.objective, "What to minimise (throughput: maximise tokens/s)")
      ->check(CLI::IsMember({"time", "throughput", "cost", "energy"}));
  srch->add_option("--gpus", search_args.gpus, "GPU count N or range LO..HI (whole nodes); default: the scenario's");
  srch->add_option("--threads", search_args.threads, "Threads (default: all cores, shared by local MPI ranks)")
      ->check(CLI::Range(1, 4096));
  srch->add_option("--batch", search_args.batch, "Plans simulated per round (changes pruning counts, not the ranking)")
      ->check(CLI::Range(1, 100000));
  srch->add_option("--gpu-hour-usd", search_args.gpu_hour_usd, "Price per GPU-hour (overrides the topology and economics/gpus.json)")
      ->check(CLI::PositiveNumber);
  srch->add_option("--gpu-watts", search_args.gpu_watts, "Power per GPU in W (overrides economics/gpus.json)")
      ->check(CLI::PositiveNumber);
  srch->add_option("--set", search_args.opts.overrides, "Override a scenario field: key.path=value (repeatable)");
  srch->add_option("--profile", search_args.opts.profile_path, "Use this hardware profile instead of the topology's");
  srch->add_option("--html", search_args.html, "Also write a self-contained HTML report with charts to FILE");

  CLI::App* diag = app.add_subcommand(
      "diagnose", "Attribute the gap to an ideal step to the five layers and re-simulate remedies");
  std::string diag_path;
  config::ScenarioOptions diag_opts;
  diag->add_option("scenario", diag_path, "Scenario JSON file")->required();
  add_format(diag);
  diag->add_option("--set", diag_opts.overrides, "Override a scenario field: key.path=value (repeatable)");
  diag->add_option("--profile", diag_opts.profile_path, "Use this hardware profile instead of the topology's");
  std::string diag_html;
  diag->add_option("--html", diag_html, "Also write a self-contained HTML report with charts to FILE");

  CLI::App* cmp = app.add_subcommand("compare", "Compare clusters for one model and token budget: best plan, days, cost, energy");
  CompareArgs compare_args;
  cmp->add_option("--model", compare_args.model, "Model name (models/) or file");
  cmp->add_option("--scenario", compare_args.scenario, "Take model, batch and fixed plan fields from this scenario");
  cmp->add_option("--tokens", compare_args.tokens, "Token budget to train, e.g. 15T, 300B")->required();
  cmp->add_option("--cluster", compare_args.clusters, "TOPOLOGY:GPUS[@USD per GPU-hour], GPUS as N or LO..HI (repeatable)")
      ->required();
  cmp->add_option("--seq-len", compare_args.seq_len, "Tokens per sequence (default: the scenario's, else 4096)")
      ->check(CLI::PositiveNumber);
  cmp->add_option("--global-batch", compare_args.global_batch,
                  "Sequences per step (default: the scenario's, else about 4M tokens)")
      ->check(CLI::PositiveNumber);
  cmp->add_option("--precision", compare_args.precision, "Training precision with --model")
      ->check(CLI::IsMember({"bf16", "fp8"}));
  cmp->add_option("--objective", compare_args.objective, "Best plan per cluster by (and best cluster by)")
      ->check(CLI::IsMember({"time", "throughput", "cost", "energy"}));
  cmp->add_option("--format", compare_args.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmp->add_option("--html", compare_args.html, "Also write a self-contained HTML report with charts to FILE");
  cmp->add_option("--threads", compare_args.threads, "Threads (default: all cores)")->check(CLI::Range(1, 4096));
  cmp->add_option("--set", compare_args.opts.overrides, "Override a field of --scenario: key.path=value (repeatable)");

  CLI::App* clus = app.add_subcommand("cluster", "Simulate many jobs sharing one cluster: scheduler, placement, failures");
  ClusterArgs cluster_args;
  clus->add_option("scenario", cluster_args.scenario, "Cluster scenario JSON file (topology, nodes, jobs)")->required();
  clus->add_option("--scheduler", cluster_args.scheduler, "Scheduler (default: the scenario's, else backfill)")
      ->check(CLI::IsMember({"fifo", "backfill", "fairshare"}));
  clus->add_option("--placement", cluster_args.placement, "Placement policy (default: the scenario's, else topology)")
      ->check(CLI::IsMember({"topology", "first-fit"}));
  clus->add_option("--format", cluster_args.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  clus->add_option("--html", cluster_args.html, "Also write a self-contained HTML report with charts to FILE");

  CLI::App* camp = app.add_subcommand(
      "run-campaign", "Monte Carlo of a whole training run: failures, restarts, checkpoints, time to train");
  CampaignArgs campaign_args;
  camp->add_option("scenario", campaign_args.scenario, "Scenario JSON file (its step time is simulated)")->required();
  camp->add_option("--tokens", campaign_args.tokens, "Token budget to train, e.g. 15T, 300B");
  camp->add_option("--duration", campaign_args.duration, "Instead of --tokens: a wall-clock span, e.g. 54d");
  camp->add_option("--checkpoint-interval", campaign_args.interval,
                   "Training time between checkpoints, e.g. 30min, 2h, or auto (the sweep's best)");
  camp->add_flag("--async-checkpoint", campaign_args.async_checkpoint,
                 "Snapshot to host memory, write in the background (default: the job stops for the write)");
  camp->add_option("--spares", campaign_args.spares, "Spare nodes (0: a failed node's job waits for its repair)")
      ->check(CLI::Range(0, 1000000));
  camp->add_option("--reliability", campaign_args.reliability,
                   "Failure rates and recovery times (default: reliability/llama3-16k-h100.json)");
  camp->add_option("--storage-write", campaign_args.storage_write, "Checkpoint write bandwidth, e.g. '2 TB/s' (overrides the topology)");
  camp->add_option("--storage-read", campaign_args.storage_read, "Checkpoint read bandwidth (overrides the topology)");
  camp->add_option("--trials", campaign_args.trials, "Monte Carlo trials")->check(CLI::Range(1, 10000000));
  camp->add_option("--seed", campaign_args.seed, "Random seed (trial i uses (seed, i): same output for any --threads)");
  camp->add_option("--threads", campaign_args.threads, "Threads (default: all cores)")->check(CLI::Range(1, 4096));
  camp->add_option("--set", campaign_args.opts.overrides, "Override a scenario field: key.path=value (repeatable)");
  camp->add_option("--profile", campaign_args.opts.profile_path, "Use this hardware profile instead of the topology's");
  camp->add_option("--format", campaign_args.format, "Output format")->check(CLI::IsMember({"text", "json"}));

  CLI::App* srv = app.add_subcommand("serve", "Simulate serving requests: batching, KV cache, TTFT/TPOT, goodput, cost");
  ServeArgs serve_args;
  srv->add_option("scenario", serve_args.scenario, "Serving scenario JSON file")->required();
  srv->add_option("--rate", serve_args.rate, "Arrival rate, requests/s (overrides workload.rate_per_s)")
      ->check(CLI::PositiveNumber);
  srv->add_option("--requests", serve_args.requests, "Requests to simulate (overrides workload.requests)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  srv->add_option("--seed", serve_args.seed, "Workload seed (overrides workload.seed)");
  srv->add_option("--scheduler", serve_args.scheduler, "Scheduler (overrides scheduler.kind)")
      ->check(CLI::IsMember({"static", "continuous", "chunked-prefill", "disaggregated"}));
  srv->add_option("--format", serve_args.format, "Output format")->check(CLI::IsMember({"text", "json"}));

  CLI::App* sval = app.add_subcommand("serve-validate", "Compare serving predictions with published measurements");
  std::string serve_validation_path, serve_only;
  sval->add_option("file", serve_validation_path, "Validation file (schema stacksim.validation.serving/1)")->required();
  sval->add_option("--run", serve_only, "Validate only the entry with this id");
  add_format(sval);

  CLI::App* ssrch = app.add_subcommand("serve-search", "Cheapest serving configuration that meets latency SLOs at a load");
  ServeSearchArgs ss_args;
  ssrch->add_option("scenario", ss_args.scenario, "Serving scenario JSON file (model, workload, memory settings)")
      ->required();
  ssrch->add_option("--slo", ss_args.slo, "Latency targets, e.g. ttft_p99=2s,tpot_p99=100ms")->required();
  ssrch->add_option("--rate", ss_args.rate, "Arrival rate of the whole deployment, requests/s (default: the scenario's)")
      ->check(CLI::PositiveNumber);
  ssrch->add_option("--requests", ss_args.requests, "Requests per simulation (default: the scenario's)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  ssrch->add_option("--seed", ss_args.seed, "Workload seed (overrides workload.seed)");
  ssrch->add_option("--gpus", ss_args.flags.gpus, "GPU types to try, e.g. h100-sxm-80gb,h200-sxm-141gb (default: the scenario's)");
  ssrch->add_option("--topologies", ss_args.flags.topologies, "Topologies to try instead of --gpus, e.g. dgx-h100,hgx-h200");
  ssrch->add_option("--tp", ss_args.flags.tp, "TP sizes per replica (default: 1,2,4,... up to the node)");
  ssrch->add_option("--pp", ss_args.flags.pp, "PP sizes per replica (default: 1)");
  ssrch->add_option("--weights", ss_args.flags.weights, "Weight formats: bf16,fp8,int8,int4 (default: bf16,fp8)");
  ssrch->add_option("--kv", ss_args.flags.kv, "KV cache formats: bf16,fp8,int8 (default: bf16,fp8)");
  ssrch->add_option("--chunks", ss_args.flags.chunks, "Chunked-prefill token budgets, or none (default: 512,2048)");
  ssrch->add_option("--max-sequences", ss_args.flags.max_sequences, "Sequence limits per replica (default: the scenario's)");
  ssrch->add_option("--max-replicas", ss_args.max_replicas, "Most replicas to try per configuration")
      ->check(CLI::Range(1, 100000));
  ssrch->add_option("--objective", ss_args.objective, "Rank by cost-per-hour or cost-per-token");
  ssrch->add_option("--top", ss_args.top, "Configurations to show")->check(CLI::Range(1, 100000));
  ssrch->add_option("--threads", ss_args.threads, "Threads (default: all cores)")->check(CLI::Range(1, 4096));
  ssrch->add_option("--format", ss_args.format, "Output format")->check(CLI::IsMember({"text", "json"}));

  CLI::App* cal = app.add_subcommand("calibrate", "Measure the local GPU and write a hardware profile (needs CUDA)");
  cal->prefix_command();  // everything after 'calibrate' goes to the harness
  CLI::App* rep = app.add_subcommand("replay", "Replay a PyTorch profiler (Kineto) trace; what-if on another GPU or DP scale");
  stacksim::ingest::ReplayOptions replay_opts;
  rep->add_option("trace", replay_opts.trace_path, "Kineto Chrome-trace JSON (.json or .json.gz)")->required();
  rep->add_option("--profile", replay_opts.profile_path, "Profile of the recording's GPU (default: H200)");
  rep->add_option("--to-profile", replay_opts.to_profile_path, "Re-time the kernels on this GPU profile");
  rep->add_option("--topology", replay_opts.topology_path, "Topology for --dp");
  rep->add_option("--dp", replay_opts.dp, "Data-parallel ranks")->check(CLI::Range(1, 1 << 20));
  rep->add_option("--params", replay_opts.params, "Model parameters for an inserted DP all-reduce (default: TRACE's .meta.json)");
  rep->add_option("--perfetto", replay_opts.perfetto_path, "Write the replayed (re-timed) step as a Perfetto trace");
  rep->add_option("--format", replay_opts.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  CLI::App* proj = app.add_subcommand("project-profile", "Project a measured profile onto another GPU's datasheet");
  std::string measured_path, target, proj_out;
  proj->add_option("measured", measured_path, "Measured profile JSON")->required();
  proj->add_option("--to", target, "Target GPU profile name or file (e.g. h100-sxm-80gb)")->required();
  proj->add_option("--out", proj_out, "Output profile JSON")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  try {
    if (sim->parsed()) {
      return RunSimulate(scenario_path, opts, format, trace_path, print_config, network, sim_html, straggler_args,
                         chakra_dir, chakra_format);
    }
    if (rchk->parsed()) {
      return RunReplayChakra(rchk_dir, rchk_scenario, rchk_opts, rchk_network, rchk_recorded, format);
    }
    if (val->parsed()) return RunValidate(validation_path, format, only, error_table_path);
    if (srch->parsed()) return RunSearch(search_args);
    if (cmp->parsed()) return RunCompare(compare_args);
    if (clus->parsed()) return RunClusterCommand(cluster_args);
    if (camp->parsed()) return RunCampaign(campaign_args);
    if (srv->parsed()) return RunServe(serve_args);
    if (sval->parsed()) return RunServeValidate(serve_validation_path, format, serve_only);
    if (ssrch->parsed()) return RunServeSearch(ss_args);
    if (diag->parsed()) return RunDiagnose(diag_path, diag_opts, format, "analytic", diag_html);
    if (cal->parsed()) return RunCalibrate(cal->remaining());
    if (rep->parsed()) {
      std::cout << stacksim::ingest::RunReplayCommand(replay_opts);
      return 0;
    }
    if (proj->parsed()) return RunProjectProfile(measured_path, target, proj_out);
  } catch (const stacksim::InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
