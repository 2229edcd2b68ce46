#include "sim/validate/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "sim/memory/memory_model.h"
#include "sim/cost/comm_overlap.h"
#include "sim/memory/reserve.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/parallel.h"
#include "sim/validate/layout_choice.h"
#include "sim/validate/plan_choice.h"
#include "sim/validate/run_scenario.h"

namespace stacksim::validate {
namespace {

std::string PlanLine(const config::ScenarioConfig& s) {
  const auto& p = s.plan;
  std::string cp = fmt::format("cp{}", p.cp);
  if (p.cp > 1) cp += std::string(" cp_comm=") + config::CpCommName(p.cp_comm);
  const std::string ep = p.etp > 1 ? fmt::format("{} etp{}", p.ep, p.etp) : std::to_string(p.ep);
  return fmt::format("tp{} pp{} dp{} {} ep{} vp{} mb{} gb{} sp={} recompute={} sharding={} {} {}", p.tp, p.pp, p.dp,
                     cp, ep, p.vp, p.micro_batch, p.global_batch, p.sequence_parallel ? "on" : "off",
                     config::RecomputeName(p.recompute), config::ShardingName(p.sharding),
                     config::PrecisionName(p.precision),
                     std::string(config::AttentionName(p.attention)) + "-attention");
}


}  // namespace

namespace {

// Validates one run: builds its scenario, applies the fitted constants, fills
// the open plan fields and simulates. Runs that cannot be modelled get the
// reason in `error`; a malformed id throws.
RunOutcome ValidateRun(const JsonNode& run, const std::string& path, const FittedConstants& constants,
                       bool keep_scenario, const WorkerCount& workers = {}) {
  RunOutcome o;
  JsonObject r(run);
  o.id = r.Required("id").String();
  o.file = path;
  o.source = SourceOf(o.id);
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
  if (r.Has("model")) {
    const auto& m = run.json().at("model");
    o.moe = m.is_object() && m.contains("moe") && !m["moe"].is_null();
  }
  try {
    if (!o.measured_s) throw InputError(path, run.path() + ".measured.iteration_s", "the run has no measured iteration time");
    RunScenario rs;
    simulate::SimulationResult result;
    if (LayoutIsOpen(run.json())) {
      LayoutOutcome chosen = ChooseLayout(
          run.json(), path, run.path(), [&](RunScenario& c) { ApplyConstants(constants, c.scenario); }, workers);
      rs = std::move(chosen.run);
      result = std::move(chosen.result);
      o.choices = std::move(chosen.choices);
    } else {
      rs = ScenarioForRun(run.json(), path, run.path());
      ApplyConstants(constants, rs.scenario);
      o.choices = rs.choices;
      FillOpenFields(rs, &result, &o.choices, workers);
    }
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
    if (keep_scenario) o.scenario = config::ScenarioFileJson(rs.scenario);
  } catch (const InputError& e) {
    o.error = e.what();
  }
  return o;
}

struct RunInput {
  size_t file;           // index in the paths
  const JsonNode* run;   // in that file's runs
};

// What simulating a run's plans holds in memory at its peak, roughly, from
// the file alone, for scheduling: the trace of one candidate plan grows with
// micro-batches per step x layers (pipeline stages split the layers, not the
// micro-batches), measured 5.7-6.3 kB per micro-batch and layer for the
// largest runs (29,400-117,600 of them) over a process of about 40 MB, up to
// 22 kB for small MoE and fp8 runs, where the process dominates (peak RSS of
// each run of the development files validated alone, 2026-12-01, with the
// compact trace; 11.6-19 kB before it). An open micro-batch counts as 1, the
// most micro-batches; an open dp as 1.
constexpr double kTraceBytesPerMicroBatchLayer = 8e3;

double EstimatedPeakBytes(const nlohmann::json& run) {
  auto number = [](const nlohmann::json& o, const char* key, double fallback) {
    if (!o.is_object() || !o.contains(key) || !o[key].is_number()) return fallback;
    return std::max(1.0, o[key].get<double>());
  };
  const nlohmann::json none;
  const nlohmann::json& plan = run.contains("plan") ? run["plan"] : none;
  const nlohmann::json& model = run.contains("model") ? run["model"] : none;
  const double micro_batches =
      number(plan, "global_batch", 1) / (number(plan, "dp", 1) * number(plan, "micro_batch", 1));
  return kTraceBytesPerMicroBatchLayer * std::max(1.0, micro_batches) * number(model, "layers", 1);
}

// The estimated peaks of runs simulated at once stay within this: two small
// runs share the cores, a run near or over it runs alone.
constexpr double kConcurrentPeakBudget = 1e9;

}  // namespace

ValidationReport RunValidation(const std::string& path, const ValidationOptions& options) {
  return RunValidation(std::vector<std::string>{path}, options);
}

ValidationReport RunValidation(const std::vector<std::string>& paths, const ValidationOptions& options) {
  // Read every file first: a file that is not a validation file fails before
  // anything is simulated.
  std::vector<nlohmann::json> docs(paths.size());
  std::vector<std::vector<JsonNode>> file_runs(paths.size());
  std::vector<RunInput> inputs;
  for (size_t f = 0; f < paths.size(); ++f) {
    const std::string& path = paths[f];
    docs[f] = ReadJsonFile(path);
    JsonNode root(docs[f], path, "");
    JsonObject top(root);
    RequireSchema(top, "stacksim.validation.training/1");
    file_runs[f] = top.Required("runs").Elements();
    // The schema lets a "notes" string accompany "schema" and "runs"
    // (shared/validation/README.md).
    if (auto notes = top.Optional("notes")) notes->String();
    top.Finish();
  }
  for (size_t f = 0; f < paths.size(); ++f) {
    for (const JsonNode& run : file_runs[f]) {
      JsonObject r(run);
      std::string id = r.Required("id").String();
      if (!options.only_id.empty() && id != options.only_id) continue;
      inputs.push_back({f, &run});
    }
  }
  if (!options.only_id.empty() && inputs.empty()) {
    std::string known;
    for (size_t f = 0; f < paths.size() && known.size() < 300; ++f) {
      for (const JsonNode& run : file_runs[f]) {
        known += (known.empty() ? "" : ", ") + run.json().value("id", std::string());
        if (known.size() >= 300) break;
      }
    }
    throw InputError("--run", "", "no run has the id '" + options.only_id + "' in " +
                                      (paths.size() == 1 ? paths[0] : std::to_string(paths.size()) + " files") +
                                      " (ids: " + known + (known.size() >= 300 ? ", ..." : "") + ")");
  }

  // Each run is independent: simulate them on the workers, heaviest first,
  // each outcome into its own slot, so the report is the same at any thread
  // count; runs whose traces would not fit in memory together wait.
  ValidationReport rep;
  rep.runs.resize(inputs.size());
  std::mutex progress_mutex;
  int done = 0;
  const int total = static_cast<int>(inputs.size());
  std::vector<double> peak_bytes;
  for (const auto& in : inputs) peak_bytes.push_back(EstimatedPeakBytes(in.run->json()));
  if (options.progress) options.progress(0, total);  // the work starts: say so before the first run ends
  // Workers without a run (every run started, or the rest waiting for
  // memory beside a large one) lend themselves to the runs going: each plan
  // search simulates that many more candidates at once (FastestByBound;
  // the same choices).
  std::atomic<int> running{0};
  const int workers = Workers(options.threads);
  const WorkerCount within_run = [&] {
    const int now = std::max(1, running.load());
    return 1 + std::max(0, workers - now) / now;
  };
  ParallelForWithinBudget(peak_bytes, kConcurrentPeakBudget, options.threads, [&](int64_t i) {
    ++running;
    rep.runs[i] =
        ValidateRun(*inputs[i].run, paths[inputs[i].file], options.constants, options.keep_scenarios, within_run);
    --running;
    if (options.progress) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      options.progress(++done, total);
    }
  });

