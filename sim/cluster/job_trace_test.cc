#include "sim/cluster/job_trace.h"

#include <gtest/gtest.h>

#include "sim/cluster/cluster_test_util.h"

namespace stacksim::cluster {
namespace {

using testing::Mix;

std::string ErrorOf(const std::string& text, const std::string& origin) {
  try {
    ParseJobTrace(text, origin);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(JobTrace, ReadsCsvWithUnitsAndModelJobs) {
  const auto jobs = ParseJobTrace(
      "# a comment\n"
      "id, submit, gpus, duration, user, model, plan, tokens, scattered_slowdown\n"
      "a, 0 s, 64, 2 h, alice, , , , 1.25\n"
      "\n"
      "b, 90 min, 512, , bob, llama3-70b, 70b-512, 20B,\n",
      "week.csv");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].id, "a");
  EXPECT_EQ(jobs[0].user, "alice");
  EXPECT_EQ(jobs[0].gpus, 64);
  EXPECT_DOUBLE_EQ(jobs[0].duration.seconds(), 7200);
  EXPECT_DOUBLE_EQ(jobs[0].scattered_slowdown, 1.25);
  EXPECT_FALSE(jobs[0].is_model_job());
  EXPECT_DOUBLE_EQ(jobs[1].submit.seconds(), 5400);
  EXPECT_TRUE(jobs[1].is_model_job());
  EXPECT_EQ(jobs[1].tokens, 20'000'000'000);
  EXPECT_EQ(jobs[1].row, "line 5");
}

TEST(JobTrace, ReadsJson) {
  const auto jobs = ParseJobTrace(
      R"({"jobs": [{"submit": "1 d", "gpus": 8, "duration": "30 min"},
                   {"submit": "2 d", "gpus": 16, "model": "llama3-8b", "plan": "p", "tokens": 1e9}]})",
      "t.json");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_DOUBLE_EQ(jobs[0].submit.seconds(), 86400);
  EXPECT_EQ(jobs[0].id, "job-0");
  EXPECT_EQ(jobs[0].user, "default");
  EXPECT_EQ(jobs[1].tokens, 1'000'000'000);
}

TEST(JobTrace, BadTracesNameFileRowAndField) {
  const std::string header = "submit,gpus,duration\n";
  EXPECT_EQ(ErrorOf(header + "0 s,8,1 h\n0 s,eight,1 h\n", "t.csv"),
            "t.csv: line 3: gpus: expected a number, got 'eight'");
  EXPECT_EQ(ErrorOf(header + "0 s,8,1 h\n1 s,4,2\n", "t.csv"),
            "t.csv: line 3: duration: '2' is not a quantity with a unit; expected a time such as '2 us' (units ns, us, ms, "
            "s, min, h, d)");
  EXPECT_EQ(ErrorOf("submit,gpus,walltime\n", "t.csv"), "t.csv: line 1: walltime: unknown column");
  EXPECT_EQ(ErrorOf(header + "0 s,8\n", "t.csv"), "t.csv: line 2: has 2 fields, the header 3");
  EXPECT_EQ(ErrorOf("submit,gpus\n0 s,8\n", "t.csv"),
            "t.csv: line 2: duration: missing: give a duration, or model, plan and tokens");
  EXPECT_EQ(ErrorOf("submit,gpus,duration,plan\n0 s,8,1 h,p\n", "t.csv"),
            "t.csv: line 2: duration: give either a duration or model, plan and tokens, not both");
  EXPECT_EQ(ErrorOf(header + "-1 h,8,1 h\n", "t.csv"), "t.csv: line 2: submit: time must not be negative: '-1 h'");
  EXPECT_EQ(ErrorOf(R"({"jobs": [{"submit": "0 s", "gpus": 8, "duration": "1 h"}, {"submit": "0 s", "gpus": 8}]})",
                    "t.json"),
            "t.json: jobs[1]: duration: missing: give a duration, or model, plan and tokens");
  EXPECT_EQ(ErrorOf(R"({"jobs": [{"submit": 5, "gpus": 8, "duration": "1 h"}]})", "t.json"),
            "t.json: jobs[0].submit: expected a time with its unit, such as \"2 h\"");
  EXPECT_EQ(ErrorOf(R"({"jobs": [{"submit": "0 s", "gpus": 8, "duration": "1 h", "walltime": "1 h"}]})", "t.json")
                .rfind("t.json: jobs[0]", 0),
            0u);
  EXPECT_EQ(ErrorOf("submit\n", "t.txt"), "t.txt: a job trace is a .csv or a .json file");
}

TEST(JobTrace, GeneratorIsDeterministicAndFollowsItsMix) {
  JobGenerator g;
  g.seed = 42;
  g.jobs = 2000;
  g.arrivals_per_hour = 10;
  g.users = 3;
  g.median_duration = Time::FromSeconds(3600);
  g.duration_sigma = 1.0;
  g.max_duration = Time::FromSeconds(86400);
  g.mix = {Mix(3, 8), Mix(1, 64)};
  const auto a = GenerateJobs(g), b = GenerateJobs(g);
  ASSERT_EQ(a.size(), 2000u);
  int big = 0;
  std::vector<double> durations;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].submit, b[i].submit);
    EXPECT_EQ(a[i].duration, b[i].duration);
    EXPECT_LE(a[i].duration.seconds(), 86400);
    big += a[i].gpus == 64;
    durations.push_back(a[i].duration.seconds());
  }
  EXPECT_NEAR(big / 2000.0, 0.25, 0.03);
  // Mean gap 6 min: 2000 arrivals in about 200 h.
  EXPECT_NEAR(a.back().submit.seconds() / 3600, 200, 15);
  std::nth_element(durations.begin(), durations.begin() + 1000, durations.end());
  EXPECT_NEAR(durations[1000], 3600, 300);  // the median
}

}  // namespace
}  // namespace stacksim::cluster
