#include "sim/config/profile.h"

#include <cstdio>
#include <filesystem>
#include <functional>

#include <sys/wait.h>

#include <gtest/gtest.h>

#include "tests/input_error.h"

namespace stacksim::config {
namespace {

const std::string kSourceDir = STACKSIM_SOURCE_DIR;
const std::string kFixture = kSourceDir + "/tests/data/config/profile-test.json";

using testing::ErrorFrom;

ProfileConfig Parse(const nlohmann::json& doc) { return ParseProfile(JsonNode(doc, "p.json", "")); }

InputError ParseError(const nlohmann::json& doc) {
  return ErrorFrom([&] { Parse(doc); });
}

bool Mentions(const InputError& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

TEST(Profile, ParsesEveryFieldWithItsSource) {
  ProfileConfig p = LoadProfileFile(kFixture);
  EXPECT_EQ(p.name, "test-h100");
  EXPECT_EQ(p.kind, ProfileKind::kDatasheet);
  EXPECT_EQ(p.sm_count.value, 132);
  EXPECT_EQ(p.sm_count.source, "shared/reference/hardware.md §1");
  EXPECT_DOUBLE_EQ(p.hbm_capacity.value.value, 80e9);
  EXPECT_DOUBLE_EQ(p.hbm_bandwidth.value.value, 3350e9);
  ASSERT_TRUE(p.Peak(Precision::kBf16));
  EXPECT_DOUBLE_EQ(p.Peak(Precision::kBf16)->value, 989.4e12);
  EXPECT_DOUBLE_EQ(p.Peak(Precision::kFp8)->value, 1978.9e12);
  ASSERT_TRUE(p.gemm.max_efficiency[static_cast<int>(Precision::kBf16)]);
  EXPECT_DOUBLE_EQ(p.gemm.max_efficiency[static_cast<int>(Precision::kBf16)]->value, 0.803);
  EXPECT_FALSE(p.gemm.max_efficiency[static_cast<int>(Precision::kTf32)]);
  EXPECT_EQ(p.gemm.tile.value, std::make_pair(128, 256));
  EXPECT_EQ(p.kernel_launch.value, Time::Ns(4700));
  EXPECT_DOUBLE_EQ(p.intra_reference_link.value.value, 450e9);
  EXPECT_EQ(p.intra_all_reduce.gpus, 8);
  EXPECT_EQ(p.intra_all_reduce.points.size(), 8u);
  EXPECT_DOUBLE_EQ(p.intra_all_reduce.points.front().first.value, 1e3);
  EXPECT_DOUBLE_EQ(p.nic_efficiency.value, 0.94);
  EXPECT_EQ(p.inter_latency.value, Time::Us(5));
}

TEST(Profile, APrecisionTheGpuLacksIsNull) {
  ProfileConfig p = LoadProfileFile(kSourceDir + "/tests/data/config/profile-test-no-fp8.json");
  EXPECT_FALSE(p.Peak(Precision::kFp8));
  EXPECT_FALSE(p.gemm.max_efficiency[static_cast<int>(Precision::kFp8)]);
  EXPECT_TRUE(p.Peak(Precision::kFp16));
}

TEST(Profile, ValueWithoutSourceIsAnError) {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["sm_count"] = 132;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "p.json");
  EXPECT_EQ(e.key_path(), "sm_count");
  EXPECT_TRUE(Mentions(e, "every profile value must state its source"));

  doc = ReadJsonFile(kFixture);
  doc["peak_flops"]["bf16"] = {{"value", "989 TFLOP/s"}};
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "peak_flops.bf16");
  EXPECT_TRUE(Mentions(e, "every profile value must state its source"));

