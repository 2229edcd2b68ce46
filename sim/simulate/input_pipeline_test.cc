#include "sim/simulate/input_pipeline.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "sim/simulate/simulate.h"
#include "sim/util/error.h"

namespace stacksim::simulate {
namespace {

config::ScenarioConfig Shipped() {
  return config::LoadScenario(std::string(STACKSIM_SOURCE_DIR) + "/scenarios/llama3-8b-input-bound.json", {});
}

// dp 8 on one 8-GPU node, global batch 256: 32 samples per loader; 14 host
// cores per GPU and one loader per GPU: 14 workers at most.
TEST(InputPipeline, HandCountedStallAndWorkers) {
  config::ScenarioConfig s = Shipped();
  InputPipeline in = EstimateInputPipeline(s, Time::Ms(7000));
  EXPECT_DOUBLE_EQ(in.samples_per_loader, 32);
  EXPECT_DOUBLE_EQ(in.parallel, 2);
  EXPECT_EQ(in.preprocess, Time::Ms(9600));  // 32 x 600 ms / 2
  EXPECT_EQ(in.storage, Time::Zero());
  EXPECT_EQ(in.stall, Time::Ms(2600));       // 9.6 s against a 7 s step
  EXPECT_EQ(in.workers_needed, 3);           // ceil(32 x 0.6 / 7)
  EXPECT_EQ(in.workers_possible, 14);

  // Enough workers: no stall. Without workers the training process loads
  // all 32 samples itself, before the step.
  s.data_loader->workers = 4;
  EXPECT_EQ(EstimateInputPipeline(s, Time::Ms(7000)).stall, Time::Zero());
  s.data_loader->workers = 0;
  EXPECT_EQ(EstimateInputPipeline(s, Time::Ms(7000)).stall, Time::Ms(19200));
  // More workers than cores run no faster.
  s.data_loader->workers = 64;
  EXPECT_DOUBLE_EQ(EstimateInputPipeline(s, Time::Ms(100)).parallel, 14);
  EXPECT_EQ(EstimateInputPipeline(s, Time::Ms(100)).workers_needed, 0);  // 192 would be needed
  // Storage: 32 samples x 8 loaders x 100 MB over 10 GB/s = 2.56 s, the
  // slower side once preprocessing is fast; no worker count helps.
  s.data_loader->workers = 8;
  s.data_loader->sample_bytes = Bytes{100e6};
  s.data_loader->storage_read_bandwidth = Bandwidth{10e9};
  InputPipeline storage = EstimateInputPipeline(s, Time::Ms(2000));
  EXPECT_EQ(storage.storage, Time::Ms(2560));
  EXPECT_EQ(storage.stall, Time::Ms(560));
  EXPECT_EQ(storage.workers_needed, 0);
}

// The stall lengthens the step; the breakdown still adds up to it, and the
// GPUs are busy for a smaller share of it.
TEST(InputPipeline, SimulateAddsTheStallToTheStep) {
  config::ScenarioConfig s = Shipped();
  SimulationResult slow = Simulate(s);
  ASSERT_TRUE(slow.input.has_value());
  s.data_loader.reset();
  SimulationResult fast = Simulate(s);
  EXPECT_FALSE(fast.input.has_value());
  ASSERT_TRUE(slow.input->input_bound());
  EXPECT_EQ(slow.iteration, fast.iteration + slow.input->stall);
  EXPECT_EQ(slow.breakdown.total(), slow.iteration);
  EXPECT_EQ(slow.breakdown.input_stall, slow.input->stall);
  EXPECT_NEAR(slow.utilization.gpu_busy, fast.utilization.gpu_busy * fast.iteration.seconds() / slow.iteration.seconds(),
              1e-9);
}

TEST(InputPipeline, BadDataLoaderNamesTheKey) {
  auto load = [](const std::string& data_loader) {
    nlohmann::json doc = {{"model", "llama3-8b"},
                          {"topology", "dgx-h100"},
                          {"gpus", 8},
                          {"training", {{"seq_len", 2048}, {"global_batch", 8}}},
                          {"plan", {{"tp", 1}, {"pp", 1}, {"dp", 8}, {"micro_batch", 1}}}};
    doc["training"]["data_loader"] = nlohmann::json::parse(data_loader);
    config::ScenarioOptions opts;
    return config::ParseScenario(doc, std::string(STACKSIM_SOURCE_DIR) + "/scenarios/x.json", opts);
  };
  auto error_of = [&](const std::string& data_loader) {
    try {
      load(data_loader);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NO_THROW(load(R"({"preprocess_per_sample": "5 ms", "workers": 4, "host_cores_per_gpu": 8})"));
  EXPECT_NE(error_of(R"({"workers": 4, "host_cores_per_gpu": 8})").find("training.data_loader.preprocess_per_sample"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"preprocess_per_sample": "5 ms", "workers": -1, "host_cores_per_gpu": 8})")
                .find("training.data_loader.workers"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"preprocess_per_sample": "5 ms", "workers": 2, "host_cores_per_gpu": 8,
                         "sample_bytes": "1 MB"})")
                .find("go together"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"preprocess_per_sample": "5 ms", "workers": 2, "host_cores_per_gpu": 8, "speed": 1})")
                .find("speed"),
            std::string::npos);
}

}  // namespace
}  // namespace stacksim::simulate
