#include "sim/serve/serve_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "sim/util/statistics.h"

namespace stacksim::serve {
namespace {

LatencyStats Stats(const std::vector<double>& v) {
  LatencyStats s;
  if (v.empty()) return s;
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  // Linear interpolation (type 7, numpy.percentile's default), as the serving
  // benchmarks compute theirs (sim/util/statistics.h).
  const std::vector<double> sorted = Sorted(v);
  s.p50 = LinearQuantile(sorted, 0.50);
  s.p90 = LinearQuantile(sorted, 0.90);
  s.p95 = LinearQuantile(sorted, 0.95);
  s.p99 = LinearQuantile(sorted, 0.99);
  return s;
}

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string Line(const char* name, const LatencyStats& s, double scale, const char* unit) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "  %-6s mean %8.1f  p50 %8.1f  p90 %8.1f  p99 %8.1f %s\n", name, s.mean * scale,
                s.p50 * scale, s.p90 * scale, s.p99 * scale, unit);
  return buf;
}

nlohmann::json StatsJson(const LatencyStats& s) {
  return {{"mean_s", s.mean}, {"p50_s", s.p50}, {"p90_s", s.p90}, {"p99_s", s.p99}};
}

}  // namespace

ServeMetrics ComputeMetrics(const ServeConfig& c, const ServeResult& r, double gpu_hour_usd,
                            const std::string& price_source) {
  ServeMetrics m;
  std::vector<double> ttft, tpot, e2e;
  double tokens = 0, output = 0;
  int64_t good = 0;
  for (const RequestOutcome& o : r.requests) {
    double t = (o.first_token - o.arrival).seconds();
    double e = (o.finish - o.arrival).seconds();
    // TPOT: time per output token after the first (requests of one token have none).
    double p = o.output_tokens > 1 ? (o.finish - o.first_token).seconds() / static_cast<double>(o.output_tokens - 1) : 0;
    ttft.push_back(t);
    e2e.push_back(e);
    if (o.output_tokens > 1) tpot.push_back(p);
    tokens += static_cast<double>(o.prompt_tokens + o.output_tokens);
    output += static_cast<double>(o.output_tokens);
    if (t <= c.slo_ttft.seconds() && p <= c.slo_tpot.seconds()) ++good;
  }
  m.requests = static_cast<int64_t>(r.requests.size());
  m.ttft = Stats(ttft);
  m.tpot = Stats(tpot);
  m.e2e = Stats(e2e);
  std::vector<double> gaps;
  gaps.reserve(r.token_gaps.size());
  for (const TokenGap& g : r.token_gaps) gaps.push_back(g.gap_s);
  m.token_gap = Stats(gaps);
  m.duration_s = r.makespan.seconds();
  if (m.duration_s > 0) {
    m.requests_per_s = static_cast<double>(m.requests) / m.duration_s;
    m.tokens_per_s = tokens / m.duration_s;
    m.output_tokens_per_s = output / m.duration_s;
    m.goodput_requests_per_s = static_cast<double>(good) / m.duration_s;
  }
  m.slo_attained = m.requests > 0 ? static_cast<double>(good) / static_cast<double>(m.requests) : 0;
  // KV use: time-weighted over each replica's iterations would need their
  // ends; the per-iteration samples are close enough at this resolution.
  const int bins = 50;
  std::vector<double> sum(bins, 0), count(bins, 0);
  double total = 0;
  for (const KvUsageSample& s : r.kv_usage) {
    m.kv_peak_use = std::max(m.kv_peak_use, s.used);
    total += s.used;
    int b = m.duration_s > 0 ? std::min(bins - 1, static_cast<int>(s.time.seconds() / m.duration_s * bins)) : 0;
    sum[b] += s.used;
    count[b] += 1;
  }
  if (!r.kv_usage.empty()) m.kv_mean_use = total / static_cast<double>(r.kv_usage.size());
  for (int b = 0; b < bins; ++b) {
    if (count[b] > 0) m.kv_over_time.push_back({(b + 0.5) * m.duration_s / bins, sum[b] / count[b]});
  }
  m.preemptions = r.preemptions;
  m.iterations = r.iterations;
  m.gpu_hour_usd = gpu_hour_usd;
  m.price_source = price_source;
  if (gpu_hour_usd > 0 && tokens > 0) {
    double usd = gpu_hour_usd * c.total_gpus() * m.duration_s / 3600.0;
    m.usd_per_million_tokens = usd / (tokens / 1e6);
    m.usd_per_million_output_tokens = usd / (output / 1e6);
  }
  return m;
}

