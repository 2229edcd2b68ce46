#include "sim/compare/compare.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "sim/search/search_report.h"
#include "sim/uncertainty/error_table.h"
#include "sim/util/number_text.h"
#include "sim/util/error.h"

namespace stacksim::compare {
namespace {

namespace fs = std::filesystem;

constexpr double kSecondsPerDay = 86400.0;

std::string RequireFile(const std::string& kind, const std::string& ref, const std::string& origin,
                        const std::string& what) {
  const std::string path = config::ResolveDataFile(kind, ref, "");
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw InputError(origin, "", "unknown " + what + " '" + ref + "': no file " + path);
  }
  return path;
}

// The figure the objective minimises over the whole budget; NaN when missing.
// What a token budget takes at one step time.
struct Budget {
  double days = 0;
  double gpu_hours = 0;
  double cost_usd = 0;    // 0 without a price
  double energy_mwh = 0;  // 0 without a power figure
};

Budget BudgetAt(int64_t tokens, double tokens_per_step, double step_s, double gpus, const search::Economics& e) {
  Budget b;
  b.days = static_cast<double>(tokens) / (tokens_per_step / step_s) / kSecondsPerDay;
  b.gpu_hours = gpus * b.days * 24.0;
  b.cost_usd = b.gpu_hours * e.gpu_hour_usd;
  b.energy_mwh = b.gpu_hours * e.gpu_watts / 1e6;
  return b;
}

double BudgetScore(double days, double cost_usd, double energy_mwh, search::Objective o) {
  switch (o) {
    case search::Objective::kTime:
    case search::Objective::kThroughput: return days;
    case search::Objective::kCost: return cost_usd > 0 ? cost_usd : NAN;
    case search::Objective::kEnergy: return energy_mwh > 0 ? energy_mwh : NAN;
  }
  return NAN;
}

std::string FailureText(const search::SearchCounts& c) {
  return fmt::format("no plan is valid and fits: {} enumerated, {} invalid, {} out of GPU memory, {} out of host memory",
                     Grouped(c.enumeration.enumerated), Grouped(c.enumeration.invalid_total()),
                     Grouped(c.out_of_memory), Grouped(c.host_memory));
}

std::string Money(double usd) {
  if (usd >= 1e6) return fmt::format("${:.2f}M", usd / 1e6);
  if (usd >= 1e3) return fmt::format("${:.1f}K", usd / 1e3);
  return fmt::format("${:.0f}", usd);
}

std::string TokensText(double t) {
  if (t >= 1e12) return fmt::format("{:.4g}T", t / 1e12);
  if (t >= 1e9) return fmt::format("{:.4g}B", t / 1e9);
  if (t >= 1e6) return fmt::format("{:.4g}M", t / 1e6);
  return Grouped(t);
}

}  // namespace

ClusterSpec ParseClusterSpec(const std::string& text) {
  ClusterSpec spec;
  spec.text = text;
  auto fail = [&](const std::string& why) {
    throw InputError("--cluster", "", "'" + text + "': " + why + " (expected TOPOLOGY:GPUS or TOPOLOGY:LO..HI, " +
                                          "optionally @USD per GPU-hour, e.g. dgx-h100:1024 or gb200-nvl72:576@4.5)");
  };
  std::string rest = text;
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    const std::string price = rest.substr(at + 1);
    char* end = nullptr;
    errno = 0;
    spec.gpu_hour_usd = std::strtod(price.c_str(), &end);
    if (price.empty() || end != price.c_str() + price.size() || errno != 0 || !(spec.gpu_hour_usd > 0) ||
        !std::isfinite(spec.gpu_hour_usd)) {
      fail("the price after '@' must be a positive number of USD per GPU-hour");
    }
    rest = rest.substr(0, at);
  }
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) fail("no GPU count");
  spec.topology = rest.substr(0, colon);
  spec.gpus = rest.substr(colon + 1);
  return spec;
}

config::ScenarioConfig BaseScenario(const std::string& model, int64_t seq_len, int64_t global_batch,
                                    config::Precision precision) {
  if (seq_len <= 0) throw InputError("--seq-len", "", "must be a positive number of tokens");
  if (global_batch <= 0) throw InputError("--global-batch", "", "must be a positive number of sequences");
  config::ScenarioConfig s;
  s.model_file = RequireFile("models", model, "--model", "model");
  s.model = config::LoadModelFile(s.model_file);
  s.name = s.model.name;
  s.seq_len = seq_len;
  s.plan.global_batch = global_batch;
  s.plan.precision = precision;
  return s;
}

