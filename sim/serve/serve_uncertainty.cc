#include "sim/serve/serve_uncertainty.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "sim/config/scenario.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/statistics.h"

namespace stacksim::serve {
namespace {

constexpr double kLowQuantile = 0.10, kHighQuantile = 0.90;

bool IsLatency(const std::string& metric) {
  return metric == MetricKindName(MetricKind::kTtft) || metric == MetricKindName(MetricKind::kTpot) ||
         metric == MetricKindName(MetricKind::kE2e);
}

std::string Duration(double s) { return s >= 1 ? fmt::format("{:.2f} s", s) : fmt::format("{:.1f} ms", s * 1e3); }

}  // namespace

ServingErrorTable ServingErrorTableFrom(const ServingValidationReport& report, const std::string& validation_file) {
  ServingErrorTable t;
  t.validation_file = validation_file;
  for (const ServingRunOutcome& o : report.runs) {
    if (!o.scored || !o.error.empty()) continue;
    for (const MetricComparison& mc : o.metrics) {
      ServingErrorRow r;
      r.id = o.id;
      r.source = o.source;
      r.metric = MetricKindName(mc.kind);
      r.key = mc.key;
      r.gpu = o.gpu;
      r.engine = o.engine;
      r.scheduler = o.scheduler;
      r.weights = o.weights;
      r.moe = o.moe;
      r.measured = mc.measured;
      r.predicted = mc.predicted;
      r.error = mc.predicted / mc.measured - 1.0;
      t.rows.push_back(r);
    }
  }
  return t;
}

nlohmann::json ServingErrorTableToJson(const ServingErrorTable& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ServingErrorRow& r : t.rows) {
    rows.push_back({{"id", r.id}, {"source", r.source}, {"metric", r.metric}, {"key", r.key}, {"gpu", r.gpu},
                    {"engine", r.engine}, {"scheduler", r.scheduler}, {"weights", r.weights}, {"moe", r.moe},
                    {"measured", r.measured}, {"predicted", r.predicted}, {"error", r.error}});
  }
  return {{"schema", kServingErrorTableSchema},
          {"about", "Errors of stacksim serve-validate on published serving measurements (predicted / measured - 1); "
                    "written by stacksim serve-validate FILE --write-error-table OUT"},
          {"validation_file", t.validation_file},
          {"rows", rows}};
}

ServingErrorTable ParseServingErrorTable(const nlohmann::json& doc, const std::string& file) {
  JsonNode root_node(doc, file, "");
  JsonObject root(root_node);
  RequireSchema(root, kServingErrorTableSchema);
  root.Ignore({"about"});
  ServingErrorTable t;
  t.validation_file = root.Required("validation_file").String();
  for (const JsonNode& n : root.Required("rows").Elements()) {
    JsonObject o(n);
    ServingErrorRow r;
    r.id = o.Required("id").String();
    r.source = o.Required("source").String();
    r.metric = o.Required("metric").OneOf({"output_tokens_per_s", "requests_per_s", "ttft", "tpot", "e2e_latency"});
    r.key = o.Required("key").String();
    r.gpu = o.Required("gpu").String();
    r.engine = o.Required("engine").String();
    r.scheduler = o.Required("scheduler").String();
    r.weights = o.Required("weights").String();
    r.moe = o.Required("moe").Bool();
    r.measured = o.Required("measured").PositiveNumber();
    r.predicted = o.Required("predicted").PositiveNumber();
    r.error = o.Required("error").Number();
    if (!(r.error > -1.0)) o.Required("error").Fail("must be above -1 (predicted / measured - 1)");
    o.Finish();
    t.rows.push_back(r);
  }
  root.Finish();
  return t;
}

ServingErrorTable LoadServingErrorTable(const std::string& path) {
  return ParseServingErrorTable(ReadJsonFile(path), path);
}

std::string DefaultServingErrorTablePath() { return config::DataRoot() + "/validation/serving_error_table.json"; }

std::optional<LatencyRange> EstimateLatencyRange(const ServingErrorTable& t, MetricKind metric, double predicted_s,
                                                 const std::string& exclude_id) {
  const std::string name = MetricKindName(metric);
  auto errors_of = [&](bool same_metric) {
    std::vector<double> e;
    for (const ServingErrorRow& r : t.rows) {
      if (r.id == exclude_id || !IsLatency(r.metric)) continue;
      if (same_metric && r.metric != name) continue;
      e.push_back(r.error);
    }
    return e;
  };
  std::vector<double> errors = errors_of(true);
  std::string what = fmt::format("validated {} metrics", metric == MetricKind::kTtft ? "TTFT" : "TPOT/ITL");
  if (static_cast<int>(errors.size()) < kMinRows) {
    errors = errors_of(false);
    what = fmt::format("validated latency metrics (fewer than {} of this metric)", kMinRows);
  }
  if (errors.empty()) return std::nullopt;
  const std::vector<double> sorted = Sorted(errors);
  LatencyRange r;
  r.predicted_s = predicted_s;
  r.n = static_cast<int>(sorted.size());
  r.error_low = PredictiveQuantile(sorted, kLowQuantile);
  r.error_high = PredictiveQuantile(sorted, kHighQuantile);
  r.low_s = predicted_s / (1.0 + r.error_high);
  r.high_s = predicted_s / (1.0 + r.error_low);
  r.basis = fmt::format("p10-p90 of the errors of {} {} ({:+.0f}%..{:+.0f}%)", r.n, what, r.error_low * 100,
                        r.error_high * 100);
  return r;
}