  doc = ReadJsonFile(kFixture);
  doc["gemm"]["tile"] = {128, 256};
  EXPECT_EQ(ParseError(doc).key_path(), "gemm.tile");
}

TEST(Profile, SourcedValueMayHoldOnlyValueAndSource) {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["hbm_bandwidth"]["unit"] = "GB/s";
  EXPECT_EQ(ParseError(doc).key_path(), "hbm_bandwidth.unit");
}

TEST(Profile, WrongUnitIsAnError) {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["hbm_bandwidth"]["value"] = "3350 GB";
  EXPECT_EQ(ParseError(doc).key_path(), "hbm_bandwidth.value");
  doc = ReadJsonFile(kFixture);
  doc["peak_flops"]["fp32"]["value"] = "67 TB/s";
  EXPECT_EQ(ParseError(doc).key_path(), "peak_flops.fp32.value");
}

TEST(Profile, EfficiencyMustBeAFraction) {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["attention"]["fwd_efficiency"]["value"] = 1.5;
  EXPECT_EQ(ParseError(doc).key_path(), "attention.fwd_efficiency.value");
}

TEST(Profile, EagerKernelsGiveEveryFamilyAFractionWithItsSource) {
  ProfileConfig p = LoadProfileFile(kFixture);
  EXPECT_DOUBLE_EQ(p.EagerEfficiency(EagerKernel::kElementwise), 1.0);
  EXPECT_DOUBLE_EQ(p.EagerEfficiency(EagerKernel::kSoftmax), 1071.0 / 4152);
  EXPECT_DOUBLE_EQ(p.EagerEfficiency(EagerKernel::kGatedActivation), 1137.0 / 4152);
  EXPECT_EQ(FieldSource(p, "eager_kernels.softmax"), p.eager_kernels[static_cast<int>(EagerKernel::kSoftmax)].source);
  EXPECT_STREQ(EagerKernelName(EagerKernel::kGatedActivation), "gated_activation");
}

TEST(Profile, BadEagerKernelValueIsAnErrorNamingFileAndKey) {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["eager_kernels"]["softmax"]["value"] = 1.5;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "p.json");
  EXPECT_EQ(e.key_path(), "eager_kernels.softmax.value");
  EXPECT_TRUE(Mentions(e, "fraction")) << e.what();
  doc["eager_kernels"]["softmax"]["value"] = "fast";
  EXPECT_EQ(ParseError(doc).key_path(), "eager_kernels.softmax.value");
  doc = ReadJsonFile(kFixture);
  doc["eager_kernels"]["layer_norm"] = 0.58;
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "eager_kernels.layer_norm");
  EXPECT_TRUE(Mentions(e, "every profile value must state its source"));
  doc = ReadJsonFile(kFixture);
  doc["eager_kernels"].erase("cast");
  EXPECT_EQ(ParseError(doc).key_path(), "eager_kernels.cast");
  doc = ReadJsonFile(kFixture);
  doc["eager_kernels"]["swish"] = {{"value", 0.5}, {"source", "x"}};
  EXPECT_EQ(ParseError(doc).key_path(), "eager_kernels.swish");
  // Required like every other section.
  doc = ReadJsonFile(kFixture);
  doc.erase("eager_kernels");
  EXPECT_EQ(ParseError(doc).key_path(), "eager_kernels");
  // Every attention kernel class is required, FlashAttention-1's included.
  doc = ReadJsonFile(kFixture);
  doc["attention"].erase("flash1_bwd_efficiency");
  EXPECT_EQ(ParseError(doc).key_path(), "attention.flash1_bwd_efficiency");
  // The dependence on sequence length: required, points strictly increasing.
  doc = ReadJsonFile(kFixture);
  doc["attention"].erase("seq_factors");
  EXPECT_EQ(ParseError(doc).key_path(), "attention.seq_factors");
  doc = ReadJsonFile(kFixture);
  doc["attention"]["seq_factors"]["value"] = nlohmann::json::parse("[[4096, 0.9, 0.9], [2048, 0.8, 0.7]]");
  EXPECT_EQ(ParseError(doc).key_path(), "attention.seq_factors.value[1][0]");
  doc["attention"]["seq_factors"]["value"] = nlohmann::json::parse("[[4096, 0.9]]");
  EXPECT_EQ(ParseError(doc).key_path(), "attention.seq_factors.value[0]");
}

TEST(Profile, AttentionSeqFactorInterpolatesInLogLengthAndClamps) {
  ProfileConfig p;
  EXPECT_DOUBLE_EQ(p.AttentionSeqFactor(2048, false), 1.0);  // no points: no dependence
  p.attention_seq_factors.value = {{1024, 0.6, 0.5}, {4096, 0.9, 0.8}, {8192, 1.0, 1.0}};
  EXPECT_DOUBLE_EQ(p.AttentionSeqFactor(512, false), 0.6);
  EXPECT_DOUBLE_EQ(p.AttentionSeqFactor(2048, false), 0.75);  // halfway in log2 between 1024 and 4096
  EXPECT_DOUBLE_EQ(p.AttentionSeqFactor(2048, true), 0.65);
  EXPECT_DOUBLE_EQ(p.AttentionSeqFactor(65536, true), 1.0);
  EXPECT_DOUBLE_EQ(p.AttentionSeqFactor(0, true), 1.0);  // length not known (serving's per-request ops)
}

