// Building blocks for self-contained HTML reports: a page, charts as inline
// SVG, tables. The pages of simulate, search and diagnose (html_pages.h) and
// any other command's page (compare) are assembled from these.
//
// Self-contained means the file makes no network request when opened: CSS is
// inline, charts are inline SVG drawn by the browser without JavaScript,
// fonts are the system's (font-family only, never a URL), no images. Tooltips
// are SVG <title> children of the shapes, which browsers show on hover.
//
// Every function escapes the text it is given (& < > " '): callers pass plain
// text, never HTML, except where a parameter says "html" (the output of
// another builder here). Output is deterministic: the same input gives the
// same bytes (fixed decimals for coordinates, no clocks, no random ids), so
// pages can be diffed and tested.
//
// A typical page:
//
//   HtmlPage page("stacksim compare", "Llama 3 70B, 1T tokens");
//   BarChart days;
//   days.unit = "days";
//   for (auto& c : clusters) days.groups.push_back({c.name, {{c.days, DecimalText(c.days, 3) + " days"}}});
//   page.AddSection("Time to train", BarChartSvg(days));
//   page.AddSection("Clusters", TableHtml(table));
//   WriteHtmlFile(page.Render(), "compare.html");
//
// Charts take values in one unit of the caller's choosing (seconds, GiB,
// USD), named by `unit` for the axis title. Widths and heights are SVG user
// units (CSS pixels at 100%); charts shrink to fit narrower windows.
#ifndef STACKSIM_SIM_REPORT_HTML_H_
#define STACKSIM_SIM_REPORT_HTML_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace stacksim::report {

// `text` with & < > " ' replaced by entities: safe in element content and in
// quoted attribute values.
std::string HtmlEscape(const std::string& text);

// "1.23", "12.3", "123", "1,235" (grouped above 999): `digits` significant
// digits for values below 1000. Non-finite values print as "-".
std::string DecimalText(double v, int digits = 3);

// A colour of the shared palette (cycling), for series with no meaning of
// their own (clusters, plans). Kinds with a meaning (GEMM, memory parts) have
// fixed colours in html_pages.cc so they match between charts.
const char* PaletteColor(size_t i);

// One colour-coded series: a legend entry.
struct ChartSeries {
  std::string name;
  std::string color;  // CSS colour, e.g. "#4e79a7"
};

// Horizontal stacked bars: one row per item, one segment per series. Used for
// a step's breakdown (one row), per-stage breakdowns and memory per stage.
struct StackedBarRow {
  std::string label;
  std::vector<double> values;  // one per series, in the chart's unit; negative values count as 0
  std::string note;            // right of the bar; "" shows the row's total
  bool highlight = false;      // drawn in the alarm colour (e.g. above capacity)
};

struct StackedBarChart {
  std::string unit;        // after values, e.g. "s", "GiB"
  std::string axis_title;  // under the axis; "" shows the unit
  std::vector<ChartSeries> series;
  std::vector<StackedBarRow> rows;
  double reference = 0;         // > 0: a dashed vertical line at this value (e.g. HBM capacity)
  std::string reference_label;  // written above the line
  int width = 1150;
};

// Segments are <rect class="seg"> with a <title> tooltip (series, value,
// share of the row); a segment wide enough shows its series name inside.
// Series that are zero in every row are left out of the legend.
std::string StackedBarSvg(const StackedBarChart& chart);

// Horizontal bars, one group per category with one bar per series (a single
// series gives a plain bar chart): plan rankings, remedies, clusters.
struct Bar {
  double value = 0;     // in the chart's unit; drawn from zero
  std::string text;     // right of the bar; "" prints the value
  std::string tooltip;  // "" repeats the group label and text
  std::string color;    // "" takes the series colour
};

struct BarGroup {
  std::string label;
  std::vector<Bar> bars;  // one per series
};

struct BarChart {
  std::string unit;
  std::string axis_title;  // "" shows the unit
  std::vector<ChartSeries> series;  // legend shown when more than one
  std::vector<BarGroup> groups;
  double reference = 0;  // > 0: dashed vertical line (e.g. the current step time)
  std::string reference_label;
  int width = 1150;
};

