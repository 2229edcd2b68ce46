#include "sim/report/html.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "sim/util/number_text.h"
#include "sim/util/error.h"

namespace stacksim::report {
namespace {

// Text metrics. Pages use the system's sans-serif font at 12 px, whose mean
// glyph is ~6.5 px wide; 7 px per character keeps estimated labels from
// running into the bars in the wider fonts (DejaVu Sans) too.
constexpr double kCharWidth = 7.0;
constexpr double kFontSize = 12;
constexpr size_t kMaxLabelChars = 64;  // longer row labels are cut (the full text is the tooltip)

constexpr double kRowPitch = 24;   // bar charts: one row
constexpr double kBarHeight = 16;
constexpr double kAxisHeight = 40;  // tick labels and the unit under the plot
constexpr double kLegendRow = 20;
constexpr double kLanePitch = 15;  // timeline: one lane
constexpr double kLaneHeight = 12;

constexpr const char* kAlarm = "#c62828";
constexpr const char* kGrid = "#e1e4e8";
constexpr const char* kMuted = "#57606a";

// Tableau 10: distinguishable, and readable with dark text on most colours.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

double TextWidth(const std::string& text) {
  // UTF-8 continuation bytes do not start a glyph.
  size_t glyphs = 0;
  for (unsigned char c : text) glyphs += (c & 0xC0) != 0x80;
  return static_cast<double>(glyphs) * kCharWidth;
}

// A label cut to kMaxLabelChars glyphs (bytes here: labels are ASCII in practice).
std::string Shortened(const std::string& text) {
  if (text.size() <= kMaxLabelChars) return text;
  return text.substr(0, kMaxLabelChars - 3) + "...";
}

// Coordinates with two decimals: exact enough for a screen, the same bytes
// on every machine.
std::string N(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = fmt::format("{:.2f}", v);
  if (s == "-0.00") s = "0.00";
  return s;
}

// Dark or light text, whichever reads on `color` ("#rrggbb"; others get dark).
const char* TextOn(const std::string& color) {
  if (color.size() != 7 || color[0] != '#') return "#1f2328";
  auto channel = [&](size_t i) { return std::stoi(color.substr(i, 2), nullptr, 16) / 255.0; };
  double luma = 0.299 * channel(1) + 0.587 * channel(3) + 0.114 * channel(5);
  return luma < 0.55 ? "#ffffff" : "#1f2328";
}

// An axis from lo to hi in steps of 1, 2, 2.5 or 5 x 10^k, about five ticks.
struct Axis {
  double lo = 0, hi = 1, step = 1;
};

Axis NiceAxis(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo));
  double raw = (hi - lo) / 5;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  Axis a;
  a.step = step;
  a.lo = std::floor(lo / step + 1e-9) * step;
  a.hi = std::ceil(hi / step - 1e-9) * step;
  return a;
}

std::string TickText(double v, double step) {
  int decimals = 0;
  if (step < 1) {
    decimals = static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    // 0.25, 0.025: one more digit than the magnitude says.
    if (std::fabs(step * std::pow(10.0, decimals) - std::round(step * std::pow(10.0, decimals))) > 1e-6) ++decimals;
  }
  if (std::fabs(v) < step * 1e-6) v = 0;
  if (decimals == 0) return Grouped(v);
  return fmt::format("{:.{}f}", v, decimals);
}

void AppendTitle(std::string& out, const std::string& text) {
  if (text.empty()) return;
  out += "<title>";
  out += HtmlEscape(text);
  out += "</title>";
}

void AppendText(std::string& out, double x, double y, const std::string& text, const char* anchor = "start",
                const char* fill = nullptr, const char* extra = "") {
  fmt::format_to(std::back_inserter(out), R"(<text x="{}" y="{}" text-anchor="{}"{}{}{}{}>{}</text>)", N(x), N(y),
                 anchor, fill ? R"( fill=")" : "", fill ? fill : "", fill ? R"(")" : "", extra, HtmlEscape(text));
  out += '\n';
}