std::string ServeText(const ServeConfig& c, const ServeResult& r, const ServeMetrics& m) {
  std::string out;
  out += "serve: " + c.name + "\n";
  out += "  " + c.model.name + " on " + c.profile.name + ", tp " + std::to_string(c.tp) + " pp " +
         std::to_string(c.pp) + " ep " + std::to_string(c.ep) + ", ";
  if (c.scheduler == SchedulerKind::kDisaggregated) {
    out += std::to_string(c.prefill_replicas) + " prefill + " + std::to_string(c.decode_replicas) + " decode replicas";
  } else {
    out += std::to_string(c.replicas) + " replica(s)";
  }
  out += " (" + std::to_string(c.total_gpus()) + " GPUs), scheduler " + SchedulerName(c.scheduler) + "\n";
  out += std::string("  weights ") + WeightFormatName(c.weights) + ", kv " + KvFormatName(c.kv) + ", compute " +
         config::PrecisionName(c.compute) + ", cuda graphs " + (c.cuda_graphs ? "on" : "off") + "\n";
  out += "  engine " + (c.engine.empty() ? std::string("none") : c.engine) + ", host time per iteration " +
         Fmt("%.2f", c.iteration_overhead.ms()) + " ms" +
         (c.iteration_overhead_source.empty() ? "" : " (" + c.iteration_overhead_source + ")") + "\n";
  if (c.speculative.enabled()) {
    const SpeculativeConfig& s = c.speculative;
    out += "  speculative decoding " + s.method_name + " (" +
           (s.method == SpeculativeConfig::Method::kDraftModel ? "draft model " + s.draft_model.name
                                                               : std::to_string(s.draft_layers) + "-layer draft head") +
           "): " + std::to_string(s.draft_tokens) + " drafts per step, " + Fmt("%.2f", s.tokens_per_step) +
           " tokens per step expected\n";
  }
  const KvCachePlan& p = r.kv_plan;
  out += "kv cache per GPU: HBM " + Fmt("%.1f", p.hbm.value / kGiB) + " GiB - reserve " +
         Fmt("%.1f", p.reserve.value / kGiB) + " - weights " + Fmt("%.1f", p.weights.value / kGiB) +
         " - activations " + Fmt("%.1f", p.activations.value / kGiB) + " - runtime " +
         Fmt("%.1f", p.runtime.value / kGiB) + " = " + Fmt("%.1f", p.kv_capacity.value / kGiB) + " GiB; " +
         Fmt("%.0f", p.kv_bytes_per_token.value) + " B/token -> " + std::to_string(p.tokens()) + " tokens (" +
         std::to_string(p.blocks) + " blocks of " + std::to_string(p.block_tokens) + ")\n";
  out += "requests " + std::to_string(m.requests) + " over " + Fmt("%.1f", m.duration_s) + " s, " +
         std::to_string(m.iterations) + " iterations, " + std::to_string(m.preemptions) + " preemptions\n";
  out += Line("ttft", m.ttft, 1e3, "ms");
  out += Line("tpot", m.tpot, 1e3, "ms");
  out += Line("e2e", m.e2e, 1.0, "s");
  out += "throughput: " + Fmt("%.0f", m.tokens_per_s) + " tokens/s (" + Fmt("%.0f", m.output_tokens_per_s) +
         " output), " + Fmt("%.2f", m.requests_per_s) + " requests/s\n";
  out += "goodput (ttft <= " + Fmt("%.0f", c.slo_ttft.ms()) + " ms, tpot <= " + Fmt("%.0f", c.slo_tpot.ms()) +
         " ms): " + Fmt("%.1f", m.slo_attained * 100) + "% of requests, " + Fmt("%.2f", m.goodput_requests_per_s) +
         " requests/s\n";
  out += "kv cache use: mean " + Fmt("%.0f", m.kv_mean_use * 100) + "%, peak " + Fmt("%.0f", m.kv_peak_use * 100) +
         "%\n";
  if (m.gpu_hour_usd > 0) {
    out += "cost: $" + Fmt("%.3f", m.usd_per_million_tokens) + " per million tokens ($" +
           Fmt("%.3f", m.usd_per_million_output_tokens) + " per million output) at $" + Fmt("%.2f", m.gpu_hour_usd) +
           "/GPU-hour (" + m.price_source + ")\n";
  } else {
    out += "cost: no price for " + c.topology.gpu + "\n";
  }
  return out;
}

