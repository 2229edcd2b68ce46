// stacksim search SCENARIO: ranks the parallel plans for the scenario's
// model, cluster and batch; splits over MPI ranks under mpirun.
#include <malloc.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/config/scenario.h"
#include "sim/report/html.h"
#include "sim/report/html_pages.h"
#include "sim/search/economics.h"
#include "sim/search/mpi_runner.h"
#include "sim/search/search.h"
#include "sim/search/search_report.h"
#include "sim/simulate/simulate.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"
#include "sim/util/progress.h"

namespace stacksim::cli {
namespace {

struct SearchArgs {
  std::string scenario;
  config::ScenarioOptions opts;
  std::string format = "text";
  std::string objective = "time";
  std::string gpus;
  int top = 10;
  int threads = 0;
  int batch = 16;
  double gpu_hour_usd = 0;
  double gpu_watts = 0;
  std::string html;
  std::string rank = "expected";
  std::string min_headroom;  // "" : the default reserve
  bool quiet = false;
};

// Each GPU count is a whole plan search: a range is refused at once when it
// goes beyond what the topology file describes (its max_nodes; the scenario's
// own count is always allowed) or holds more counts than a search should
// take on in one go, rather than running for hours.
constexpr size_t kMaxGpuCounts = 64;

void CheckGpuCounts(const std::vector<int>& counts, const config::ScenarioConfig& s, const std::string& text) {
  const config::TopologyConfig& t = s.topology;
  const int64_t largest = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  const int64_t size = static_cast<int64_t>(t.max_nodes) * t.gpus_per_node;
  if (t.max_nodes > 0 && largest > size && largest > s.gpus) {
    throw InputError("--gpus", "", "'" + text + "' goes up to " + std::to_string(largest) + " GPUs; topology " +
                                       t.name + " holds at most " + std::to_string(t.max_nodes) + " nodes (" +
                                       std::to_string(size) + " GPUs): give a range within it");
  }
  if (counts.size() > kMaxGpuCounts) {
    throw InputError("--gpus", "", "'" + text + "' gives " + std::to_string(counts.size()) +
                                       " GPU counts (whole nodes), each a full plan search; search takes at most " +
                                       std::to_string(kMaxGpuCounts) + " at once: narrow the range");
  }
}

int RunSearch(const SearchArgs& a) {
  // Replays allocate and free traces of up to hundreds of MB, hundreds of
  // times: keep freed memory in the heap instead of returning it to the
  // kernel and faulting it in again (a third of the search's time otherwise).
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);