TEST(Profile, CurvesMustBeSortedAndStrictlyIncreasing) {
  // (parsed from text: nlohmann's initializer lists would turn string pairs into an object)
  auto points = [](const char* text) { return nlohmann::json::parse(text); };
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["collectives"]["intra_node"]["ring"]["busbw"] = points(R"([["4 GB", "370 GB/s"], ["1 MB", "40 GB/s"]])");
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "collectives.intra_node.ring.busbw[1][0]");
  doc["collectives"]["intra_node"]["ring"]["busbw"] = points(R"([["1 MB", "40 GB/s"], ["1 MB", "41 GB/s"]])");
  EXPECT_EQ(ParseError(doc).key_path(), "collectives.intra_node.ring.busbw[1][0]");
  doc["collectives"]["intra_node"]["ring"]["busbw"] = points(R"([["1 MB", "40"]])");
  EXPECT_EQ(ParseError(doc).key_path(), "collectives.intra_node.ring.busbw[0][1]");
  doc["collectives"]["intra_node"]["ring"]["busbw"] = nlohmann::json::array();
  EXPECT_EQ(ParseError(doc).key_path(), "collectives.intra_node.ring.busbw");
}

TEST(Profile, GemmEfficiencyKeysArePrecisions) {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["gemm"]["max_efficiency"]["int8"] = {{"value", 0.8}, {"source", "x"}};
  EXPECT_EQ(ParseError(doc).key_path(), "gemm.max_efficiency.int8");
  doc = ReadJsonFile(kSourceDir + "/tests/data/config/profile-test-no-fp8.json");
  doc["gemm"]["max_efficiency"]["fp8"] = {{"value", 0.7}, {"source", "x"}};  // but no fp8 peak
  EXPECT_EQ(ParseError(doc).key_path(), "gemm.max_efficiency.fp8");
}

// FP8's own per-tile cost is optional, sourced like every value, read back as
// written, and used for FP8 only.
TEST(Profile, Fp8KOverheadIsOptionalAndSourced) {
  nlohmann::json doc = ReadJsonFile(kFixture);
  ProfileConfig without = ParseProfile(JsonNode(doc, "p.json", ""));
  EXPECT_FALSE(without.gemm.k_overhead_fp8.has_value());
  EXPECT_EQ(without.gemm.KOverhead(Precision::kFp8), without.gemm.k_overhead.value);
  doc["gemm"]["k_overhead_fp8"] = {{"value", 640}, {"source", "measured"}};
  ProfileConfig with = ParseProfile(JsonNode(doc, "p.json", ""));
  EXPECT_EQ(with.gemm.KOverhead(Precision::kFp8), 640);
  EXPECT_EQ(with.gemm.KOverhead(Precision::kBf16), with.gemm.k_overhead.value);
  nlohmann::json again = ProfileToJson(with);
  EXPECT_EQ(again["gemm"]["k_overhead_fp8"]["value"], 640);
  doc["gemm"]["k_overhead_fp8"] = {{"value", -1}, {"source", "measured"}};
  EXPECT_EQ(ParseError(doc).key_path(), "gemm.k_overhead_fp8.value");
  doc["gemm"]["k_overhead_fp8"] = 640;
  EXPECT_EQ(ParseError(doc).key_path(), "gemm.k_overhead_fp8");
}

TEST(Profile, SchemaAndKindAreChecked) {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["schema"] = "stacksim.profile/2";
  EXPECT_EQ(ParseError(doc).key_path(), "schema");
  doc = ReadJsonFile(kFixture);
  doc["kind"] = "guessed";
  EXPECT_EQ(ParseError(doc).key_path(), "kind");
  doc = ReadJsonFile(kFixture);
  doc["peak_flops"].erase("tf32");
  EXPECT_EQ(ParseError(doc).key_path(), "peak_flops.tf32");
}

TEST(BusBandwidthCurve, InterpolatesInLogSizeAndClamps) {
  BusBandwidthCurve c;
  c.points = {{Bytes{1e6}, Bandwidth{40e9}}, {Bytes{4e6}, Bandwidth{80e9}}, {Bytes{16e6}, Bandwidth{100e9}}};
  EXPECT_DOUBLE_EQ(c.At(Bytes{1e6}).value, 40e9);
  EXPECT_DOUBLE_EQ(c.At(Bytes{4e6}).value, 80e9);
  EXPECT_NEAR(c.At(Bytes{2e6}).value, 60e9, 1);   // halfway in log(size)
  EXPECT_NEAR(c.At(Bytes{8e6}).value, 90e9, 1);
  EXPECT_DOUBLE_EQ(c.At(Bytes{10}).value, 40e9);  // clamped below
  EXPECT_DOUBLE_EQ(c.At(Bytes{1e12}).value, 100e9);  // and above
  EXPECT_DOUBLE_EQ(BusBandwidthCurve{}.At(Bytes{1e6}).value, 0);
}

