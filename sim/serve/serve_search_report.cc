#include "sim/serve/serve_search_report.h"

#include <algorithm>
#include <cstdio>

namespace stacksim::serve {
namespace {

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string SloText(const std::vector<SloTarget>& slo) {
  std::string out;
  for (const SloTarget& t : slo) {
    out += (out.empty() ? "" : ", ") + t.name + " <= " +
           (t.limit.seconds() >= 1 ? Fmt("%g s", t.limit.seconds()) : Fmt("%g ms", t.limit.ms()));
  }
  return out;
}

std::string Tried(const ServeCandidate& c) {
  std::string out;
  for (const auto& [n, met] : c.tried) out += (out.empty() ? "" : " ") + std::to_string(n) + (met ? "+" : "-");
  return out;
}

std::string Row(int rank, const ServeCandidate& c) {
  char buf[320];
  const ServeConfig& k = c.config;
  std::string sched = k.scheduler == SchedulerKind::kChunked ? "chunked/" + std::to_string(k.max_batched_tokens)
                                                               : std::string(SchedulerName(k.scheduler));
  const ServeAssessment& a = c.assessment;
  const std::string ttft_range = a.ttft ? Fmt("%.2f", a.ttft->low_s) + "-" + Fmt("%.2f", a.ttft->high_s) : "-";
  const std::string tpot_range = a.tpot ? Fmt("%.0f", a.tpot->low_s * 1e3) + "-" + Fmt("%.0f", a.tpot->high_s * 1e3) : "-";
  std::snprintf(buf, sizeof(buf),
                "%4s  %-14s %3d %3d  %-5s %-5s %-16s %5lld %8d %5d %9.2f %-11s %9.1f %-9s %9.0f %9s %8s\n",
                rank > 0 ? std::to_string(rank).c_str() : "-", c.hardware.c_str(), k.tp, k.pp,
                WeightFormatName(k.weights), KvFormatName(k.kv), sched.c_str(),
                static_cast<long long>(k.max_sequences), k.replicas, k.total_gpus(), c.metrics.ttft.p99,
                ttft_range.c_str(), c.metrics.tpot.p99 * 1e3, tpot_range.c_str(), c.metrics.tokens_per_s,
                c.usd_per_hour > 0 ? Fmt("%.2f", c.usd_per_hour).c_str() : "-",
                c.usd_per_million_tokens > 0 ? Fmt("%.3f", c.usd_per_million_tokens).c_str() : "-");
  return buf;
}

const char* kHeader =
    "rank  topology        tp  pp  wts   kv    scheduler         seqs replicas  GPUs  TTFT p99 likely       TPOT p99 "
    "likely        tok/s       $/h   $/Mtok\n"
    "                                                                                    (s)                  (ms)\n";

nlohmann::json CandidateJson(const ServeCandidate& c) {
  const ServeConfig& k = c.config;
  nlohmann::json tried = nlohmann::json::array();
  for (const auto& [n, met] : c.tried) tried.push_back({{"replicas", n}, {"met", met}});
  return {
      {"topology", c.hardware},
      {"gpu", k.topology.gpu},
      {"tp", k.tp},
      {"pp", k.pp},
      {"ep", k.ep},
      {"weights", WeightFormatName(k.weights)},
      {"kv_cache", KvFormatName(k.kv)},
      {"compute", config::PrecisionName(k.compute)},
      {"scheduler", SchedulerName(k.scheduler)},
      {"max_batched_tokens", k.max_batched_tokens},
      {"max_sequences", k.max_sequences},
      {"cuda_graphs", k.cuda_graphs},
      {"replicas", k.replicas},
      {"gpus", k.total_gpus()},
      {"feasible", c.feasible},
      {"slo_load", c.slo_load},
      {"ttft_p99_s", c.metrics.ttft.p99},
      {"tpot_p99_s", c.metrics.tpot.p99},
      {"e2e_p99_s", c.metrics.e2e.p99},
      {"tokens_per_s", c.metrics.tokens_per_s},
      {"output_tokens_per_s", c.metrics.output_tokens_per_s},
      {"preemptions", c.metrics.preemptions},
      {"gpu_hour_usd", c.economics.gpu_hour_usd},
      {"price_source", c.economics.price_source},
      {"usd_per_hour", c.usd_per_hour},
      {"usd_per_million_tokens", c.usd_per_million_tokens},
      {"tried", tried},
      {"uncertainty", ServeUncertaintyJson(c.assessment)},
      {"warnings", c.assessment.warnings},
  };
}

}  // namespace

std::string ServeSearchText(const ServeSearchResult& r, int top) {
  const ServeSearchCounts& n = r.counts;
  std::string out = "serve-search: " + r.scenario + "\n";
  out += "  " + r.model + " at " + Fmt("%g", r.rate_per_s) + " requests/s; SLO " + SloText(r.slo) + "\n";
  out += "  each simulation: the whole deployment, " + std::to_string(r.requests) + " requests (seed " +
         std::to_string(r.seed) + "); replicas up to " + std::to_string(r.max_replicas) + "; objective " +
         (r.objective == ServeObjective::kCostPerHour ? "cost per hour" : "cost per million tokens") + "\n";
  out += "configurations " + std::to_string(n.configurations) + ": " + std::to_string(n.invalid) +
         " invalid (tp/pp/ep), " + std::to_string(n.no_kv_room) + " weights leave no KV cache, " +
         std::to_string(n.kv_too_small) + " KV cache below the longest request, " + std::to_string(n.slo_unmet) +
         " miss the SLO at every replica count, " + std::to_string(n.feasible) + " feasible (" +
         std::to_string(n.unpriced) + " without a price)\n";
  out += std::to_string(n.simulations) + " simulations in " + Fmt("%.2f", r.wall_seconds) + " s on " +
         std::to_string(r.threads) + " threads\n\n";
  const int shown = std::min<int>(top, static_cast<int>(r.ranked.size()));
  if (shown > 0) {
    out += kHeader;
    for (int i = 0; i < shown; ++i) out += Row(i + 1, r.ranked[i]);
    const ServeCandidate& best = r.ranked.front();
    out += "\nbest: " + best.Label() + ", " + std::to_string(best.config.replicas) + " replica(s); replicas tried " +
           Tried(best) + " (+ met, - missed); price $" + Fmt("%.2f", best.economics.gpu_hour_usd) +
           "/GPU-hour (" + best.economics.price_source + ")\n";
    out += "likely: p99 " + std::string(best.assessment.ttft ? "TTFT " + best.assessment.ttft->basis : "TTFT -") +
           "; " + (best.assessment.tpot ? "TPOT " + best.assessment.tpot->basis : "TPOT -") + "\n";
    for (const std::string& w : best.assessment.warnings) out += "  warning: " + w + "\n";
  } else {
    out += "no priced configuration meets the SLOs\n";
  }
  if (!r.unpriced.empty()) {
    out += "\nfeasible but not ranked by cost (no price for the GPU; set gpu_hour_usd in the topology or add it to "
           "economics/gpus.json):\n" + std::string(kHeader);
    for (int i = 0; i < std::min<int>(top, static_cast<int>(r.unpriced.size())); ++i) out += Row(0, r.unpriced[i]);
  }
  if (shown == 0 && !r.unmet.empty()) {
    out += "\nclosest misses at " + std::to_string(r.max_replicas) + " replicas:\n" + std::string(kHeader);
    for (int i = 0; i < std::min<int>(top, static_cast<int>(r.unmet.size())); ++i) out += Row(0, r.unmet[i]);
  }
  return out;
}

nlohmann::json ServeSearchJson(const ServeSearchResult& r, int top) {
  nlohmann::json slo = nlohmann::json::array();
  for (const SloTarget& t : r.slo) slo.push_back({{"name", t.name}, {"limit_s", t.limit.seconds()}});
  auto list = [top](const std::vector<ServeCandidate>& v) {
    nlohmann::json out = nlohmann::json::array();
    for (int i = 0; i < std::min<int>(top, static_cast<int>(v.size())); ++i) out.push_back(CandidateJson(v[i]));
    return out;
  };
  const ServeSearchCounts& n = r.counts;
  return {
      {"schema", "stacksim.serve-search/1"},
      {"scenario", r.scenario},
      {"model", r.model},
      {"rate_per_s", r.rate_per_s},
      {"requests", r.requests},
      {"seed", r.seed},
      {"slo", slo},
      {"objective", r.objective == ServeObjective::kCostPerHour ? "cost-per-hour" : "cost-per-token"},
      {"max_replicas", r.max_replicas},
      {"counts", {{"configurations", n.configurations}, {"invalid", n.invalid}, {"no_kv_room", n.no_kv_room},
                  {"kv_too_small", n.kv_too_small}, {"slo_unmet", n.slo_unmet}, {"feasible", n.feasible},
                  {"unpriced", n.unpriced}, {"simulations", n.simulations}}},
      {"ranked", list(r.ranked)},
      {"unpriced", list(r.unpriced)},
      {"unmet", list(r.unmet)},
      {"threads", r.threads},
      {"wall_seconds", r.wall_seconds},
  };
}

}  // namespace stacksim::serve
