#include "sim/straggler/straggler_report.h"

#include <fmt/format.h>

#include "sim/util/number_text.h"

namespace stacksim::straggler {
namespace {

const char* PersistenceName(Persistence p, bool transient_default) {
  if (p == Persistence::kDefault) return transient_default ? "transient" : "persistent";
  return p == Persistence::kTransient ? "transient" : "persistent";
}

std::string Step(Time t, Time baseline) {
  return fmt::format("{:.3f} s  {:.3f}x", t.seconds(), t.seconds() / baseline.seconds());
}

}  // namespace

std::string StragglerText(const StragglerResult& r) {
  const bool transient_default = r.options.steps > 1;
  std::string out = "\nstragglers\n";
  for (const StragglerTerm& t : r.spec.terms) {
    out += fmt::format("  {:.3g}% of {}s at {:.3g}x, {}{}\n", t.fraction * 100, ScopeName(t.scope), t.slowdown,
                       PersistenceName(t.persistence, transient_default),
                       t.source == r.spec.origin ? "" : " (" + t.source + ")");
  }
  out += fmt::format("  drawn             {} persistent slow node(s)/GPU(s), {:.1f} transient per step, of {} nodes "
                     "({} GPUs); seed {}\n",
                     r.persistent_slow, r.transient_slow, Grouped(r.nodes), Grouped(r.gpus),
                     r.options.seed);
  out += fmt::format("  no stragglers     {:.3f} s\n", r.baseline.seconds());
  if (r.options.steps == 1) {
    out += fmt::format("  with stragglers   {}\n", Step(r.mean, r.baseline));
  } else {
    out += fmt::format("  over {} steps     mean {}\n", r.options.steps, Step(r.mean, r.baseline));
    out += fmt::format("                    p50 {:.3f} s, p90 {:.3f} s, p99 {:.3f} s, max {:.3f} s\n",
                       r.p50.seconds(), r.p90.seconds(), r.p99.seconds(), r.max.seconds());
  }
  if (!r.recovery.empty()) {
    out += "  replacing the slowest persistent nodes/GPUs with healthy ones:\n";
    for (const Recovery& k : r.recovery) {
      out += fmt::format("    {:>5} replaced ({} left)  {}\n", k.replaced, k.remaining, Step(k.mean_step, r.baseline));
    }
  }
  out += fmt::format("  {} replays, up to {} slow replicas per step, {} simulated after pruning, {:.2f} s\n",
                     r.replays, r.slow_replicas_max, r.variants_max, r.wall_seconds);
  return out;
}

nlohmann::json StragglerJson(const StragglerResult& r) {
  const bool transient_default = r.options.steps > 1;
  nlohmann::json terms = nlohmann::json::array();
  for (const StragglerTerm& t : r.spec.terms) {
    terms.push_back({{"scope", ScopeName(t.scope)},
                     {"persistence", PersistenceName(t.persistence, transient_default)},
                     {"fraction", t.fraction},
                     {"slowdown", t.slowdown},
                     {"source", t.source}});
  }
  nlohmann::json steps = nlohmann::json::array();
  for (Time t : r.step_times) steps.push_back(t.seconds());
  nlohmann::json recovery = nlohmann::json::array();
  for (const Recovery& k : r.recovery) {
    recovery.push_back({{"replaced", k.replaced},
                        {"remaining", k.remaining},
                        {"mean_step_s", k.mean_step.seconds()},
                        {"slowdown", k.slowdown}});
  }
  return {{"spec", r.spec.text},
          {"terms", terms},
          {"steps", r.options.steps},
          {"seed", r.options.seed},
          {"nodes", r.nodes},
          {"gpus", r.gpus},
          {"persistent_slow", r.persistent_slow},
          {"transient_slow_per_step", r.transient_slow},
          {"baseline_s", r.baseline.seconds()},
          {"mean_s", r.mean.seconds()},
          {"p50_s", r.p50.seconds()},
          {"p90_s", r.p90.seconds()},
          {"p99_s", r.p99.seconds()},
          {"max_s", r.max.seconds()},
          {"slowdown", r.slowdown},
          {"step_times_s", steps},
          {"recovery", recovery},
          {"replays", r.replays},
          {"slow_replicas_max", r.slow_replicas_max},
          {"variants_max", r.variants_max},
          {"wall_s", r.wall_seconds}};
}

}  // namespace stacksim::straggler