ServeAssessment AssessServe(const ServingErrorTable* table, const ServeConfig& c, double ttft_s, double tpot_s) {
  ServeAssessment a;
  if (table == nullptr) {
    a.warnings.push_back("no serving error table: no likely range (run stacksim serve-validate FILE "
                         "--write-error-table validation/serving_error_table.json)");
    return a;
  }
  if (ttft_s > 0) a.ttft = EstimateLatencyRange(*table, MetricKind::kTtft, ttft_s);
  if (tpot_s > 0) a.tpot = EstimateLatencyRange(*table, MetricKind::kTpot, tpot_s);
  std::set<std::string> gpus, engines, schedulers, weights;
  bool moe = false;
  for (const ServingErrorRow& r : table->rows) {
    gpus.insert(r.gpu);
    engines.insert(r.engine);
    schedulers.insert(r.scheduler);
    weights.insert(r.weights);
    moe = moe || r.moe;
  }
  if (c.engine.empty()) {
    a.warnings.push_back("no engine named (scenario \"engine\"): batching limits and memory rule are stacksim's "
                         "defaults, not a validated engine's");
  } else if (!engines.count(c.engine)) {
    a.warnings.push_back("no validated serving measurement with engine " + c.engine);
  }
  if (!gpus.count(c.profile.name)) a.warnings.push_back("no validated serving measurement on " + c.profile.name);
  if (!schedulers.count(SchedulerName(c.scheduler))) {
    a.warnings.push_back(std::string("no validated serving measurement with the ") + SchedulerName(c.scheduler) +
                         " scheduler");
  }
  if (!weights.count(WeightFormatName(c.weights))) {
    a.warnings.push_back(std::string("no validated serving measurement with ") + WeightFormatName(c.weights) +
                         " weights (their dequantization cost is not modelled)");
  }
  if (c.speculative.enabled()) {
    a.warnings.push_back("no validated serving measurement with speculative decoding (its acceptance is the "
                         "scenario's; the drafts' cost is modelled, not measured)");
  }
  if (c.model.is_moe() && !moe) {
    a.warnings.push_back("no validated serving measurement of a mixture-of-experts model (expert weights read for "
                         "the experts uniform routing touches)");
  }
  return a;
}

ServeAssessment AssessServePrediction(const std::string& path, const ServeConfig& c, double ttft_s, double tpot_s) {
  if (!std::filesystem::exists(path)) return AssessServe(nullptr, c, ttft_s, tpot_s);
  const ServingErrorTable t = LoadServingErrorTable(path);
  return AssessServe(&t, c, ttft_s, tpot_s);
}

nlohmann::json ServeUncertaintyJson(const ServeAssessment& a) {
  auto range = [](const std::optional<LatencyRange>& r) -> nlohmann::json {
    if (!r) return nullptr;
    return {{"predicted_s", r->predicted_s}, {"low_s", r->low_s}, {"high_s", r->high_s},
            {"error_low", r->error_low}, {"error_high", r->error_high}, {"n", r->n}, {"basis", r->basis}};
  };
  return {{"ttft", range(a.ttft)}, {"tpot", range(a.tpot)}};
}

std::string ServeAssessmentText(const ServeAssessment& a) {
  std::string out;
  if (a.ttft) {
    out += "  likely TTFT " + Duration(a.ttft->low_s) + " - " + Duration(a.ttft->high_s) + " (" + a.ttft->basis + ")\n";
  }
  if (a.tpot) {
    out += "  likely TPOT " + Duration(a.tpot->low_s) + " - " + Duration(a.tpot->high_s) + " (" + a.tpot->basis + ")\n";
  }
  for (const std::string& w : a.warnings) out += "  warning: " + w + "\n";
  return out;
}

RangeCoverage LeaveOneOutCoverage(const ServingErrorTable& t) {
  RangeCoverage cov;
  for (const ServingErrorRow& r : t.rows) {
    MetricKind kind;
    if (r.metric == MetricKindName(MetricKind::kTtft)) {
      kind = MetricKind::kTtft;
    } else if (r.metric == MetricKindName(MetricKind::kTpot)) {
      kind = MetricKind::kTpot;
    } else {
      continue;
    }
    auto range = EstimateLatencyRange(t, kind, r.predicted, r.id);
    if (!range) continue;
    ++cov.rows;
    if (r.measured >= range->low_s && r.measured <= range->high_s) ++cov.inside;
  }
  return cov;
}

}  // namespace stacksim::serve
