#include "sim/serve/serve_search.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "sim/config/scenario.h"
#include "sim/search/search.h"
#include "sim/serve/iteration_cost.h"
#include "sim/serve/request_workload.h"
#include "sim/serve/serve_sim.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/parallel.h"

namespace stacksim::serve {
namespace {

std::vector<std::string> SplitList(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    out.push_back(item);
  }
  return out;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Why a configuration was dropped before or during its replica search.
enum class Outcome { kFeasible, kInvalid, kNoKvRoom, kKvTooSmall, kSloUnmet };

struct Evaluation {
  Outcome outcome = Outcome::kFeasible;
  ServeCandidate candidate;
  int64_t simulations = 0;
};

// The KV tokens the longest request needs on one replica, as SimulateServing
// checks it (static batching reserves prompt and all output; the others
// never store the last token's KV).
int64_t LongestRequestTokens(const std::vector<Request>& requests, SchedulerKind kind) {
  int64_t need = 0;
  for (const Request& r : requests) {
    need = std::max(need, r.prompt_tokens + r.output_tokens - (kind == SchedulerKind::kStatic ? 0 : 1));
  }
  return need;
}

class ReplicaSearch {
 public:
  ReplicaSearch(const ServeSearchOptions& o, const std::vector<Request>& requests) : o_(o), requests_(requests) {}

