#include "sim/uncertainty/assessment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "sim/util/statistics.h"

namespace stacksim::uncertainty {
namespace {

// What "similar" keeps at each step of widening, in order. The order keeps
// the GPU class longer than the scale band: with leave-one-out on the
// validation set, widening scale first put 76% of measured steps inside their
// p10-p90 range, widening GPUs first 72% (docs/uncertainty.md).
struct Level {
  bool gpu_class, scale_band, family;
  const char* widened;  // what this level gives up
};
constexpr Level kLevels[] = {
    {true, true, true, ""},
    {true, false, true, "other scale bands"},
    {false, true, true, "all GPUs"},
    {false, false, true, "all GPUs and scale bands"},
    {true, false, false, "any parallelism and scale"},
    {false, false, false, "all validated runs"},
};

bool Matches(const Level& l, const RunFeatures& a, const RunFeatures& b) {
  return (!l.gpu_class || a.gpu_class == b.gpu_class) && (!l.scale_band || a.scale_band == b.scale_band) &&
         (!l.family || a.family == b.family);
}

// "hopper runs at 513-4096 GPUs with tp/pp"
std::string Describe(const Level& l, const RunFeatures& f) {
  std::string s = l.gpu_class ? f.gpu_class + " runs" : "runs";
  if (l.scale_band) s += " at " + f.scale_band + " GPUs";
  if (l.family) s += " with " + f.family;
  return s;
}

std::string QuantileName(double q) { return fmt::format("p{:g}", q * 100); }

// `digits` significant digits: 6.96, 0.0412, 123.
std::string Seconds(double s, int digits = 3) {
  int decimals = s > 0 ? std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(s)))) : digits;
  return fmt::format("{:.{}f}", s, decimals);
}

std::vector<const ErrorTableRun*> Others(const ErrorTable& t, const std::string& exclude_id,
                                         bool exclude_source = false) {
  const std::string source = exclude_source && !exclude_id.empty() ? RunSource(exclude_id) : "";
  std::vector<const ErrorTableRun*> out;
  for (const auto& r : t.runs) {
    if (r.id == exclude_id || (!source.empty() && RunSource(r.id) == source)) continue;
    out.push_back(&r);
  }
  return out;
}

// The margin grid of CalibrateRangeMargin and the coverage it aims at (the
// range's claim, high - low quantile).
constexpr double kMarginStep = 0.01;
constexpr int kMarginSteps = 100;  // 0 .. 1
constexpr double kTargetCoverage = 0.80;

// Of `runs`, how many fall inside the range `pool_of(run)` (an ErrorTable)
// gives them at `margin`.
template <typename Pool>
int Inside(const std::vector<const ErrorTableRun*>& runs, Pool pool_of, double margin) {
  int inside = 0;
  RangeOptions o;
  o.margin = margin;
  for (const ErrorTableRun* r : runs) {
    auto range = EstimateStepRange(pool_of(*r), r->features, r->predicted_s, o);
    if (range && range->Holds(r->measured_s)) ++inside;
  }
  return inside;
}

// The smallest margin on the grid at which `runs` reach the target coverage
// against `pool_of`; the grid's last value if none does.
template <typename Pool>
double FitMargin(const std::vector<const ErrorTableRun*>& runs, Pool pool_of) {
  for (int i = 0; i <= kMarginSteps; ++i) {
    const double m = kMarginStep * i;
    if (Inside(runs, pool_of, m) >= kTargetCoverage * static_cast<double>(runs.size())) return m;
  }
  return kMarginStep * kMarginSteps;
}

// The table's runs from none of `sources`.
ErrorTable RunsNotFrom(const std::vector<const ErrorTableRun*>& runs, const std::set<std::string>& sources) {
  ErrorTable t;
  for (const ErrorTableRun* r : runs) {
    if (!sources.count(RunSource(r->id))) t.runs.push_back(*r);
  }
  return t;
}

std::set<std::string> Dimensions(const std::string& signature) {
  std::set<std::string> out;
  size_t start = 0;
  while (start <= signature.size()) {
    size_t end = signature.find('+', start);
    if (end == std::string::npos) end = signature.size();
    std::string d = signature.substr(start, end - start);
    if (!d.empty() && d != "dp") out.insert(d);
    start = end + 1;
  }
  return out;
}

// "tp" -> "tp>1"; sharding stages and "moe" read as they are.
std::string DimensionName(const std::string& d) {
  return d == "tp" || d == "pp" || d == "cp" || d == "ep" ? d + ">1" : d;
}

}  // namespace

double PredictiveQuantile(std::vector<double> values, double q) {
  return stacksim::PredictiveQuantile(Sorted(std::move(values)), q);
}

