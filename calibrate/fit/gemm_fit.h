// Fit of the simulator's GEMM cost model (sim/cost/profile_cost_model.cc) to
// measured GEMM times, as tools/gpu/fit_profile_h200.py does it:
//
//   time = max(flops / (peak x max_efficiency x quantization(m, n; tile, SMs) x k / (k + k_overhead)),
//              bytes / (hbm_bandwidth x copy_efficiency), kernel launch)
//   bytes = element_bytes x (m k + k n + m n)
//
// bf16 first: a grid over tile x k_overhead x max_efficiency (steps of 0.005)
// for the least mean |log(predicted / measured time)|; then max_efficiency
// alone for fp16 and tf32, with bf16's tile and k_overhead fixed, and
// k_overhead x max_efficiency for fp8 with bf16's tile.
// Times are in seconds and microseconds as the names say.
#ifndef STACKSIM_CALIBRATE_FIT_GEMM_FIT_H_
#define STACKSIM_CALIBRATE_FIT_GEMM_FIT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/util/units.h"

namespace stacksim::calibrate {

using GemmTile = std::pair<int, int>;  // output tile, rows (M) x cols (N)

// One measured GEMM: a row of gemm.csv.
struct GemmSample {
  std::string dtype;  // gemm.csv spelling: "bf16", "fp16", "tf32", "fp8_e4m3"
  std::string label;  // "square", "llama3-8b/tp4/fc1/dgrad", ...
  int64_t m = 0, n = 0, k = 0;
  double median_us = 0;
};

// A GEMM precision: its gemm.csv name, its profile key, and the bytes per
// element the workload generator counts (sim/workload/op_builders.cc: fp8
// training keeps bf16 activations; fp32 training feeds TF32 products 4-byte
// tensors).
struct GemmDtype {
  const char* csv_name;
  const char* profile_key;
  double element_bytes;
};
// bf16, fp16, tf32, fp8_e4m3: the order in which they are fitted and reported.
const std::vector<GemmDtype>& GemmDtypes();
// nullptr for a name gemm.csv does not use.
const GemmDtype* FindGemmDtype(const std::string& csv_name);

// The machine terms of the model besides the FLOP rate, as the profile states them.
struct GemmMachine {
  int sm_count = 0;
  Bandwidth memory_bandwidth;  // hbm_bandwidth x copy_efficiency
  Time launch;                 // kernel_launch
};

struct GemmParams {
  GemmTile tile{64, 64};
  double k_overhead = 0;       // elements of K
  double max_efficiency = 1;
};

// Tile and wave quantization of an m x n output (batch 1), exactly as
// ProfileCostModel::GemmEfficiency computes it, split-K recovery included.
double GemmQuantization(int64_t m, int64_t n, int64_t k, GemmTile tile, int sm_count);
// The cost model's time for one GEMM, in seconds.
double PredictedGemmSeconds(const GemmSample& s, FlopRate peak, double element_bytes, const GemmParams& p,
                            const GemmMachine& machine);

struct GemmResidual {
  GemmSample sample;
  double predicted_us = 0;
  double log_error = 0;  // log(predicted / measured)
};

struct DtypeFit {
  std::string dtype;         // gemm.csv spelling
  double max_efficiency = 0;
  double k_overhead = 0;     // the shape fit's, or fp8's own (FitFp8KOverheads)
  std::vector<GemmResidual> shapes;  // in gemm.csv order
  double mean_abs_log = 0;
  double within_10 = 0, within_15 = 0, within_25 = 0;  // share with |pred/meas - 1| <= 10/15/25%
  double median_ratio = 0;   // median of predicted / measured
};

struct GridPoint {
  GemmTile tile;
  double k_overhead = 0;
  double max_efficiency = 0;
  double mean_abs_log = 0;
};

struct GemmFit {
  GemmTile tile;
  double k_overhead = 0;
  bool shape_fitted = false;       // tile and k_overhead came from bf16 rows (else they were given)
  std::vector<DtypeFit> dtypes;    // fitted precisions, GemmDtypes() order
  std::vector<GridPoint> grid;     // every bf16 (tile, k_overhead) with its best efficiency
};

// The search grid of fit_profile_h200.py.
const std::vector<GemmTile>& FitTiles();
const std::vector<double>& FitKOverheads();
// fp8_e4m3 gets its own k_overhead on this grid (bf16's tile fixed): an FP8
// MMA covers twice the K of a 16-bit one, so each tile's fixed cost is worth
// more elements of K (on the H200 of 2026-11-30 640 against bf16's 128).
const std::vector<double>& FitFp8KOverheads();
inline constexpr int kFitEfficiencySteps = 200;  // max_efficiency in {0.005, 0.010, ..., 1}

// Fits the rows whose dtype has a peak in `peaks` (keyed by gemm.csv name);
// other rows are ignored. Without bf16 rows, tile and k_overhead stay
// `fallback_tile` / `fallback_k_overhead` and only efficiencies are fitted.
// REQUIRES: every sample has m, n, k >= 1 and median_us > 0.
GemmFit FitGemmModel(const std::vector<GemmSample>& samples, const std::map<std::string, FlopRate>& peaks,
                     const GemmMachine& machine, GemmTile fallback_tile, double fallback_k_overhead);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_GEMM_FIT_H_