  // Sums in run order, as one file was always summed.
  double sum = 0, dense_sum = 0;
  for (const auto& o : rep.runs) {
    if (o.scored) ++rep.scored_total;
    if (!o.scored || !o.predicted_s) continue;
    sum += std::fabs(o.error_pct);
    ++rep.scored_predicted;
    if (!o.moe) {
      dense_sum += std::fabs(o.error_pct);
      ++rep.scored_dense_predicted;
    }
  }
  rep.mape_pct = rep.scored_predicted > 0 ? sum / rep.scored_predicted : 0;
  rep.mape_dense_pct = rep.scored_dense_predicted > 0 ? dense_sum / rep.scored_dense_predicted : 0;
  rep.summary = Summarize(rep.runs);

  // Per file: its error table, and each scored run's range from the other
  // runs of its file.
  std::vector<std::string> names;
  for (size_t f = 0; f < paths.size(); ++f) {
    FileReport fr;
    fr.file = paths[f];
    uncertainty::ErrorTable table;
    table.validation_file = std::filesystem::path(paths[f]).filename().string();
    table.validation_runs = static_cast<int>(file_runs[f].size());
    std::vector<RunOutcome> mine;
    double file_dense_sum = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].file != f) continue;
      const RunOutcome& o = rep.runs[i];
      mine.push_back(o);
      if (!o.scored || !o.predicted_s || !o.features) continue;
      table.runs.push_back({o.id, *o.features, *o.measured_s, *o.predicted_s, *o.predicted_s / *o.measured_s - 1});
      if (!o.moe) {
        file_dense_sum += std::fabs(o.error_pct);
        ++fr.scored_dense_predicted;
      }
    }
    fr.runs = static_cast<int>(mine.size());
    fr.mape_dense_pct = fr.scored_dense_predicted > 0 ? file_dense_sum / fr.scored_dense_predicted : 0;
    fr.summary = Summarize(mine);
    names.push_back(table.validation_file);
    rep.error_table.validation_runs += table.validation_runs;
    for (auto& run : table.runs) rep.error_table.runs.push_back(std::move(run));
    rep.files.push_back(std::move(fr));
  }
  for (const auto& n : names) rep.error_table.validation_file += (rep.error_table.validation_file.empty() ? "" : ", ") + n;

  // Each scored run's range from the runs of the other sources (all files),
  // at the margin that puts about 80% of them inside.
  std::set<std::string> sources;
  for (const auto& r : rep.error_table.runs) sources.insert(uncertainty::RunSource(r.id));
  if (sources.size() >= 2) rep.error_table.calibration = uncertainty::CalibrateRangeMargin(rep.error_table);
  uncertainty::RangeOptions held_out = uncertainty::OptionsFor(rep.error_table);
  held_out.exclude_source = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    RunOutcome& o = rep.runs[i];
    if (!o.scored || !o.predicted_s || !o.features) continue;
    uncertainty::Assessment a = uncertainty::Assess(rep.error_table, *o.features, *o.predicted_s, held_out, o.id);
    o.coverage = a.warnings;
    o.range = a.range;
    if (!o.range) continue;
    FileReport& fr = rep.files[inputs[i].file];
    ++fr.ranged;
    if (o.range->Holds(*o.measured_s)) ++fr.inside_range;
  }
  for (const FileReport& fr : rep.files) {
    rep.ranged += fr.ranged;
    rep.inside_range += fr.inside_range;
  }

  // Leave one source out: refit without each source, predict it again.
  std::map<std::pair<std::string, std::string>, const RunInput*> by_id;
  for (const auto& in : inputs) {
    by_id[{paths[in.file], JsonObject(*in.run).Required("id").String()}] = &in;
  }
  auto repredict = [&](const RunOutcome& o, const FittedConstants& c) -> std::optional<double> {
    const RunInput* in = by_id.at({o.file, o.id});
    return ValidateRun(*in->run, o.file, c, false).predicted_s;
  };
  rep.leave_one_source_out = LeaveOneSourceOutError(rep.runs, options.refit, repredict);
  return rep;
}

