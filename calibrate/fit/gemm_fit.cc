#include "calibrate/fit/gemm_fit.h"

#include <algorithm>
#include <cmath>

#include "sim/util/statistics.h"

namespace stacksim::calibrate {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

double GemmFlops(const GemmSample& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
}

double BytesSeconds(const GemmSample& s, double element_bytes, const GemmMachine& machine) {
  double elements = static_cast<double>(s.m * s.k + s.k * s.n + s.m * s.n);
  return elements * element_bytes / machine.memory_bandwidth.value;
}

// The rows of one precision with the model's shape factors for (tile, k_overhead):
// time at efficiency 1 and the floor (bytes or launch), which the efficiency does not move.
struct Prepared {
  std::vector<double> at_full_efficiency;  // seconds
  std::vector<double> floor;               // seconds
  std::vector<double> measured;            // seconds
};

Prepared Prepare(const std::vector<const GemmSample*>& rows, FlopRate peak, double element_bytes, GemmTile tile,
                 double k_overhead, const GemmMachine& machine) {
  Prepared p;
  for (const GemmSample* s : rows) {
    double k = static_cast<double>(s->k);
    double shape = GemmQuantization(s->m, s->n, s->k, tile, machine.sm_count) * k / (k + k_overhead);
    p.at_full_efficiency.push_back(GemmFlops(*s) / (peak.value * shape));
    p.floor.push_back(std::max(BytesSeconds(*s, element_bytes, machine), machine.launch.seconds()));
    p.measured.push_back(s->median_us * 1e-6);
  }
  return p;
}

// Best max_efficiency on the 0.005 grid; the lowest efficiency wins a tie, as
// in fit_profile_h200.py (_fit_eff). Returns (efficiency, mean |log error|).
std::pair<double, double> FitEfficiency(const Prepared& p) {
  double best_eff = 0, best_err = 0;
  for (int step = 1; step <= kFitEfficiencySteps; ++step) {
    double eff = static_cast<double>(step) / kFitEfficiencySteps;
    double err = 0;
    for (size_t i = 0; i < p.measured.size(); ++i) {
      err += std::fabs(std::log(std::max(p.at_full_efficiency[i] / eff, p.floor[i]) / p.measured[i]));
    }
    if (step == 1 || err < best_err - 1e-12) {
      best_eff = eff;
      best_err = err;
    }
  }
  return {best_eff, p.measured.empty() ? 0.0 : best_err / static_cast<double>(p.measured.size())};
}

DtypeFit Evaluate(const GemmDtype& dtype, const std::vector<const GemmSample*>& rows, FlopRate peak,
                  const GemmParams& params, const GemmMachine& machine) {
  DtypeFit fit;
  fit.dtype = dtype.csv_name;
  fit.max_efficiency = params.max_efficiency;
  fit.k_overhead = params.k_overhead;
  std::vector<double> ratios;
  int w10 = 0, w15 = 0, w25 = 0;
  for (const GemmSample* s : rows) {
    double predicted = PredictedGemmSeconds(*s, peak, dtype.element_bytes, params, machine);
    double log_error = std::log(predicted / (s->median_us * 1e-6));
    fit.shapes.push_back({*s, predicted * 1e6, log_error});
    fit.mean_abs_log += std::fabs(log_error);
    double ratio = std::exp(log_error);
    ratios.push_back(ratio);
    w10 += std::fabs(ratio - 1) <= 0.10;
    w15 += std::fabs(ratio - 1) <= 0.15;
    w25 += std::fabs(ratio - 1) <= 0.25;
  }
  double n = static_cast<double>(rows.size());
  if (n > 0) {
    fit.mean_abs_log /= n;
    fit.within_10 = w10 / n;
    fit.within_15 = w15 / n;
    fit.within_25 = w25 / n;
  }
  fit.median_ratio = ratios.empty() ? 0 : Median(Sorted(ratios));
  return fit;
}

}  // namespace

const std::vector<GemmDtype>& GemmDtypes() {
  static const std::vector<GemmDtype> kDtypes = {
      {"bf16", "bf16", 2}, {"fp16", "fp16", 2}, {"tf32", "tf32", 4}, {"fp8_e4m3", "fp8", 2}};
  return kDtypes;
}

const GemmDtype* FindGemmDtype(const std::string& csv_name) {
  for (const GemmDtype& d : GemmDtypes()) {
    if (csv_name == d.csv_name) return &d;
  }
  return nullptr;
}