std::string RunSource(const std::string& run_id) { return run_id.substr(0, run_id.find('-')); }

RangeOptions OptionsFor(const ErrorTable& table) {
  RangeOptions o;
  if (table.calibration) o.margin = table.calibration->margin;
  return o;
}

RangeCalibration CalibrateRangeMargin(const ErrorTable& table) {
  std::vector<const ErrorTableRun*> runs;
  std::set<std::string> sources;
  for (const auto& r : table.runs) {
    runs.push_back(&r);
    sources.insert(RunSource(r.id));
  }
  if (sources.size() < 2) throw std::invalid_argument("CalibrateRangeMargin: runs from one source only");
  // Pools without one source, and without two (the refit below).
  std::map<std::set<std::string>, ErrorTable> pools;
  auto without = [&](std::set<std::string> left_out) -> const ErrorTable& {
    auto it = pools.find(left_out);
    if (it == pools.end()) it = pools.emplace(left_out, RunsNotFrom(runs, left_out)).first;
    return it->second;
  };
  auto other_sources = [&](const ErrorTableRun& r) -> const ErrorTable& { return without({RunSource(r.id)}); };
  RangeCalibration c;
  c.runs = static_cast<int>(runs.size());
  c.margin = FitMargin(runs, other_sources);
  const double n = static_cast<double>(runs.size());
  c.coverage_pct = 100.0 * Inside(runs, other_sources, c.margin) / n;
  c.unwidened_pct = 100.0 * Inside(runs, other_sources, 0.0) / n;
  // Refitted without each source: the others fit their margin among
  // themselves, and the left-out source's runs are judged at it.
  int inside = 0;
  for (const std::string& s : sources) {
    std::vector<const ErrorTableRun*> rest, mine;
    for (const ErrorTableRun* r : runs) (RunSource(r->id) == s ? mine : rest).push_back(r);
    const double w = FitMargin(rest, [&](const ErrorTableRun& r) -> const ErrorTable& {
      return without({s, RunSource(r.id)});
    });
    inside += Inside(mine, [&](const ErrorTableRun&) -> const ErrorTable& { return without({s}); }, w);
  }
  c.refit_coverage_pct = 100.0 * inside / n;
  return c;
}

std::optional<StepRange> EstimateStepRange(const ErrorTable& table, const RunFeatures& f, double predicted_s,
                                           const RangeOptions& options, const std::string& exclude_id) {
  std::vector<const ErrorTableRun*> pool = Others(table, exclude_id, options.exclude_source);
  if (pool.empty()) return std::nullopt;
  std::string widened;
  for (const Level& level : kLevels) {
    std::vector<const ErrorTableRun*> similar;
    for (const ErrorTableRun* r : pool) {
      if (Matches(level, r->features, f)) similar.push_back(r);
    }
    bool last = &level == &kLevels[std::size(kLevels) - 1];
    if (static_cast<int>(similar.size()) < options.min_runs && !last) {
      if (widened.empty()) {
        widened = fmt::format("{} validated {} (fewer than {})", similar.size(), Describe(level, f), options.min_runs);
      }
      continue;
    }
    StepRange r;
    r.predicted_s = predicted_s;
    r.n = static_cast<int>(similar.size());
    std::vector<double> errors;
    for (const ErrorTableRun* s : similar) {
      errors.push_back(s->error);
      r.run_ids.push_back(s->id);
    }
    r.low_quantile = options.low_quantile;
    r.high_quantile = options.high_quantile;
    r.margin = options.margin;
    r.error_low = PredictiveQuantile(errors, options.low_quantile);
    r.error_high = PredictiveQuantile(errors, options.high_quantile);
    if (options.margin > 0) {
      // Widen in log(1 + e), where any margin keeps 1 + e > 0.
      r.error_low = std::expm1(std::log1p(r.error_low) - options.margin);
      r.error_high = std::expm1(std::log1p(r.error_high) + options.margin);
    }
    // The simulator's error e = predicted / true - 1, so true = predicted / (1 + e).
    r.low_s = predicted_s / (1.0 + r.error_high);
    r.high_s = predicted_s / (1.0 + r.error_low);
    r.basis = fmt::format("{}-{} of the errors of {} validated {}", QuantileName(options.low_quantile),
                          QuantileName(options.high_quantile), r.n, Describe(level, f));
    if (options.margin > 0) {
      r.basis += fmt::format(", widened by a factor {:.2f} each way (calibrated on left-out sources)",
                             std::exp(options.margin));
    }
    if (!widened.empty()) r.widened = "widened to " + std::string(level.widened) + ": " + widened;
    return r;
  }
  return std::nullopt;
}

