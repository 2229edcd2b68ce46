// stacksim compare --model M|--scenario S --tokens T --cluster C...: the best
// plan on each cluster for one model and token budget, and what training
// costs there in days, dollars and energy.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/compare/compare.h"
#include "sim/util/token_count.h"
#include "sim/report/compare_html.h"
#include "sim/config/hardware_match.h"
#include "sim/config/scenario.h"
#include "sim/report/html.h"
#include "sim/search/mpi_runner.h"
#include "sim/search/search.h"
#include "sim/simulate/simulate.h"
#include "sim/simulate/step_in_child.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::cli {
namespace {

struct CompareArgs {
  std::string model, scenario;
  config::ScenarioOptions opts;  // --set applies to --scenario
  int64_t seq_len = 0, global_batch = 0;
  std::string precision = "bf16";
  std::string tokens;
  std::vector<std::string> clusters;
  std::string network = "analytic";
  std::string objective = "time";
  std::string format = "text";
  std::string html;
  int threads = 0;
  std::string rank = "expected";
  std::string min_headroom;
};

// Sequences per step when only a model is given: about 4M tokens, the
// global batch of Llama 3's first pre-training stage (arXiv:2407.21783
// section 3.4.1), at the given sequence length.
constexpr int64_t kDefaultBatchTokens = int64_t{4} << 20;
constexpr int64_t kDefaultSeqLen = 4096;

// A precision a cluster's GPU lacks (fp8 on A100s) would make every plan of
// that cluster invalid without saying why: refused here, naming the cluster.
// Topologies or profiles that do not exist are left to compare to report.
void RequireClusterPrecision(const compare::ClusterSpec& spec, config::Precision precision, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string topology_file = config::ResolveDataFile("topologies", spec.topology, "");
  if (!fs::is_regular_file(topology_file, ec)) return;
  const config::TopologyConfig topology = config::LoadTopologyFile(topology_file);
  const std::string profile_file = config::ResolveDataFile("profiles", topology.gpu, "");
  if (!fs::is_regular_file(profile_file, ec)) return;
  config::RequireGemmPrecision(config::LoadProfileFile(profile_file), profile_file, precision, "--cluster", text);
}

// --network simgrid: the search ranks plans with the analytic model (a
// flow-level replay per plan would take minutes); each cluster's best plan
// is then replayed with the contention model, in its own process.
struct Contention {
  std::string cluster;
  Time analytic, step;
};

std::vector<Contention> Recheck(const compare::Comparison& c, const std::string& network) {
  std::vector<Contention> out;
  for (const compare::ClusterResult& r : c.clusters) {
    if (!r.ok()) continue;
    out.push_back({r.spec.text, r.best().step, simulate::RunStepInChild(r.scenario, network).iteration});
  }
  return out;
}

nlohmann::json ContentionJson(const std::vector<Contention>& rows, const std::string& network) {
  nlohmann::json j = nlohmann::json::array();
  for (const Contention& r : rows) {
    j.push_back({{"cluster", r.cluster}, {"network", network}, {"step_s", r.step.seconds()},
                 {"analytic_step_s", r.analytic.seconds()}});
  }
  return j;
}

std::string ContentionText(const std::vector<Contention>& rows, const std::string& network) {
  if (rows.empty()) return "";
  std::string out = "\nbest plans replayed with --network " + network + " (contention between concurrent collectives):\n";
  for (const Contention& r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-32s %.4g s (analytic %.4g s, %+.1f%%)\n", r.cluster.c_str(), r.step.seconds(),
                  r.analytic.seconds(), 100.0 * (r.step.seconds() / r.analytic.seconds() - 1));
    out += line;
  }
  return out;
}

