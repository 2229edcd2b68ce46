#include "sim/validate/source_report.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "sim/uncertainty/assessment.h"

namespace stacksim::validate {

std::string SourceOf(const std::string& run_id) { return uncertainty::RunSource(run_id); }

namespace {

constexpr double kWithinPct = 10.0;

void Add(SourceSummary& s, const RunOutcome& o) {
  ++s.runs;
  if (!o.scored) return;
  ++s.scored;
  if (!o.predicted_s) return;
  ++s.modelled;
  const double e = std::fabs(o.error_pct);
  s.mape_pct += e;  // a sum until Finish
  if (e <= kWithinPct) ++s.within_10;
  if (s.worst_id.empty() || e > std::fabs(s.worst_error_pct)) {
    s.worst_id = o.id;
    s.worst_error_pct = o.error_pct;
  }
}

void Finish(SourceSummary& s) {
  s.mape_pct = s.modelled > 0 ? s.mape_pct / s.modelled : 0;
  s.within_10_pct = s.scored > 0 ? 100.0 * s.within_10 / s.scored : 0;
}

}  // namespace

Summary Summarize(const std::vector<RunOutcome>& runs) {
  Summary out;
  std::map<std::string, SourceSummary> by_source;
  for (const auto& o : runs) {
    Add(out.all, o);
    SourceSummary& s = by_source[o.source];
    s.source = o.source;
    Add(s, o);
    if (!o.predicted_s) ++out.not_modelled;
  }
  Finish(out.all);
  for (auto& [name, s] : by_source) {
    Finish(s);
    out.sources.push_back(s);
  }
  return out;
}

FittedConstants RefitConstants(const std::vector<RunOutcome>& /*fit_on*/) { return {}; }

void ApplyConstants(const FittedConstants& constants, config::ScenarioConfig& scenario) {
  for (const auto& [name, value] : constants.values) {
    if (name == kOverlapCommSms) {
      scenario.plan.overlap_comm_sms = static_cast<int>(std::lround(value));
      continue;
    }
    throw std::logic_error(fmt::format("fitted constant '{}' = {} has no application in ApplyConstants", name, value));
  }
}

LeaveOneSourceOut LeaveOneSourceOutError(const std::vector<RunOutcome>& runs, const RefitFunction& refit,
                                         const RepredictFunction& repredict) {
  std::map<std::string, std::vector<const RunOutcome*>> by_source;
  for (const auto& o : runs) {
    if (o.scored && o.predicted_s && o.measured_s) by_source[o.source].push_back(&o);
  }
  LeaveOneSourceOut out;
  double sum = 0;
  for (const auto& [source, members] : by_source) {
    std::vector<RunOutcome> fit_on;
    for (const auto& [other, others] : by_source) {
      if (other == source) continue;
      for (const RunOutcome* o : others) fit_on.push_back(*o);
    }
    const FittedConstants constants = refit(fit_on);
    if (!constants.empty()) out.fitted = true;
    double source_sum = 0;
    int source_runs = 0;
    for (const RunOutcome* o : members) {
      std::optional<double> predicted = constants.empty() ? o->predicted_s : repredict(*o, constants);
      if (!predicted) continue;
      source_sum += std::fabs((*predicted - *o->measured_s) / *o->measured_s * 100.0);
      ++source_runs;
    }
    if (source_runs > 0) out.source_mape_pct[source] = source_sum / source_runs;
    sum += source_sum;
    out.runs += source_runs;
  }
  out.mape_pct = out.runs > 0 ? sum / out.runs : 0;
  out.note = out.fitted ? fmt::format("constants refitted without each source, which is then predicted: MAPE {:.1f}% "
                                      "over {} runs",
                                      out.mape_pct, out.runs)
                        : "no constants are fitted to these runs: leave-one-source-out error equals the error above";
  return out;
}

}  // namespace stacksim::validate