OverlapFit FitOverlapCommSms(const std::vector<std::string>& paths, const std::vector<int>& grid, int threads,
                             const std::function<void(int done, int total)>& progress) {
  if (grid.empty()) throw std::invalid_argument("FitOverlapCommSms: empty grid");
  // errors[g][id]: the scored, predicted runs' |error| at grid value g. A
  // run that cannot be predicted at some value is left out of the fit.
  std::vector<std::map<std::string, double>> errors(grid.size());
  std::map<std::string, std::string> source_of;
  for (size_t g = 0; g < grid.size(); ++g) {
    ValidationOptions opts;
    opts.threads = threads;
    opts.constants.values[kOverlapCommSms] = grid[g];
    if (progress) {
      opts.progress = [&, g](int done, int total) { progress(static_cast<int>(g) * total + done, total * static_cast<int>(grid.size())); };
    }
    const ValidationReport rep = RunValidation(paths, opts);
    for (const RunOutcome& o : rep.runs) {
      if (!o.scored || !o.predicted_s) continue;
      const std::string key = o.file + "#" + o.id;
      errors[g][key] = std::fabs(o.error_pct);
      source_of[key] = o.source;
    }
  }
  std::vector<std::string> keys;
  for (const auto& [key, src] : source_of) {
    bool everywhere = true;
    for (const auto& e : errors) everywhere = everywhere && e.count(key) > 0;
    if (everywhere) keys.push_back(key);
  }
  auto mape = [&](size_t g, const std::string& skip, const std::string& only) {
    double sum = 0;
    int n = 0;
    for (const auto& key : keys) {
      const std::string& src = source_of.at(key);
      if ((!skip.empty() && src == skip) || (!only.empty() && src != only)) continue;
      sum += errors[g].at(key);
      ++n;
    }
    return std::make_pair(n > 0 ? sum / n : 0.0, n);
  };
  auto best = [&](const std::string& skip) {  // the first least, i.e. the smaller value on a tie
    size_t arg = 0;
    double least = mape(0, skip, "").first;
    for (size_t g = 1; g < grid.size(); ++g) {
      const double m = mape(g, skip, "").first;
      if (m < least) std::tie(arg, least) = std::make_pair(g, m);
    }
    return arg;
  };
  OverlapFit fit;
  for (size_t g = 0; g < grid.size(); ++g) fit.grid.push_back({grid[g], mape(g, "", "").first});
  const size_t all = best("");
  fit.sms = grid[all];
  std::tie(fit.mape_pct, fit.runs) = mape(all, "", "");
  std::set<std::string> sources;
  for (const auto& key : keys) sources.insert(source_of.at(key));
  double loso_sum = 0;
  for (const std::string& src : sources) {
    const size_t g = best(src);
    OverlapFitGroup group;
    group.held_out = src;
    group.sms = grid[g];
    std::tie(group.mape_pct, group.runs) = mape(g, "", src);
    loso_sum += group.mape_pct * group.runs;
    fit.groups.push_back(group);
  }
  fit.loso_mape_pct = keys.empty() ? 0 : loso_sum / static_cast<double>(keys.size());
  return fit;
}