// Value text right of a bar, on a white ground so that it stays readable
// where a reference or grid line crosses it.
void AppendNote(std::string& out, double x, double row_top, const std::string& text, const char* fill = nullptr) {
  fmt::format_to(std::back_inserter(out), R"(<rect x="{}" y="{}" width="{}" height="16" fill="#ffffff" fill-opacity="0.9"/>)",
                 N(x - 2), N(row_top + (kRowPitch - 16) / 2), N(TextWidth(text) + 4));
  out += '\n';
  AppendText(out, x, row_top + kRowPitch / 2 + 4, text, "start", fill);
}

std::string SvgOpen(double width, double height) {
  return fmt::format(R"(<svg class="chart" viewBox="0 0 {} {}" width="{}" height="{}" font-size="{}" role="img">)",
                     N(width), N(height), N(width), N(height), kFontSize) +
         "\n";
}

// The horizontal layout shared by the bar charts: labels left, plot in the
// middle, notes right, a value axis below.
struct Frame {
  double width = 0;
  double x0 = 0, x1 = 0;  // plot area
  double top = 0;         // first row's top
  int rows = 0;
  Axis axis;
  double X(double v) const { return x0 + (x1 - x0) * (v - axis.lo) / (axis.hi - axis.lo); }
  double RowY(int row) const { return top + row * kRowPitch; }
  double Bottom() const { return top + rows * kRowPitch; }
};

Frame MakeFrame(int width, const std::vector<std::string>& labels, const std::vector<std::string>& notes, double lo,
                double hi, bool reference_label) {
  Frame f;
  f.width = width;
  double label_w = 0, note_w = 0;
  for (const auto& l : labels) label_w = std::max(label_w, TextWidth(Shortened(l)));
  for (const auto& n : notes) note_w = std::max(note_w, TextWidth(n));
  f.x0 = std::min(label_w + 14, width * 0.45);
  f.x1 = width - std::max(note_w + 14, 24.0);
  f.top = reference_label ? 22 : 8;
  f.rows = static_cast<int>(labels.size());
  f.axis = NiceAxis(lo, hi);
  return f;
}

void AppendRowLabel(std::string& out, const Frame& f, int row, const std::string& label, bool alarm) {
  double y = f.RowY(row) + kRowPitch / 2 + 4;
  fmt::format_to(std::back_inserter(out), R"(<text x="{}" y="{}" text-anchor="end"{}>{})", N(f.x0 - 8), N(y),
                 alarm ? fmt::format(R"( fill="{}" font-weight="600")", kAlarm) : std::string(),
                 HtmlEscape(Shortened(label)));
  if (Shortened(label) != label) AppendTitle(out, label);
  out += "</text>\n";
}

// Grid lines, tick labels and the unit under the plot.
void AppendAxis(std::string& out, const Frame& f, const std::string& title) {
  double y_end = f.Bottom();
  for (double v = f.axis.lo; v <= f.axis.hi + f.axis.step * 1e-6; v += f.axis.step) {
    double x = f.X(v);
    fmt::format_to(std::back_inserter(out), R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"/>)", N(x),
                   N(f.top - 4), N(x), N(y_end), kGrid);
    out += '\n';
    AppendText(out, x, y_end + 15, TickText(v, f.axis.step), "middle", kMuted);
  }
  if (!title.empty()) AppendText(out, (f.x0 + f.x1) / 2, y_end + 32, title, "middle", kMuted);
}

void AppendReference(std::string& out, const Frame& f, double value, const std::string& label) {
  if (!(value > 0)) return;
  double x = f.X(value);
  fmt::format_to(std::back_inserter(out),
                 R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="2" stroke-dasharray="6 4"/>)",
                 N(x), N(f.top - 6), N(x), N(f.Bottom()), kAlarm);
  out += '\n';
  if (!label.empty()) {
    // Keep the label inside the picture: anchored left of the line when it
    // would run past the right edge.
    bool fits_right = x + 4 + TextWidth(label) <= f.width;
    AppendText(out, fits_right ? x + 4 : x - 4, f.top - 8, label, fits_right ? "start" : "end", kAlarm);
  }
}

