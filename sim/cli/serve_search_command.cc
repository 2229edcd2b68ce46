// stacksim serve-search SCENARIO --slo ...: the cheapest serving
// configuration that meets latency SLOs at a load.
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/serve/serve_search.h"
#include "sim/serve/serve_search_report.h"
#include "sim/serve/serve_sim.h"
#include "sim/util/error.h"

namespace stacksim::cli {
namespace {

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

// A --tp or --pp that no hardware of the space can run makes every
// configuration invalid, and the search would then report that none meets
// the SLO. Said here instead, with the reason, before anything is simulated.
void CheckReplicaShapes(const serve::ServeSearchSpace& space) {
  std::string first_reason;
  for (const serve::ServeHardware& hw : space.hardware) {
    std::vector<int> tps = space.tp;
    if (tps.empty()) {
      for (int t = 1; t <= hw.topology.gpus_per_node; t *= 2) tps.push_back(t);
    }
    for (int tp : tps) {
      for (int pp : space.pp) {
        serve::ServeConfig c = space.base;
        c.topology = hw.topology;
        c.profile = hw.profile;
        c.tp = tp;
        c.pp = pp;
        c.ep = c.model.is_moe() && c.model.num_experts % tp == 0 ? tp : 1;
        try {
          serve::ValidateServeConfig(c);
          return;  // one shape runs: the search has something to rank
        } catch (const InputError& e) {
          if (first_reason.empty()) {
            first_reason = "tp " + std::to_string(tp) + ", pp " + std::to_string(pp) + " on " + hw.topology.name +
                           ": " + e.what();
          }
        }
      }
    }
  }
  throw InputError(space.tp.empty() ? "--pp" : "--tp", "",
                   "no replica shape of the search space is valid for " + space.base.model.name + " (" + first_reason +
                       ")");
}

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
  CheckReplicaShapes(space);
  serve::ServeSearchResult r = serve::SearchServing(space, opts);
  serve::AssessCandidates(r, serve::DefaultServingErrorTablePath());
  PrintResult(a.format, [&] { return serve::ServeSearchJson(r, a.top); },
              [&] { return serve::ServeSearchText(r, a.top); });
  return 0;
}

}  // namespace

RunFunction AddServeSearchOptions(CLI::App* cmd) {
  auto a = std::make_shared<ServeSearchArgs>();
  cmd->add_option("scenario", a->scenario, "Serving scenario JSON file (model, workload, memory settings)")
      ->required();
  cmd->add_option("--slo", a->slo, "Latency targets, e.g. ttft_p99=2s,tpot_p99=100ms")->required();
  cmd->add_option("--rate", a->rate, "Arrival rate of the whole deployment, requests/s (default: the scenario's)")
      ->check(PositiveReal());
  cmd->add_option("--requests", a->requests, "Requests per simulation (default: the scenario's)")
      ->check(WholeIn(1, 100000000));
  cmd->add_option("--seed", a->seed, "Workload seed (overrides workload.seed)")->check(SeedValue());
  serve::ServeSearchFlags& f = a->flags;
  cmd->add_option("--gpus", f.gpus, "GPU types to try, e.g. h100-sxm-80gb,h200-sxm-141gb (default: the scenario's)");
  cmd->add_option("--topologies", f.topologies, "Topologies to try instead of --gpus, e.g. dgx-h100,hgx-h200");
  cmd->add_option("--tp", f.tp, "TP sizes per replica (default: 1,2,4,... up to the node)");
  cmd->add_option("--pp", f.pp, "PP sizes per replica (default: 1)");
  cmd->add_option("--weights", f.weights, "Weight formats: bf16,fp8,int8,int4,fp4 (default: bf16,fp8)");
  cmd->add_option("--kv", f.kv, "KV cache formats: bf16,fp8,int8 (default: bf16,fp8)");
  cmd->add_option("--chunks", f.chunks, "Chunked-prefill token budgets, or none (default: 512,2048)");
  cmd->add_option("--max-sequences", f.max_sequences, "Sequence limits per replica (default: the scenario's)");
  cmd->add_option("--max-replicas", a->max_replicas, "Most replicas to try per configuration")
      ->check(WholeIn(1, 100000));
  cmd->add_option("--objective", a->objective, "Rank by cost-per-hour or cost-per-token");
  cmd->add_option("--top", a->top, "Configurations to show")->check(WholeIn(1, 100000));
  AddThreads(cmd, &a->threads);
  AddFormat(cmd, &a->format);
  return [a] { return RunServeSearch(*a); };
}

}  // namespace stacksim::cli
