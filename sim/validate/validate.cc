#include "sim/validate/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>

#include "sim/memory/memory_model.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/validate/run_scenario.h"

namespace stacksim::validate {
namespace {

std::string PlanLine(const config::ScenarioConfig& s) {
  const auto& p = s.plan;
  return fmt::format("tp{} pp{} dp{} vp{} mb{} gb{} sp={} recompute={} sharding={} {} {}", p.tp, p.pp, p.dp,
                     p.vp, p.micro_batch, p.global_batch, p.sequence_parallel ? "on" : "off",
                     config::RecomputeName(p.recompute), config::ShardingName(p.sharding),
                     config::PrecisionName(p.precision),
                     std::string(config::AttentionName(p.attention)) + "-attention");
}

// A tuned run keeps headroom beyond the memory model's estimate: the caching
// allocator fragments, and transient buffers (logit casts, communication
// staging) come and go. Choices for open plan fields must leave this much free.
constexpr double kTunedHeadroom = 0.10;

// The search bounds for open plan fields: micro-batches beyond 16 sequences
// and more than 16 virtual stages per rank are not what tuned runs use.
constexpr int64_t kLargestMicroBatch = 16;
constexpr int kLargestVirtualStages = 16;

bool Fits(const config::ScenarioConfig& s) {
  for (const auto& f : memory::EstimateMemory(s)) {
    if (f.total() > s.profile.hbm_capacity.value * (1.0 - kTunedHeadroom)) return false;
  }
  return true;
}

// Fills the open plan fields with the fastest valid choice that fits in
// memory, as a tuned run would: micro-batch sizes and virtual stages are
// searched by simulation; recomputation is the cheapest mode that fits.
void FillOpenFields(RunScenario& rs, RunOutcome& outcome, simulate::SimulationResult* best_result) {
  config::ScenarioConfig base = rs.scenario;
  auto open = [&](const char* f) {
    return std::find(rs.open_fields.begin(), rs.open_fields.end(), f) != rs.open_fields.end();
  };
  std::vector<int64_t> mbs = {base.plan.micro_batch};
  if (open("micro_batch")) {
    // Every micro-batch size that divides the local batch, up to 16 sequences.
    mbs.clear();
    for (int64_t mb = 1; mb <= kLargestMicroBatch; ++mb) {
      if (base.plan.global_batch % (mb * base.plan.dp) == 0) mbs.push_back(mb);
    }
    if (mbs.empty()) mbs.push_back(1);
  }
  // Virtual stages: equal ones, or Megatron-Core's split that counts the
  // embedding and the loss as a layer each (account_for_embedding/
  // loss_in_pipeline_split: layers + 2 divide into pp x vp, and the first
  // and last virtual stages hold one layer fewer).
  struct VirtualStages {
    int vp;
    bool uneven;
  };
  std::vector<VirtualStages> vps = {{base.plan.vp, base.plan.uneven_stages}};
  if (open("vp")) {
    vps = {{1, base.plan.uneven_stages}};
    const int64_t layers = base.model.num_layers;
    for (int v = 2; base.plan.pp > 1 && v <= kLargestVirtualStages && vps.size() < 4; ++v) {
      const int64_t n = static_cast<int64_t>(base.plan.pp) * v;
      if (layers % n == 0) {
        vps.push_back({v, false});
      } else if ((layers + 2) % n == 0 && layers >= n) {
        vps.push_back({v, true});
      }
    }
  }
  std::vector<config::Recompute> modes = {base.plan.recompute};
  if (open("recompute")) {
    modes = {config::Recompute::kNone, config::Recompute::kSelective, config::Recompute::kFull};
    // Selective recomputation arrived with Korthikanti et al. (2022); before
    // it Megatron-LM could only checkpoint whole layers.
    if (rs.predates_selective_recompute) modes = {config::Recompute::kNone, config::Recompute::kFull};
  }

  double best = std::numeric_limits<double>::infinity();
  config::ScenarioConfig chosen = base;
  bool any = false;
  for (int64_t mb : mbs) {
    for (const VirtualStages& vs : vps) {
      const int v = vs.vp;
      config::ScenarioConfig c = base;
      c.plan.micro_batch = mb;
      c.plan.vp = v;
      c.plan.uneven_stages = vs.uneven;
      c.plan.schedule = v > 1 ? config::PipelineScheduleKind::kInterleaved : config::PipelineScheduleKind::kOneFOneB;
      try {
        config::ValidatePlan(c, c.file);
      } catch (const InputError&) {
        continue;
      }
      // The cheapest recomputation that fits.
      bool fits = false;
      for (auto mode : modes) {
        c.plan.recompute = mode;
        if (Fits(c)) {
          fits = true;
          break;
        }
      }
      if (!fits && (open("micro_batch") || open("vp"))) continue;  // a tuned run would not pick it
      simulate::Options o;
      o.simulate_if_out_of_memory = true;
      auto r = simulate::Simulate(c, o);
      if (r.iteration.seconds() < best) {
        best = r.iteration.seconds();
        chosen = c;
        *best_result = r;
        any = true;
      }
    }
  }
  if (!any) {
    // Nothing fits by our memory model: simulate the given plan anyway.
    config::ScenarioConfig c = base;
    if (open("recompute")) c.plan.recompute = config::Recompute::kFull;
    if (open("micro_batch")) c.plan.micro_batch = mbs.front();
    if (open("vp")) c.plan.vp = 1;
    c.plan.schedule = c.plan.vp > 1 ? config::PipelineScheduleKind::kInterleaved : config::PipelineScheduleKind::kOneFOneB;
    simulate::Options o;
    o.simulate_if_out_of_memory = true;
    *best_result = simulate::Simulate(c, o);
    chosen = c;
  }
  if (open("micro_batch")) outcome.choices.push_back("micro_batch=" + std::to_string(chosen.plan.micro_batch));
  if (open("vp")) outcome.choices.push_back("vp=" + std::to_string(chosen.plan.vp));
  if (open("recompute")) outcome.choices.push_back(std::string("recompute=") + config::RecomputeName(chosen.plan.recompute));
  rs.scenario = chosen;
}

}  // namespace

ValidationReport RunValidation(const std::string& path, const ValidationOptions& options) {
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  JsonObject top(root);
  std::string schema = top.Required("schema").String();
  if (schema != "stacksim.validation.training/1") {
    throw InputError(path, "schema", "expected 'stacksim.validation.training/1', got '" + schema + "'");
  }
  auto runs = top.Required("runs").Elements();
  top.Finish();

  ValidationReport rep;
  double sum = 0, dense_sum = 0;
  for (const JsonNode& run : runs) {
    RunOutcome o;
    JsonObject r(run);
    o.id = r.Required("id").String();
    if (!options.only_id.empty() && o.id != options.only_id) continue;
    o.tier = r.Has("tier") ? r.Required("tier").String() : "";
    o.scored = r.Has("scored") && r.Required("scored").Bool();
    if (r.Has("hardware")) {
      const auto& hw = run.json().at("hardware");
      if (hw.contains("gpu") && hw["gpu"].is_string()) o.gpu = hw["gpu"].get<std::string>();
      if (hw.contains("gpus") && hw["gpus"].is_number_integer()) o.gpus = hw["gpus"].get<int>();
    }
    if (r.Has("measured")) {
      const auto& ms = run.json().at("measured");
      if (ms.contains("iteration_s") && ms["iteration_s"].is_number()) o.measured_s = ms["iteration_s"].get<double>();
    }
    if (o.scored) ++rep.scored_total;
    if (r.Has("model")) {
      const auto& m = run.json().at("model");
      o.moe = m.is_object() && m.contains("moe") && !m["moe"].is_null();
    }
    try {
      if (!o.measured_s) throw InputError(path, run.path() + ".measured.iteration_s", "the run has no measured iteration time");
      RunScenario rs = ScenarioForRun(run.json(), path, run.path());
      o.choices = rs.choices;
      simulate::SimulationResult result;
      FillOpenFields(rs, o, &result);
      o.plan = PlanLine(rs.scenario);
      if (result.out_of_memory) {
        double worst = 0;
        for (const auto& m : result.memory) worst = std::max(worst, m.total().value);
        o.warnings.push_back(fmt::format("memory model: {:.1f} GiB needed > {:.1f} GiB on the GPU", worst / kGiB,
                                         result.capacity.value / kGiB));
      }
      o.predicted_s = result.iteration.seconds();
      o.features = uncertainty::FeaturesOf(rs.scenario);
      if (run.json().contains("framework") && run.json()["framework"].is_string()) {
        o.features->framework = run.json()["framework"].get<std::string>();
      }
      o.error_pct = (*o.predicted_s - *o.measured_s) / *o.measured_s * 100.0;
      if (o.scored) {
        sum += std::fabs(o.error_pct);
        ++rep.scored_predicted;
        if (!o.moe) {
          dense_sum += std::fabs(o.error_pct);
          ++rep.scored_dense_predicted;
        }
      }
    } catch (const InputError& e) {
      o.error = e.what();
    }
    rep.runs.push_back(o);
  }
  rep.mape_pct = rep.scored_predicted > 0 ? sum / rep.scored_predicted : 0;
  rep.mape_dense_pct = rep.scored_dense_predicted > 0 ? dense_sum / rep.scored_dense_predicted : 0;

  // The error table, and each scored run's range from the others' errors.
  rep.error_table.validation_file = std::filesystem::path(path).filename().string();
  rep.error_table.validation_runs = static_cast<int>(runs.size());
  for (const auto& o : rep.runs) {
    if (!o.scored || !o.predicted_s || !o.features) continue;
    rep.error_table.runs.push_back({o.id, *o.features, *o.measured_s, *o.predicted_s, *o.predicted_s / *o.measured_s - 1});
  }
  for (auto& o : rep.runs) {
    if (!o.scored || !o.predicted_s || !o.features) continue;
    uncertainty::Assessment a = uncertainty::Assess(rep.error_table, *o.features, *o.predicted_s, {}, o.id);
    o.coverage = a.warnings;
    o.range = a.range;
    if (o.range) {
      ++rep.ranged;
      if (*o.measured_s >= o.range->low_s && *o.measured_s <= o.range->high_s) ++rep.inside_range;
    }
  }
  return rep;
}

void StampErrorTable(uncertainty::ErrorTable& table, const std::string& source_dir) {
  auto run = [](const std::string& cmd) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return std::make_pair(-1, out);
    char buf[256];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int rc = pclose(p);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return std::make_pair(rc, out);
  };
  std::string dir = "'" + source_dir + "'";
  auto [rc, commit] = run("git -C " + dir + " rev-parse HEAD 2>/dev/null");
  if (rc != 0 || commit.empty()) {
    table.stacksim_commit = "unknown";
  } else {
    auto [drc, dirty] =
        run("git -C " + dir + " status --porcelain --untracked-files=no -- sim profiles topologies models 2>/dev/null");
    table.stacksim_commit = commit + (drc == 0 && !dirty.empty() ? " + uncommitted changes" : "");
  }
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  table.generated = date;
}