const std::vector<GemmTile>& FitTiles() {
  static const std::vector<GemmTile> kTiles = {{64, 64}, {64, 128}, {128, 64}, {128, 128}, {128, 256}, {256, 128}};
  return kTiles;
}

const std::vector<double>& FitKOverheads() {
  static const std::vector<double> kOverheads = {0, 32, 64, 96, 128, 192, 256, 384, 512};
  return kOverheads;
}

const std::vector<double>& FitFp8KOverheads() {
  static const std::vector<double> kOverheads = {0, 32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024};
  return kOverheads;
}

double GemmQuantization(int64_t m, int64_t n, int64_t k, GemmTile tile, int sm_count) {
  const int64_t tm = tile.first, tn = tile.second, sms = sm_count;
  const int64_t tiles = CeilDiv(m, tm) * CeilDiv(n, tn);
  const int64_t waves = CeilDiv(tiles, sms);
  const double useful = static_cast<double>(m) * static_cast<double>(n);
  const double computed = static_cast<double>(waves) * static_cast<double>(sms * tm * tn);
  double q = useful / computed;
  // One partial wave: cuBLAS splits K across CTAs (see ProfileCostModel::GemmEfficiency).
  if (waves == 1 && tiles < sms) {
    int64_t splits = std::max<int64_t>(1, std::min<int64_t>(sms / tiles, k / 256));
    q = std::min(1.0, useful * static_cast<double>(splits) / computed);
  }
  return q;
}

double PredictedGemmSeconds(const GemmSample& s, FlopRate peak, double element_bytes, const GemmParams& p,
                            const GemmMachine& machine) {
  double k = static_cast<double>(s.k);
  double eff = p.max_efficiency * GemmQuantization(s.m, s.n, s.k, p.tile, machine.sm_count) * k / (k + p.k_overhead);
  double flop_seconds = GemmFlops(s) / (peak.value * eff);
  return std::max({flop_seconds, BytesSeconds(s, element_bytes, machine), machine.launch.seconds()});
}

GemmFit FitGemmModel(const std::vector<GemmSample>& samples, const std::map<std::string, FlopRate>& peaks,
                     const GemmMachine& machine, GemmTile fallback_tile, double fallback_k_overhead) {
  std::map<std::string, std::vector<const GemmSample*>> by_dtype;
  for (const GemmSample& s : samples) by_dtype[s.dtype].push_back(&s);

  GemmFit fit;
  fit.tile = fallback_tile;
  fit.k_overhead = fallback_k_overhead;
  const GemmDtype& bf16 = GemmDtypes()[0];
  auto bf16_peak = peaks.find(bf16.csv_name);
  if (!by_dtype[bf16.csv_name].empty() && bf16_peak != peaks.end()) {
    const auto& rows = by_dtype[bf16.csv_name];
    for (GemmTile tile : FitTiles()) {
      for (double kov : FitKOverheads()) {
        auto [eff, err] = FitEfficiency(Prepare(rows, bf16_peak->second, bf16.element_bytes, tile, kov, machine));
        fit.grid.push_back({tile, kov, eff, err});
      }
    }
    // The first least-error point in grid order wins, as Python's min() picks it.
    const GridPoint* best = &fit.grid.front();
    for (const GridPoint& g : fit.grid) {
      if (g.mean_abs_log < best->mean_abs_log) best = &g;
    }
    fit.tile = best->tile;
    fit.k_overhead = best->k_overhead;
    fit.shape_fitted = true;
  }

  for (const GemmDtype& dtype : GemmDtypes()) {
    const auto& rows = by_dtype[dtype.csv_name];
    auto peak = peaks.find(dtype.csv_name);
    if (rows.empty() || peak == peaks.end()) continue;
    GemmParams params{fit.tile, fit.k_overhead, 0};
    double best_err = 0;
    const bool own_k = std::string(dtype.csv_name) == "fp8_e4m3";
    for (double kov : own_k ? FitFp8KOverheads() : std::vector<double>{fit.k_overhead}) {
      auto [eff, err] = FitEfficiency(Prepare(rows, peak->second, dtype.element_bytes, fit.tile, kov, machine));
      if (params.max_efficiency == 0 || err < best_err - 1e-12) {
        params.k_overhead = kov;
        params.max_efficiency = eff;
        best_err = err;
      }
    }
    fit.dtypes.push_back(Evaluate(dtype, rows, peak->second, params, machine));
  }
  return fit;
}

}  // namespace stacksim::calibrate
