#include "sim/report/html.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "sim/util/error.h"

namespace stacksim::report {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The width attribute of every <rect class="CLASS" ...>, in order.
std::vector<double> RectWidths(const std::string& svg, const std::string& cls) {
  std::vector<double> widths;
  std::regex re("<rect class=\"" + cls + "\" x=\"[-0-9.]+\" y=\"[-0-9.]+\" width=\"([0-9.]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), re); it != std::sregex_iterator(); ++it) {
    widths.push_back(std::stod((*it)[1].str()));
  }
  return widths;
}

void ExpectNoExternalReference(const std::string& html) {
  for (const char* bad : {"http://", "https://", "src=", "<script", "<link", "url(", "@import"}) {
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
  }
}

StackedBarChart ThreeSegments() {
  StackedBarChart c;
  c.unit = "s";
  c.series = {{"gemm", "#4e79a7"}, {"comm", "#f28e2b"}, {"idle", "#d0d7de"}};
  c.rows = {{"stage 0", {1, 2, 3}, "", false}, {"stage 1", {2, 0, 0}, "", false}};
  return c;
}

TEST(HtmlEscape, ReplacesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape(R"(a<b>&"c'd)"), "a&lt;b&gt;&amp;&quot;c&#39;d");
  EXPECT_EQ(HtmlEscape("plain text 1.5 s"), "plain text 1.5 s");
}

TEST(HtmlEscape, ChartAndTableTextIsEscaped) {
  StackedBarChart c = ThreeSegments();
  c.rows[0].label = "<script>alert(1)</script>";
  c.series[0].name = "a&b";
  std::string svg = StackedBarSvg(c);
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("&lt;script&gt;"), std::string::npos);
  EXPECT_NE(svg.find("a&amp;b"), std::string::npos);

  HtmlTable t;
  t.header = {"<h>"};
  t.rows = {{"\"quoted\" & <b>"}};
  std::string html = TableHtml(t);
  EXPECT_NE(html.find("&quot;quoted&quot; &amp; &lt;b&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);

  HtmlPage page("<title>", "x & y");
  page.AddSection("<h2>", "");
  std::string doc = page.Render();
  EXPECT_NE(doc.find("<title>&lt;title&gt;</title>"), std::string::npos);
  EXPECT_NE(doc.find("x &amp; y"), std::string::npos);
}

TEST(HtmlDecimalText, SignificantDigitsAndGrouping) {
  EXPECT_EQ(DecimalText(1.23456), "1.23");
  EXPECT_EQ(DecimalText(12.3456), "12.3");
  EXPECT_EQ(DecimalText(0.012345), "0.0123");
  EXPECT_EQ(DecimalText(9.996), "10.0");  // rounding up does not add a digit
  EXPECT_EQ(DecimalText(1234567.0), "1,234,567");
  EXPECT_EQ(DecimalText(17.94, 4), "17.94");
  EXPECT_EQ(DecimalText(0), "0");
}

TEST(HtmlStackedBar, SegmentWidthsAreProportionalToValues) {
  std::string svg = StackedBarSvg(ThreeSegments());
  std::vector<double> w = RectWidths(svg, "seg");
  // Row 0: 1, 2, 3; row 1: 2 (zero segments are not drawn).
  ASSERT_EQ(w.size(), 4u);
  EXPECT_NEAR(w[1] / w[0], 2.0, 0.01);
  EXPECT_NEAR(w[2] / w[0], 3.0, 0.01);
  EXPECT_NEAR(w[3] / w[0], 2.0, 0.01);
  // Tooltips give value and share of the row.
  EXPECT_NE(svg.find("<title>comm: 2.00 s (33.3%)</title>"), std::string::npos);
  // Totals as notes, the unit under the axis, legend entries.
  EXPECT_NE(svg.find(">6.00 s</text>"), std::string::npos);
  EXPECT_NE(svg.find(">idle</text>"), std::string::npos);
}

TEST(HtmlStackedBar, LegendLeavesOutSeriesThatAreZeroEverywhere) {
  StackedBarChart c = ThreeSegments();
  c.series.push_back({"never used", "#000000"});
  for (auto& row : c.rows) row.values.push_back(0);
  EXPECT_EQ(StackedBarSvg(c).find("never used"), std::string::npos);
}

TEST(HtmlStackedBar, HighlightedRowAndReferenceLineAreMarked) {
  StackedBarChart c = ThreeSegments();
  c.reference = 4;
  c.reference_label = "HBM 4 GiB";
  c.rows[0].highlight = true;
  c.rows[0].note = "6 GiB: 2 GiB over";
  std::string svg = StackedBarSvg(c);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);
  EXPECT_NE(svg.find(">HBM 4 GiB</text>"), std::string::npos);
  // The highlighted row's label and note are drawn in the alarm colour.
  EXPECT_NE(svg.find("fill=\"#c62828\" font-weight=\"600\">stage 0</text>"), std::string::npos);
  EXPECT_TRUE(std::regex_search(svg, std::regex("<text[^>]* fill=\"#c62828\"[^>]*>6 GiB: 2 GiB over</text>")));
  EXPECT_EQ(svg.find("font-weight=\"600\">stage 1"), std::string::npos);
}

TEST(HtmlBarChart, BarsStartAtZeroAndScaleWithValues) {
  BarChart c;
  c.unit = "days";
  c.series = {{"H100", "#4e79a7"}, {"B200", "#f28e2b"}};
  c.groups = {{"cost", {{10, "", "", ""}, {5, "", "", ""}}}, {"energy", {{4, "", "", ""}, {8, "", "", ""}}}};
  c.reference = 9;
  c.reference_label = "budget";
  std::string svg = BarChartSvg(c);
  std::vector<double> w = RectWidths(svg, "bar");
  ASSERT_EQ(w.size(), 4u);
  EXPECT_NEAR(w[0] / w[1], 2.0, 0.01);
  EXPECT_NEAR(w[3] / w[2], 2.0, 0.01);
  EXPECT_NE(svg.find(">budget</text>"), std::string::npos);
  EXPECT_NE(svg.find(">B200</text>"), std::string::npos);  // legend with two series
}

TEST(HtmlWaterfall, StepsStackToTheTotal) {
  WaterfallChart c;
  c.unit = "s";
  c.steps = {{"ideal", 2, "#4e79a7", "", ""}, {"layer 1", 1, "#76b7b2", "", ""}, {"layer 2", 1, "#f28e2b", "", ""}};
  c.total_label = "step";
  std::string svg = WaterfallSvg(c);
  std::vector<double> w = RectWidths(svg, "step");
  ASSERT_EQ(w.size(), 4u);
  EXPECT_NEAR(w[3], w[0] + w[1] + w[2], 0.05);
  EXPECT_NEAR(w[0] / w[1], 2.0, 0.01);
  EXPECT_NE(svg.find(">+1.00 s</text>"), std::string::npos);
  EXPECT_NE(svg.find(">4.00 s</text>"), std::string::npos);
}

TimelineChart ManyTasks(int per_lane, double length) {
  TimelineChart c;
  c.unit = "ms";
  c.lanes = {"rank 0 compute", "rank 0 dp"};
  c.kinds = {{"gemm", "#4e79a7"}, {"dp-comm", "#e15759"}};
  for (int lane = 0; lane < 2; ++lane) {
    for (int i = 0; i < per_lane; ++i) {
      double t = i * length * 1.1;
      c.intervals.push_back({lane, lane, t, t + length, lane * per_lane + i});
    }
  }
  return c;
}

TEST(HtmlTimeline, WideTasksAreDrawnOneBoxEach) {
  TimelineChart c = ManyTasks(20, 1.0);
  c.describe = [](int64_t id) { return "task " + std::to_string(id); };
  std::string svg = TimelineSvg(c);
  EXPECT_EQ(Count(svg, "<rect class=\"box\""), 40u);
  EXPECT_NE(svg.find("<title>task 21: 1.000 ms, 1.100 to 2.100 ms</title>"), std::string::npos);
  EXPECT_NE(svg.find("40 tasks drawn as 40 boxes"), std::string::npos);
  EXPECT_NE(svg.find(">time (ms)</text>"), std::string::npos);
}

TEST(HtmlTimeline, NarrowTasksAreMergedUnderTheCap) {
  // 200,000 tasks of 1 us with 0.1 us gaps: far narrower than a pixel.
  TimelineChart c = ManyTasks(100000, 0.001);
  c.max_boxes = 500;
  std::string svg = TimelineSvg(c);
  size_t boxes = Count(svg, "<rect class=\"box\"");
  EXPECT_GE(boxes, 2u);
  EXPECT_LE(boxes, 500u);
  EXPECT_LT(svg.size(), 200u * 1000);
  EXPECT_NE(svg.find("200,000 tasks drawn as"), std::string::npos);
  EXPECT_NE(svg.find("merged"), std::string::npos);
  // A merged box says what it holds.
  EXPECT_NE(svg.find(" tasks, "), std::string::npos);
  EXPECT_NE(svg.find("gemm 100%"), std::string::npos);

  // Sparse tasks far apart stay separate even when narrow: the cap binds
  // only when the picture would hold more boxes.
  TimelineChart sparse;
  sparse.lanes = {"lane"};
  sparse.kinds = {{"k", "#4e79a7"}};
  for (int i = 0; i < 10; ++i) sparse.intervals.push_back({0, 0, i * 100.0, i * 100.0 + 0.001, i});
  EXPECT_EQ(Count(TimelineSvg(sparse), "<rect class=\"box\""), 10u);
}

TEST(HtmlPage, RenderIsDeterministicAndSelfContained) {
  auto build = [] {
    HtmlPage page("stacksim test", "subtitle");
    page.AddSection("Numbers", KeyNumbersHtml({{"step", "1.00 s", "detail", false}, {"oom", "no", "", true}}));
    page.AddSection("Bars", StackedBarSvg(ThreeSegments()));
    page.AddSection("Timeline", TimelineSvg(ManyTasks(1000, 0.01)));
    page.AddSection("List", ListHtml({"a", "b"}) + ParagraphHtml("p") +
                                LegendHtml({{"gemm", "#4e79a7"}}));
    return page.Render();
  };
  std::string a = build();
  EXPECT_EQ(a, build());
  ExpectNoExternalReference(a);
  EXPECT_EQ(a.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(a.find("<nav><a href=\"#s1\">Numbers</a>"), std::string::npos);
  EXPECT_NE(a.find("class=\"value alarm\""), std::string::npos);
  EXPECT_EQ(a.substr(a.size() - 8), "</html>\n");
}

TEST(HtmlPage, WriteErrorNamesTheFile) {
  const std::string path = "/nonexistent-folder/report.html";
  try {
    WriteHtmlFile("<p>x</p>", path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stacksim::report
