#include "sim/serve/bench_result.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "sim/serve/serve_config.h"
#include "sim/serve/serve_sim.h"
#include "sim/serve/serve_test_util.h"
#include "sim/util/error.h"
#include "tests/input_error.h"

namespace stacksim::serve {
namespace {

// The error f throws names `key` (its key path ends with it).
void ExpectInputError(const std::function<void()>& f, const std::string& key) {
  const InputError e = testing::ErrorFrom(f);
  EXPECT_EQ(e.key_path(), key) << e.what();
}

const std::string kResult = std::string(STACKSIM_SOURCE_DIR) + "/tests/data/serve/vllm_result.json";

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(BenchResult, PythonInfinitiesAndNansBecomeJson) {
  EXPECT_EQ(SanitizePythonJson(R"({"a": Infinity, "b": -Infinity, "c": NaN, "d": "NaN Infinity"})"),
            R"({"a": "inf", "b": "-inf", "c": null, "d": "NaN Infinity"})");
  EXPECT_EQ(SanitizePythonJson(R"({"e": "say \"NaN\"", "f": NaN})"), R"({"e": "say \"NaN\"", "f": null})");
}

// vLLM's result: the failed request is left out, the others keep their
// order and lengths; an unlimited rate sends them at once, and past the
// concurrency limit each waits for any request to finish.
TEST(BenchResult, ReadsVllmsResultWithItsConcurrencyLimit) {
  const BenchmarkRun run = ReadBenchmarkResult(kResult, 1);
  ASSERT_EQ(run.requests.size(), 5u);
  EXPECT_EQ(run.failed, 1);
  EXPECT_EQ(run.requests[2].prompt_tokens, 400);
  EXPECT_EQ(run.requests[3].prompt_tokens, 250);  // the failed 500-token request is gone
  EXPECT_EQ(run.requests[4].output_tokens, 150);
  EXPECT_FALSE(run.rate_per_s.has_value());
  EXPECT_EQ(run.max_concurrency, 2);
  for (size_t i = 0; i < run.requests.size(); ++i) {
    EXPECT_EQ(run.requests[i].arrival, Time::Zero());
    EXPECT_EQ(run.requests[i].after, i < 2 ? -1 : kAfterAnyFinish) << i;
  }
  EXPECT_DOUBLE_EQ(run.measured.at("mean_ttft_ms"), 95.0);
  EXPECT_DOUBLE_EQ(run.measured.at("completed"), 5.0);
  EXPECT_EQ(run.measured.count("std_ttft_ms"), 0u);  // NaN: not a measurement
  EXPECT_NE(run.source.find("at most 2 in flight"), std::string::npos) << run.source;
}

// The client's concurrency limit in the simulation: never more than two in
// flight, and each waiting request arrives when one finishes.
TEST(BenchResult, TheConcurrencyLimitHoldsInTheSimulation) {
  const BenchmarkRun run = ReadBenchmarkResult(kResult, 1);
  const ServeConfig c = ParseServeScenario(TestServeDoc(), "test.json");
  const ServeResult r = SimulateServing(c, run.requests);
  ASSERT_EQ(r.requests.size(), 5u);
  for (size_t i = 2; i < r.requests.size(); ++i) {
    int in_flight = 0;
    for (size_t j = 0; j < r.requests.size(); ++j) {
      if (j != i && r.requests[j].arrival <= r.requests[i].arrival && r.requests[j].finish > r.requests[i].arrival) {
        ++in_flight;
      }
    }
    EXPECT_LE(in_flight, 1) << i;  // with request i itself: at most 2
    bool some_finish = false;
    for (size_t j = 0; j < i; ++j) some_finish = some_finish || r.requests[j].finish == r.requests[i].arrival;
    EXPECT_TRUE(some_finish) << i;
  }
}

// A rate and a limit together: a request goes when the rate releases it or
// when a slot frees, whichever is later.
TEST(BenchResult, ARateUnderAConcurrencyLimitWaitsForBoth) {
  std::string lens = R"("input_lens": [)", outs = R"("output_lens": [)";
  for (int i = 0; i < 40; ++i) {
    lens += (i ? ", " : "") + std::string("500");
    outs += (i ? ", " : "") + std::string("200");
  }
  const std::string path = Write("stacksim_bench_rate_limit.json",
                                 "{" + lens + "], " + outs + R"(], "request_rate": 50.0, "max_concurrency": 4})");
  const BenchmarkRun run = ReadBenchmarkResult(path, 5);
  const ServeConfig c = ParseServeScenario(TestServeDoc(), "test.json");
  const ServeResult r = SimulateServing(c, run.requests);
  for (size_t i = 0; i < r.requests.size(); ++i) {
    EXPECT_GE(r.requests[i].arrival, run.requests[i].arrival) << i;  // never before the rate releases it
    int in_flight = 0;
    for (size_t j = 0; j < r.requests.size(); ++j) {
      if (j != i && r.requests[j].arrival <= r.requests[i].arrival && r.requests[j].finish > r.requests[i].arrival) {
        ++in_flight;
      }
    }
    EXPECT_LE(in_flight, 3) << i;
  }
  // 50 requests/s against four slots of 200-token answers: the slots bind.
  EXPECT_GT(r.requests.back().arrival, run.requests.back().arrival);
}

// A finite rate: the first request at once, then gaps with the rate's mean;
// SGLang's JSON lines: the last record.
TEST(BenchResult, ARateDrawsTheClientsArrivalsAndJsonLinesTakeTheLastRecord) {
  std::string lens = R"("input_lens": [)";
  std::string outs = R"("output_lens": [)";
  for (int i = 0; i < 2000; ++i) {
    lens += (i ? ", " : "") + std::string("100");
    outs += (i ? ", " : "") + std::string("10");
  }
  const std::string record =
      "{" + lens + "], " + outs + R"(], "request_rate": 4.0, "burstiness": 1.0, "mean_e2e_latency_ms": 812.5})";
  const std::string path = Write("stacksim_bench_rate.jsonl", R"({"input_lens": [1], "output_lens": [1]})"
                                                                  "\n" + record + "\n");
  const BenchmarkRun run = ReadBenchmarkResult(path, 3);
  ASSERT_EQ(run.requests.size(), 2000u);
  EXPECT_DOUBLE_EQ(run.measured.at("mean_e2e_latency_ms"), 812.5);  // SGLang's name
  EXPECT_EQ(run.requests.front().arrival, Time::Zero());
  const double mean_gap = run.requests.back().arrival.seconds() / 1999.0;
  EXPECT_NEAR(mean_gap, 0.25, 0.02);
  for (size_t i = 1; i < run.requests.size(); ++i) EXPECT_GE(run.requests[i].arrival, run.requests[i - 1].arrival);
}

TEST(BenchResult, WhatIsNotAResultNamesTheField) {
  ExpectInputError([&] { ReadBenchmarkResult(Write("stacksim_bench_nolens.json", R"({"duration": 1.0})"), 1); },
                   "input_lens");
  ExpectInputError([&] {
    ReadBenchmarkResult(Write("stacksim_bench_mismatch.json", R"({"input_lens": [1, 2], "output_lens": [3]})"), 1);
  }, "output_lens");
  ExpectInputError([&] {
    ReadBenchmarkResult(Write("stacksim_bench_rate.json", R"({"input_lens": [1], "output_lens": [3], "request_rate": "fast"})"),
                        1);
  }, "request_rate");
  ExpectInputError([&] {
    ReadBenchmarkResult(Write("stacksim_bench_zero.json", R"({"input_lens": [5], "output_lens": [0]})"), 1);
  }, "output_lens[0]");
}

}  // namespace
}  // namespace stacksim::serve