nlohmann::json OverlapFitJson(const OverlapFit& fit, const std::vector<std::string>& paths, const std::string& command,
                              const std::string& date) {
  nlohmann::json grid = nlohmann::json::array();
  for (const auto& p : fit.grid) grid.push_back({{"sms", p.sms}, {"mape_pct", p.mape_pct}});
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : fit.groups) {
    groups.push_back({{"held_out", g.held_out}, {"runs", g.runs}, {"sms", g.sms}, {"mape_pct", g.mape_pct}});
  }
  std::string on;
  for (const auto& p : paths) on += (on.empty() ? "" : ", ") + std::filesystem::path(p).filename().string();
  return {{"value", fit.sms},
          {"what", "SMs a collective's kernels take from GEMMs and attention that start while it is in flight on "
                   "the same GPU (sim/cost/comm_overlap.h)"},
          {"fitted_by", command},
          {"date", date},
          {"fitted_on", on + " (the scored runs every grid value predicts: " + std::to_string(fit.runs) + ")"},
          {"fitted_mape_pct", fit.mape_pct},
          {"grid", grid},
          {"leave_one_source_out", {{"mape_pct", fit.loso_mape_pct}, {"groups", groups}}}};
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

nlohmann::json SourceJson(const SourceSummary& s) {
  nlohmann::json j = {{"runs", s.runs},
                      {"scored", s.scored},
                      {"modelled", s.modelled},
                      {"mape_pct", s.modelled > 0 ? nlohmann::json(s.mape_pct) : nlohmann::json(nullptr)},
                      {"within_10", s.within_10},
                      {"within_10_pct", s.scored > 0 ? nlohmann::json(s.within_10_pct) : nlohmann::json(nullptr)}};
  if (!s.source.empty()) j["source"] = s.source;
  if (!s.worst_id.empty()) j["worst"] = {{"id", s.worst_id}, {"error_pct", s.worst_error_pct}};
  return j;
}

