#include "sim/validate/layout_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/validate/plan_choice.h"
#include "sim/validate/run_scenario.h"

namespace stacksim::validate {
namespace {

// Tensor parallelism stays inside one NVLink domain, and an open tp is at
// most 8: every development run uses at most 8, and beyond it the per-GPU
// GEMMs of today's models get too narrow to pay for the all-reduces. A run
// that states a larger tp keeps it.
constexpr int kLargestTensorParallel = 8;

bool Open(const nlohmann::json& plan, const char* key) {
  return !plan.is_object() || !plan.contains(key) || plan[key].is_null();
}

std::optional<int64_t> GivenInt(JsonObject& obj, const char* key) {
  if (auto v = obj.Optional(key)) return v->PositiveInt();
  return std::nullopt;
}

// A mixture-of-experts model ("model.moe" an object): its expert
// parallelism is part of the layout.
int64_t Experts(const nlohmann::json& run) {
  if (!run.contains("model") || !run["model"].is_object()) return 0;
  const nlohmann::json& model = run["model"];
  if (!model.contains("moe") || !model["moe"].is_object()) return 0;
  const nlohmann::json& moe = model["moe"];
  return moe.contains("experts") && moe["experts"].is_number_integer() ? moe["experts"].get<int64_t>() : 0;
}

bool EpOpen(const nlohmann::json& run) { return Experts(run) > 0 && Open(run["plan"], "ep"); }

// Context parallelism splits a sequence into pieces of at least this many
// tokens when the run leaves cp open: a bound on the search (each piece
// still fills the attention kernels' tiles), not a framework rule.
constexpr int64_t kSmallestContextPiece = 4096;

}  // namespace

bool LayoutIsOpen(const nlohmann::json& run) {
  if (!run.is_object() || !run.contains("plan")) return false;  // ScenarioForRun names the missing plan
  const nlohmann::json& plan = run["plan"];
  return Open(plan, "tp") || Open(plan, "pp") || Open(plan, "dp") || Open(plan, "cp") || EpOpen(run);
}

namespace {

std::vector<int64_t> PowersOfTwo(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t v = from; v <= to; v *= 2) out.push_back(v);
  return out;
}

}  // namespace

std::vector<nlohmann::json> LayoutCandidates(const nlohmann::json& run, const std::string& file,
                                             const std::string& path) {
  // Read what the layout depends on through the checked reader, so a
  // malformed field is named as a run that states its layout would name it
  // (the rest of the run is read, and checked whole, by ScenarioForRun).
  JsonNode node(run, file, path);
  JsonObject obj(node);
  JsonObject hw(obj.Required("hardware"));
  const int64_t gpus = hw.Required("gpus").PositiveInt();
  int64_t domain = kLargestTensorParallel;
  if (auto gpn = GivenInt(hw, "gpus_per_node")) domain = std::min<int64_t>(domain, *gpn);
  JsonObject model(obj.Required("model"));
  // Layers the run leaves null are its published config's (as ScenarioForRun
  // takes them); without one the field is required.
  const config::ModelConfig* published = PublishedModelNamed(model.Required("name").String());
  const int64_t layers = model.Optional("layers") || published == nullptr ? model.Required("layers").PositiveInt()
                                                                          : published->num_layers;
  const int64_t seq_len = model.Required("seq_len").PositiveInt();
  JsonObject p(obj.Required("plan"));
  const std::optional<int64_t> tp = GivenInt(p, "tp"), pp = GivenInt(p, "pp"), dp = GivenInt(p, "dp");
  const std::optional<int64_t> given_cp = GivenInt(p, "cp"), given_ep = GivenInt(p, "ep");
  const int64_t global_batch = p.Required("global_batch").PositiveInt();
  const int64_t experts = Experts(run);
  // An open cp: powers of two that leave pieces of at least
  // kSmallestContextPiece tokens (1 for shorter sequences). An open ep of a
  // mixture-of-experts model: powers of two up to the experts (ScenarioForRun
  // refuses those that do not divide the experts or tp x dp x cp).
  const std::vector<int64_t> cps =
      given_cp ? std::vector<int64_t>{*given_cp}
               : PowersOfTwo(1, std::max<int64_t>(1, seq_len / kSmallestContextPiece));
  const bool ep_open = experts > 0 && !given_ep;

  // A given tp is the run's own, whatever its size; an open one is a power
  // of two within the NVLink domain.
  std::vector<int64_t> tps;
  if (tp) {
    tps.push_back(*tp);
  } else {
    for (int64_t t = 1; t <= domain; t *= 2) tps.push_back(t);
  }
  std::vector<nlohmann::json> out;
  for (int64_t t : tps) {
    for (int64_t q = pp.value_or(1); q <= pp.value_or(layers); ++q) {
      for (int64_t cp : cps) {
        const int64_t model_parallel = t * q * cp;
        if (gpus % model_parallel != 0) continue;
        const int64_t d = gpus / model_parallel;
        if ((dp && d != *dp) || global_batch % d != 0) continue;
        const std::vector<int64_t> eps =
            ep_open ? PowersOfTwo(1, std::min(experts, t * d * cp)) : std::vector<int64_t>{given_ep.value_or(1)};
        for (int64_t e : eps) {
          nlohmann::json c = run;
          c["plan"]["tp"] = t;
          c["plan"]["pp"] = q;
          c["plan"]["dp"] = d;
          c["plan"]["cp"] = cp;
          if (experts > 0) c["plan"]["ep"] = e;
          out.push_back(std::move(c));
        }
      }
    }
  }
  if (out.empty()) {
    throw InputError(file, path + ".plan",
                     fmt::format("no parallel layout fills the open fields: tp x pp x dp x cp must be the {} GPUs, "
                                 "tp a power of two up to {}, pp at most the {} layers, cp {} and dp a divisor of the "
                                 "global batch {}",
                                 gpus, domain, layers,
                                 given_cp ? "as given (" + std::to_string(*given_cp) + ")"
                                          : "a power of two leaving pieces of at least " +
                                                std::to_string(kSmallestContextPiece) + " tokens",
                                 global_batch));
  }
  return out;
}