std::vector<std::string> CoverageWarnings(const ErrorTable& table, const RunFeatures& f, const RangeOptions& options,
                                          const std::string& exclude_id) {
  std::vector<std::string> w;
  std::vector<const ErrorTableRun*> pool = Others(table, exclude_id);
  if (f.gpu_kind == "datasheet") {
    w.push_back("no measured profile for " + f.gpu + ": compute and bandwidth come from datasheets");
  } else if (f.gpu_kind == "projected") {
    w.push_back("profile " + f.gpu + " is projected from another GPU: none of its numbers were measured on it");
  }
  if (pool.empty()) {
    w.push_back("no validated runs to compare with (empty error table)");
    return w;
  }
  int same_gpu = 0, same_class = 0, max_class = 0, max_all = 0;
  for (const ErrorTableRun* r : pool) {
    max_all = std::max(max_all, r->features.gpus);
    if (r->features.gpu == f.gpu) ++same_gpu;
    if (r->features.gpu_class == f.gpu_class) {
      ++same_class;
      max_class = std::max(max_class, r->features.gpus);
    }
  }
  if (same_class == 0) {
    w.push_back("no validated runs on any " + f.gpu_class + "-class GPU: the range comes from other GPUs");
  } else if (same_gpu == 0) {
    w.push_back("no validated runs on " + f.gpu + ": the range comes from other " + f.gpu_class + "-class GPUs");
  }
  if (f.gpus > max_all) {
    w.push_back(fmt::format("{} GPUs is beyond the largest validated run ({} GPUs)", f.gpus, max_all));
  } else if (same_class > 0 && f.gpus > max_class) {
    w.push_back(fmt::format("{} GPUs is beyond the largest validated {} run ({} GPUs)", f.gpus, f.gpu_class, max_class));
  }

  // Parallelism: each dimension, then the combination.
  std::set<std::string> dims = Dimensions(f.parallelism);
  bool each_validated = true;
  for (const std::string& d : dims) {
    int n = 0;
    for (const ErrorTableRun* r : pool) n += Dimensions(r->features.parallelism).count(d) > 0 ? 1 : 0;
    if (n == 0) {
      w.push_back(DimensionName(d) + " was never validated");
      each_validated = false;
    } else if (n < options.min_runs) {
      w.push_back(fmt::format("only {} validated run{} use{} {}", n, n == 1 ? "" : "s", n == 1 ? "s" : "",
                              DimensionName(d)));
    }
  }
  if (each_validated && dims.size() > 1) {
    bool together = false;
    for (const ErrorTableRun* r : pool) {
      std::set<std::string> rd = Dimensions(r->features.parallelism);
      together = together || std::includes(rd.begin(), rd.end(), dims.begin(), dims.end());
    }
    if (!together) {
      std::string names;
      for (const std::string& d : dims) names += (names.empty() ? "" : " with ") + DimensionName(d);
      w.push_back(names + " were never validated together");
    }
  }

  // Categorical features: a value no validated run had, or too few did.
  auto categorical = [&](const char* what, const std::string& value, auto field) {
    int n = 0;
    for (const ErrorTableRun* r : pool) n += field(r->features) == value ? 1 : 0;
    if (n == 0) {
      w.push_back(fmt::format("{} {} was never validated", what, value));
    } else if (n < options.min_runs) {
      w.push_back(fmt::format("{} {}: only {} validated run{}", what, value, n, n == 1 ? "" : "s"));
    }
  };
  categorical("precision", f.precision, [](const RunFeatures& r) { return r.precision; });
  // Without pipeline parallelism the schedule is a name only: nothing differs.
  if (Dimensions(f.parallelism).count("pp")) {
    categorical("pipeline schedule", f.schedule, [](const RunFeatures& r) { return r.schedule; });
  }
  categorical("recompute", f.recompute, [](const RunFeatures& r) { return r.recompute; });
  categorical("attention", f.attention, [](const RunFeatures& r) { return r.attention; });
  categorical("offload", f.offload, [](const RunFeatures& r) { return r.offload; });

  int64_t min_seq = pool.front()->features.seq_len, max_seq = min_seq;
  for (const ErrorTableRun* r : pool) {
    min_seq = std::min(min_seq, r->features.seq_len);
    max_seq = std::max(max_seq, r->features.seq_len);
  }
  if (f.seq_len < min_seq || f.seq_len > max_seq) {
    w.push_back(fmt::format("sequence length {} is outside the validated {}-{}", f.seq_len, min_seq, max_seq));
  }
  return w;
}