std::string BarChartSvg(const BarChart& chart);

// A waterfall: each step is a bar starting where the previous one ended, then
// a total bar from zero (ideal + per-layer gaps = step).
struct WaterfallStep {
  std::string label;
  double value = 0;  // may be negative (a bar going left)
  std::string color;
  std::string tooltip;  // "" repeats label and text
  std::string text;     // right of the bar; "" prints the value (signed after the first step)
};

struct WaterfallChart {
  std::string unit;
  std::string axis_title;  // "" shows the unit
  std::vector<WaterfallStep> steps;
  std::string total_label = "total";
  std::string total_text;  // "" prints the sum
  std::string total_color = "#4e79a7";
  int width = 1150;
};

std::string WaterfallSvg(const WaterfallChart& chart);

// A Gantt-like timeline: lanes (e.g. rank x stream) of boxes coloured by
// kind, with a time axis.
struct TimelineInterval {
  int lane = 0;
  int kind = 0;      // index into TimelineChart::kinds
  double start = 0;  // in the chart's unit
  double end = 0;
  int64_t id = 0;    // the caller's handle, passed to `describe`
};

struct TimelineChart {
  std::string unit = "ms";
  std::vector<std::string> lanes;
  std::vector<ChartSeries> kinds;
  std::vector<TimelineInterval> intervals;  // any order
  double begin = 0, end = 0;                // axis range; end <= begin: the intervals' range
  int width = 1150;
  // Upper bound on boxes drawn. A box is ~150 bytes of SVG, so the default
  // keeps a timeline under ~2 MB however many tasks the trace holds.
  size_t max_boxes = 12000;
  // Tooltip of a box that stands for one interval; null: kind and times.
  std::function<std::string(int64_t id)> describe;
};

// Runs of adjacent intervals on one lane that are each narrower than a
// threshold (first 1 px, doubled until at most max_boxes boxes remain) and
// separated by less than it are merged into one box, coloured by the kind
// that takes most of its time, whose tooltip counts the tasks and kinds.
// Boxes are <rect class="box">; a line under the axis says how many
// intervals were drawn as how many boxes.
std::string TimelineSvg(const TimelineChart& chart);

// A table of text cells (escaped). `numeric` columns are right-aligned;
// rows listed in `highlight_rows` are tinted.
struct HtmlTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> numeric;  // per column; missing entries are false
  std::vector<size_t> highlight_rows;
};

std::string TableHtml(const HtmlTable& table);

// Headline numbers as a row of cards: a big value, a label above, a detail below.
struct KeyNumber {
  std::string label;
  std::string value;
  std::string detail;
  bool alarm = false;  // value in the alarm colour (e.g. out of memory)
};

std::string KeyNumbersHtml(const std::vector<KeyNumber>& numbers);

// Text as a paragraph, and lines as a bulleted list (both escaped).
std::string ParagraphHtml(const std::string& text);
std::string ListHtml(const std::vector<std::string>& items);

// Legend of coloured swatches as HTML (for a group of charts sharing one).
std::string LegendHtml(const std::vector<ChartSeries>& series);

// A whole page: title, subtitle, then sections in the order added, each a
// heading and an html body (the builders' output).
class HtmlPage {
 public:
  HtmlPage(std::string title, std::string subtitle) : title_(std::move(title)), subtitle_(std::move(subtitle)) {}
  void AddSection(const std::string& heading, std::string body_html);
  // The document, "<!DOCTYPE html>" to "</html>\n".
  std::string Render() const;

 private:
  std::string title_, subtitle_;
  std::vector<std::pair<std::string, std::string>> sections_;
};

// Writes `html` to `path`. Throws InputError naming `path` if it cannot.
void WriteHtmlFile(const std::string& html, const std::string& path);

}  // namespace stacksim::report

#endif  // STACKSIM_SIM_REPORT_HTML_H_