Comparison Compare(const CompareRequest& request, const CompareOptions& options) {
  if (request.clusters.empty()) throw InputError("--cluster", "", "give at least one cluster to compare");
  if (request.tokens <= 0) throw InputError("--tokens", "", "must be a positive number of tokens");
  const config::ScenarioConfig& base = request.base;
  Comparison out;
  out.model = base.model.name;
  out.seq_len = base.seq_len;
  out.global_batch = base.plan.global_batch;
  out.tokens_per_step = base.tokens_per_step();
  out.tokens = request.tokens;
  out.objective = options.objective;
  out.ranking = options.ranking;
  std::optional<uncertainty::ErrorTable> table;
  if (fs::exists(uncertainty::DefaultErrorTablePath())) table = uncertainty::LoadErrorTableFile(uncertainty::DefaultErrorTablePath());
  const search::Ranking other_ranking =
      options.ranking == search::Ranking::kExpected ? search::Ranking::kPessimistic : search::Ranking::kExpected;

  for (const ClusterSpec& spec : request.clusters) {
    ClusterResult c;
    c.spec = spec;
    config::ScenarioConfig& s = c.scenario;
    s = base;
    s.topology_file = RequireFile("topologies", spec.topology, "--cluster", "topology");
    s.topology = config::LoadTopologyFile(s.topology_file);
    // The base scenario's profile belongs to its own GPU: every cluster runs
    // on its topology's GPU profile.
    s.profile_file = config::ResolveDataFile("profiles", s.topology.gpu, "");
    std::error_code ec;
    if (!fs::is_regular_file(s.profile_file, ec)) {
      throw InputError(s.topology_file, "node.gpu",
                       "no profile for GPU '" + s.topology.gpu + "': " + s.profile_file + " does not exist");
    }
    s.profile = config::LoadProfileFile(s.profile_file);
    s.name = fmt::format("{} on {}", base.model.name, spec.text);

    search::SearchSpace space;
    space.gpu_counts = search::ParseGpuRange(spec.gpus, s.topology);
    s.gpus = space.gpu_counts.front();
    space.scenario = s;
    search::SearchOptions so;
    so.objective = options.objective;
    so.top = 1 + std::max(0, options.runners_up);
    so.threads = options.threads;
    so.runner = options.runner;
    so.ranking = options.ranking;
    so.headroom = options.headroom;
    so.error_table = table ? &*table : nullptr;
    so.economics = search::LookUpEconomics(s);
    if (spec.gpu_hour_usd > 0) {
      so.economics.gpu_hour_usd = spec.gpu_hour_usd;
      so.economics.price_source = "--cluster " + spec.text;
      so.economics.price_basis = "given with --cluster";
    }
    c.search = search::Search(space, so);
    if (!c.ok()) {
      c.failure = FailureText(c.search.counts);
    } else {
      const search::RankedPlan& b = c.best();
      s.gpus = b.point.gpus;
      s.plan = b.plan;
      c.gpus = b.point.gpus;
      // Days at the step as the ranking reads it (pessimistic: the likely range's high end).
      const double step_s = options.ranking == search::Ranking::kPessimistic ? b.pessimistic_s : b.step.seconds();
      const Budget budget = BudgetAt(request.tokens, c.search.tokens_per_step, step_s, c.gpus, c.search.economics);
      c.days = budget.days;
      c.gpu_hours = budget.gpu_hours;
      c.cost_usd = budget.cost_usd;
      c.energy_mwh = budget.energy_mwh;
      if (options.other_reading && table && !table->runs.empty()) {
        search::SearchOptions other = so;
        other.ranking = other_ranking;
        other.top = 1;
        search::SearchResult r = search::Search(space, other);
        if (!r.plans.empty()) {
          BudgetAtReading at;
          at.plan = r.plans.front();
          at.step_s = other_ranking == search::Ranking::kPessimistic ? at.plan.pessimistic_s : at.plan.step.seconds();
          const Budget budget =
              BudgetAt(request.tokens, r.tokens_per_step, at.step_s, at.plan.point.gpus, c.search.economics);
          at.days = budget.days;
          at.cost_usd = budget.cost_usd;
          at.energy_mwh = budget.energy_mwh;
          c.other = at;
        }
      }
    }
    out.clusters.push_back(std::move(c));
  }

  double best_score = INFINITY;
  for (size_t i = 0; i < out.clusters.size(); ++i) {
    const ClusterResult& c = out.clusters[i];
    if (!c.ok()) continue;
    const double score = BudgetScore(c.days, c.cost_usd, c.energy_mwh, options.objective);
    if (std::isnan(score)) continue;
    if (score < best_score) {
      best_score = score;
      out.best = static_cast<int>(i);
    }
  }
  double best_other_score = INFINITY;
  for (size_t i = 0; i < out.clusters.size(); ++i) {
    const ClusterResult& c = out.clusters[i];
    if (!c.ok() || !c.other) continue;
    const double score = BudgetScore(c.other->days, c.other->cost_usd, c.other->energy_mwh, options.objective);
    if (!std::isnan(score) && score < best_other_score) {
      best_other_score = score;
      out.best_other = static_cast<int>(i);
    }
  }
  if (out.best >= 0 && out.best_other >= 0) {
    const char* other_name = search::RankingName(other_ranking);
    const ClusterResult& b = out.clusters[out.best];
    const ClusterResult& o = out.clusters[out.best_other];
    if (out.best_other == out.best) {
      out.winner_note = fmt::format("{} wins under the {} reading too ({:.1f} days with {}).", b.spec.text, other_name,
                                    o.other->days, search::PlanName(o.other->plan.point));
    } else {
      out.winner_note = fmt::format(
          "The winner changes under the {} reading: {} ({:.1f} days with {}) instead of {} ({:.1f} days there). "
          "The simulator cannot rank these clusters with confidence.",
          other_name, o.spec.text, o.other->days, search::PlanName(o.other->plan.point), b.spec.text,
          b.other ? b.other->days : NAN);
    }
  }
  std::set<std::string> bases;
  for (const ClusterResult& c : out.clusters) {
    if (!c.ok()) continue;
    if (c.search.economics.gpu_hour_usd > 0) {
      bases.insert(c.search.economics.price_basis);
    } else {
      out.warnings.push_back(fmt::format("{}: no price for GPU '{}': cost not shown (add it to economics/gpus.json, "
                                         "the topology's gpu_hour_usd, or give {}@USD)",
                                         c.spec.text, c.scenario.topology.gpu, c.spec.text));
    }
    if (c.search.economics.gpu_watts <= 0) {
      out.warnings.push_back(fmt::format("{}: no power figure for GPU '{}': energy not shown", c.spec.text,
                                         c.scenario.topology.gpu));
    }
  }
  if (bases.size() > 1) {
    std::string list;
    for (const std::string& b : bases) list += (list.empty() ? "" : "; ") + b;
    out.warnings.push_back("prices are of different bases (" + list +
                           "): their ratio says as much about the providers as about the hardware");
  }
  return out;
}