// The keys a summary adds to its JSON object: over its runs, and by source.
nlohmann::json SummaryJson(const Summary& s) {
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& src : s.sources) sources.push_back(SourceJson(src));
  return {{"within_10_pct", s.all.within_10_pct},
          {"within_10", s.all.within_10},
          {"not_modelled", s.not_modelled},
          {"worst", SourceJson(s.all).value("worst", nlohmann::json(nullptr))},
          {"sources", sources}};
}

std::string SourceTable(const Summary& s) {
  std::string out = fmt::format("  {:<14} {:>5} {:>6} {:>8} {:>7} {:>10}  {}\n", "source", "runs", "scored", "modelled",
                                "MAPE", "within 10%", "worst run");
  auto row = [&](const SourceSummary& src, const std::string& name) {
    std::string mape = src.modelled > 0 ? fmt::format("{:.1f}%", src.mape_pct) : "-";
    std::string within = src.scored > 0 ? fmt::format("{:.0f}%", src.within_10_pct) : "-";
    std::string worst = src.worst_id.empty() ? "-" : fmt::format("{} {:+.1f}%", src.worst_id, src.worst_error_pct);
    out += fmt::format("  {:<14} {:>5} {:>6} {:>8} {:>7} {:>10}  {}\n", name, src.runs, src.scored, src.modelled, mape,
                       within, worst);
  };
  for (const auto& src : s.sources) row(src, src.source);
  row(s.all, "all");
  return out;
}

std::string SummaryLine(const Summary& s) {
  return fmt::format("MAPE {:.1f}% over {} of {} scored runs; within 10%: {:.1f}% of scored runs ({}); "
                     "not modelled: {} of {} runs\n",
                     s.all.mape_pct, s.all.modelled, s.all.scored, s.all.within_10_pct, s.all.within_10,
                     s.not_modelled, s.all.runs);
}

}  // namespace

