// The step check (docs/calibrate.md, "Step check"): the simulator's price of
// one transformer layer's training step on one GPU, set against the same step
// timed on the GPU by the calibration harness.
//
// The predicted step is one layer's forward and backward for one micro-batch
// on one GPU of a tensor-parallel group, plus the optimizer update of the
// parameters that GPU holds of the layer. Its ops are the workload
// generator's own (workload::LayerForward / LayerBackward,
// workload::OptimizerStepOp), priced by the cost model `simulate` uses
// (cost::ProfileCostModel) with the given profile, one after another as the
// compute stream runs them. The harness times the GPU's slice alone, so the
// op lists' collectives and host-side waits are left out (and counted).
// Plan: no sequence parallelism (each GPU norms all tokens), no
// recomputation, bf16, fused kernels, our FlashAttention-2-style kernel
// (attention "stacksim", at the profile's own_* rates), eager launches; MoE
// layers with every expert on the GPU (ep 1) and balanced routing.
//
// Measured side: <raw>/step_measured.csv, written by the harness, one row per
// shape: shape, model, tp, seq, micro_batch, hidden, ffn, heads, kv_heads,
// head_dim, experts, top_k, expert_ffn, measured_s (median over repeats),
// min_s, spread, stable (calibrate/fit/step_shapes.h for the list); lines
// starting with '#' are comments. Output:
// <raw>/step_check.csv (shape, measured_s, predicted_s, error_pct) and the
// "Step check" section of <raw>/fit_report.md. The harness also writes
// forward_s, backward_s, optimizer_s (medians of the parts), parameters and
// repeats; the parts, when present, are set beside their predictions in the
// report. Times in seconds;
// error_pct = 100 x (predicted - measured) / measured.
#ifndef STACKSIM_SIM_STEPCHECK_STEP_CHECK_H_
#define STACKSIM_SIM_STEPCHECK_STEP_CHECK_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "calibrate/fit/gemm_fit.h"
#include "sim/config/model.h"
#include "sim/config/profile.h"
#include "sim/cost/power_state.h"
#include "sim/util/units.h"