// Swatches and names flowing left to right, wrapping at the chart's width.
// Returns the height used.
double AppendLegend(std::string& out, const std::vector<ChartSeries>& series, double x0, double y, double width) {
  if (series.empty()) return 0;
  double x = x0, rows = 1;
  for (const ChartSeries& s : series) {
    double w = 12 + 5 + TextWidth(s.name) + 18;
    if (x > x0 && x + w > width) {
      x = x0;
      y += kLegendRow;
      ++rows;
    }
    fmt::format_to(std::back_inserter(out), R"(<rect x="{}" y="{}" width="12" height="12" rx="2" fill="{}"/>)",
                   N(x), N(y), HtmlEscape(s.color));
    AppendText(out, x + 17, y + 10.5, s.name);
    x += w;
  }
  return rows * kLegendRow;
}

std::string RowTotalText(double total, const std::string& unit) {
  return unit.empty() ? DecimalText(total) : DecimalText(total) + " " + unit;
}

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string DecimalText(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  double mag = std::fabs(v);
  if (mag >= 999.5) return Grouped(v);
  int decimals = 0;
  if (mag > 0) decimals = std::max(0, digits - 1 - static_cast<int>(std::floor(std::log10(mag))));
  // Rounding up may add a digit (9.996 -> "10.00"): print it with one decimal fewer.
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (decimals > 0 && mag < 1000 && std::fabs(std::stod(s)) >= std::pow(10.0, digits - decimals)) {
    s = fmt::format("{:.{}f}", v, decimals - 1);
  }
  return s == "-0" ? "0" : s;
}

const char* PaletteColor(size_t i) { return kPalette[i % std::size(kPalette)]; }

std::string StackedBarSvg(const StackedBarChart& chart) {
  std::vector<std::string> labels, notes;
  std::vector<double> totals;
  double hi = chart.reference;
  for (const StackedBarRow& row : chart.rows) {
    double total = 0;
    for (double v : row.values) total += std::max(0.0, v);
    totals.push_back(total);
    hi = std::max(hi, total);
    labels.push_back(row.label);
    notes.push_back(row.note.empty() ? RowTotalText(total, chart.unit) : row.note);
  }
  Frame f = MakeFrame(chart.width, labels, notes, 0, hi, !chart.reference_label.empty());

  // Only series that appear somewhere go in the legend.
  std::vector<ChartSeries> legend;
  for (size_t s = 0; s < chart.series.size(); ++s) {
    bool used = false;
    for (const StackedBarRow& row : chart.rows) used = used || (s < row.values.size() && row.values[s] > 0);
    if (used) legend.push_back(chart.series[s]);
  }

  std::string body, notes_svg;  // notes go last: over the reference line
  AppendAxis(body, f, chart.axis_title.empty() ? chart.unit : chart.axis_title);
  for (size_t r = 0; r < chart.rows.size(); ++r) {
    const StackedBarRow& row = chart.rows[r];
    int ri = static_cast<int>(r);
    AppendRowLabel(body, f, ri, row.label, row.highlight);
    double y = f.RowY(ri) + (kRowPitch - kBarHeight) / 2;
    double acc = 0;
    for (size_t s = 0; s < row.values.size() && s < chart.series.size(); ++s) {
      double v = std::max(0.0, row.values[s]);
      if (v <= 0) continue;
      double xa = f.X(acc), xb = f.X(acc + v);
      acc += v;
      const ChartSeries& series = chart.series[s];
      fmt::format_to(std::back_inserter(body), R"(<rect class="seg" x="{}" y="{}" width="{}" height="{}" fill="{}">)",
                     N(xa), N(y), N(xb - xa), N(kBarHeight), HtmlEscape(series.color));
      AppendTitle(body, fmt::format("{}: {} ({:.1f}%)", series.name, RowTotalText(v, chart.unit),
                                    totals[r] > 0 ? 100.0 * v / totals[r] : 0.0));
      body += "</rect>\n";
      if (xb - xa >= TextWidth(series.name) + 8) {
        AppendText(body, (xa + xb) / 2, y + kBarHeight - 4, series.name, "middle", TextOn(series.color),
                   R"( pointer-events="none")");
      }
    }
    AppendNote(notes_svg, f.X(totals[r]) + 6, f.RowY(ri), notes[r], row.highlight ? kAlarm : nullptr);
  }
  AppendReference(body, f, chart.reference, chart.reference_label);
  body += notes_svg;

  std::string legend_svg;
  double legend_h = AppendLegend(legend_svg, legend, f.x0, f.Bottom() + kAxisHeight + 4, chart.width);
  double height = f.Bottom() + kAxisHeight + (legend_h > 0 ? legend_h + 8 : 0);
  return SvgOpen(chart.width, height) + body + legend_svg + "</svg>\n";
}

