// `--html FILE` on simulate, search and diagnose as a user runs it: the page
// is written beside the usual output, and an unwritable file is bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/run_stacksim.h"

namespace stacksim::testing {
namespace {

const std::string kScenario = std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-8xh100.json";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(HtmlCli, SimulateWritesThePageBesideTheTextReport) {
  std::string path = ::testing::TempDir() + "stacksim_simulate_" + std::to_string(getpid()) + ".html";
  CmdResult r = Stacksim("simulate " + kScenario + " --html " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "step time")) << r.out;
  std::string html = ReadFile(path);
  EXPECT_TRUE(Has(html, "<!DOCTYPE html>"));
  EXPECT_TRUE(Has(html, "Where the step goes"));
  EXPECT_TRUE(Has(html, "Timeline of one step"));  // --html keeps the trace
  EXPECT_FALSE(Has(html, "http"));
  // The likely range and the coverage warnings, as the text report has them.
  EXPECT_TRUE(Has(html, "likely step"));
  EXPECT_TRUE(Has(html, "How far to trust it"));
  EXPECT_TRUE(Has(html, "Coverage warnings"));
  std::remove(path.c_str());
}

TEST(HtmlCli, SearchPageShowsTheBestPlanSimulated) {
  std::string path = ::testing::TempDir() + "stacksim_search_" + std::to_string(getpid()) + ".html";
  CmdResult r = Stacksim("search " + kScenario + " --top 3 --threads 2 --format json --html " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');  // the JSON on stdout is unchanged
  std::string html = ReadFile(path);
  EXPECT_TRUE(Has(html, "Ranking"));
  EXPECT_TRUE(Has(html, "#3 "));
  EXPECT_TRUE(Has(html, "Best plan: Timeline of one step"));
  EXPECT_TRUE(Has(html, "likely (s)"));
  EXPECT_TRUE(Has(html, "How far to trust the ranking"));
  EXPECT_TRUE(Has(html, "Memory reserve: "));
  std::remove(path.c_str());
}

TEST(HtmlCli, DiagnosePageHasTheLayerWaterfall) {
  std::string path = ::testing::TempDir() + "stacksim_diagnose_" + std::to_string(getpid()) + ".html";
  CmdResult r = Stacksim("diagnose " + kScenario + " --html " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  std::string html = ReadFile(path);
  EXPECT_TRUE(Has(html, "Gap to the ideal step, by layer"));
  EXPECT_TRUE(Has(html, "Remedies"));
  EXPECT_TRUE(Has(html, "likely step"));
  EXPECT_TRUE(Has(html, "How far to trust it"));
  std::remove(path.c_str());
}

TEST(HtmlCli, UnwritableFileIsBadInputNamingIt) {
  for (std::string command : {"simulate", "search --threads 2", "diagnose"}) {
    CmdResult r = Stacksim(command + " " + kScenario + " --html /nonexistent-dir/x.html");
    EXPECT_EQ(r.status, 2) << command << ": " << r.err;
    EXPECT_TRUE(Has(r.err, "/nonexistent-dir/x.html")) << command << ": " << r.err;
  }
}

}  // namespace
}  // namespace stacksim::testing