TEST(Precision, NamesAndBytes) {
  EXPECT_STREQ(PrecisionName(Precision::kTf32), "tf32");
  EXPECT_EQ(PrecisionBytes(Precision::kFp32), 4);
  EXPECT_EQ(PrecisionBytes(Precision::kTf32), 4);
  EXPECT_EQ(PrecisionBytes(Precision::kBf16), 2);
  EXPECT_EQ(PrecisionBytes(Precision::kFp16), 2);
  EXPECT_EQ(PrecisionBytes(Precision::kFp8), 1);
  EXPECT_STREQ(ProfileKindName(ProfileKind::kMeasured), "measured");
}

TEST(Profile, WritesBackWhatItReads) {
  for (const char* f : {"profile-test.json", "profile-test-no-fp8.json"}) {
    ProfileConfig p = LoadProfileFile(kSourceDir + "/tests/data/config/" + f);
    nlohmann::json j = ProfileToJson(p);
    ProfileConfig back = Parse(j);
    EXPECT_EQ(ProfileToJson(back), j);
    EXPECT_EQ(back.intra_all_reduce.points.size(), p.intra_all_reduce.points.size());
    EXPECT_DOUBLE_EQ(back.intra_all_reduce.At(Bytes{3e6}).value, p.intra_all_reduce.At(Bytes{3e6}).value);
    EXPECT_EQ(back.kernel_launch.value, p.kernel_launch.value);
    EXPECT_EQ(back.kernel_launch.source, p.kernel_launch.source);
    for (EagerKernel k : kAllEagerKernels) {
      EXPECT_EQ(back.EagerEfficiency(k), p.EagerEfficiency(k)) << EagerKernelName(k);
      EXPECT_EQ(back.eager_kernels[static_cast<int>(k)].source, p.eager_kernels[static_cast<int>(k)].source);
    }
  }
}

// profiles/ is written by the calibration work; every top-level profile there must load.
// A calibration that could not run NCCL: the collective curves keep the
// datasheet's values, marked as a fallback, and the profile says so.
nlohmann::json PartialDoc() {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["kind"] = "measured";
  doc["sm_count"]["source"] = "measured on NVIDIA H100 (driver 580, CUDA 13.0, 2026-11-30) by stacksim calibrate: env.json";
  doc["collectives"]["intra_node"]["ring"]["source"] = "datasheet fallback: test-h100, not measured (base source: x)";
  doc["hbm_bandwidth"]["source"] = "datasheet fallback: test-h100, not measured (base source: NVIDIA datasheet)";
  doc["partial"] = true;
  doc["missing"] = {{{"section", "nccl"},
                     {"reason", "ncclCommInitAll: unhandled system error"},
                     {"fields", {"collectives.intra_node.ring"}}}};
  doc["gpus_used"] = 1;
  doc["gpus_requested"] = 8;
  return doc;
}

TEST(PartialProfile, LoadsAndReportsWhatIsMissing) {
  ProfileConfig p = Parse(PartialDoc());
  EXPECT_TRUE(p.partial);
  ASSERT_EQ(p.missing.size(), 1u);
  EXPECT_EQ(p.missing[0].section, "nccl");
  EXPECT_EQ(p.missing[0].fields, std::vector<std::string>{"collectives.intra_node.ring"});
  EXPECT_EQ(p.gpus_used, 1);
  EXPECT_EQ(p.gpus_requested, 8);
  EXPECT_EQ(PartialSummary(p),
            "partial: nccl (ncclCommInitAll: unhandled system error: collectives.intra_node.ring at their "
            "datasheet fallback)");
  EXPECT_EQ(FallbackFields(p), (std::vector<std::string>{"hbm_bandwidth", "collectives.intra_node.ring"}));
  // The fallback value is still there for the simulation, with its value.
  EXPECT_EQ(p.intra_ring.points.size(), Parse(ReadJsonFile(kFixture)).intra_ring.points.size());
  // It writes back what it read.
  EXPECT_EQ(ProfileToJson(Parse(ProfileToJson(p))), ProfileToJson(p));
  EXPECT_EQ(ProfileToJson(p)["missing"], PartialDoc()["missing"]);
  EXPECT_EQ(PartialSummary(Parse(ReadJsonFile(kFixture))), "complete");
}