std::string BarChartSvg(const BarChart& chart) {
  size_t per_group = std::max<size_t>(1, chart.series.size());
  for (const BarGroup& g : chart.groups) per_group = std::max(per_group, g.bars.size());
  // A group is one row per series: each bar keeps the row height, so text
  // beside it stays readable however many series there are.
  std::vector<std::string> labels, notes;
  double hi = chart.reference;
  for (const BarGroup& g : chart.groups) {
    labels.push_back(g.label);
    for (size_t b = 1; b < per_group; ++b) labels.push_back("");
    for (const Bar& bar : g.bars) {
      hi = std::max(hi, bar.value);
      notes.push_back(bar.text.empty() ? RowTotalText(bar.value, chart.unit) : bar.text);
    }
  }
  Frame f = MakeFrame(chart.width, labels, notes, 0, hi, !chart.reference_label.empty());
  std::string body, notes_svg;  // notes go last: over the reference line
  AppendAxis(body, f, chart.axis_title.empty() ? chart.unit : chart.axis_title);
  int row = 0;
  for (const BarGroup& g : chart.groups) {
    AppendRowLabel(body, f, row, g.label, false);
    for (size_t b = 0; b < per_group; ++b, ++row) {
      if (b >= g.bars.size()) continue;
      const Bar& bar = g.bars[b];
      std::string color = !bar.color.empty()                ? bar.color
                          : b < chart.series.size()         ? chart.series[b].color
                                                            : std::string(PaletteColor(b));
      double y = f.RowY(row) + (kRowPitch - kBarHeight) / 2;
      double xb = f.X(std::max(0.0, bar.value));
      std::string text = bar.text.empty() ? RowTotalText(bar.value, chart.unit) : bar.text;
      fmt::format_to(std::back_inserter(body), R"(<rect class="bar" x="{}" y="{}" width="{}" height="{}" fill="{}">)",
                     N(f.x0), N(y), N(xb - f.x0), N(kBarHeight), HtmlEscape(color));
      AppendTitle(body, bar.tooltip.empty() ? g.label + ": " + text : bar.tooltip);
      body += "</rect>\n";
      AppendNote(notes_svg, xb + 6, f.RowY(row), text);
    }
  }
  AppendReference(body, f, chart.reference, chart.reference_label);
  body += notes_svg;
  std::string legend_svg;
  double legend_h = 0;
  if (chart.series.size() > 1) {
    legend_h = AppendLegend(legend_svg, chart.series, f.x0, f.Bottom() + kAxisHeight + 4, chart.width);
  }
  double height = f.Bottom() + kAxisHeight + (legend_h > 0 ? legend_h + 8 : 0);
  return SvgOpen(chart.width, height) + body + legend_svg + "</svg>\n";
}

