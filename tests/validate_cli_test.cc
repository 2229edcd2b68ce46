// stacksim validate on two small files (tests/data/validate/: runs copied
// from validation/training_runs.json and modern_training_runs.json, with
// their sources): several files in one call, the per-source summary and the
// leave-one-source-out line, progress on standard error only, and the same
// report at any thread count.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/run_stacksim.h"

namespace stacksim {
namespace {

const std::string kA = std::string(STACKSIM_SOURCE_DIR) + "/tests/data/validate/runs_a.json";
const std::string kB = std::string(STACKSIM_SOURCE_DIR) + "/tests/data/validate/runs_b.json";

TEST(ValidateCli, TwoFilesKeepEachRunsFileAndSummarizeBySource) {
  auto r = testing::Stacksim("validate " + kA + " " + kB + " --format json --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");  // --quiet: no progress
  auto j = nlohmann::json::parse(r.out);
  const auto& runs = j.at("runs");
  ASSERT_EQ(runs.size(), 8u);  // none dropped, in file order
  EXPECT_EQ(runs[0].at("id"), "llmfoundry-mpt-7b-a100_80gb-amp_bf16-s4096-8gpu");
  EXPECT_EQ(runs[0].at("file"), kA);
  EXPECT_EQ(runs[0].at("source"), "llmfoundry");
  EXPECT_EQ(runs[4].at("id"), "dgxc-llama3.1-8b-bf16-8gpu");
  EXPECT_EQ(runs[4].at("file"), kB);
  EXPECT_EQ(runs[6].at("source"), "torchtitan");
  EXPECT_TRUE(runs[6].contains("error"));  // a GPU with no shipped system: not modelled, listed

  // The plan names cp and ep, and the CP communication when cp > 1.
  EXPECT_NE(runs[0].at("plan").get<std::string>().find(" cp1 ep1 "), std::string::npos) << runs[0].at("plan");
  EXPECT_NE(runs[2].at("plan").get<std::string>().find(" cp2 cp_comm="), std::string::npos) << runs[2].at("plan");

  // Per file, then over both: scored runs, the modelled ones, within 10%.
  ASSERT_EQ(j.at("files").size(), 2u);
  const auto& fb = j.at("files")[1];
  EXPECT_EQ(fb.at("file"), kB);
  EXPECT_EQ(fb.at("runs"), 4);
  EXPECT_EQ(fb.at("not_modelled"), 1);
  EXPECT_EQ(j.at("not_modelled"), 2);  // one run in each file
  int scored = 0, modelled = 0, within = 0;
  double abs_sum = 0;
  for (const auto& run : runs) {
    if (!run.at("scored").get<bool>()) continue;
    ++scored;
    if (!run.contains("error_pct")) continue;
    ++modelled;
    double e = std::abs(run.at("error_pct").get<double>());
    abs_sum += e;
    if (e <= 10) ++within;
  }
  EXPECT_EQ(j.at("scored_total"), scored);
  EXPECT_EQ(j.at("scored_predicted"), modelled);
  EXPECT_NEAR(j.at("mape_pct").get<double>(), abs_sum / modelled, 1e-9);
  EXPECT_NEAR(j.at("within_10_pct").get<double>(), 100.0 * within / scored, 1e-9);

  std::vector<std::string> sources;
  int source_runs = 0;
  for (const auto& s : j.at("sources")) {
    sources.push_back(s.at("source"));
    source_runs += s.at("runs").get<int>();
  }
  EXPECT_EQ(sources, (std::vector<std::string>{"dgxc", "llmfoundry", "megatronlm", "nemo2407", "torchtitan"}));
  EXPECT_EQ(source_runs, 8);
  const auto& titan = j.at("sources")[4];
  EXPECT_EQ(titan.at("scored"), 1);
  EXPECT_EQ(titan.at("modelled"), 0);
  EXPECT_TRUE(titan.at("mape_pct").is_null());

  const auto& loso = j.at("leave_one_source_out");
  EXPECT_FALSE(loso.at("fitted").get<bool>());
  EXPECT_EQ(loso.at("note"), "no constants are fitted to these runs: leave-one-source-out error equals the error above");
  EXPECT_NEAR(loso.at("mape_pct").get<double>(), j.at("mape_pct").get<double>(), 1e-9);
}

TEST(ValidateCli, SameReportOnOneThreadAndOnFour) {
  auto one = testing::Stacksim("validate " + kA + " " + kB + " --format json --quiet --threads 1");
  auto four = testing::Stacksim("validate " + kA + " " + kB + " --format json --quiet --threads 4");
  ASSERT_EQ(one.status, 0) << one.err;
  ASSERT_EQ(four.status, 0) << four.err;
  EXPECT_EQ(one.out, four.out);
}

TEST(ValidateCli, ProgressGoesToStandardErrorOnly) {
  auto r = testing::Stacksim("validate " + kA + " " + kB);
  ASSERT_EQ(r.status, 0) << r.err;
  // Not a terminal: plain lines, the last one at the end.
  EXPECT_NE(r.err.find("validate progress: 8/8 runs"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("progress"), std::string::npos);
  // The text report: the source table and the leave-one-source-out line.
  EXPECT_NE(r.out.find("all files: MAPE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  torchtitan         1      1        0       -         0%  -"), std::string::npos) << r.out;
  // The constant fitted on the development runs, its stored check, its source.
  EXPECT_NE(r.out.find("leave-one-source-out: overlap_comm_sms refitted without each source"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("fitted constants used: overlap_comm_sms "), std::string::npos) << r.out;
}

// --fit-overlap-sms: every run at each grid value, the best value written
// with the grid and each source's left-out fit, other constants kept.
TEST(ValidateCli, FitsTheOverlapSmsWithALeaveOneSourceOutCheck) {
  const std::string out = (std::filesystem::temp_directory_path() / "stacksim_fit_overlap.json").string();
  std::ofstream(out) << R"({"schema": "stacksim.fitted_constants/1", "about": "kept"})";
  auto r = testing::Stacksim("validate " + kA + " " + kB + " --fit-overlap-sms " + out + " --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("overlap_comm_sms: "), std::string::npos) << r.out;
  const auto doc = nlohmann::json::parse(std::ifstream(out));
  EXPECT_EQ(doc.at("about"), "kept");
  const auto& c = doc.at("overlap_comm_sms");
  EXPECT_EQ(c.at("grid").size(), 17u);
  double best = 1e9;
  for (const auto& p : c.at("grid")) best = std::min(best, p.at("mape_pct").get<double>());
  EXPECT_DOUBLE_EQ(c.at("fitted_mape_pct").get<double>(), best);
  EXPECT_GE(c.at("value").get<int>(), 0);
  EXPECT_LE(c.at("value").get<int>(), 32);
  EXPECT_FALSE(c.at("leave_one_source_out").at("groups").empty());
  EXPECT_NE(c.at("fitted_by").get<std::string>().find("--fit-overlap-sms"), std::string::npos);
  // Fitting needs every run.
  auto bad = testing::Stacksim("validate " + kA + " --run x --fit-overlap-sms " + out);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--fit-overlap-sms"), std::string::npos) << bad.err;
}

TEST(ValidateCli, TheErrorTableHoldsTheRunsOfEveryFileGiven) {
  const std::string table = ::testing::TempDir() + "validate_cli_table_" + std::to_string(getpid()) + ".json";
  auto r = testing::Stacksim("validate " + kA + " " + kB + " --quiet --format json --write-error-table " + table);
  ASSERT_EQ(r.status, 0) << r.err;
  auto report = nlohmann::json::parse(r.out);
  std::ifstream in(table);
  auto written = nlohmann::json::parse(in);
  std::filesystem::remove(table);
  std::set<std::string> files;
  for (const auto& run : written.at("runs")) files.insert(run.at("id").get<std::string>());
  int predicted = 0;
  for (const auto& f : report.at("files")) predicted += f.at("scored_predicted").get<int>();
  EXPECT_EQ(static_cast<int>(written.at("runs").size()), predicted);
  EXPECT_NE(written.at("validation_file").get<std::string>().find("runs_a.json"), std::string::npos);
  EXPECT_NE(written.at("validation_file").get<std::string>().find("runs_b.json"), std::string::npos);
  // --run and the table still exclude each other.
  auto one = testing::Stacksim("validate " + kA + " --run x --quiet --write-error-table /dev/null");
  EXPECT_EQ(one.status, 2);
}

// --write-scenario: the scenario validate simulated for one run, open plan
// fields filled, which simulate reads back to the same step time.
TEST(ValidateCli, TheWrittenScenarioSimulatesToThePredictedStep) {
  const std::string file = ::testing::TempDir() + "validate_cli_scenario_" + std::to_string(getpid()) + ".json";
  auto r = testing::Stacksim("validate " + kB + " --run dgxc-llama3.1-8b-bf16-8gpu --quiet --format json --write-scenario " +
                             file);
  ASSERT_EQ(r.status, 0) << r.err;
  const double predicted = nlohmann::json::parse(r.out).at("runs")[0].at("predicted_iteration_s").get<double>();
  auto sim = testing::Stacksim("simulate " + file + " --format json");
  std::filesystem::remove(file);
  ASSERT_EQ(sim.status, 0) << sim.err;
  EXPECT_NEAR(nlohmann::json::parse(sim.out).at("iteration_s").get<double>(), predicted, predicted * 1e-9);

  // It needs one run, and a run that was simulated.
  EXPECT_EQ(testing::Stacksim("validate " + kB + " --quiet --write-scenario " + file).status, 2);
  auto unmodelled = testing::Stacksim("validate " + kB + " --run torchtitan-llama3.1-8B-t2-cp2 --quiet --write-scenario " + file);
  EXPECT_EQ(unmodelled.status, 2) << unmodelled.out;
  EXPECT_NE(unmodelled.err.find("was not simulated"), std::string::npos) << unmodelled.err;
}

// --fit-reserve: the allocator fraction is written with its left-out fits,
// beside the file's other constants, and the file stays valid JSON.
TEST(ValidateCli, FitsTheAllocatorReserveKeepingTheOtherConstants) {
  const std::string out = ::testing::TempDir() + "validate_cli_fit_reserve_" + std::to_string(getpid()) + ".json";
  std::ofstream(out) << R"({"schema": "stacksim.fitted_constants/1", "about": "kept",
                            "overlap_comm_sms": {"value": 7, "fitted_by": "x", "date": "d"}})";
  const std::string runs = std::string(STACKSIM_SOURCE_DIR) + "/validation/memory_runs.json";
  auto r = testing::Stacksim("validate-memory " + runs + " --fit-reserve " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto doc = nlohmann::json::parse(std::ifstream(out));
  std::filesystem::remove(out);
  EXPECT_EQ(doc.at("about"), "kept");
  EXPECT_EQ(doc.at("overlap_comm_sms").at("value"), 7);
  const auto& c = doc.at("allocator_cache_fraction");
  EXPECT_GE(c.at("value").get<double>(), 0.0);
  EXPECT_EQ(c.at("leave_one_source_out").at("groups").size(), 2u);
  EXPECT_NE(c.at("fitted_by").get<std::string>().find("--fit-reserve"), std::string::npos);
}

}  // namespace
}  // namespace stacksim