TEST(PartialProfile, AValueMarkedUnmeasuredIsNeverReportedAsMeasured) {
  ProfileConfig p = Parse(PartialDoc());
  EXPECT_TRUE(IsMeasured(p, "sm_count"));
  EXPECT_FALSE(IsMeasured(p, "collectives.intra_node.ring"));  // a fallback listed as missing
  EXPECT_FALSE(IsMeasured(p, "hbm_bandwidth"));                // a fallback, never set out to be measured
  EXPECT_FALSE(IsMeasured(p, "copy_efficiency"));              // a source that does not say measured
  EXPECT_FALSE(IsMeasured(p, "no.such.field"));
  // A fallback whose base source said "measured" is still a fallback.
  nlohmann::json doc = PartialDoc();
  doc["kernel_launch"]["source"] = "datasheet fallback: test-h100, not measured (base source: measured on H200)";
  EXPECT_FALSE(IsMeasured(Parse(doc), "kernel_launch"));
  // Nothing in a datasheet profile is measured, whatever its sources say.
  doc = ReadJsonFile(kFixture);
  doc["sm_count"]["source"] = "measured on something";
  EXPECT_FALSE(IsMeasured(Parse(doc), "sm_count"));
  EXPECT_EQ(FieldSource(Parse(doc), "gemm.max_efficiency.bf16"), Parse(doc).gemm.max_efficiency[2]->source);
}

TEST(PartialProfile, InvalidMarkerIsAnErrorNamingFileAndField) {
  nlohmann::json doc = PartialDoc();
  doc["partial"] = "yes";
  InputError e = ParseError(doc);
  EXPECT_EQ(e.file(), "p.json");
  EXPECT_EQ(e.key_path(), "partial");

  doc = PartialDoc();
  doc.erase("missing");
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "partial");
  EXPECT_TRUE(Mentions(e, "needs a \"missing\" list")) << e.what();

  doc = PartialDoc();
  doc["partial"] = false;
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "missing");

  doc = PartialDoc();
  doc["missing"] = nlohmann::json::array();
  EXPECT_EQ(ParseError(doc).key_path(), "missing");

  // A field listed as missing whose source claims a measurement.
  doc = PartialDoc();
  doc["missing"][0]["fields"] = {"collectives.intra_node.ring", "sm_count"};
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "missing[0].fields[1]");
  EXPECT_TRUE(Mentions(e, "'sm_count' is listed as not measured")) << e.what();

  doc = PartialDoc();
  doc["missing"][0]["fields"] = {"collectives.intra_node.rings"};
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "missing[0].fields[0]");
  EXPECT_TRUE(Mentions(e, "not a value of this profile")) << e.what();

  doc = PartialDoc();
  doc["missing"][0].erase("reason");
  EXPECT_EQ(ParseError(doc).key_path(), "missing[0].reason");

  doc = PartialDoc();
  doc["missing"][0]["why"] = "typo";
  EXPECT_EQ(ParseError(doc).key_path(), "missing[0].why");

  doc = PartialDoc();
  doc["gpus_used"] = 0;
  EXPECT_EQ(ParseError(doc).key_path(), "gpus_used");

  doc = ReadJsonFile(kFixture);  // datasheet
  doc["partial"] = true;
  doc["missing"] = PartialDoc()["missing"];
  e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "partial");
  EXPECT_TRUE(Mentions(e, "a datasheet profile cannot be partial")) << e.what();
}

TEST(Profile, EveryShippedProfileLoads) {
  std::string dir = kSourceDir + "/profiles";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no profiles/ yet";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    try {
      ProfileConfig p = LoadProfileFile(entry.path().string());
      EXPECT_EQ(p.name, entry.path().stem().string());
    } catch (const InputError& e) {
      ADD_FAILURE() << e.what();
    }
    ++count;
  }
  if (count == 0) GTEST_SKIP() << "no profiles/*.json yet";
}