std::string ComparisonText(const Comparison& c) {
  std::string out;
  out += fmt::format("stacksim compare: {}, {} tokens\n", c.model, TokensText(static_cast<double>(c.tokens)));
  out += fmt::format("training   seq {}, global batch {} ({} tokens/step), {} steps\n", c.seq_len,
                     Grouped(static_cast<double>(c.global_batch)), Grouped(static_cast<double>(c.tokens_per_step)),
                     Grouped(std::ceil(static_cast<double>(c.tokens) / c.tokens_per_step)));
  out += fmt::format("objective  best plan per cluster by {}\n\n", search::ObjectiveName(c.objective));

  // Clusters side by side: one column each.
  std::vector<std::string> heads;
  for (const ClusterResult& r : c.clusters) heads.push_back(r.spec.text);
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const std::string& label, auto cell) {
    std::vector<std::string> cells;
    for (const ClusterResult& r : c.clusters) cells.push_back(r.ok() ? cell(r) : std::string("-"));
    rows.emplace_back(label, cells);
  };
  row("GPU", [](const ClusterResult& r) { return r.scenario.topology.gpu; });
  row("GPUs", [](const ClusterResult& r) { return Grouped(r.gpus); });
  row("plan", [](const ClusterResult& r) {
    const search::PlanPoint& p = r.best().point;
    std::string s = fmt::format("tp{} pp{} dp{}", p.tp, p.pp, p.dp);
    if (p.cp > 1) s += fmt::format(" cp{}", p.cp);
    if (p.ep > 1) s += fmt::format(" ep{}", p.ep);
    return s;
  });
  row("step time", [](const ClusterResult& r) { return fmt::format("{:.3f} s", r.best().step.seconds()); });
  row("likely step", [](const ClusterResult& r) { return search::RangeCell(r.best()) + " s"; });
  row("family", [](const ClusterResult& r) {
    const auto& a = r.best().assessment;
    if (a.plan_family_runs < 0) return std::string("-");
    return a.plan_family_validated() ? fmt::format("{} validated", a.plan_family_runs)
                                     : std::string("NEVER validated");
  });
  row("tokens/s", [](const ClusterResult& r) { return Grouped(r.best().tokens_per_s); });
  row("MFU", [](const ClusterResult& r) {
    const search::RankedPlan& b = r.best();
    if (!b.assessment.range) return fmt::format("{:.1f}%", 100.0 * b.mfu);
    // MFU scales as 1 / step: the range's low step is its high MFU.
    const double at = b.mfu * b.step.seconds();
    return fmt::format("{:.1f}% ({:.0f}-{:.0f})", 100.0 * b.mfu, 100.0 * at / b.assessment.range->high_s,
                       100.0 * at / b.assessment.range->low_s);
  });
  row("memory", [](const ClusterResult& r) {
    return fmt::format("{:.1f}/{:.0f} GiB", r.best().peak_memory.value / kGiB, r.best().capacity.value / kGiB);
  });
  row(c.ranking == search::Ranking::kPessimistic ? "days (pess.)" : "days",
      [](const ClusterResult& r) { return fmt::format("{:.1f}", r.days); });
  row("likely days", [](const ClusterResult& r) {
    const search::RankedPlan& b = r.best();
    if (!b.assessment.range) return std::string("-");
    const double per_step_s = r.days / (r.search.ranking == search::Ranking::kPessimistic ? b.pessimistic_s
                                                                                        : b.step.seconds());
    return fmt::format("{:.1f}-{:.1f}", per_step_s * b.assessment.range->low_s,
                       per_step_s * b.assessment.range->high_s);
  });
  row("GPU-hours", [](const ClusterResult& r) { return fmt::format("{:.3g}M", r.gpu_hours / 1e6); });
  row("$/GPU-hour", [](const ClusterResult& r) {
    return r.search.economics.gpu_hour_usd > 0 ? fmt::format("{:.2f}", r.search.economics.gpu_hour_usd)
                                               : std::string("n/a");
  });
  row("cost", [](const ClusterResult& r) { return r.cost_usd > 0 ? Money(r.cost_usd) : std::string("n/a"); });
  row("GPU energy", [](const ClusterResult& r) {
    return r.energy_mwh > 0 ? fmt::format("{:.0f} MWh", r.energy_mwh) : std::string("n/a");
  });
  row("next plan", [](const ClusterResult& r) {
    if (r.search.plans.size() < 2) return std::string("-");
    return fmt::format("+{:.1f}% ({})", 100.0 * (r.search.plans[1].score / r.best().score - 1.0),
                       search::RangesApart(r.search, 0, 1) ? "apart" : "within error");
  });

  size_t label_w = 0;
  for (const auto& [label, cells] : rows) label_w = std::max(label_w, label.size());
  std::vector<size_t> col_w(heads.size());
  for (size_t i = 0; i < heads.size(); ++i) {
    col_w[i] = heads[i].size();
    for (const auto& [label, cells] : rows) col_w[i] = std::max(col_w[i], cells[i].size());
  }
  out += fmt::format("{:<{}}", "", label_w);
  for (size_t i = 0; i < heads.size(); ++i) out += fmt::format("  {:>{}}", heads[i], col_w[i]);
  out += "\n";
  for (const auto& [label, cells] : rows) {
    out += fmt::format("{:<{}}", label, label_w);
    for (size_t i = 0; i < cells.size(); ++i) out += fmt::format("  {:>{}}", cells[i], col_w[i]);
    out += "\n";
  }

  out += "\nplans\n";
  for (const ClusterResult& r : c.clusters) {
    if (r.ok()) {
      out += fmt::format("  {}: {} (NVLink domain: {})\n", r.spec.text, search::PlanName(r.best().point),
                         r.best().placement);
    } else {
      out += fmt::format("  {}: {}\n", r.spec.text, r.failure);
    }
  }
  bool any_gap = false;
  for (const ClusterResult& r : c.clusters) {
    if (!r.ok() || r.search.plans.size() < 2) continue;
    if (!any_gap) out += "\nnext plan\n";
    any_gap = true;
    out += fmt::format("  {}: {}\n", r.spec.text, search::GapSentence(r.search, 0, 1));
  }
  bool any_warning = false;
  for (const ClusterResult& r : c.clusters) {
    if (!r.ok()) continue;
    std::vector<std::string> w = search::GroupedWarnings(r.search.plans);
    if (w.empty()) continue;
    if (!any_warning) out += "\ncoverage warnings (outside what validation covers; [ranks] of each cluster's plans)\n";
    any_warning = true;
    out += fmt::format("  {}:\n", r.spec.text);
    for (const std::string& line : w) out += "    " + line + "\n";
  }
  out += fmt::format("\nranked by  {}\n", c.ranking == search::Ranking::kPessimistic
                                              ? "the high end of each plan's likely range (--rank pessimistic)"
                                              : "the predicted step (--rank pessimistic: the likely range's high end)");
  for (const ClusterResult& r : c.clusters) {
    if (!r.ok() || !r.other || r.other->plan.point == r.best().point) continue;
    out += fmt::format("  {}: under the {} reading the best plan is {} ({:.1f} days)\n", r.spec.text,
                       c.ranking == search::Ranking::kExpected ? "pessimistic" : "expected",
                       search::PlanName(r.other->plan.point), r.other->days);
  }
  if (!c.winner_note.empty()) out += "  " + c.winner_note + "\n";
  for (const ClusterResult& r : c.clusters) {
    if (r.ok()) {
      out += "reserve    " + r.search.reserve_basis + "\n";
      break;
    }
  }
  if (c.best >= 0) {
    const ClusterResult& b = c.clusters[c.best];
    out += fmt::format("\nbest       {}: {:.1f} days on {} {}", b.spec.text, b.days, Grouped(b.gpus),
                       b.scenario.topology.gpu);
    if (b.cost_usd > 0) out += ", " + Money(b.cost_usd);
    out += "\n";
  } else {
    out += "\nbest       none: no cluster has a plan that fits (and the objective's figure)\n";
  }
  bool any_price = false;
  for (const ClusterResult& r : c.clusters) {
    if (r.ok() && r.search.economics.gpu_hour_usd > 0) {
      if (!any_price) out += "\nprices\n";
      any_price = true;
      out += fmt::format("  {}: ${:.2f} per GPU-hour, {} ({})\n", r.spec.text, r.search.economics.gpu_hour_usd,
                         r.search.economics.price_basis, r.search.economics.price_source);
    }
  }
  out += "energy     GPU board power (datasheet TDP) x GPU-hours: an upper estimate for the GPUs alone, "
         "without hosts, network or cooling\n";
  for (const std::string& w : c.warnings) out += "warning: " + w + "\n";
  return out;
}