LayoutOutcome ChooseLayout(const nlohmann::json& run, const std::string& file, const std::string& path,
                           const std::function<void(RunScenario&)>& prepare, const WorkerCount& workers) {
  const std::vector<nlohmann::json> candidates = LayoutCandidates(run, file, path);
  const nlohmann::json& given = run.at("plan");
  const bool tp_open = Open(given, "tp"), pp_open = Open(given, "pp");
  // Each valid layout: its scenario and the plans its own open fields allow.
  struct Layout {
    RunScenario run;
    OpenFieldPlans plans;
    size_t order = 0;  // its place among the candidates
    bool refused = false;
  };
  std::vector<Layout> layouts;
  struct Refusal {
    size_t order;
    std::string what;
    std::exception_ptr error;
  };
  std::vector<Refusal> refusals;
  auto refuse = [&](size_t order, const InputError& e) {
    refusals.push_back({order, e.what(), std::current_exception()});  // called in the catch
  };
  // Layouts with model parallelism the framework does not offer (fact
  // model_parallelism) that the run leaves open: tried only when no other
  // layout is valid, since the run's given fields then leave nothing else.
  std::vector<size_t> not_offered;
  auto build = [&](size_t i, bool offered_only) {
    try {
      RunScenario rs = ScenarioForRun(candidates[i], file, path);
      const config::PlanConfig& p = rs.scenario.plan;
      if (offered_only &&
          ((tp_open && p.tp > 1 && !rs.framework->offers_tp) || (pp_open && p.pp > 1 && !rs.framework->offers_pp))) {
        not_offered.push_back(i);
        return;
      }
      prepare(rs);
      OpenFieldPlans plans = CandidatePlans(rs, /*with_bounds=*/true);
      layouts.push_back({std::move(rs), std::move(plans), i});
    } catch (const InputError& e) {
      refuse(i, e);  // not a valid plan for this model (heads, experts, batch)
    }
  };
  for (size_t i = 0; i < candidates.size(); ++i) build(i, /*offered_only=*/true);
  const bool beyond_framework = layouts.empty() && !not_offered.empty();
  if (beyond_framework) {
    for (size_t i : std::vector<size_t>(not_offered)) build(i, /*offered_only=*/false);
  }
  // A plan's step (run on any worker: it reads the layouts only); a layout
  // whose simulation refuses a plan (the GPU lacks the precision, say) is
  // refused whole, as FastestByBound hands the outcomes back in order.
  auto simulate = [&](const Layout& l, const config::PlanConfig& plan) {
    if (l.refused) return Simulated{};
    return SimulateCatching([&] { return SimulatePlan(l.run.scenario, plan); });
  };
  auto accept = [&](Layout& l, Simulated&& s) -> std::optional<simulate::SimulationResult> {
    if (l.refused) return std::nullopt;
    if (s.error) {
      l.refused = true;
      try {
        std::rethrow_exception(s.error);
      } catch (const InputError& e) {
        refuse(l.order, e);
      }
      return std::nullopt;
    }
    return std::move(s.result);
  };

  // Plans of every layout, in layout then plan order, searched together by
  // their bounds: the fastest, found without simulating the plans that
  // cannot beat it. `fitted`: a step out of memory does not count.
  struct Entry {
    size_t layout;
    const config::PlanConfig* plan;
  };
  std::vector<Entry> entries;
  std::vector<Time> bounds;
  auto search = [&](bool fitted) {
    return FastestByBound(
        bounds, [&](size_t i) { return simulate(layouts[entries[i].layout], *entries[i].plan); },
        [&](size_t i, Simulated&& s) {
          std::optional<simulate::SimulationResult> r = accept(layouts[entries[i].layout], std::move(s));
          if (fitted && r && r->out_of_memory) return std::optional<simulate::SimulationResult>();
          return r;
        },
        workers);
  };
  // First the plans that fit in memory.
  for (size_t l = 0; l < layouts.size(); ++l) {
    for (const PlanCandidate& c : layouts[l].plans.candidates) {
      if (!c.fits) continue;
      entries.push_back({l, &c.plan});
      bounds.push_back(c.bound);
    }
  }
  std::optional<Fastest> best = search(/*fitted=*/true);
  const bool fits = best.has_value();
  if (!fits) {
    // None fits: the fastest of every layout's own choice (its plans, or its
    // fallback where it has none).
    entries.clear();
    bounds.clear();
    for (size_t l = 0; l < layouts.size(); ++l) {
      const OpenFieldPlans& plans = layouts[l].plans;
      if (plans.candidates.empty()) {
        entries.push_back({l, &plans.fallback});
        bounds.push_back(plans.fallback_bound);
      }
      for (const PlanCandidate& c : plans.candidates) {
        entries.push_back({l, &c.plan});
        bounds.push_back(c.bound);
      }
    }
    best = search(/*fitted=*/false);
  }
  if (!best) {
    std::stable_sort(refusals.begin(), refusals.end(),
                     [](const Refusal& a, const Refusal& b) { return a.order < b.order; });
    const bool refusals_differ = std::any_of(refusals.begin(), refusals.end(),
                                             [&](const Refusal& r) { return r.what != refusals.front().what; });
    // Every layout refused for the same reason: the reason is not the
    // layout (a model field, the GPU's precisions), so it is the error.
    if (!refusals.empty() && !refusals_differ) std::rethrow_exception(refusals.front().error);
    const std::string why = refusals.empty() ? "" : "; the first refused: " + refusals.front().what;
    throw InputError(file, path + ".plan",
                     fmt::format("none of the {} parallel layouts for the open fields is a valid plan{}",
                                 candidates.size(), why));
  }
  int valid = 0, fitting_layouts = 0;
  for (const Layout& l : layouts) {
    if (l.refused) continue;
    ++valid;
    const auto& plans = l.plans.candidates;
    fitting_layouts += std::any_of(plans.begin(), plans.end(), [](const PlanCandidate& c) { return c.fits; }) ? 1 : 0;
  }

  const Entry& chosen = entries[best->index];
  LayoutOutcome out;
  out.run = std::move(layouts[chosen.layout].run);
  out.result = std::move(best->result);
  out.choices = out.run.choices;
  RecordChoice(out.run, layouts[chosen.layout].plans, *chosen.plan, &out.choices);
  const config::PlanConfig& plan = out.run.scenario.plan;
  const std::string how =
      fits ? fmt::format("the fastest of {} layouts that fit in memory, of {} valid", fitting_layouts, valid)
           : fmt::format("the fastest of {} valid layouts; none fits in memory", valid);
  std::string layout = fmt::format("tp={} pp={} dp={}", plan.tp, plan.pp, plan.dp);
  if (Open(given, "cp")) layout += fmt::format(" cp={}", plan.cp);
  if (EpOpen(run)) layout += fmt::format(" ep={}", plan.ep);
  if (beyond_framework) {
    layout += fmt::format(" ({}'s profile lists no such model parallelism, but the run's given fields leave no other "
                          "layout)",
                          out.run.framework->name);
  }
  out.choices.insert(out.choices.begin(), fmt::format("{} (the run leaves the layout open: {})", layout, how));
  return out;
}

}  // namespace stacksim::validate