std::string WaterfallSvg(const WaterfallChart& chart) {
  std::vector<std::string> labels, notes;
  double acc = 0, lo = 0, hi = 0;
  for (const WaterfallStep& s : chart.steps) {
    labels.push_back(s.label);
    if (!s.text.empty()) {
      notes.push_back(s.text);
    } else {
      notes.push_back((s.value >= 0 && &s != &chart.steps.front() ? "+" : "") + RowTotalText(s.value, chart.unit));
    }
    acc += s.value;
    lo = std::min(lo, acc);
    hi = std::max(hi, acc);
  }
  labels.push_back(chart.total_label);
  notes.push_back(chart.total_text.empty() ? RowTotalText(acc, chart.unit) : chart.total_text);
  Frame f = MakeFrame(chart.width, labels, notes, lo, hi, false);
  std::string body;
  AppendAxis(body, f, chart.axis_title.empty() ? chart.unit : chart.axis_title);
  auto bar = [&](int row, double from, double to, const std::string& color, const std::string& tooltip,
                 const std::string& note) {
    double xa = f.X(std::min(from, to)), xb = f.X(std::max(from, to));
    double y = f.RowY(row) + (kRowPitch - kBarHeight) / 2;
    fmt::format_to(std::back_inserter(body), R"(<rect class="step" x="{}" y="{}" width="{}" height="{}" fill="{}">)",
                   N(xa), N(y), N(std::max(xb - xa, 0.5)), N(kBarHeight), HtmlEscape(color));
    AppendTitle(body, tooltip);
    body += "</rect>\n";
    AppendNote(body, xb + 6, f.RowY(row), note);
  };
  acc = 0;
  int row = 0;
  for (const WaterfallStep& s : chart.steps) {
    AppendRowLabel(body, f, row, s.label, false);
    // Connector from the previous bar's end, so the eye follows the sum.
    if (row > 0) {
      fmt::format_to(std::back_inserter(body), R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"/>)", N(f.X(acc)),
                     N(f.RowY(row) - (kRowPitch - kBarHeight) / 2), N(f.X(acc)),
                     N(f.RowY(row) + (kRowPitch - kBarHeight) / 2), kMuted);
      body += '\n';
    }
    bar(row, acc, acc + s.value, s.color, s.tooltip.empty() ? s.label + ": " + notes[row] : s.tooltip, notes[row]);
    acc += s.value;
    ++row;
  }
  AppendRowLabel(body, f, row, chart.total_label, false);
  bar(row, 0, acc, chart.total_color, chart.total_label + ": " + notes[row], notes[row]);
  return SvgOpen(chart.width, f.Bottom() + kAxisHeight) + body + "</svg>\n";
}

namespace {

// Calls emit(first, last) for each box of `sorted` (by lane, then start): a
// run [first, last) of intervals narrower than `threshold` px separated by
// gaps under it, or one wider interval alone. Returns the number of boxes.
template <typename Emit>
size_t MergeBoxes(const std::vector<TimelineInterval>& sorted, double scale, double threshold, Emit emit) {
  size_t boxes = 0;
  size_t i = 0, n = sorted.size();
  auto narrow = [&](const TimelineInterval& a) { return (a.end - a.start) * scale < threshold; };
  while (i < n) {
    size_t j = i + 1;
    if (narrow(sorted[i])) {
      double end = sorted[i].end;
      while (j < n && sorted[j].lane == sorted[i].lane && narrow(sorted[j]) &&
             (sorted[j].start - end) * scale < threshold) {
        end = std::max(end, sorted[j].end);
        ++j;
      }
    }
    emit(i, j);
    ++boxes;
    i = j;
  }
  return boxes;
}

}  // namespace

