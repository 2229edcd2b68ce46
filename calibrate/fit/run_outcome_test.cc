#include "calibrate/fit/run_outcome.h"

#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "tests/input_error.h"

namespace stacksim::calibrate {
namespace {

namespace fs = std::filesystem;
using testing::ErrorFrom;

RunOutcome Sample() {
  RunOutcome o;
  o.gpus_requested = 8;
  o.gpus_visible = 1;
  o.gpus_used = 1;
  o.faults = {"nccl-init"};
  o.busy = true;
  o.busy_reason = "3 processes hold a CUDA context on the GPU (ours is one)";
  o.Section("env");
  SectionOutcome& gemm = o.Section("gemm");
  gemm.measured = 277;
  gemm.unstable = 3;
  gemm.failed_items = 1;
  SectionOutcome& nccl = o.Section("nccl");
  nccl.status = SectionStatus::kNotMeasurable;
  nccl.reason = "ncclCommInitAll: unhandled system error";
  return o;
}

TEST(RunOutcome, SectionIsCreatedOnceInRunOrder) {
  RunOutcome o = Sample();
  o.Section("gemm").measured = 280;
  ASSERT_EQ(o.sections().size(), 3u);
  EXPECT_EQ(o.sections()[1].name, "gemm");
  EXPECT_EQ(o.Find("gemm")->measured, 280);
  EXPECT_EQ(o.Find("copy"), nullptr);
}

TEST(RunOutcome, ProblemsNameGpusBusyAndEachSectionThatIsNotClean) {
  std::vector<std::string> p = Sample().Problems();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0], "gpus: 8 asked for, 1 visible, measured with 1");
  EXPECT_EQ(p[1].rfind("preflight: GPU busy: 3 processes", 0), 0u) << p[1];
  EXPECT_EQ(p[2], "gemm: 3 of 277 measurements unstable; 1 measurement(s) failed");
  EXPECT_EQ(p[3], "nccl: not_measurable: ncclCommInitAll: unhandled system error");
}

TEST(RunOutcome, RoundTripsThroughAFile) {
  fs::path path = fs::temp_directory_path() / ("outcome_" + std::to_string(std::random_device()()) + ".json");
  Sample().Write(path.string());
  std::optional<RunOutcome> back = RunOutcome::Read(path.string());
  fs::remove(path);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->ToJson(), Sample().ToJson());
  EXPECT_EQ(back->Find("nccl")->status, SectionStatus::kNotMeasurable);
  EXPECT_FALSE(RunOutcome::Read(path.string()));  // absent: nullopt, not an error
}

TEST(RunOutcome, BadFileIsAnInputErrorNamingTheKey) {
  nlohmann::json doc = Sample().ToJson();
  doc["sections"][2]["status"] = "broken";
  InputError e = ErrorFrom([&] { RunOutcome::FromJson(doc, "raw/outcome.json"); });
  EXPECT_EQ(e.file(), "raw/outcome.json");
  EXPECT_EQ(e.key_path(), "sections[2].status");

  doc = Sample().ToJson();
  doc["sections"][2]["reason"] = "";
  e = ErrorFrom([&] { RunOutcome::FromJson(doc, "raw/outcome.json"); });
  EXPECT_NE(std::string(e.what()).find("must say why"), std::string::npos) << e.what();

  doc = Sample().ToJson();
  doc["sections"][1]["unstable"] = 300;
  e = ErrorFrom([&] { RunOutcome::FromJson(doc, "raw/outcome.json"); });
  EXPECT_EQ(e.key_path(), "sections[1].unstable");

  doc = Sample().ToJson();
  doc["surprise"] = 1;
  e = ErrorFrom([&] { RunOutcome::FromJson(doc, "raw/outcome.json"); });
  EXPECT_EQ(e.key_path(), "surprise");
}

TEST(Faults, ParsesKnownNamesAndRejectsOthers) {
  EXPECT_EQ(ParseFaults(""), std::set<std::string>());
  EXPECT_EQ(ParseFaults("oom,nccl-init"), (std::set<std::string>{"oom", "nccl-init"}));
  try {
    ParseFaults("busy,ooom");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown fault 'ooom'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nccl-missing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stacksim::calibrate