nlohmann::json ComparisonJson(const Comparison& c) {
  nlohmann::json j;
  j["model"] = c.model;
  j["seq_len"] = c.seq_len;
  j["global_batch"] = c.global_batch;
  j["tokens_per_step"] = c.tokens_per_step;
  j["tokens"] = c.tokens;
  j["objective"] = search::ObjectiveName(c.objective);
  j["best"] = c.best >= 0 ? nlohmann::json(c.clusters[c.best].spec.text) : nlohmann::json(nullptr);
  nlohmann::json clusters = nlohmann::json::array();
  for (const ClusterResult& r : c.clusters) {
    nlohmann::json e;
    e["cluster"] = r.spec.text;
    e["topology"] = r.scenario.topology.name;
    e["gpu"] = r.scenario.topology.gpu;
    e["fits"] = r.ok();
    nlohmann::json search = search::SearchJson(r.search);
    e["economics"] = search["economics"];
    if (!r.search.economics.price_basis.empty()) e["economics"]["price_basis"] = r.search.economics.price_basis;
    e["pruning"] = search["pruning"];
    if (r.ok()) {
      e["gpus"] = r.gpus;
      e["days"] = r.days;
      e["gpu_hours"] = r.gpu_hours;
      e["cost_usd"] = r.cost_usd > 0 ? nlohmann::json(r.cost_usd) : nlohmann::json(nullptr);
      e["gpu_energy_mwh"] = r.energy_mwh > 0 ? nlohmann::json(r.energy_mwh) : nlohmann::json(nullptr);
      // The best plan and its runners-up as search ranks them, each with its
      // likely range and coverage warnings.
      e["plans"] = search["plans"];
      e["gap_to_next_plan"] = search["gap_to_next_plan"];
      if (r.other) {
        e["best_under_other_reading"] = {{"name", search::PlanName(r.other->plan.point)},
                                         {"step_s", r.other->plan.step.seconds()},
                                         {"pessimistic_step_s", r.other->plan.pessimistic_s},
                                         {"days", r.other->days},
                                         {"same_plan", r.other->plan.point == r.best().point}};
      }
    } else {
      e["failure"] = r.failure;
    }
    clusters.push_back(e);
  }
  j["clusters"] = clusters;
  j["warnings"] = c.warnings;
  j["ranking"] = search::RankingName(c.ranking);
  j["best_under_other_reading"] =
      c.best_other >= 0 ? nlohmann::json(c.clusters[c.best_other].spec.text) : nlohmann::json(nullptr);
  j["winner_changes"] = c.best >= 0 && c.best_other >= 0 && c.best != c.best_other;
  j["winner_note"] = c.winner_note;
  return j;
}

}  // namespace stacksim::compare
