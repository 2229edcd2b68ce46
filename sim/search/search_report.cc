#include "sim/search/search_report.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "sim/util/number_text.h"
#include "sim/util/csv.h"

namespace stacksim::search {
namespace {


double GiB(Bytes b) { return b.value / kGiB; }

double GapPercent(double score, double reference) { return reference > 0 ? 100.0 * (score / reference - 1.0) : 0.0; }

std::string ObjectiveHeading(Objective o) {
  switch (o) {
    case Objective::kTime: return "step time";
    case Objective::kThroughput: return "tokens per second";
    case Objective::kCost: return "cost per million tokens";
    case Objective::kEnergy: return "GPU energy per million tokens";
  }
  return "";
}

struct Row {
  const RankedPlan* plan;
  double gap_best, gap_previous;
};

std::vector<Row> Rows(const SearchResult& r) {
  std::vector<Row> rows;
  for (size_t i = 0; i < r.plans.size(); ++i) {
    rows.push_back({&r.plans[i], GapPercent(r.plans[i].score, r.plans[0].score),
                    i == 0 ? 0.0 : GapPercent(r.plans[i].score, r.plans[i - 1].score)});
  }
  return rows;
}

}  // namespace

nlohmann::json SearchJson(const SearchResult& r) {
  nlohmann::json j;
  j["scenario"] = r.scenario;
  j["model"] = r.model;
  j["topology"] = r.topology;
  j["gpu"] = r.gpu;
  j["gpu_counts"] = r.gpu_counts;
  j["seq_len"] = r.seq_len;
  j["global_batch"] = r.global_batch;
  j["tokens_per_step"] = r.tokens_per_step;
  j["objective"] = ObjectiveName(r.objective);
  j["objective_unit"] = r.objective_unit;
  nlohmann::json econ = nlohmann::json::object();
  if (r.economics.gpu_hour_usd > 0) {
    econ["gpu_hour_usd"] = r.economics.gpu_hour_usd;
    econ["price_source"] = r.economics.price_source;
  }
  if (r.economics.gpu_watts > 0) {
    econ["gpu_watts"] = r.economics.gpu_watts;
    econ["power_source"] = r.economics.power_source;
  }
  j["economics"] = econ;
  const SearchCounts& c = r.counts;
  nlohmann::json invalid = nlohmann::json::object();
  for (const auto& [key, n] : c.enumeration.invalid) invalid[key] = n;
  j["pruning"] = {{"enumerated", c.enumeration.enumerated},
                  {"invalid", c.enumeration.invalid_total()},
                  {"invalid_by_key", invalid},
                  {"equivalent", c.enumeration.equivalent},
                  {"out_of_memory", c.out_of_memory},
                  {"host_memory", c.host_memory},
                  {"bounded", c.bounded},
                  {"evaluated", c.evaluated},
                  {"simulations", c.simulations}};
  nlohmann::json plans = nlohmann::json::array();
  int rank = 0;
  for (const Row& row : Rows(r)) {
    const RankedPlan& p = *row.plan;
    const PlanPoint& pt = p.point;
    nlohmann::json e;
    e["rank"] = ++rank;
    e["name"] = PlanName(pt);
    e["gpus"] = pt.gpus;
    e["tp"] = pt.tp;
    e["pp"] = pt.pp;
    e["dp"] = pt.dp;
    e["cp"] = pt.cp;
    e["ep"] = pt.ep;
    e["vp"] = pt.vp;
    e["micro_batch"] = pt.micro_batch;
    e["schedule"] = config::ScheduleName(pt.schedule);
    e["sequence_parallel"] = pt.sequence_parallel;
    e["recompute"] = config::RecomputeName(pt.recompute);
    e["sharding"] = config::ShardingName(pt.sharding);
    e["offload"] = pt.offload ? "host" : "none";
    e["nvlink_domain"] = p.placement;
    e["step_time_s"] = p.step.seconds();
    e["step_time_bound_s"] = p.bound.seconds();
    e["tokens_per_s"] = p.tokens_per_s;
    e["mfu"] = p.mfu;
    e["memory_peak_bytes"] = p.peak_memory.value;
    e["memory_capacity_bytes"] = p.capacity.value;
    e["memory_headroom_bytes"] = p.headroom().value;
    e["objective"] = p.objective;
    e["gap_to_best_pct"] = row.gap_best;
    e["gap_to_previous_pct"] = row.gap_previous;
    if (r.economics.gpu_hour_usd > 0) e["cost_per_mtok_usd"] = p.cost_per_mtok_usd;
    if (r.economics.gpu_watts > 0) e["energy_per_mtok_kwh"] = p.energy_per_mtok_kwh;
    e["plan"] = config::PlanToJson(p.plan);
    plans.push_back(e);
  }
  j["plans"] = plans;
  return j;
}

std::string SearchCsv(const SearchResult& r) {
  std::string out = CsvLine({"rank", "gpus", "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "schedule",
                             "sequence_parallel", "recompute", "sharding", "offload", "nvlink_domain", "step_time_s",
                             "tokens_per_s", "mfu", "memory_peak_bytes", "memory_headroom_bytes", "objective",
                             "gap_to_best_pct", "cost_per_mtok_usd", "energy_per_mtok_kwh"});
  int rank = 0;
  for (const Row& row : Rows(r)) {
    const RankedPlan& p = *row.plan;
    const PlanPoint& pt = p.point;
    out += CsvLine({std::to_string(++rank), std::to_string(pt.gpus), std::to_string(pt.tp), std::to_string(pt.pp),
                    std::to_string(pt.dp), std::to_string(pt.cp), std::to_string(pt.ep), std::to_string(pt.vp),
                    std::to_string(pt.micro_batch), config::ScheduleName(pt.schedule),
                    pt.sequence_parallel ? "true" : "false", config::RecomputeName(pt.recompute),
                    config::ShardingName(pt.sharding), pt.offload ? "host" : "none", p.placement,
                    fmt::format("{:.9f}", p.step.seconds()), fmt::format("{:.1f}", p.tokens_per_s),
                    fmt::format("{:.6f}", p.mfu), fmt::format("{:.0f}", p.peak_memory.value),
                    fmt::format("{:.0f}", p.headroom().value), fmt::format("{:.9g}", p.objective),
                    fmt::format("{:.4f}", row.gap_best),
                    r.economics.gpu_hour_usd > 0 ? fmt::format("{:.6g}", p.cost_per_mtok_usd) : "",
                    r.economics.gpu_watts > 0 ? fmt::format("{:.6g}", p.energy_per_mtok_kwh) : ""});
  }
  return out;
}

std::string SearchText(const SearchResult& r) {
  std::string out;
  out += fmt::format("stacksim search: {}\n", r.scenario);
  out += fmt::format("model      {}, seq {}, global batch {} ({} tokens/step)\n", r.model, r.seq_len, r.global_batch,
                     Grouped(static_cast<double>(r.tokens_per_step)));
  std::string gpus;
  for (size_t i = 0; i < r.gpu_counts.size(); ++i) gpus += (i ? ", " : "") + std::to_string(r.gpu_counts[i]);
  out += fmt::format("cluster    {} x {} on {} (NVLink domain {} GPUs)\n", gpus, r.gpu, r.topology, r.domain_gpus);
  out += fmt::format("objective  {}", ObjectiveHeading(r.objective));
  if (r.objective == Objective::kCost) out += fmt::format(" at ${:.2f} per GPU-hour", r.economics.gpu_hour_usd);
  if (r.objective == Objective::kEnergy) out += fmt::format(" at {:.0f} W per GPU", r.economics.gpu_watts);
  out += "\n\n";
  if (r.plans.empty()) {
    out += "no plan is valid and fits in memory\n";
  } else {
    const bool many_counts = r.gpu_counts.size() > 1;
    std::string objective_column;
    if (r.objective == Objective::kCost) objective_column = "  $/Mtok";
    if (r.objective == Objective::kEnergy) objective_column = " kWh/Mtok";
    out += fmt::format("{:>4} {}{:>3} {:>3} {:>4} {:>2} {:>2} {:>2} {:>3} {:<11} {:<2} {:<9} {:<5} {:<7} {:<14} {:>9} {:>11} {:>6} {:>7} {:>8}{} {:>7}\n",
                       "rank", many_counts ? " gpus " : "", "tp", "pp", "dp", "cp", "ep", "vp", "mb", "schedule", "sp",
                       "recompute", "shard", "offload", "NVLink domain", "step (s)", "tokens/s", "MFU", "mem GiB",
                       "headroom", objective_column, "gap");
    int rank = 0;
    for (const Row& row : Rows(r)) {
      const RankedPlan& p = *row.plan;
      const PlanPoint& pt = p.point;
      ++rank;
      std::string objective_value;
      if (r.objective == Objective::kCost) objective_value = fmt::format(" {:>8.2f}", p.objective);
      if (r.objective == Objective::kEnergy) objective_value = fmt::format(" {:>8.3f}", p.objective);
      out += fmt::format(
          "{:>4} {}{:>3} {:>3} {:>4} {:>2} {:>2} {:>2} {:>3} {:<11} {:<2} {:<9} {:<5} {:<7} {:<14} {:>9.3f} {:>11} {:>5.1f}% {:>7.1f} {:>8.1f}{} {:>7}\n",
          rank, many_counts ? fmt::format("{:>5} ", pt.gpus) : "", pt.tp, pt.pp, pt.dp, pt.cp,
          pt.ep, pt.vp, pt.micro_batch, config::ScheduleName(pt.schedule), pt.sequence_parallel ? "on" : "-",
          config::RecomputeName(pt.recompute), config::ShardingName(pt.sharding), pt.offload ? "host" : "-",
          p.placement, p.step.seconds(), Grouped(p.tokens_per_s), 100.0 * p.mfu, GiB(p.peak_memory),
          GiB(p.headroom()), objective_value, rank == 1 ? std::string("best") : fmt::format("+{:.1f}%", row.gap_best));
    }
  }
  const SearchCounts& c = r.counts;
  out += fmt::format("\nplans      {} enumerated: {} invalid, {} equivalent to another, {} out of GPU memory",
                     Grouped(c.enumeration.enumerated), Grouped(c.enumeration.invalid_total()),
                     Grouped(c.enumeration.equivalent), Grouped(c.out_of_memory));
  if (c.host_memory > 0) out += fmt::format(", {} out of host memory", Grouped(c.host_memory));
  out += fmt::format(",\n           {} bounded (cannot beat the top {}), {} simulated ({} replays)\n", Grouped(c.bounded),
                     r.top, Grouped(c.evaluated), Grouped(c.simulations));
  if (!c.enumeration.invalid.empty()) {
    out += "invalid    ";
    bool first = true;
    for (const auto& [key, n] : c.enumeration.invalid) {
      out += fmt::format("{}{} {}", first ? "" : ", ", key, Grouped(n));
      first = false;
    }
    out += "\n";
  }
  if (r.objective == Objective::kCost && !r.economics.price_source.empty()) {
    out += "price      " + r.economics.price_source + "\n";
  }
  if (r.objective == Objective::kEnergy && !r.economics.power_source.empty()) {
    out += "power      " + r.economics.power_source + "\n";
  }
  out += fmt::format("searched   in {:.1f} s on {} threads\n", r.wall_seconds, r.threads);
  return out;
}

}  // namespace stacksim::search