namespace {

struct Band {
  int n = 0;
  std::vector<double> errors;
};

// Validated runs by GPU class, scale band and parallelism family.
std::map<std::tuple<std::string, std::string, std::string>, Band> Bands(const uncertainty::ErrorTable& t) {
  std::map<std::tuple<std::string, std::string, std::string>, Band> out;
  for (const auto& r : t.runs) {
    Band& b = out[{r.features.gpu_class, r.features.scale_band, r.features.family}];
    ++b.n;
    b.errors.push_back(r.error);
  }
  return out;
}

double InsidePct(const ValidationReport& r) { return r.ranged > 0 ? 100.0 * r.inside_range / r.ranged : 0; }

double ClaimedPct() {
  uncertainty::RangeOptions o;
  return 100.0 * (o.high_quantile - o.low_quantile);
}

bool ProfileKindWarning(const std::string& w) {
  return w.rfind("no measured profile", 0) == 0 || w.rfind("profile ", 0) == 0;
}

}  // namespace

nlohmann::json ValidationJson(const ValidationReport& report) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& o : report.runs) {
    nlohmann::json j;
    j["id"] = o.id;
    j["scored"] = o.scored;
    j["tier"] = o.tier;
    j["gpu"] = o.gpu;
    j["gpus"] = o.gpus;
    j["measured_iteration_s"] = o.measured_s ? nlohmann::json(*o.measured_s) : nlohmann::json(nullptr);
    if (o.predicted_s) {
      j["predicted_iteration_s"] = *o.predicted_s;
      j["error_pct"] = o.error_pct;
      j["plan"] = o.plan;
    } else {
      j["error"] = o.error;
    }
    j["choices"] = o.choices;
    j["warnings"] = o.warnings;
    if (o.range) {
      nlohmann::json range = uncertainty::StepRangeJson(*o.range);
      range.erase("runs");
      range["leave_one_out"] = true;
      j["range"] = range;
      j["measured_in_range"] = *o.measured_s >= o.range->low_s && *o.measured_s <= o.range->high_s;
    }
    if (o.scored && o.predicted_s) j["coverage"] = o.coverage;
    runs.push_back(j);
  }
  nlohmann::json bands = nlohmann::json::array();
  for (const auto& [key, b] : Bands(report.error_table)) {
    bands.push_back({{"gpu_class", std::get<0>(key)},
                     {"scale_band", std::get<1>(key)},
                     {"family", std::get<2>(key)},
                     {"n", b.n},
                     {"error_p10", uncertainty::PredictiveQuantile(b.errors, 0.10)},
                     {"error_median", uncertainty::PredictiveQuantile(b.errors, 0.5)},
                     {"error_p90", uncertainty::PredictiveQuantile(b.errors, 0.90)}});
  }
  nlohmann::json calibration = {{"ranged", report.ranged},
                                {"inside", report.inside_range},
                                {"inside_pct", InsidePct(report)},
                                {"claimed_pct", ClaimedPct()},
                                {"bands", bands}};
  return {{"runs", runs},
          {"mape_pct", report.mape_pct},
          {"scored_predicted", report.scored_predicted},
          {"mape_dense_pct", report.mape_dense_pct},
          {"scored_dense_predicted", report.scored_dense_predicted},
          {"scored_total", report.scored_total},
          {"uncertainty", calibration}};
}