std::string TimelineSvg(const TimelineChart& chart) {
  std::vector<TimelineInterval> sorted;
  sorted.reserve(chart.intervals.size());
  for (const TimelineInterval& t : chart.intervals) {
    if (t.lane >= 0 && static_cast<size_t>(t.lane) < chart.lanes.size()) sorted.push_back(t);
  }
  std::sort(sorted.begin(), sorted.end(), [](const TimelineInterval& a, const TimelineInterval& b) {
    if (a.lane != b.lane) return a.lane < b.lane;
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end < b.end;
    return a.id < b.id;
  });
  double begin = chart.begin, end = chart.end;
  if (end <= begin && !sorted.empty()) {
    begin = sorted.front().start;
    end = sorted.front().end;
    for (const TimelineInterval& t : sorted) {
      begin = std::min(begin, t.start);
      end = std::max(end, t.end);
    }
  }
  if (end <= begin) end = begin + 1;

  std::vector<std::string> notes = {""};
  Frame f = MakeFrame(chart.width, chart.lanes, notes, begin, end, false);
  // The range fills the plot exactly (the step starts at the left edge and
  // ends at the right); ticks fall where they fall inside it.
  f.axis.lo = begin;
  f.axis.hi = end;
  f.x1 = chart.width - 28;
  double scale = (f.x1 - f.x0) / (f.axis.hi - f.axis.lo);

  // The smallest merge threshold (in px) that keeps the picture under
  // max_boxes; past the plot's width every lane is one box, so stop there.
  double threshold = 1;
  while (MergeBoxes(sorted, scale, threshold, [](size_t, size_t) {}) > chart.max_boxes &&
         threshold < 2 * (f.x1 - f.x0)) {
    threshold *= 2;
  }

  std::string body;
  double lanes_top = f.top;
  double lanes_bottom = lanes_top + chart.lanes.size() * kLanePitch;
  // Alternate lanes tinted, so a box can be followed to its label.
  for (size_t l = 0; l < chart.lanes.size(); ++l) {
    double y = lanes_top + l * kLanePitch;
    if (l % 2 == 0) {
      fmt::format_to(std::back_inserter(body), R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#f3f5f7"/>)",
                     N(f.x0), N(y), N(f.x1 - f.x0), N(kLanePitch));
      body += '\n';
    }
    AppendText(body, f.x0 - 8, y + kLanePitch - 3.5, Shortened(chart.lanes[l]), "end");
  }
  // Time axis: grid over the lanes, tick labels below.
  for (double v = std::ceil(f.axis.lo / f.axis.step - 1e-9) * f.axis.step; v <= f.axis.hi + f.axis.step * 1e-6;
       v += f.axis.step) {
    double x = f.x0 + (v - f.axis.lo) * scale;
    fmt::format_to(std::back_inserter(body), R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"/>)", N(x),
                   N(lanes_top), N(x), N(lanes_bottom + 4), kGrid);
    body += '\n';
    AppendText(body, x, lanes_bottom + 17, TickText(v, f.axis.step), "middle", kMuted);
  }
  AppendText(body, (f.x0 + f.x1) / 2, lanes_bottom + 34, "time (" + chart.unit + ")", "middle", kMuted);

  std::vector<bool> kind_used(chart.kinds.size(), false);
  auto color = [&](int kind) {
    return kind >= 0 && static_cast<size_t>(kind) < chart.kinds.size() ? chart.kinds[kind].color
                                                                          : std::string("#8c8c8c");
  };
  auto kind_name = [&](int kind) {
    return kind >= 0 && static_cast<size_t>(kind) < chart.kinds.size() ? chart.kinds[kind].name : std::string("?");
  };
  auto time_text = [&](double v) { return DecimalText(v, 4); };
  size_t boxes = MergeBoxes(sorted, scale, threshold, [&](size_t first, size_t last) {
    const TimelineInterval& a = sorted[first];
    double t0 = a.start, t1 = a.end;
    std::map<int, double> by_kind;  // ordered: ties go to the lower kind, the same on every run
    for (size_t k = first; k < last; ++k) {
      t1 = std::max(t1, sorted[k].end);
      by_kind[sorted[k].kind] += sorted[k].end - sorted[k].start;
    }
    int kind = a.kind;
    double busy = 0;
    for (const auto& [k, v] : by_kind) {
      if (v > by_kind[kind]) kind = k;
      busy += v;
    }
    if (kind >= 0 && static_cast<size_t>(kind) < kind_used.size()) kind_used[kind] = true;
    double xa = f.x0 + (std::max(t0, begin) - f.axis.lo) * scale;
    double xb = f.x0 + (std::min(t1, end) - f.axis.lo) * scale;
    double y = lanes_top + a.lane * kLanePitch + (kLanePitch - kLaneHeight) / 2;
    fmt::format_to(std::back_inserter(body), R"(<rect class="box" x="{}" y="{}" width="{}" height="{}" fill="{}">)",
                   N(xa), N(y), N(std::max(xb - xa, 1.0)), N(kLaneHeight), HtmlEscape(color(kind)));
    std::string tip;
    if (last - first == 1) {
      tip = chart.describe ? chart.describe(a.id) : kind_name(a.kind);
      tip += fmt::format(": {} {}, {} to {} {}", time_text(a.end - a.start), chart.unit, time_text(a.start),
                         time_text(a.end), chart.unit);
    } else {
      tip = fmt::format("{} tasks, {} to {} {}, busy {} {}:", last - first, time_text(t0), time_text(t1), chart.unit,
                        time_text(busy), chart.unit);
      for (const auto& [k, v] : by_kind) {
        tip += fmt::format(" {} {:.0f}%", kind_name(k), busy > 0 ? 100 * v / busy : 0.0);
      }
    }
    AppendTitle(body, tip);
    body += "</rect>\n";
  });

  std::string caption = fmt::format("{} tasks drawn as {} boxes", Grouped(static_cast<double>(sorted.size())),
                                    Grouped(static_cast<double>(boxes)));
  if (boxes < sorted.size()) {
    caption += fmt::format(" (runs of tasks narrower than {} px merged; hover a box for what it holds)",
                           DecimalText(threshold));
  }
  std::vector<ChartSeries> legend;
  for (size_t k = 0; k < chart.kinds.size(); ++k) {
    if (kind_used[k]) legend.push_back(chart.kinds[k]);
  }
  double legend_y = lanes_bottom + 44;
  double legend_h = AppendLegend(body, legend, f.x0, legend_y, chart.width);
  double caption_y = legend_y + legend_h + 12;
  AppendText(body, f.x0, caption_y, caption, "start", kMuted);
  return SvgOpen(chart.width, caption_y + 8) + body + "</svg>\n";
}

