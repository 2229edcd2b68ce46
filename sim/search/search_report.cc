#include "sim/search/search_report.h"

#include <algorithm>
#include <cmath>
#include <map>
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

// The step read as the ranking reads it.
double RankedStep(const SearchResult& r, const RankedPlan& p) {
  return r.ranking == Ranking::kPessimistic ? p.pessimistic_s : p.step.seconds();
}

std::string Worse(Objective o) {
  switch (o) {
    case Objective::kTime:
    case Objective::kThroughput: return "slower";
    case Objective::kCost: return "more expensive";
    case Objective::kEnergy: return "more energy-hungry";
  }
  return "worse";
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string RangeCell(const RankedPlan& p) {
  if (!p.assessment.range) return "-";
  return fmt::format("{:.2f}-{:.2f}", p.assessment.range->low_s, p.assessment.range->high_s);
}

bool RangesApart(const SearchResult& r, size_t best, size_t next) {
  const RankedPlan& a = r.plans.at(best);
  const RankedPlan& b = r.plans.at(next);
  if (!a.assessment.range || !b.assessment.range) return false;
  // Ranges in the units of the score (cost and energy scale with the step).
  auto scaled = [&](const RankedPlan& p, double t) { return p.score / RankedStep(r, p) * t; };
  return scaled(b, b.assessment.range->low_s) > scaled(a, a.assessment.range->high_s);
}

std::string GapSentence(const SearchResult& r, size_t best, size_t next) {
  const RankedPlan& a = r.plans.at(best);
  const RankedPlan& b = r.plans.at(next);
  const double gap = GapPercent(b.score, a.score);
  const std::string reading = r.ranking == Ranking::kPessimistic ? " at the high end of its likely range" : "";
  std::string s = fmt::format("Plan {} ({}) is predicted {:.1f}% {} than plan {}{}", next + 1, PlanName(b.point),
                              gap, Worse(r.objective), best + 1, reading);
  if (gap < 0.05) {
    s = fmt::format("Plans {} and {} are predicted equal (within 0.1%){}", best + 1, next + 1, reading);
  }
  if (!a.assessment.range || !b.assessment.range) return s + "; without likely ranges the gap cannot be weighed.";
  const double width = 100.0 * std::min(a.assessment.range->high_s / a.assessment.range->low_s - 1.0,
                                        b.assessment.range->high_s / b.assessment.range->low_s - 1.0);
  if (!RangesApart(r, best, next)) {
    return s + fmt::format(
                   ". That is well inside what the simulator gets wrong on validated runs like these (likely steps "
                   "{:.2f}-{:.2f} s and {:.2f}-{:.2f} s, ranges {:.0f}% wide or more): treat the two as equally "
                   "good and choose by memory headroom, simplicity or what your framework runs well.",
                   a.assessment.range->low_s, a.assessment.range->high_s, b.assessment.range->low_s,
                   b.assessment.range->high_s, width);
  }
  return s + fmt::format(". Their likely ranges do not overlap ({:.2f}-{:.2f} s against {:.2f}-{:.2f} s): plan {} is "
                         "better unless the simulator errs differently on the two plan families.",
                         a.assessment.range->low_s, a.assessment.range->high_s, b.assessment.range->low_s,
                         b.assessment.range->high_s, best + 1);
}

std::vector<std::string> GroupedWarnings(const std::vector<RankedPlan>& plans) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> ranks;
  for (size_t i = 0; i < plans.size(); ++i) {
    for (const std::string& w : plans[i].assessment.warnings) {
      if (!ranks.count(w)) order.push_back(w);
      ranks[w].push_back(static_cast<int>(i) + 1);
    }
  }
  std::vector<std::string> out;
  for (const std::string& w : order) {
    out.push_back(ranks[w].size() == plans.size() ? "[all] " + w : "[" + RankList(ranks[w]) + "] " + w);
  }
  return out;
}

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
  j["ranking"] = RankingName(r.ranking);
  j["error_table"] = r.error_table;
  j["memory_reserve"] = {{"basis", r.reserve_basis},
                         {"fixed_bytes", r.headroom.fixed ? nlohmann::json(r.headroom.fixed->value) : nlohmann::json(nullptr)}};
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
                  {"inside_reserve", c.inside_reserve},
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
    e["memory_reserve_bytes"] = p.reserve.required.value;
    e["memory_allocator_cache_bytes"] = p.reserve.allocator_cache.value;
    e["uncertainty"] = p.assessment.range ? uncertainty::StepRangeJson(*p.assessment.range) : nlohmann::json(nullptr);
    e["warnings"] = p.assessment.warnings;
    e["plan_family"] = uncertainty::PlanFamilyJson(p.assessment);
    e["pessimistic_step_s"] = p.pessimistic_s;
    e["objective"] = p.objective;
    e["gap_to_best_pct"] = row.gap_best;
    e["gap_to_previous_pct"] = row.gap_previous;
    if (r.economics.gpu_hour_usd > 0) e["cost_per_mtok_usd"] = p.cost_per_mtok_usd;
    if (r.economics.gpu_watts > 0) e["energy_per_mtok_kwh"] = p.energy_per_mtok_kwh;
    e["plan"] = config::PlanToJson(p.plan);
    plans.push_back(e);
  }
  j["plans"] = plans;
  j["gap_to_next_plan"] = r.plans.size() >= 2 ? nlohmann::json(GapSentence(r, 0, 1)) : nlohmann::json(nullptr);
  return j;
}