std::string ValidationText(const ValidationReport& report) {
  std::string out = fmt::format("{:<44} {:>6} {:>9} {:>9} {:>8}\n", "run", "gpus", "measured", "predicted", "error");
  for (const auto& o : report.runs) {
    std::string id = o.id.size() > 44 ? o.id.substr(0, 41) + "..." : o.id;
    if (o.predicted_s) {
      out += fmt::format("{:<44} {:>6} {:>8.2f}s {:>8.2f}s {:>+7.1f}%{}\n", id, o.gpus, *o.measured_s, *o.predicted_s,
                         o.error_pct, o.scored ? "" : "  (not scored)");
      out += "    " + o.plan + "\n";
      std::string chose;
      for (const auto& c : o.choices) chose += (chose.empty() ? "" : "; ") + c;
      if (!chose.empty()) out += "    chosen: " + chose + "\n";
      for (const auto& w : o.warnings) out += "    warning: " + w + "\n";
      if (o.range) {
        bool inside = *o.measured_s >= o.range->low_s && *o.measured_s <= o.range->high_s;
        out += "    range (leave-one-out): " + uncertainty::StepRangeText(*o.range) + "; measured " +
               (inside ? "inside" : "OUTSIDE") + "\n";
      }
      // Every validated profile is datasheet-derived: the summary says so once.
      for (const auto& w : o.coverage) {
        if (!ProfileKindWarning(w)) out += "    coverage: " + w + "\n";
      }
    } else {
      out += fmt::format("{:<44} {:>6} {:>9} {:>9}   -  {}\n", id, o.gpus,
                         o.measured_s ? fmt::format("{:.2f}s", *o.measured_s) : "-", "-", o.error);
    }
  }
  out += fmt::format("\nmean absolute error over {} of {} scored runs: {:.1f}%\n", report.scored_predicted,
                     report.scored_total, report.mape_pct);
  out += fmt::format("  dense runs: {:.1f}% over {}; mixture-of-experts runs: {}\n", report.mape_dense_pct,
                     report.scored_dense_predicted, report.scored_predicted - report.scored_dense_predicted);
  std::map<std::string, int> kinds;
  for (const auto& r : report.error_table.runs) ++kinds[r.features.gpu_kind];
  std::string kind_list;
  for (const auto& [k, n] : kinds) kind_list += fmt::format("{}{} {}", kind_list.empty() ? "" : ", ", n, k);
  out += fmt::format("\nuncertainty (leave-one-out): the measured step fell inside its p10-p90 range for {} of {} "
                     "scored runs ({:.1f}%; the range claims {:.0f}%)\n",
                     report.inside_range, report.ranged, InsidePct(report), ClaimedPct());
  out += "  profiles of the validated runs: " + kind_list + "\n";
  out += "validated runs by GPU class, scale band and parallelism: n, error p10 / median / p90\n";
  for (const auto& [key, b] : Bands(report.error_table)) {
    out += fmt::format("  {:<10} {:>9} GPUs  {:<11} {:>3}  {:>+6.1f}% / {:>+6.1f}% / {:>+6.1f}%\n", std::get<0>(key),
                       std::get<1>(key), std::get<2>(key), b.n, 100 * uncertainty::PredictiveQuantile(b.errors, 0.1),
                       100 * uncertainty::PredictiveQuantile(b.errors, 0.5),
                       100 * uncertainty::PredictiveQuantile(b.errors, 0.9));
  }
  return out;
}

}  // namespace stacksim::validate
