#include "sim/report/cluster_html.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "sim/report/html.h"
#include "sim/util/number_text.h"

namespace stacksim::report {

using cluster::ClusterResult;
using cluster::JobOutcome;
using cluster::kIdleReasons;

namespace {

constexpr double kHour = 3600.0;
// Windows drawn in the over-time charts: a row each, so a month at hourly
// resolution is folded into about two-day windows.
constexpr size_t kMaxRows = 40;

std::string Duration(double s) {
  if (s < 60) return fmt::format("{:.0f} s", s);
  if (s < kHour) return fmt::format("{:.1f} min", s / 60);
  if (s < 48 * kHour) return fmt::format("{:.1f} h", s / kHour);
  return fmt::format("{:.1f} d", s / 86400);
}

// Fixed colours: the same state has the same colour in every chart.
const char* kBusyColor = "#4e79a7";
const char* kIdleColors[kIdleReasons] = {"#bab0ac", "#f28e2b", "#e15759", "#edc948", "#76b7b2"};
const char* kIdleLabels[kIdleReasons] = {"idle: nothing waiting", "idle: head job needs more nodes",
                                         "idle: fragmentation", "idle: unused in allocated nodes",
                                         "down: node failures"};

std::vector<report::ChartSeries> StateSeries() {
  std::vector<report::ChartSeries> s = {{"busy", kBusyColor}};
  for (int k = 0; k < kIdleReasons; ++k) s.push_back({kIdleLabels[k], kIdleColors[k]});
  return s;
}

}  // namespace

std::string ClusterHtml(const ClusterResult& r) {
  report::HtmlPage page(
      "stacksim cluster",
      fmt::format("{}: {} nodes x {} GPUs on {} ({} nodes per leaf), {} scheduler, {} placement, {} jobs", r.name,
                  r.shape.nodes, r.shape.gpus_per_node, r.topology, r.shape.nodes_per_leaf,
                  SchedulerName(r.options.scheduler), PlacementName(r.options.placement), r.jobs.size()));

  page.AddSection(
      "Summary",
      report::KeyNumbersHtml({
          {"GPU utilization", fmt::format("{:.1f}%", 100.0 * r.utilization),
           fmt::format("{} of {} GPU-hours busy", Grouped(r.busy_gpu_s / kHour),
                       Grouped(r.total_gpu_s / kHour))},
          {"makespan", Duration(r.makespan.seconds()), "first submit to last completion"},
          {"queue wait p50 / p99", Duration(r.wait.p50.seconds()) + " / " + Duration(r.wait.p99.seconds()),
           "mean " + Duration(r.wait.mean.seconds())},
          {"slowed by placement", fmt::format("{} jobs", r.jobs_slowed),
           fmt::format("{} GPU-hours lost, worst x{:.2f}", Grouped(r.placement_lost_gpu_s / kHour),
                       r.max_slowdown)},
          {"node failures", std::to_string(r.node_failures),
           fmt::format("{} jobs killed, {} GPU-hours of work lost", r.jobs_killed,
                       Grouped(r.lost_work_gpu_s / kHour))},
      }));

  report::StackedBarChart total;
  total.unit = "GPU-h";
  total.axis_title = "GPU-hours between the first submit and the last completion";
  total.series = StateSeries();
  report::StackedBarRow row{"all GPUs", {r.busy_gpu_s / kHour}, "", false};
  for (int k = 0; k < kIdleReasons; ++k) row.values.push_back(r.idle_gpu_s[k] / kHour);
  total.rows.push_back(row);
  page.AddSection("Where the GPU-time went", report::StackedBarSvg(total));

  if (!r.series.empty()) {
    const size_t fold = (r.series.size() + kMaxRows - 1) / kMaxRows;
    const double window_s = r.options.resolution.seconds() * static_cast<double>(fold);
    report::StackedBarChart over_time;
    over_time.unit = "GPUs";
    over_time.axis_title = fmt::format("GPUs by state, averaged over {} windows", Duration(window_s));
    over_time.series = StateSeries();
    over_time.reference = r.shape.gpus();
    over_time.reference_label = fmt::format("{} GPUs", r.shape.gpus());
    report::BarChart queue;
    queue.unit = "jobs";
    queue.axis_title = fmt::format("jobs waiting (mean over {} windows)", Duration(window_s));
    for (size_t i = 0; i < r.series.size(); i += fold) {
      const size_t end = std::min(r.series.size(), i + fold);
      const double n = static_cast<double>(end - i);
      report::StackedBarRow w;
      w.label = Duration(r.series[i].start.seconds());
      double busy = 0, queued = 0;
      std::array<double, kIdleReasons> idle{};
      for (size_t j = i; j < end; ++j) {
        busy += r.series[j].busy_gpus / n;
        queued += r.series[j].queued_jobs / n;
        for (int k = 0; k < kIdleReasons; ++k) idle[k] += r.series[j].idle_gpus[k] / n;
      }
      w.values.push_back(busy);
      for (int k = 0; k < kIdleReasons; ++k) w.values.push_back(idle[k]);
      w.note = fmt::format("{:.0f}% busy", r.shape.gpus() > 0 ? 100.0 * busy / r.shape.gpus() : 0.0);
      over_time.rows.push_back(w);
      queue.groups.push_back({w.label, {{queued, fmt::format("{:.1f}", queued), "", "#f28e2b"}}});
    }
    page.AddSection("GPUs over time", report::StackedBarSvg(over_time));
    page.AddSection("Queue over time", report::BarChartSvg(queue));
  }

  // The jobs placement slowed most.
  std::vector<size_t> order(r.jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return r.jobs[a].placement_slowdown > r.jobs[b].placement_slowdown;
  });
  report::HtmlTable slowed;
  slowed.header = {"job", "user", "GPUs", "leaves", "minimal leaves", "slowdown", "wait", "restarts"};
  slowed.numeric = {false, false, true, true, true, true, true, true};
  for (size_t i = 0; i < order.size() && slowed.rows.size() < 20; ++i) {
    const JobOutcome& j = r.jobs[order[i]];
    if (j.placement_slowdown <= 1.0) break;
    slowed.rows.push_back({j.id, j.user, Grouped(j.gpus), std::to_string(j.leaves),
                           std::to_string(j.min_leaves), fmt::format("x{:.3f}", j.placement_slowdown),
                           Duration(j.wait.seconds()), std::to_string(j.restarts)});
  }
  page.AddSection("Jobs slowed most by their placement",
                  slowed.rows.empty() ? report::ParagraphHtml("No job ran slower than on its minimal leaf set.")
                                      : report::TableHtml(slowed));
  if (!r.notes.empty()) page.AddSection("Notes", report::ListHtml(r.notes));
  return page.Render();
}

}  // namespace stacksim::report