std::string SearchCsv(const SearchResult& r) {
  std::string out = CsvLine({"rank", "gpus", "tp", "pp", "dp", "cp", "ep", "vp", "micro_batch", "schedule",
                             "sequence_parallel", "recompute", "sharding", "offload", "nvlink_domain", "step_time_s",
                             "tokens_per_s", "mfu", "memory_peak_bytes", "memory_headroom_bytes", "objective",
                             "gap_to_best_pct", "cost_per_mtok_usd", "energy_per_mtok_kwh", "likely_low_s",
                             "likely_high_s", "pessimistic_step_s", "plan_family", "plan_family_validated_runs",
                             "memory_reserve_bytes", "warnings"});
  int rank = 0;
  for (const Row& row : Rows(r)) {
    const RankedPlan& p = *row.plan;
    const PlanPoint& pt = p.point;
    std::string warnings;
    for (const std::string& w : p.assessment.warnings) warnings += (warnings.empty() ? "" : "; ") + w;
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
                    r.economics.gpu_watts > 0 ? fmt::format("{:.6g}", p.energy_per_mtok_kwh) : "",
                    p.assessment.range ? fmt::format("{:.9f}", p.assessment.range->low_s) : "",
                    p.assessment.range ? fmt::format("{:.9f}", p.assessment.range->high_s) : "",
                    fmt::format("{:.9f}", p.pessimistic_s), p.assessment.plan_family,
                    std::to_string(p.assessment.plan_family_runs), fmt::format("{:.0f}", p.reserve.required.value),
                    warnings});
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
    out += fmt::format("{:>5} {}{:>3} {:>3} {:>4} {:>2} {:>2} {:>2} {:>3} {:<11} {:<2} {:<9} {:<5} {:<7} {:<14} {:>9} {:>11} {:>11} {:>6} {:>7} {:>8}{} {:>7}\n",
                       "rank", many_counts ? " gpus " : "", "tp", "pp", "dp", "cp", "ep", "vp", "mb", "schedule", "sp",
                       "recompute", "shard", "offload", "NVLink domain", "step (s)", "likely (s)", "tokens/s", "MFU",
                       "mem GiB", "headroom", objective_column, "gap");
    int rank = 0;
    for (const Row& row : Rows(r)) {
      const RankedPlan& p = *row.plan;
      const PlanPoint& pt = p.point;
      ++rank;
      std::string objective_value;
      if (r.objective == Objective::kCost) objective_value = fmt::format(" {:>8.2f}", p.objective);
      if (r.objective == Objective::kEnergy) objective_value = fmt::format(" {:>8.3f}", p.objective);
      out += fmt::format(
          "{:>5} {}{:>3} {:>3} {:>4} {:>2} {:>2} {:>2} {:>3} {:<11} {:<2} {:<9} {:<5} {:<7} {:<14} {:>9.3f} {:>11} {:>11} {:>5.1f}% {:>7.1f} {:>8.1f}{} {:>7}\n",
          fmt::format("{}{}", rank, p.assessment.plan_family_runs == 0 ? "*" : " "),
          many_counts ? fmt::format("{:>5} ", pt.gpus) : "", pt.tp, pt.pp, pt.dp, pt.cp,
          pt.ep, pt.vp, pt.micro_batch, config::ScheduleName(pt.schedule), pt.sequence_parallel ? "on" : "-",
          config::RecomputeName(pt.recompute), config::ShardingName(pt.sharding), pt.offload ? "host" : "-",
          p.placement, p.step.seconds(), RangeCell(p), Grouped(p.tokens_per_s), 100.0 * p.mfu, GiB(p.peak_memory),
          GiB(p.headroom()), objective_value, rank == 1 ? std::string("best") : fmt::format("+{:.1f}%", row.gap_best));
    }
  }
  if (!r.plans.empty()) {
    bool unvalidated = false;
    for (const RankedPlan& p : r.plans) unvalidated = unvalidated || p.assessment.plan_family_runs == 0;
    out += fmt::format("\nranked by  {}\n", r.ranking == Ranking::kPessimistic
                                                 ? "the high end of each plan's likely range (--rank pessimistic)"
                                                 : "the predicted step (--rank pessimistic: the likely range's high end)");
    out += "likely     p10-p90 of the errors of validated runs like each plan: the step is likely in this range "
           "(docs/uncertainty.md)\n";
    if (unvalidated) out += "*          plan family never validated: no published run used this parallelism and schedule\n";
    if (r.plans.size() >= 2) out += "gap        " + GapSentence(r, 0, 1) + "\n";
    std::vector<std::string> warnings = GroupedWarnings(r.plans);
    if (!warnings.empty()) {
      out += "warnings   outside what validation covers, by rank:\n";
      for (const std::string& w : warnings) out += "           " + w + "\n";
    }
  }
  out += "reserve    " + r.reserve_basis + "\n";
  const SearchCounts& c = r.counts;
  out += fmt::format("\nplans      {} enumerated: {} invalid, {} equivalent to another, {} out of GPU memory",
                     Grouped(c.enumeration.enumerated), Grouped(c.enumeration.invalid_total()),
                     Grouped(c.enumeration.equivalent), Grouped(c.out_of_memory));
  if (c.inside_reserve > 0) out += fmt::format(" ({} of them only inside the reserve)", Grouped(c.inside_reserve));
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