  Evaluation Evaluate(ServeConfig c, const ServeHardware& hw) const {
    Evaluation e;
    e.candidate.hardware = hw.topology.name;
    e.candidate.economics = hw.economics;
    try {
      ValidateServeConfig(c);
    } catch (const InputError&) {
      e.outcome = Outcome::kInvalid;
      e.candidate.config = c;
      return e;
    }
    int64_t blocks = 0;
    try {
      blocks = IterationCost(c).kv_plan().blocks;
    } catch (const InputError&) {
      e.outcome = Outcome::kNoKvRoom;
      e.candidate.config = c;
      return e;
    }
    if (CeilDiv(LongestRequestTokens(requests_, c.scheduler), c.block_tokens) > blocks) {
      e.outcome = Outcome::kKvTooSmall;
      e.candidate.config = c;
      return e;
    }
    // Doubling to the first replica count that meets the SLOs, then
    // bisection between the last failure and it.
    int lo = 0, hi = 0;
    std::map<int, ServeCandidate> seen;
    for (int r = 1;; r = std::min(2 * r, o_.max_replicas)) {
      if (Try(c, r, hw, e, seen)) {
        hi = r;
        break;
      }
      lo = r;
      if (r == o_.max_replicas) break;
    }
    if (hi == 0) {
      std::vector<std::pair<int, bool>> tried = e.candidate.tried;
      e.outcome = Outcome::kSloUnmet;
      e.candidate = seen.at(lo);
      e.candidate.tried = tried;
      return e;
    }
    while (hi - lo > 1) {
      int mid = lo + (hi - lo) / 2;
      if (Try(c, mid, hw, e, seen)) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    std::vector<std::pair<int, bool>> tried = e.candidate.tried;
    e.candidate = seen.at(hi);
    e.candidate.tried = tried;
    e.candidate.feasible = true;
    return e;
  }

 private:
  // Simulates `replicas` replicas of c; records the candidate in `seen`.
  bool Try(ServeConfig c, int replicas, const ServeHardware& hw, Evaluation& e,
           std::map<int, ServeCandidate>& seen) const {
    c.replicas = replicas;
    ServeResult r = SimulateServing(c, requests_);
    ++e.simulations;
    ServeCandidate k;
    k.config = c;
    k.hardware = hw.topology.name;
    k.economics = hw.economics;
    k.metrics = ComputeMetrics(c, r, hw.economics.gpu_hour_usd, hw.economics.price_basis);
    k.usd_per_hour = c.total_gpus() * hw.economics.gpu_hour_usd;
    k.usd_per_million_tokens = k.metrics.usd_per_million_tokens;
    for (const SloTarget& t : o_.slo) k.slo_load = std::max(k.slo_load, t.Measured(k.metrics) / t.limit.seconds());
    const bool met = k.slo_load <= 1.0;
    e.candidate.tried.emplace_back(replicas, met);
    seen[replicas] = k;
    return met;
  }

  const ServeSearchOptions& o_;
  const std::vector<Request>& requests_;
};

// A total order on configurations that does not depend on evaluation order.
std::string SortKey(const ServeCandidate& c) { return c.Label(); }

}  // namespace

double SloTarget::Measured(const ServeMetrics& m) const {
  const LatencyStats& s = metric == Metric::kTtft ? m.ttft : metric == Metric::kTpot ? m.tpot : m.e2e;
  switch (statistic) {
    case Statistic::kMean: return s.mean;
    case Statistic::kP50: return s.p50;
    case Statistic::kP90: return s.p90;
    case Statistic::kP99: return s.p99;
  }
  return s.p99;
}

std::vector<SloTarget> ParseSlo(const std::string& text, const std::string& origin) {
  const std::string usage = " (expected METRIC_STAT=TIME[,...] such as ttft_p99=2s,tpot_p99=100ms; metrics ttft, "
                            "tpot, e2e; statistics mean, p50, p90, p99)";
  std::vector<SloTarget> out;
  std::set<std::string> names;
  for (const std::string& item : SplitList(text, ',')) {
    size_t eq = item.find('=');
    if (item.empty() || eq == std::string::npos) throw InputError(origin, "", "cannot read '" + item + "'" + usage);
    SloTarget t;
    t.name = item.substr(0, eq);
    size_t us = t.name.find('_');
    std::string metric = t.name.substr(0, us);
    std::string stat = us == std::string::npos ? "" : t.name.substr(us + 1);
    if (metric == "ttft") t.metric = SloTarget::Metric::kTtft;
    else if (metric == "tpot") t.metric = SloTarget::Metric::kTpot;
    else if (metric == "e2e") t.metric = SloTarget::Metric::kE2e;
    else throw InputError(origin, "", "unknown metric in '" + t.name + "'" + usage);
    if (stat == "mean") t.statistic = SloTarget::Statistic::kMean;
    else if (stat == "p50") t.statistic = SloTarget::Statistic::kP50;
    else if (stat == "p90") t.statistic = SloTarget::Statistic::kP90;
    else if (stat == "p99") t.statistic = SloTarget::Statistic::kP99;
    else throw InputError(origin, "", "unknown statistic in '" + t.name + "'" + usage);
    t.limit = ParseTime(item.substr(eq + 1), origin, t.name);
    if (t.limit <= Time::Zero()) throw InputError(origin, t.name, "must be positive");
    if (!names.insert(t.name).second) throw InputError(origin, t.name, "given twice");
    out.push_back(t);
  }
  if (out.empty()) throw InputError(origin, "", "no targets" + usage);
  return out;
}

ServeObjective ParseServeObjective(const std::string& text, const std::string& origin) {
  if (text == "cost-per-hour") return ServeObjective::kCostPerHour;
  if (text == "cost-per-token") return ServeObjective::kCostPerToken;
  throw InputError(origin, "", "unknown objective '" + text + "' (cost-per-hour or cost-per-token)");
}

ServeHardware LoadServeHardware(const std::string& topology_ref) {
  ServeHardware hw;
  hw.topology_file = config::ResolveDataFile("topologies", topology_ref, "");
  if (!std::filesystem::is_regular_file(hw.topology_file)) {
    throw InputError("--topologies", "", "no such topology: " + topology_ref + " (" + hw.topology_file + ")");
  }
  hw.topology = config::LoadTopologyFile(hw.topology_file);
  hw.profile = config::LoadProfileFile(config::ResolveDataFile("profiles", hw.topology.gpu, ""));
  config::ScenarioConfig s;
  s.topology = hw.topology;
  s.topology_file = hw.topology_file;
  hw.economics = search::LookUpEconomics(s);
  return hw;
}

ServeHardware HardwareForGpu(const std::string& gpu, const std::string& origin) {
  const std::string dir = config::DataRoot() + "/topologies";
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::set<std::string> known;
  for (const std::string& f : files) {
    config::TopologyConfig t = config::LoadTopologyFile(f);
    if (t.gpu == gpu) return LoadServeHardware(f);
    known.insert(t.gpu);
  }
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  throw InputError(origin, "", "no shipped topology has GPU '" + gpu + "' (GPUs with one: " + list + ")");
}

ServeSearchSpace DefaultServeSearchSpace(const ServeConfig& base) {
  ServeSearchSpace s;
  s.base = base;
  ServeHardware hw;
  hw.topology = base.topology;
  hw.profile = base.profile;
  config::ScenarioConfig sc;
  sc.topology = base.topology;
  hw.economics = search::LookUpEconomics(sc);
  s.hardware.push_back(hw);
  // The scenario's own scheduler at its budget first (its engine's: SGLang's
  // prefill-first, vLLM V1's chunked prefill), continuous batching, and
  // chunked prefill at Sarathi-Serve's small chunks (512) and vLLM's budget
  // with chunked prefill on a smaller GPU (2048).
  const bool own = base.scheduler != SchedulerKind::kStatic && base.scheduler != SchedulerKind::kDisaggregated;
  s.schedulers = {{own ? base.scheduler : SchedulerKind::kContinuous, base.max_batched_tokens}};
  auto add = [&](SchedulerKind kind, int64_t budget) {
    for (const auto& x : s.schedulers) {
      if (x.kind == kind && x.max_batched_tokens == budget) return;
    }
    s.schedulers.push_back({kind, budget});
  };
  add(SchedulerKind::kContinuous, base.max_batched_tokens);
  add(SchedulerKind::kChunked, 512);
  add(SchedulerKind::kChunked, 2048);
  return s;
}

namespace {

std::vector<int64_t> PositiveInts(const std::string& text, const std::string& flag) {
  std::vector<int64_t> out;
  for (const std::string& item : SplitList(text, ',')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1) {
      throw InputError(flag, "", "expected positive integers separated by commas, got '" + item + "'");
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace

ServeSearchSpace BuildServeSearchSpace(const ServeConfig& base, const ServeSearchFlags& f) {
  ServeSearchSpace s = DefaultServeSearchSpace(base);
  if (!f.gpus.empty() && !f.topologies.empty()) {
    throw InputError("--gpus", "", "give --gpus or --topologies, not both");
  }
  if (!f.gpus.empty()) {
    s.hardware.clear();
    for (const std::string& g : SplitList(f.gpus, ',')) s.hardware.push_back(HardwareForGpu(g, "--gpus"));
  }
  if (!f.topologies.empty()) {
    s.hardware.clear();
    for (const std::string& t : SplitList(f.topologies, ',')) s.hardware.push_back(LoadServeHardware(t));
  }
  if (!f.tp.empty()) {
    s.tp.clear();
    for (int64_t v : PositiveInts(f.tp, "--tp")) s.tp.push_back(static_cast<int>(v));
  }
  if (!f.pp.empty()) {
    s.pp.clear();
    for (int64_t v : PositiveInts(f.pp, "--pp")) s.pp.push_back(static_cast<int>(v));
  }
  if (!f.weights.empty()) {
    s.weights.clear();
    for (const std::string& w : SplitList(f.weights, ',')) {
      if (w == "bf16") s.weights.push_back(WeightFormat::kBf16);
      else if (w == "fp8") s.weights.push_back(WeightFormat::kFp8);
      else if (w == "int8") s.weights.push_back(WeightFormat::kInt8);
      else if (w == "int4") s.weights.push_back(WeightFormat::kInt4);
      else if (w == "fp4") s.weights.push_back(WeightFormat::kFp4);
      else throw InputError("--weights", "", "unknown weight format '" + w + "' (bf16, fp8, int8, int4, fp4)");
    }
  }
  if (!f.kv.empty()) {
    s.kv.clear();
    for (const std::string& k : SplitList(f.kv, ',')) {
      if (k == "bf16") s.kv.push_back(KvFormat::kBf16);
      else if (k == "fp8") s.kv.push_back(KvFormat::kFp8);
      else if (k == "int8") s.kv.push_back(KvFormat::kInt8);
      else throw InputError("--kv", "", "unknown KV cache format '" + k + "' (bf16, fp8, int8)");
    }
  }
  if (!f.chunks.empty()) {
    s.schedulers.resize(1);  // the scenario's own scheduler stays
    if (f.chunks != "none") {
      for (int64_t v : PositiveInts(f.chunks, "--chunks")) s.schedulers.push_back({SchedulerKind::kChunked, v});
    }
  }
  if (!f.max_sequences.empty()) s.max_sequences = PositiveInts(f.max_sequences, "--max-sequences");
  return s;
}

std::string ServeCandidate::Label() const {
  std::ostringstream out;
  out << hardware << " tp" << config.tp << " pp" << config.pp;
  if (config.ep > 1) out << " ep" << config.ep;
  out << " w=" << WeightFormatName(config.weights) << " kv=" << KvFormatName(config.kv) << " "
      << SchedulerName(config.scheduler) << "/" << config.max_batched_tokens << " seqs=" << config.max_sequences;
  return out.str();
}

ServeSearchResult SearchServing(const ServeSearchSpace& space, const ServeSearchOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  ServeSearchResult res;
  res.scenario = space.base.name;
  res.model = space.base.model.name;
  res.rate_per_s = o.rate_per_s;
  res.slo = o.slo;
  res.objective = o.objective;
  res.max_replicas = o.max_replicas;
  res.threads = Workers(o.threads);

  ServeConfig base = space.base;
  base.workload.rate_per_s = o.rate_per_s;
  if (o.requests > 0) base.workload.requests = o.requests;
  base.cuda_graphs = true;
  base.prefill_replicas = base.decode_replicas = 0;
  // The scenario's SLO fields only feed goodput; keep them in step with the targets.
  for (const SloTarget& t : o.slo) {
    if (t.metric == SloTarget::Metric::kTtft) base.slo_ttft = t.limit;
    if (t.metric == SloTarget::Metric::kTpot) base.slo_tpot = t.limit;
  }
  const std::vector<Request> requests = GenerateRequests(base.workload);
  res.requests = static_cast<int64_t>(requests.size());
  res.seed = base.workload.seed;

  // Enumerate every configuration of the space.
  std::vector<std::pair<ServeConfig, const ServeHardware*>> configs;
  std::vector<int64_t> seqs = space.max_sequences.empty() ? std::vector<int64_t>{base.max_sequences}
                                                          : space.max_sequences;
  for (const ServeHardware& hw : space.hardware) {
    std::vector<int> tps = space.tp;
    if (tps.empty()) {
      for (int t = 1; t <= hw.topology.gpus_per_node; t *= 2) tps.push_back(t);
    }
    for (int tp : tps) {
      for (int pp : space.pp) {
        for (WeightFormat w : space.weights) {
          for (KvFormat kv : space.kv) {
            for (const ServeSearchSpace::Scheduler& sch : space.schedulers) {
              for (int64_t n : seqs) {
                ServeConfig c = base;
                c.file = "serve-search";
                c.topology = hw.topology;
                c.profile = hw.profile;
                c.tp = tp;
                c.pp = pp;
                // A MoE model spreads its experts over the TP ranks when they divide.
                c.ep = c.model.is_moe() && c.model.num_experts % tp == 0 ? tp : 1;
                c.weights = w;
                c.kv = kv;
                // fp8 (and fp4, FP4 tensor cores priced as fp8) weights run
                // fp8 GEMMs where the GPU has them; elsewhere (and for
                // int8/int4) the weights are dequantized to bf16.
                c.compute = (w == WeightFormat::kFp8 || w == WeightFormat::kFp4) && hw.profile.Peak(config::Precision::kFp8)
                                ? config::Precision::kFp8
                                : config::Precision::kBf16;
                c.scheduler = sch.kind;
                c.max_batched_tokens = sch.max_batched_tokens;
                c.max_sequences = n;
                c.replicas = 1;
                configs.emplace_back(std::move(c), &hw);
              }
            }
          }
        }
      }
    }
  }
  if (configs.empty()) throw InputError("serve-search", "", "the search space is empty");
  res.counts.configurations = static_cast<int64_t>(configs.size());

  std::vector<Evaluation> evals(configs.size());
  ReplicaSearch search(o, requests);
  ParallelFor(static_cast<int64_t>(configs.size()), o.threads, [&](int64_t i, int) {
    evals[i] = search.Evaluate(configs[i].first, *configs[i].second);
  });

  for (Evaluation& e : evals) {
    res.counts.simulations += e.simulations;
    switch (e.outcome) {
      case Outcome::kInvalid: ++res.counts.invalid; break;
      case Outcome::kNoKvRoom: ++res.counts.no_kv_room; break;
      case Outcome::kKvTooSmall: ++res.counts.kv_too_small; break;
      case Outcome::kSloUnmet:
        ++res.counts.slo_unmet;
        res.unmet.push_back(std::move(e.candidate));
        break;
      case Outcome::kFeasible:
        ++res.counts.feasible;
        if (e.candidate.economics.gpu_hour_usd > 0) {
          res.ranked.push_back(std::move(e.candidate));
        } else {
          ++res.counts.unpriced;
          res.unpriced.push_back(std::move(e.candidate));
        }
        break;
    }
  }
  const bool per_token = o.objective == ServeObjective::kCostPerToken;
  std::sort(res.ranked.begin(), res.ranked.end(), [&](const ServeCandidate& a, const ServeCandidate& b) {
    double x = per_token ? a.usd_per_million_tokens : a.usd_per_hour;
    double y = per_token ? b.usd_per_million_tokens : b.usd_per_hour;
    if (x != y) return x < y;
    if (a.slo_load != b.slo_load) return a.slo_load < b.slo_load;
    return SortKey(a) < SortKey(b);
  });
  auto by_gpus = [](const ServeCandidate& a, const ServeCandidate& b) {
    if (a.config.total_gpus() != b.config.total_gpus()) return a.config.total_gpus() < b.config.total_gpus();
    if (a.slo_load != b.slo_load) return a.slo_load < b.slo_load;
    return SortKey(a) < SortKey(b);
  };
  std::sort(res.unpriced.begin(), res.unpriced.end(), by_gpus);
  std::sort(res.unmet.begin(), res.unmet.end(), [](const ServeCandidate& a, const ServeCandidate& b) {
    if (a.slo_load != b.slo_load) return a.slo_load < b.slo_load;
    return SortKey(a) < SortKey(b);
  });
  res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

void AssessCandidates(ServeSearchResult& result, const std::string& table_path) {
  std::optional<ServingErrorTable> table;
  if (std::filesystem::exists(table_path)) table = LoadServingErrorTable(table_path);
  for (auto* list : {&result.ranked, &result.unpriced, &result.unmet}) {
    for (ServeCandidate& c : *list) {
      c.assessment = AssessServe(table ? &*table : nullptr, c.config, c.metrics.ttft.p99, c.metrics.tpot.p99);
    }
  }
}

}  // namespace stacksim::serve