nlohmann::json ServeJson(const ServeConfig& c, const ServeResult& r, const ServeMetrics& m) {
  const KvCachePlan& p = r.kv_plan;
  nlohmann::json kv_series = nlohmann::json::array();
  for (const auto& [t, u] : m.kv_over_time) kv_series.push_back({{"t_s", t}, {"use", u}});
  return {
      {"schema", "stacksim.serve/1"},
      {"name", c.name},
      {"model", c.model.name},
      {"profile", c.profile.name},
      {"replica", {{"tp", c.tp}, {"pp", c.pp}, {"ep", c.ep}}},
      {"replicas", c.replicas},
      {"prefill_replicas", c.prefill_replicas},
      {"decode_replicas", c.decode_replicas},
      {"gpus", c.total_gpus()},
      {"scheduler", SchedulerName(c.scheduler)},
      {"precision", {{"weights", WeightFormatName(c.weights)}, {"kv_cache", KvFormatName(c.kv)},
                     {"compute", config::PrecisionName(c.compute)}}},
      {"cuda_graphs", c.cuda_graphs},
      {"engine", c.engine},
      {"speculative", c.speculative.enabled()
                          ? nlohmann::json{{"method", c.speculative.method_name},
                                           {"draft_tokens", c.speculative.draft_tokens},
                                           {"tokens_per_step", c.speculative.tokens_per_step},
                                           {"draft", c.speculative.method == SpeculativeConfig::Method::kDraftModel
                                                         ? c.speculative.draft_model.name
                                                         : std::to_string(c.speculative.draft_layers) + "-layer head"}}
                          : nlohmann::json(nullptr)},
      {"iteration_overhead", {{"s", c.iteration_overhead.seconds()}, {"source", c.iteration_overhead_source}}},
      {"kv_cache", {{"hbm_bytes", p.hbm.value}, {"reserve_bytes", p.reserve.value}, {"weights_bytes", p.weights.value},
                    {"activations_bytes", p.activations.value}, {"runtime_bytes", p.runtime.value},
                    {"capacity_bytes", p.kv_capacity.value}, {"bytes_per_token", p.kv_bytes_per_token.value},
                    {"blocks", p.blocks}, {"block_tokens", p.block_tokens}, {"tokens", p.tokens()},
                    {"mean_use", m.kv_mean_use}, {"peak_use", m.kv_peak_use}, {"over_time", kv_series}}},
      {"requests", m.requests},
      {"iterations", m.iterations},
      {"preemptions", m.preemptions},
      {"duration_s", m.duration_s},
      {"ttft", StatsJson(m.ttft)},
      {"tpot", StatsJson(m.tpot)},
      {"e2e", StatsJson(m.e2e)},
      {"throughput", {{"tokens_per_s", m.tokens_per_s}, {"output_tokens_per_s", m.output_tokens_per_s},
                      {"requests_per_s", m.requests_per_s}}},
      {"goodput", {{"ttft_slo_s", c.slo_ttft.seconds()}, {"tpot_slo_s", c.slo_tpot.seconds()},
                   {"fraction", m.slo_attained}, {"requests_per_s", m.goodput_requests_per_s}}},
      {"cost", {{"gpu_hour_usd", m.gpu_hour_usd}, {"price_source", m.price_source},
                {"usd_per_million_tokens", m.usd_per_million_tokens},
                {"usd_per_million_output_tokens", m.usd_per_million_output_tokens}}},
  };
}

}  // namespace stacksim::serve