int RunCompare(const CompareArgs& a) {
  mallopt(M_MMAP_MAX, 0);  // as search: replays reuse the heap
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
  // A scenario's "compare" block (checked by the scenario parser) answers
  // what the command line leaves out.
  std::string tokens = a.tokens;
  std::vector<std::string> clusters = a.clusters;
  if (!a.scenario.empty() && (tokens.empty() || clusters.empty())) {
    const nlohmann::json doc = ReadJsonFile(request.base.file);
    if (auto block = doc.find("compare"); block != doc.end()) {
      if (tokens.empty()) tokens = block->at("tokens").get<std::string>();
      if (clusters.empty()) clusters = block->at("clusters").get<std::vector<std::string>>();
    }
  }
  if (tokens.empty()) throw InputError("--tokens", "", "give a token budget (or a scenario with compare.tokens)");
  if (clusters.empty()) throw InputError("--cluster", "", "give at least one cluster (or a scenario with compare.clusters)");
  request.tokens = ParseTokenCount(tokens);
  for (const std::string& c : clusters) {
    request.clusters.push_back(compare::ParseClusterSpec(c));
    RequireClusterPrecision(request.clusters.back(), request.base.plan.precision, c);
  }
  compare::CompareOptions options;
  options.objective = search::ParseObjective(a.objective);
  options.ranking = search::ParseRanking(a.rank);
  if (!a.min_headroom.empty()) options.headroom.fixed = ParseBytes(a.min_headroom, "--min-headroom", "");
  search::MpiContext mpi;
  options.threads = a.threads > 0 ? a.threads : std::max(1, search::Workers(0) / mpi.local_size());
  search::MpiRunner runner(mpi, options.threads);
  if (mpi.active()) options.runner = &runner;
  compare::Comparison c = compare::Compare(request, options);
  if (mpi.rank() != 0) return 0;
  std::vector<Contention> contention;
  if (a.network != "analytic") contention = Recheck(c, a.network);
  PrintResult(
      a.format,
      [&] {
        nlohmann::json j = compare::ComparisonJson(c);
        if (!contention.empty()) j["contention"] = ContentionJson(contention, a.network);
        return j;
      },
      [&] { return compare::ComparisonText(c) + ContentionText(contention, a.network); });
  if (!a.html.empty()) {
    // The page shows each best plan's breakdown and memory: simulate them.
    std::vector<simulate::SimulationResult> runs;
    for (const compare::ClusterResult& r : c.clusters) {
      if (r.ok()) runs.push_back(simulate::Simulate(r.scenario));
    }
    std::vector<const simulate::SimulationResult*> best_runs;
    size_t next = 0;
    for (const compare::ClusterResult& r : c.clusters) best_runs.push_back(r.ok() ? &runs[next++] : nullptr);
    report::WriteHtmlFile(report::ComparisonHtml(c, best_runs), a.html);
  }
  if (c.best >= 0) return 0;
  // No best cluster: an answer (exit 3) when no plan fits any cluster's
  // memory, bad input (2) otherwise (no cluster has the objective's figure).
  for (const compare::ClusterResult& r : c.clusters) {
    if (r.ok()) return 2;
  }
  return 3;
}

}  // namespace

RunFunction AddCompareOptions(CLI::App* cmd) {
  auto a = std::make_shared<CompareArgs>();
  cmd->add_option("--model", a->model, "Model name (models/) or file");
  cmd->add_option("--scenario", a->scenario, "Take model, batch and fixed plan fields from this scenario");
  cmd->add_option("--tokens", a->tokens, "Token budget to train, e.g. 15T, 300B (default: the scenario's compare.tokens)");
  cmd->add_option("--cluster", a->clusters,
                  "TOPOLOGY:GPUS[@USD per GPU-hour], GPUS as N or LO..HI (repeatable; default: the scenario's "
                  "compare.clusters)");
  AddNetwork(cmd, &a->network);
  cmd->add_option("--seq-len", a->seq_len, "Tokens per sequence (default: the scenario's, else 4096)")
      ->check(WholeIn(1, 1LL << 40));
  cmd->add_option("--global-batch", a->global_batch,
                  "Sequences per step (default: the scenario's, else about 4M tokens)")
      ->check(WholeIn(1, 1LL << 40));
  cmd->add_option("--precision", a->precision, "Training precision with --model")
      ->check(CLI::IsMember({"bf16", "fp8"}));
  cmd->add_option("--objective", a->objective, "Best plan per cluster by (and best cluster by)")
      ->check(CLI::IsMember({"time", "throughput", "cost", "energy"}));
  AddFormat(cmd, &a->format);
  AddHtml(cmd, &a->html);
  AddThreads(cmd, &a->threads);
  AddRanking(cmd, &a->rank);
  AddMinHeadroom(cmd, &a->min_headroom);
  AddSet(cmd, &a->opts.overrides, "Override a field of --scenario: key.path=value (repeatable)");
  return [a] { return RunCompare(*a); };
}

}  // namespace stacksim::cli