nlohmann::json ValidationJson(const ValidationReport& report) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& o : report.runs) {
    nlohmann::json j;
    j["id"] = o.id;
    j["file"] = o.file;
    j["source"] = o.source;
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
                                {"left_out", "source"},
                                {"bands", bands}};
  if (const auto& c = report.error_table.calibration) {
    calibration["margin"] = c->margin;
    calibration["unwidened_pct"] = c->unwidened_pct;
    calibration["refit_inside_pct"] = c->refit_coverage_pct;
  }
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : report.files) {
    nlohmann::json j = SummaryJson(f.summary);
    j["file"] = f.file;
    j["runs"] = f.runs;
    j["mape_pct"] = f.summary.all.mape_pct;
    j["scored_predicted"] = f.summary.all.modelled;
    j["scored_total"] = f.summary.all.scored;
    j["mape_dense_pct"] = f.mape_dense_pct;
    j["scored_dense_predicted"] = f.scored_dense_predicted;
    j["uncertainty"] = {{"ranged", f.ranged},
                        {"inside", f.inside_range},
                        {"inside_pct", f.ranged > 0 ? 100.0 * f.inside_range / f.ranged : 0}};
    files.push_back(j);
  }
  const LeaveOneSourceOut& loso = report.leave_one_source_out;
  nlohmann::json loso_sources = nlohmann::json::object();
  for (const auto& [source, mape] : loso.source_mape_pct) loso_sources[source] = mape;
  nlohmann::json out = SummaryJson(report.summary);
  out.update({{"runs", runs},
              {"mape_pct", report.mape_pct},
              {"scored_predicted", report.scored_predicted},
              {"mape_dense_pct", report.mape_dense_pct},
              {"scored_dense_predicted", report.scored_dense_predicted},
              {"scored_total", report.scored_total},
              {"files", files},
              {"leave_one_source_out",
               {{"fitted", loso.fitted},
                {"mape_pct", loso.mape_pct},
                {"runs", loso.runs},
                {"sources", loso_sources},
                {"note", loso.note}}},
              {"uncertainty", calibration}});
  const cost::FittedCommOverlap& overlap = cost::FittedCommOverlapSms();
  if (!overlap.source.empty()) {
    out["fitted_constants"]["overlap_comm_sms"] = {{"value", overlap.sms},
                                                   {"source", overlap.source},
                                                   {"leave_one_source_out_mape_pct", overlap.loso_mape_pct}};
  }
  return out;
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
        bool inside = o.range->Holds(*o.measured_s);
        out += "    range (its source left out): " + uncertainty::StepRangeText(*o.range) + "; measured " +
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
  for (const auto& f : report.files) {
    out += fmt::format("\n{}: ", f.file) + SummaryLine(f.summary);
    out += SourceTable(f.summary);
  }
  if (report.files.size() > 1) {
    out += "\nall files: " + SummaryLine(report.summary);
    out += SourceTable(report.summary);
  }
  // The constants fitted on end-to-end data that these predictions use,
  // named as the project's rule asks. overlap_comm_sms is fitted on the
  // development runs themselves; its leave-one-source-out check is made when
  // it is fitted (a grid of full validations) and stored with it.
  const cost::FittedCommOverlap& overlap = cost::FittedCommOverlapSms();
  if (!overlap.source.empty() && overlap.loso_mape_pct >= 0) {
    out += fmt::format("leave-one-source-out: overlap_comm_sms refitted without each source, that source predicted "
                       "with it: {:.1f}% over the development runs when it was fitted ({})\n",
                       overlap.loso_mape_pct, overlap.source);
  } else {
    out += "leave-one-source-out: " + report.leave_one_source_out.note +
           (report.leave_one_source_out.fitted
                ? ""
                : fmt::format(" ({:.1f}% over {} runs)", report.leave_one_source_out.mape_pct,
                              report.leave_one_source_out.runs)) +
           "\n";
  }
  if (!overlap.source.empty()) {
    out += fmt::format("fitted constants used: overlap_comm_sms {} (SMs an in-flight collective takes from the "
                       "compute beside it; fitted on the development runs: {})\n",
                       overlap.sms, overlap.source);
  }
  const memory::AllocatorReserve& reserve = memory::FittedAllocatorReserve();
  out += fmt::format("fitted constants used: allocator cache fraction {:.4f} (memory fit check; fitted on "
                     "validation/memory_runs.json, not on these runs: {})\n",
                     reserve.cache_fraction, reserve.source);
  std::map<std::string, int> kinds;
  for (const auto& r : report.error_table.runs) ++kinds[r.features.gpu_kind];
  std::string kind_list;
  for (const auto& [k, n] : kinds) kind_list += fmt::format("{}{} {}", kind_list.empty() ? "" : ", ", n, k);
  out += fmt::format("\nuncertainty (leave one source out): the measured step fell inside the range the other "
                     "sources give it for {} of {} scored runs ({:.1f}%; the range claims {:.0f}%)\n",
                     report.inside_range, report.ranged, InsidePct(report), ClaimedPct());
  if (const auto& c = report.error_table.calibration) {
    out += fmt::format("  fitted constant: range margin {:.2f} in log(1 + e), a factor {:.2f} each way (p10-p90 "
                       "as they are: {:.1f}% inside); refitted without each source, that source's runs inside: "
                       "{:.1f}%\n",
                       c->margin, std::exp(c->margin), c->unwidened_pct, c->refit_coverage_pct);
  }
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
