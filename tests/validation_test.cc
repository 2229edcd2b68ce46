// Validation against published training runs (shared/validation, schema
// stacksim.validation.training/1): every run is listed, runs that cannot be
// modelled carry a reason, and the mean absolute error over the scored dense
// runs stays within the project's target.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/validation_file.h"

namespace {

using stacksim::testing::ValidationFile;

// Runs stacksim with `args` and returns what it printed; the test fails
// unless it exits 0.
std::string StacksimOutput(const std::string& args) {
  FILE* p = popen((std::string(STACKSIM_BINARY) + " " + args).c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << args;
  return out;
}

TEST(Validation, PublishedRunsArePredictedWithinTarget) {
  std::string file = ValidationFile();
  if (file.empty()) GTEST_SKIP() << "shared/validation/training_runs.json is not next to this checkout";
  auto j = nlohmann::json::parse(StacksimOutput("validate " + file + " --format json"));
  auto input = nlohmann::json::parse(std::ifstream(file));
  ASSERT_EQ(j.at("runs").size(), input.at("runs").size());  // none dropped
  for (const auto& r : j.at("runs")) {
    EXPECT_TRUE(r.contains("predicted_iteration_s") || !r.at("error").get<std::string>().empty()) << r.dump();
  }
  EXPECT_GE(j.at("scored_predicted").get<int>(), 125);
  // The target for dense runs (issue 2); MoE runs are tracked, with a looser guard.
  // 6.51% (2026-12-04, DeepSpeed's rank loops); 6.42% (2026-12-05, NCCL's
  // LL128 / Simple protocol choice across nodes)
  EXPECT_LE(j.at("mape_dense_pct").get<double>(), 6.45);
  EXPECT_GE(j.at("scored_dense_predicted").get<int>(), 120);
  EXPECT_LE(j.at("mape_pct").get<double>(), 7.0);  // 6.97%
}

// Both development files of issue 17 in one call: every scored run modelled,
// and the errors reached so far guarded (the target is 8% on each).
TEST(Validation, BothDevelopmentFilesModelEveryScoredRun) {
  const std::string root = STACKSIM_SOURCE_DIR;
  const std::string training = root + "/validation/training_runs.json";
  const std::string modern = root + "/validation/modern_training_runs.json";
  if (!std::filesystem::exists(training) || !std::filesystem::exists(modern)) GTEST_SKIP() << "no validation/ files";
  auto j = nlohmann::json::parse(StacksimOutput("validate " + training + " " + modern + " --format json --quiet"));
  ASSERT_EQ(j.at("files").size(), 2u);
  const auto& t = j.at("files")[0];
  const auto& m = j.at("files")[1];
  EXPECT_EQ(t.at("scored_predicted").get<int>(), t.at("scored_total").get<int>());
  EXPECT_EQ(m.at("scored_predicted").get<int>(), m.at("scored_total").get<int>());
  EXPECT_EQ(m.at("scored_total").get<int>(), 133);
  // 6.99% (2026-12-04: DeepSpeed v0.3.13's Python loops over the ranks
  // and its torch.zeros per ZeRO-3 gather, 7.73% -> 7.49%; the persistent
  // tensors' gather after the step, -> 7.06%; NCCL's protocol choice
  // across nodes, 2026-12-05, -> 6.97%).
  EXPECT_LE(t.at("mape_pct").get<double>(), 7.0);
  EXPECT_GE(t.at("within_10").get<int>(), 99);
  // 5.70% (2026-12-04): Transformer Engine's FP8 casts (weights cached for
  // the step, cast-transpose; 7.21% -> 7.46%), NeMo's per-model userbuffers
  // TP overlap (-> 7.45%), the refit (-> 6.92%), delayed scaling's amax
  // all-reduce (-> 6.85%), MaxText's casts folded by XLA (-> 6.76%) and its
  // save_qkv_proj remat (-> 6.72%), the 500 W H100's power state
  // (cost/power_state.h; torchtitan 13.1% -> 5.9%: -> 5.70%); 110 of 133
  // within 10%, the 75% is 100.
  // Llama 3's FlashAttention-2 (-> 5.60%, 111 within 10%); 5.56%
  // (2026-12-05, NCCL's protocol choice across nodes).
  EXPECT_LE(m.at("mape_pct").get<double>(), 5.7);
  EXPECT_GE(m.at("within_10").get<int>(), 111);
}

}  // namespace