namespace stacksim::stepcheck {

// The error above which the report names a shape (issue 21's target).
constexpr double kTargetErrorPct = 5.0;

// The classes a step's kernels are totalled in, to set the harness's kernels
// (CUPTI, step_kernels.csv) beside the ops the cost model priced.
enum class KernelClass : uint8_t { kGemm, kAttentionForward, kAttentionBackward, kMemoryBound, kOptimizer };
inline constexpr int kKernelClasses = 5;
const char* KernelClassName(KernelClass c);

// Time and kernel launches per KernelClass.
struct KernelTotals {
  std::array<double, kKernelClasses> seconds{};
  std::array<int, kKernelClasses> kernels{};
  double& SecondsOf(KernelClass c) { return seconds[static_cast<int>(c)]; }
  int& KernelsOf(KernelClass c) { return kernels[static_cast<int>(c)]; }
};

struct LayerStepPrediction {
  Time forward;
  Time backward;
  Time optimizer;
  int priced_ops = 0;     // compute ops of forward and backward priced
  int left_out_ops = 0;   // collectives and host waits (not on one GPU's slice)
  double parameters = 0;  // of the layer, on this GPU
  KernelTotals by_class;  // the priced ops, by class (kernels: the launches they stand for)
  cost::ClockState clock;  // forward and backward's power state (the profile's rates without a power block)
  Time total() const { return forward + backward + optimizer; }
};

// REQUIRES: tp divides the model's heads, KV heads and widths (the caller
// checks; see ReadStepMeasurements).
LayerStepPrediction PredictLayerStep(const config::ModelConfig& model, int tp, int64_t seq, int64_t micro_batch,
                                     const config::ProfileConfig& profile);

// One row of step_measured.csv.
struct StepMeasurement {
  std::string shape;
  std::string model;  // models/<model>.json
  int tp = 1;
  int64_t seq = 0, micro_batch = 1;
  int64_t hidden = 0, ffn = 0, heads = 0, kv_heads = 0, head_dim = 0, experts = 0, top_k = 0, expert_ffn = 0;
  double measured_s = 0;
  double min_s = 0;
  double spread = 0;
  bool stable = true;
  // The parts, when the file has the harness's optional columns forward_s,
  // backward_s and optimizer_s; < 0: not given.
  double forward_s = -1, backward_s = -1, optimizer_s = -1;
  int line = 0;  // in the file
};

// Reads step_measured.csv strictly: InputError (file, column, line) for a
// missing column, a bad number, a shape given twice or no rows.
std::vector<StepMeasurement> ReadStepMeasurements(const std::string& path);

struct StepCheckRow {
  std::string shape;
  double measured_s = 0;
  double predicted_s = 0;
  double error_pct = 0;
  bool stable = true;
  double measured_forward_s = -1, measured_backward_s = -1, measured_optimizer_s = -1;  // < 0: not measured
  LayerStepPrediction prediction;
  // calibrate's GEMM sweep's own timings of the forward's four dense GEMMs
  // (gemm.csv, bf16, labels <model>/tp<tp>/{qkv,proj,fc1,fc2}/fwd at the
  // layer's tokens) summed; < 0 when the raw folder lacks any of them.
  double sweep_forward_gemms_s = -1;
  // The same layer as PyTorch modules (tools/gpu/step_check_torch.py,
  // step_torch.csv beside step_measured.csv): eager and torch.compile step
  // times; < 0 when not measured.
  double torch_eager_s = -1, torch_compile_s = -1;
  // The kernels of one more step, recorded by CUPTI (step_kernels.csv),
  // totalled by class; has_kernels false when not recorded.
  bool has_kernels = false;
  KernelTotals measured_kernels;
};

// The class of one kernel the harness recorded: every kernel of the
// optimizer part is kOptimizer; the project's attention kernels (AttnFwd*,
// AttnBwd*, the latter with its preprocess and dQ conversion) are attention;
// the project's other kernels (names in namespace stacksim) are memory-bound;
// anything else is a cuBLASLt GEMM.
KernelClass ClassifyStepKernel(const std::string& part, const std::string& kernel);

// Reads step_kernels.csv (shape, part, index, kernel, start_us, duration_us;
// part forward, backward or optimizer) into per-shape totals. InputError
// naming the file, column and line on a bad cell.
std::map<std::string, KernelTotals> ReadStepKernels(const std::string& path);

// Sets has_kernels and measured_kernels of every row `kernels` holds.
void AddStepKernels(const std::map<std::string, KernelTotals>& kernels, std::vector<StepCheckRow>* rows);

// Sets torch_eager_s and torch_compile_s of every row step_torch.csv at
// `path` measured (columns shape, mode, measured_s; mode eager or compile).
// Throws InputError naming the file, column and line on a bad cell.
void AddTorchSteps(const std::string& path, std::vector<StepCheckRow>* rows);

// Sets sweep_forward_gemms_s for every row whose measurement's four forward GEMMs
// `gemm` holds (bf16 rows; `measured` and `rows` in the same order).
void AddSweepForwardGemms(const std::vector<calibrate::GemmSample>& gemm, const std::vector<StepMeasurement>& measured,
                          std::vector<StepCheckRow>* rows);

// Predicts every measured shape with `profile`, reading each model from
// `models_dir`/<model>.json. A model file that is missing, or whose widths
// differ from the ones the harness built, is an InputError naming
// `measured_path`, the column and the line.
std::vector<StepCheckRow> RunStepCheck(const std::vector<StepMeasurement>& measured, const std::string& measured_path,
                                       const config::ProfileConfig& profile, const std::string& models_dir);

// What a step check says of a profile: over its shapes, the mean and the
// largest |error| and how many are above kTargetErrorPct.
struct StepCheckSummary {
  int shapes = 0;
  double mean_abs_pct = 0;
  double max_abs_pct = 0;
  int above_target = 0;
};
StepCheckSummary Summarize(const std::vector<StepCheckRow>& rows);

// The raw folder a profile's step check reads when none is given: the
// profile's own folder when it holds step_measured.csv (as
// tools/gpu/run_calibrate.sh leaves it), else <profile>.raw (calibrate's
// default --raw).
std::string DefaultRawDir(const std::string& profile_path);

// step_check.csv: shape, measured_s, predicted_s, error_pct.
std::string StepCheckCsv(const std::vector<StepCheckRow>& rows);
// The report's "## Step check" section (markdown, ends in a blank line):
// per shape measured, predicted and error; mean |error|; the shapes above
// kTargetErrorPct named.
std::string StepCheckSection(const std::vector<StepCheckRow>& rows, const std::string& profile_label);
// `report` with its "## Step check" section (up to the next "## " heading)
// replaced by `section`, or `section` appended when it has none.
std::string WithStepCheckSection(const std::string& report, const std::string& section);

// The whole check on a raw folder: reads <raw_dir>/step_measured.csv
// (InputError when absent), predicts with the profile at `profile_path`,
// writes <raw_dir>/step_check.csv and puts the section into
// <raw_dir>/fit_report.md (created when absent). Returns the rows.
std::vector<StepCheckRow> CheckRawFolder(const std::string& raw_dir, const std::string& profile_path,
                                         const std::string& models_dir);

}  // namespace stacksim::stepcheck

#endif  // STACKSIM_SIM_STEPCHECK_STEP_CHECK_H_