namespace {
// The schedule tells plans apart only with pipeline parallelism.
bool Pipelined(const RunFeatures& f) { return Dimensions(f.parallelism).count("pp") > 0; }
}  // namespace

std::string PlanFamilyName(const RunFeatures& f) {
  return (Pipelined(f) ? f.parallelism + " with " + f.schedule : f.parallelism) + " (recompute " + f.recompute + ")";
}

int PlanFamilyRuns(const ErrorTable& table, const RunFeatures& f, const std::string& exclude_id) {
  int n = 0;
  for (const auto& r : table.runs) {
    n += r.id != exclude_id && r.features.parallelism == f.parallelism && r.features.recompute == f.recompute &&
                 (!Pipelined(f) || r.features.schedule == f.schedule)
             ? 1
             : 0;
  }
  return n;
}

Assessment Assess(const ErrorTable& table, const RunFeatures& f, double predicted_s, const RangeOptions& options,
                  const std::string& exclude_id) {
  Assessment a;
  if (predicted_s > 0) a.range = EstimateStepRange(table, f, predicted_s, options, exclude_id);
  a.warnings = CoverageWarnings(table, f, options, exclude_id);
  a.plan_family = PlanFamilyName(f);
  a.plan_family_runs = PlanFamilyRuns(table, f, exclude_id);
  if (a.plan_family_runs == 0 && !table.runs.empty()) {
    a.warnings.push_back("plan family " + a.plan_family + " has no validated run: the range is borrowed from " +
                         "other plans");
  }
  return a;
}

Assessment AssessScenario(const ErrorTable& table, const config::ScenarioConfig& scenario, double predicted_s) {
  Assessment a = Assess(table, FeaturesOf(scenario), predicted_s, OptionsFor(table));
  if (scenario.plan.finetune.frozen_base()) {
    a.warnings.push_back(std::string(config::FinetuneMethodName(scenario.plan.finetune.method)) +
                         " fine-tuning was never validated: the range comes from full-training runs");
  }
  return a;
}

nlohmann::json PlanFamilyJson(const Assessment& a) {
  return {{"name", a.plan_family}, {"validated_runs", a.plan_family_runs}, {"validated", a.plan_family_validated()}};
}

Assessment AssessPrediction(const config::ScenarioConfig& scenario, double predicted_s, const std::string& network,
                            const std::string& table_path) {
  Assessment a;
  if (!std::filesystem::exists(table_path)) {
    a.warnings.push_back("no validation error table at " + table_path + ": no range, coverage unknown");
    return a;
  }
  ErrorTable table = LoadErrorTableFile(table_path);
  a = AssessScenario(table, scenario, predicted_s);
  if (network != "analytic") {
    a.warnings.push_back("validation errors are of the analytic network model; this run used " + network);
  }
  return a;
}

nlohmann::json StepRangeJson(const StepRange& r) {
  return {{"predicted_s", r.predicted_s},
          {"low_s", r.low_s},
          {"high_s", r.high_s},
          {"error_low", r.error_low},
          {"error_high", r.error_high},
          {"quantiles", {r.low_quantile, r.high_quantile}},
          {"margin", r.margin},
          {"basis", r.basis},
          {"n", r.n},
          {"widened", r.widened},
          {"runs", r.run_ids}};
}

std::string StepRangeText(const StepRange& r) {
  std::string s = fmt::format("likely {}-{} s: {} (n={})", Seconds(r.low_s), Seconds(r.high_s), r.basis, r.n);
  if (!r.widened.empty()) s += "; " + r.widened;
  return s;
}

std::string AssessmentText(const Assessment& a) {
  std::string out = "\nuncertainty\n";
  if (a.range) {
    out += "  step " + Seconds(a.range->predicted_s, 4) + " s, " + StepRangeText(*a.range) + "\n";
  } else {
    out += "  no range\n";
  }
  if (!a.warnings.empty()) {
    out += "coverage warnings (outside what validation covers)\n";
    for (const auto& w : a.warnings) out += "  " + w + "\n";
  }
  return out;
}

std::string StepRangeLine(const Assessment& a) {
  if (!a.range) return "";
  const StepRange& r = *a.range;
  const std::string widened = r.margin > 0 ? fmt::format(", widened {:.2f}x each way", std::exp(r.margin)) : "";
  return fmt::format("likely              {}-{} s ({}-{} of {} similar validated runs{}; see uncertainty)\n",
                     Seconds(r.low_s), Seconds(r.high_s), QuantileName(r.low_quantile),
                     QuantileName(r.high_quantile), r.n, widened);
}

}  // namespace stacksim::uncertainty