// The torchtitan benchmarks' H100 (Grand Teton): HBM2e at 2.4 TB/s and a 500 W
// power limit (benchmarks/llama3_h100_202412_torchtitan.md). The same GH100
// SXM5 silicon, so the SXM part's peaks; its limit is the power block's
// board_limit_w (sim/cost/power_state.h), which the 700 W SXM part's profile
// does not carry.
TEST(Profile, TorchtitanH100IsTheHbm2ePowerLimitedPart) {
  std::string dir = kSourceDir + "/profiles";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no profiles/ yet";
  ProfileConfig limited = LoadProfileFile(dir + "/h100-sxm-96gb.json");
  ProfileConfig sxm = LoadProfileFile(dir + "/h100-sxm-80gb.json");
  EXPECT_DOUBLE_EQ(limited.hbm_bandwidth.value.value, 2400e9);
  EXPECT_DOUBLE_EQ(limited.copy_efficiency.value, 0.92);
  EXPECT_DOUBLE_EQ(sxm.hbm_bandwidth.value.value, 3350e9);
  EXPECT_DOUBLE_EQ(limited.Peak(Precision::kBf16)->value, sxm.Peak(Precision::kBf16)->value);
  ASSERT_TRUE(limited.power.has_value());
  EXPECT_DOUBLE_EQ(limited.power->board_limit_w.value, 500);
  EXPECT_DOUBLE_EQ(limited.power->reference_limit_w.value, 700);
  EXPECT_NE(limited.power->gemm_w.source.find("projected"), std::string::npos);
  EXPECT_FALSE(sxm.power.has_value());
  EXPECT_DOUBLE_EQ(limited.gemm.max_efficiency[static_cast<int>(Precision::kBf16)]->value,
                   sxm.gemm.max_efficiency[static_cast<int>(Precision::kBf16)]->value);
}

// Every shipped profile is what tools/gpu/build_profiles.py writes from its
// cited sources (no hand edits that the generator would undo).
TEST(Profile, ShippedProfilesAreWhatTheGeneratorWrites) {
  const std::string cmd = "python3 " + kSourceDir + "/tools/gpu/build_profiles.py --check 2>&1";
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char buf[512];
  while (fgets(buf, sizeof(buf), pipe)) out += buf;
  const int status = pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) GTEST_SKIP() << "no python3 on this machine";
  EXPECT_EQ(status, 0) << out;
}

// The shipped H200 profile's power block, as a document to break.
nlohmann::json WithPowerBlock() {
  nlohmann::json doc = ReadJsonFile(kFixture);
  doc["power"] = ReadJsonFile(kSourceDir + "/profiles/h200-sxm-141gb.json")["power"];
  return doc;
}

TEST(Profile, PowerBlockIsOptionalAndRoundTrips) {
  EXPECT_FALSE(LoadProfileFile(kFixture).power.has_value());
  const ProfileConfig p = Parse(WithPowerBlock());
  ASSERT_TRUE(p.power.has_value());
  EXPECT_DOUBLE_EQ(p.power->board_limit_w.value, 700);
  EXPECT_GT(p.power->gemm_w.value, p.power->memory_w.value);
  EXPECT_NE(p.power->gemm_w.source.find("measured"), std::string::npos);
  EXPECT_EQ(ProfileToJson(Parse(ProfileToJson(p))), ProfileToJson(p));
  EXPECT_EQ(FieldSource(p, "power.rate_exponent"), p.power->rate_exponent.source);
}

TEST(Profile, BadPowerBlockNamesTheField) {
  nlohmann::json doc = WithPowerBlock();
  doc["power"].erase("memory_w");
  EXPECT_EQ(ParseError(doc).key_path(), "power.memory_w");
  doc = WithPowerBlock();
  doc["power"]["gemm_w"]["value"] = -5;
  EXPECT_EQ(ParseError(doc).key_path(), "power.gemm_w.value");
  doc = WithPowerBlock();
  doc["power"]["rate_exponent"]["value"] = 7;
  EXPECT_TRUE(Mentions(ParseError(doc), "implausible clock exponent"));
  doc = WithPowerBlock();
  doc["power"]["attention_reference_clock"]["value"] = 1.2;
  EXPECT_EQ(ParseError(doc).key_path(), "power.attention_reference_clock.value");
  doc = WithPowerBlock();
  doc["power"]["idle_w"]["value"] = 800;
  InputError e = ParseError(doc);
  EXPECT_EQ(e.key_path(), "power");
  EXPECT_TRUE(Mentions(e, "idle_w must lie below board_limit_w"));
  doc = WithPowerBlock();
  doc["power"]["turbo"] = {{"value", 1}, {"source", "x"}};
  EXPECT_EQ(ParseError(doc).key_path(), "power.turbo");
}

}  // namespace
}  // namespace stacksim::config