std::string TableHtml(const HtmlTable& table) {
  auto numeric = [&](size_t c) { return c < table.numeric.size() && table.numeric[c]; };
  std::string out = "<table>\n";
  if (!table.header.empty()) {
    out += "<thead><tr>";
    for (size_t c = 0; c < table.header.size(); ++c) {
      out += numeric(c) ? "<th class=\"num\">" : "<th>";
      out += HtmlEscape(table.header[c]) + "</th>";
    }
    out += "</tr></thead>\n";
  }
  out += "<tbody>\n";
  for (size_t r = 0; r < table.rows.size(); ++r) {
    bool hl = std::find(table.highlight_rows.begin(), table.highlight_rows.end(), r) != table.highlight_rows.end();
    out += hl ? "<tr class=\"hl\">" : "<tr>";
    for (size_t c = 0; c < table.rows[r].size(); ++c) {
      out += numeric(c) ? "<td class=\"num\">" : "<td>";
      out += HtmlEscape(table.rows[r][c]) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody>\n</table>\n";
  return out;
}

std::string KeyNumbersHtml(const std::vector<KeyNumber>& numbers) {
  std::string out = "<div class=\"cards\">\n";
  for (const KeyNumber& k : numbers) {
    out += fmt::format(
        "<div class=\"card\"><div class=\"label\">{}</div><div class=\"value{}\">{}</div><div "
        "class=\"detail\">{}</div></div>\n",
        HtmlEscape(k.label), k.alarm ? " alarm" : "", HtmlEscape(k.value), HtmlEscape(k.detail));
  }
  return out + "</div>\n";
}

std::string ParagraphHtml(const std::string& text) { return "<p>" + HtmlEscape(text) + "</p>\n"; }

std::string ListHtml(const std::vector<std::string>& items) {
  std::string out = "<ul>\n";
  for (const std::string& item : items) out += "<li>" + HtmlEscape(item) + "</li>\n";
  return out + "</ul>\n";
}

std::string LegendHtml(const std::vector<ChartSeries>& series) {
  std::string out = "<div class=\"legend\">";
  for (const ChartSeries& s : series) {
    out += fmt::format("<span><span class=\"swatch\" style=\"background:{}\"></span>{}</span>", HtmlEscape(s.color),
                       HtmlEscape(s.name));
  }
  return out + "</div>\n";
}

void HtmlPage::AddSection(const std::string& heading, std::string body_html) {
  sections_.emplace_back(heading, std::move(body_html));
}

namespace {

// Inline, so the file needs nothing else. Colours are GitHub's light theme.
constexpr const char* kStyle = R"(
body{margin:0;background:#f6f8fa;color:#1f2328;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"DejaVu Sans",sans-serif}
main{max-width:1200px;margin:0 auto;padding:20px 24px 8px}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:0 0 10px}
h3{font-size:15px;margin:14px 0 6px}
.subtitle{color:#57606a;margin:0 0 10px}
nav{font-size:13px;margin:0 0 8px}
nav a{color:#0969da;text-decoration:none;margin-right:14px}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:14px 18px;margin:14px 0}
svg.chart{display:block;max-width:100%;height:auto;margin:6px 0}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{padding:3px 10px;border-bottom:1px solid #eaeef2;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.hl td{background:#fff8c5}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #d0d7de;border-radius:6px;padding:8px 14px;min-width:140px}
.card .label{font-size:12px;color:#57606a}
.card .value{font-size:22px;font-weight:600}
.card .detail{font-size:12px;color:#57606a}
.alarm{color:#c62828}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px;margin:4px 0}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-2px}
ul{margin:4px 0;padding-left:22px}
footer{color:#57606a;font-size:12px;max-width:1200px;margin:0 auto;padding:0 24px 24px}
)";

}  // namespace

std::string HtmlPage::Render() const {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + HtmlEscape(title_) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<main>\n";
  out += "<h1>" + HtmlEscape(title_) + "</h1>\n";
  if (!subtitle_.empty()) out += "<p class=\"subtitle\">" + HtmlEscape(subtitle_) + "</p>\n";
  if (sections_.size() > 2) {
    out += "<nav>";
    for (size_t i = 0; i < sections_.size(); ++i) {
      out += fmt::format("<a href=\"#s{}\">{}</a>", i + 1, HtmlEscape(sections_[i].first));
    }
    out += "</nav>\n";
  }
  for (size_t i = 0; i < sections_.size(); ++i) {
    out += fmt::format("<section id=\"s{}\">\n<h2>{}</h2>\n", i + 1, HtmlEscape(sections_[i].first));
    out += sections_[i].second;
    out += "</section>\n";
  }
  out += "</main>\n<footer>Written by stacksim. Self-contained: no scripts, no external resources.</footer>\n";
  out += "</body>\n</html>\n";
  return out;
}

void WriteHtmlFile(const std::string& html, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path, "", "cannot write the HTML report (check that the folder exists)");
  out.write(html.data(), static_cast<std::streamsize>(html.size()));
  out.flush();
  if (!out) throw InputError(path, "", "cannot write the HTML report (disk full?)");
}

}  // namespace stacksim::report