  config::ScenarioConfig scenario = config::LoadScenario(a.scenario, a.opts);
  search::SearchSpace space;
  space.scenario = scenario;
  if (!a.gpus.empty()) {
    space.gpu_counts = search::ParseGpuRange(a.gpus, scenario.topology);
    CheckGpuCounts(space.gpu_counts, scenario, a.gpus);
  }
  search::SearchOptions options;
  options.objective = search::ParseObjective(a.objective);
  options.top = a.top;
  options.batch = a.batch;
  options.economics = search::LookUpEconomics(scenario);
  options.ranking = search::ParseRanking(a.rank);
  if (!a.min_headroom.empty()) options.headroom.fixed = ParseBytes(a.min_headroom, "--min-headroom", "");
  if (a.gpu_hour_usd > 0) {
    options.economics.gpu_hour_usd = a.gpu_hour_usd;
    options.economics.price_source = "--gpu-hour-usd";
  }
  if (a.gpu_watts > 0) {
    options.economics.gpu_watts = a.gpu_watts;
    options.economics.power_source = "--gpu-watts";
  }
  search::MpiContext mpi;
  // Ranks sharing a machine share its cores.
  options.threads = a.threads > 0 ? a.threads : std::max(1, search::Workers(0) / mpi.local_size());
  search::MpiRunner runner(mpi, options.threads);
  if (mpi.active()) options.runner = &runner;
  // Progress on standard error (util/progress.h), from rank 0 only: plans
  // settled (did not fit, simulated, or left out by the bound) of all.
  std::unique_ptr<ProgressMeter> progress;
  int64_t reported = 0;
  if (!a.quiet && mpi.rank() == 0) {
    options.progress = [&](int64_t settled, int64_t total) {
      if (!progress) progress = std::make_unique<ProgressMeter>("search", "plans", total);
      progress->Add(settled - reported);
      reported = settled;
    };
  }
  search::SearchResult result = search::Search(space, options);
  // Nothing fits: an answer (exit 3) when memory ruled the plans out, bad
  // input (exit 2) when none was valid at all.
  const int none_status = result.counts.out_of_memory + result.counts.host_memory > 0 ? 3 : 2;
  if (mpi.rank() != 0) return result.plans.empty() ? none_status : 0;
  if (a.format == "json") {
    PrintJson(search::SearchJson(result));
  } else if (a.format == "csv") {
    std::cout << search::SearchCsv(result);
  } else {
    std::cout << search::SearchText(result);
  }
  if (!a.html.empty()) {
    // The page shows the best plan's step as simulate would: simulate it
    // again, with its trace (the search keeps step times only).
    simulate::SimulationResult best;
    if (!result.plans.empty()) {
      config::ScenarioConfig best_scenario = scenario;
      best_scenario.gpus = result.plans.front().point.gpus;
      best_scenario.plan = result.plans.front().plan;
      simulate::Options sim_opts;
      sim_opts.keep_trace = true;
      best = simulate::Simulate(best_scenario, sim_opts);
    }
    report::WriteHtmlFile(report::SearchHtml(result, result.plans.empty() ? nullptr : &best), a.html);
  }
  if (result.plans.empty()) {
    std::cerr << (none_status == 3 ? "note: " : "error: ") << scenario.file
              << ": no plan of the search space is valid and fits in memory ("
              << result.counts.enumeration.invalid_total() << " invalid, " << result.counts.out_of_memory
              << " out of GPU memory with the reserve, " << result.counts.host_memory << " out of host memory)\n";
    return none_status;
  }
  return 0;
}

}  // namespace

RunFunction AddSearchOptions(CLI::App* cmd) {
  auto a = std::make_shared<SearchArgs>();
  cmd->add_option("scenario", a->scenario, "Scenario JSON file (its plan fixes what is not searched)")->required();
  AddFormat(cmd, &a->format, {"text", "json", "csv"});
  cmd->add_flag("--quiet", a->quiet, "No progress on standard error");
  cmd->add_option("--top", a->top, "Plans to rank")->check(WholeIn(1, 100000));
  cmd->add_option("--objective", a->objective, "What to minimise (throughput: maximise tokens/s)")
      ->check(CLI::IsMember({"time", "throughput", "cost", "energy"}));
  cmd->add_option("--gpus", a->gpus, "GPU count N or range LO..HI (whole nodes); default: the scenario's");
  AddThreads(cmd, &a->threads, "Threads (default: all cores, shared by local MPI ranks)");
  cmd->add_option("--batch", a->batch, "Plans simulated per round (changes pruning counts, not the ranking)")
      ->check(WholeIn(1, 100000));
  cmd->add_option("--gpu-hour-usd", a->gpu_hour_usd,
                  "Price per GPU-hour (overrides the topology and economics/gpus.json)")
      ->check(PositiveReal());
  cmd->add_option("--gpu-watts", a->gpu_watts, "Power per GPU in W (overrides economics/gpus.json)")
      ->check(PositiveReal());
  AddRanking(cmd, &a->rank);
  AddMinHeadroom(cmd, &a->min_headroom);
  AddSet(cmd, &a->opts.overrides);
  AddProfile(cmd, &a->opts.profile_path);
  AddHtml(cmd, &a->html);
  return [a] { return RunSearch(*a); };
}

}  // namespace stacksim::cli
