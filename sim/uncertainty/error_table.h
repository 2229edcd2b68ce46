// The validation error table: what stacksim got wrong on published runs, per
// run, with the features that decide which runs a new prediction resembles.
//
// `stacksim validate FILE --write-error-table OUT` writes it from a validation
// run (validation/error_table.json in the repository); `simulate` reads it to
// give each prediction a range (sim/uncertainty/assessment.h). Errors are
// dimensionless: error = predicted / measured - 1 (0.10: the simulator was 10%
// slow). Times are seconds per optimizer step.
#ifndef STACKSIM_SIM_UNCERTAINTY_ERROR_TABLE_H_
#define STACKSIM_SIM_UNCERTAINTY_ERROR_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/config/scenario.h"

namespace stacksim::uncertainty {

// What a prediction is "like": the features by which runs are matched and
// coverage is judged. Strings are the names used in the table file.
struct RunFeatures {
  std::string gpu;          // profile name, "h100-sxm-80gb"
  std::string gpu_kind;     // profile kind: "datasheet", "measured", "projected"
  std::string gpu_class;    // architecture family, "hopper" (GpuClass)
  int gpus = 0;
  std::string scale_band;   // "<=64", "65-512", "513-4096", ">4096" (ScaleBand)
  std::string parallelism;  // dimensions in use, "tp+pp+zero1" (ParallelismSignature)
  std::string family;       // "dp", "sharded-dp", "tp/pp", "cp", "moe" (ParallelismFamily)
  std::string precision;    // "bf16", "fp16", "fp8"
  std::string schedule;     // "1f1b", "interleaved", ...
  std::string recompute;    // "none", "selective", "full" (config::RecomputeName)
  std::string attention;    // "mha-gqa" or "mla"
  std::string offload;      // "none" or what is offloaded, "optimizer:host"
  int64_t seq_len = 0;
  std::string framework;    // validation runs only: the framework the run used ("" for scenarios)
};

// The features of a scenario as it will be simulated (plan fields resolved).
RunFeatures FeaturesOf(const config::ScenarioConfig& s);

// "ampere" (A100), "hopper" (H100, H800, H200), "blackwell" (B200, GB200),
// "ada" (L40S); otherwise the profile name itself (a class of one).
std::string GpuClass(const std::string& profile_name);
std::string ScaleBand(int gpus);
// The dimensions above 1 (tp, pp, cp, ep), "moe" for a mixture-of-experts
// model and the sharding stage (zero1/2/3), joined by '+'; "dp" if none.
std::string ParallelismSignature(const config::ScenarioConfig& s);
// Coarser than the signature, so that similar runs are numerous enough:
// "moe" (experts), else "cp" (context parallel), else "tp/pp" (model
// parallel), else "sharded-dp" (ZeRO-2/3, FSDP), else "dp".
std::string ParallelismFamily(const config::ScenarioConfig& s);
// The same for a plan of a model with (moe) or without experts: what search
// needs per candidate without building a scenario.
std::string ParallelismFamily(const config::PlanConfig& plan, bool moe);
// Every value ParallelismFamily returns.
inline constexpr const char* kParallelismFamilies[] = {"dp", "sharded-dp", "tp/pp", "cp", "moe"};

struct ErrorTableRun {
  std::string id;
  RunFeatures features;
  double measured_s = 0;
  double predicted_s = 0;
  double error = 0;  // predicted / measured - 1
};

// How much wider than the similar runs' p10-p90 errors a range must be for
// a run from a source the table has never seen: fitted by `stacksim
// validate` (CalibrateRangeMargin, sim/uncertainty/assessment.h) so that
// about 80% of the runs of each left-out source fall inside the range the
// other sources give them. The one constant the ranges fit to end-to-end
// data; absent (margin 0) in tables written before it existed.
struct RangeCalibration {
  double margin = 0;              // added to each side, in log(1 + e): a factor exp(margin) each way
  double coverage_pct = 0;        // leave one source out, at `margin`
  double unwidened_pct = 0;       // the same at margin 0
  double refit_coverage_pct = 0;  // margin refitted without each source, that source's runs inside
  int runs = 0;                   // runs the coverage counts
};

struct ErrorTable {
  // Where the table came from: the validation file, the stacksim commit and
  // the date (UTC) of the validation run that produced it.
  std::string validation_file;
  std::string stacksim_commit;
  std::string generated;
  int validation_runs = 0;  // runs in the validation file (the table keeps the scored, predicted ones)
  std::vector<ErrorTableRun> runs;
  std::optional<RangeCalibration> calibration;
};

inline constexpr const char* kErrorTableSchema = "stacksim.error_table/1";

nlohmann::json ErrorTableToJson(const ErrorTable& t);
// Strict, like every input. Throws InputError naming the file and key.
ErrorTable ParseErrorTable(const nlohmann::json& doc, const std::string& file);
ErrorTable LoadErrorTableFile(const std::string& path);
// <DataRoot()>/validation/error_table.json
std::string DefaultErrorTablePath();

}  // namespace stacksim::uncertainty

#endif  // STACKSIM_SIM_UNCERTAINTY_ERROR_TABLE_H_
