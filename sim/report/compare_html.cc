#include "sim/report/compare_html.h"

#include <fmt/format.h>

#include "sim/report/html.h"
#include "sim/report/html_pages.h"
#include "sim/search/search_report.h"
#include "sim/util/number_text.h"

namespace stacksim::report {

using compare::ClusterResult;
using compare::Comparison;

namespace {

using report::Bar;
using report::BarChart;
using report::BarGroup;
using report::DecimalText;

// One bar per cluster that fits and has the figure (value > 0).
std::string ClusterBars(const Comparison& c, const std::string& unit, const std::string& title,
                        double (*value)(const ClusterResult&), std::string (*text)(const ClusterResult&)) {
  BarChart chart;
  chart.unit = unit;
  chart.series = {{"cluster", "#4e79a7"}};
  chart.axis_title = title;
  for (size_t i = 0; i < c.clusters.size(); ++i) {
    const ClusterResult& r = c.clusters[i];
    Bar bar;
    if (r.ok() && value(r) > 0) {
      bar.value = value(r);
      bar.text = text(r);
    } else {
      bar.text = r.ok() ? "n/a" : "no plan fits";
    }
    // One colour for all, another for the cluster the objective picks.
    bar.color = static_cast<int>(i) == c.best ? "#59a14f" : "#4e79a7";
    chart.groups.push_back(BarGroup{r.spec.text, {bar}});
  }
  return report::BarChartSvg(chart);
}

std::string Money(double usd) {
  if (usd >= 1e6) return fmt::format("${:.2f}M", usd / 1e6);
  if (usd >= 1e3) return fmt::format("${:.1f}K", usd / 1e3);
  return fmt::format("${:.0f}", usd);
}

}  // namespace

std::string ComparisonHtml(const Comparison& c, const std::vector<const simulate::SimulationResult*>& best_runs) {
  report::HtmlPage page(
      "stacksim compare",
      fmt::format("{}: {} tokens at seq {}, global batch {} ({} tokens per step); best plan per cluster by {}", c.model,
                  Grouped(static_cast<double>(c.tokens)), c.seq_len, Grouped(c.global_batch),
                  Grouped(static_cast<double>(c.tokens_per_step)), search::ObjectiveName(c.objective)));

  std::vector<report::KeyNumber> keys;
  if (c.best >= 0) {
    const ClusterResult& b = c.clusters[c.best];
    keys.push_back({"best cluster", b.spec.text, fmt::format("{} x {}", Grouped(b.gpus), b.scenario.topology.gpu)});
    keys.push_back({"days to train", DecimalText(b.days, 3), search::PlanName(b.best().point)});
    if (b.cost_usd > 0) keys.push_back({"cost", Money(b.cost_usd), fmt::format("${:.2f} per GPU-hour", b.search.economics.gpu_hour_usd)});
    keys.push_back({"MFU", fmt::format("{:.1f}%", 100.0 * b.best().mfu), fmt::format("{:.3f} s per step", b.best().step.seconds())});
    if (b.best().assessment.range) {
      keys.push_back({"likely step", search::RangeCell(b.best()) + " s",
                      b.best().assessment.plan_family_validated() ? "plan family validated"
                                                                  : "plan family never validated",
                      !b.best().assessment.plan_family_validated()});
    }
  } else {
    keys.push_back({"best cluster", "none", "no cluster has a plan that fits", true});
  }
  page.AddSection("Summary", report::KeyNumbersHtml(keys));

  page.AddSection("Days to train the budget",
                  ClusterBars(c, "days", "days (training time at the simulated step; no failures or restarts)",
                              [](const ClusterResult& r) { return r.days; },
                              [](const ClusterResult& r) { return DecimalText(r.days, 3) + " days"; }));
  page.AddSection("Cost",
                  ClusterBars(c, "USD", "USD (GPU-hours x price per GPU-hour)",
                              [](const ClusterResult& r) { return r.cost_usd; },
                              [](const ClusterResult& r) { return Money(r.cost_usd); }));
  page.AddSection("GPU energy",
                  ClusterBars(c, "MWh", "MWh (GPU-hours x datasheet TDP: an upper estimate for the GPUs alone)",
                              [](const ClusterResult& r) { return r.energy_mwh; },
                              [](const ClusterResult& r) { return DecimalText(r.energy_mwh, 3) + " MWh"; }));
  page.AddSection("MFU of the best plan",
                  ClusterBars(c, "%", "model FLOP/s per GPU / dense peak (%)",
                              [](const ClusterResult& r) { return 100.0 * r.best().mfu; },
                              [](const ClusterResult& r) { return fmt::format("{:.1f}%", 100.0 * r.best().mfu); }));

  report::HtmlTable table;
  table.header = {"cluster", "GPU", "GPUs", "best plan", "NVLink domain", "step (s), likely", "family",
                  "tokens/s", "MFU", "memory (GiB)", "days", "GPU-hours", "$/GPU-hour", "cost", "GPU energy (MWh)"};
  table.numeric = {false, false, true, false, false, true, false, true, true, true, true, true, true, true, true};
  for (size_t i = 0; i < c.clusters.size(); ++i) {
    const ClusterResult& r = c.clusters[i];
    if (!r.ok()) {
      table.rows.push_back(
          {r.spec.text, r.scenario.topology.gpu, "-", r.failure, "", "", "", "", "", "", "", "", "", "", ""});
      continue;
    }
    const auto& econ = r.search.economics;
    table.rows.push_back({r.spec.text, r.scenario.topology.gpu, Grouped(r.gpus),
                          search::PlanName(r.best().point), r.best().placement,
                          fmt::format("{:.3f} ({})", r.best().step.seconds(), search::RangeCell(r.best())),
                          r.best().assessment.plan_family_validated()
                              ? fmt::format("{} validated run{}", r.best().assessment.plan_family_runs,
                                            r.best().assessment.plan_family_runs == 1 ? "" : "s")
                              : std::string("never validated"),
                          Grouped(r.best().tokens_per_s),
                          fmt::format("{:.1f}%", 100.0 * r.best().mfu),
                          fmt::format("{:.1f} / {:.0f}", r.best().peak_memory.value / kGiB, r.best().capacity.value / kGiB),
                          DecimalText(r.days, 4), DecimalText(r.gpu_hours, 4),
                          econ.gpu_hour_usd > 0 ? fmt::format("{:.2f}", econ.gpu_hour_usd) : "n/a",
                          r.cost_usd > 0 ? Money(r.cost_usd) : "n/a",
                          r.energy_mwh > 0 ? DecimalText(r.energy_mwh, 4) : "n/a"});
    if (static_cast<int>(i) == c.best) table.highlight_rows.push_back(table.rows.size() - 1);
  }
  page.AddSection("Clusters side by side", report::TableHtml(table));

  std::string trust = report::ParagraphHtml(
      c.ranking == search::Ranking::kPessimistic
          ? "Plans ranked by the high end of their likely range (--rank pessimistic)."
          : "Plans ranked by the predicted step; --rank pessimistic ranks by the likely range's high end.");
  if (!c.winner_note.empty()) trust += report::ParagraphHtml(c.winner_note);
  for (const ClusterResult& r : c.clusters) {
    if (!r.ok()) continue;
    trust += fmt::format("<h3>{}</h3>\n", report::HtmlEscape(r.spec.text));
    if (r.search.plans.size() >= 2) trust += report::ParagraphHtml(search::GapSentence(r.search, 0, 1));
    std::vector<std::string> w = search::GroupedWarnings(r.search.plans);
    if (!w.empty()) {
      trust += "<p class=\"alarm\">Coverage warnings, by rank of this cluster's plans:</p>\n" + report::ListHtml(w);
    }
  }
  for (const ClusterResult& r : c.clusters) {
    if (r.ok()) {
      trust += report::ParagraphHtml("Memory reserve: " + r.search.reserve_basis + ".");
      break;
    }
  }
  page.AddSection("How far to trust it", trust);

  std::vector<std::string> prices;
  for (const ClusterResult& r : c.clusters) {
    if (r.ok() && r.search.economics.gpu_hour_usd > 0) {
      prices.push_back(fmt::format("{}: ${:.2f} per GPU-hour, {} ({})", r.spec.text, r.search.economics.gpu_hour_usd,
                                   r.search.economics.price_basis, r.search.economics.price_source));
    }
  }
  if (!prices.empty()) page.AddSection("Prices and their sources", report::ListHtml(prices));
  if (!c.warnings.empty()) page.AddSection("Warnings", report::ListHtml(c.warnings));

  for (size_t i = 0; i < c.clusters.size() && i < best_runs.size(); ++i) {
    const simulate::SimulationResult* run = best_runs[i];
    if (run == nullptr) continue;
    const ClusterResult& r = c.clusters[i];
    std::string body = report::ParagraphHtml(search::PlanName(r.best().point) + " on " +
                                             Grouped(r.gpus) + " x " + r.scenario.topology.gpu);
    body += report::StepBreakdownHtml(*run);
    body += report::StageMemoryHtml(*run);
    page.AddSection("Best plan on " + r.spec.text, body);
  }
  return page.Render();
}

}  // namespace stacksim::report
