#include "calibrate/fit/fit_profile.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "calibrate/fit/gemm_fit.h"
#include "calibrate/fit/raw_data.h"
#include "calibrate/fit/report_text.h"
#include "calibrate/fit/run_outcome.h"
#include "calibrate/harness/gemm_shapes.h"
#include "sim/config/profile.h"
#include "sim/config/quantity_text.h"
#include "sim/util/json_reader.h"

namespace stacksim::calibrate {
namespace {

using config::Precision;
using nlohmann::json;

// Copies at least this large run far beyond any L2 (60 MB on Hopper), so they
// measure HBM (docs/calibrate.md: copy efficiency from large device copies).
constexpr double kLargeCopyBytes = 1024.0 * 1024 * 1024;
// docs/calibrate.md: a memory-bound kernel should reach 80% of the copy bandwidth.
constexpr double kKernelBandwidthTarget = 0.80;
constexpr int kWorstShapes = 5;

// What each harness step sets out to measure: the profile fields it fits
// (kernels: none, it only reports). A field of a step that stays at its base
// value makes the profile partial; fields no step measures (peaks, hbm
// bandwidth, latencies, inter-node) are datasheet fallbacks in every profile.
struct SectionFields {
  const char* section;
  std::vector<std::string> fields;  // gemm.max_efficiency.<p> is added for each precision with a base peak
};
const std::vector<SectionFields>& MeasuredSections() {
  static const std::vector<SectionFields> kSections = {
      {"copy", {"copy_efficiency", "host_bandwidth"}},
      {"launch", {"kernel_launch"}},
      {"kernels", {}},
      {"gemm", {"gemm.tile", "gemm.k_overhead"}},
      {"attention", {"attention.own_fwd_efficiency", "attention.own_bwd_efficiency"}},
      {"nccl", {"collectives.intra_node.all_reduce", "collectives.intra_node.ring"}},
  };
  return kSections;
}

double Round(double v, int decimals) {
  double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

json Sourced(json value, const std::string& source) { return {{"value", std::move(value)}, {"source", source}}; }

std::string ValueText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string TileText(GemmTile t) { return std::to_string(t.first) + "x" + std::to_string(t.second); }

json KOverheadValue(double k) {
  if (k == std::floor(k)) return static_cast<int64_t>(k);
  return k;
}

// Turns a base profile and raw measurements into a measured profile and its
// report. Each Fit* step edits out_ for what it measured and writes its
// section of the report.
class ProfileFitter {
 public:
  explicit ProfileFitter(const FitOptions& options) : options_(options) {
    base_json_ = ReadJsonFile(options.base_profile_path);
    base_ = config::ParseProfile(JsonNode(base_json_, options.base_profile_path, ""));
    raw_ = ReadRawData(options.raw_dir);
    quick_ = options.quick || raw_.env.quick;
    out_ = base_json_;
    const CalibrationEnv& env = raw_.env;
    std::string date = env.date_utc.size() >= 10 ? env.date_utc.substr(0, 10) : env.date_utc;
    run_ = env.gpu_name + " (driver " + env.driver + ", CUDA " + env.cuda_runtime + ", " + date + ")";
  }

  FitResult Run() {
    FitEnvironment();
    FitCopy();
    FitLaunch();
    FitGemm();
    ReportMemoryBoundKernels();
    FitAttention();
    FitCollectives();
    return Finish();
  }

 private:
  std::string Measured(const std::string& file, const std::string& what) const {
    return "measured on " + run_ + " by stacksim calibrate: " + file + ", " + what;
  }

  // Sets out_[path...] = {value, source} and lists the field as measured.
  void SetMeasured(const std::vector<std::string>& path, json value, const std::string& file,
                   const std::string& what) {
    json* node = &out_;
    std::string field;
    for (const std::string& key : path) {
      node = &(*node)[key];
      field += (field.empty() ? "" : ".") + key;
    }
    values_.push_back(TableRow({field, ValueText(value), file + ": " + what}));
    *node = Sourced(std::move(value), Measured(file, what));
    RecordMeasured(file, field);
  }

  void RecordMeasured(const std::string& file, const std::string& field) {
    auto it = std::find_if(measured_.begin(), measured_.end(), [&](const auto& m) { return m.first == file; });
    if (it == measured_.end()) it = measured_.insert(measured_.end(), {file, {}});
    it->second.push_back(field);
    measured_fields_.insert(field);
  }

  void NotMeasured(const std::string& field, const std::string& why) { why_kept_[field] = why; }

  double HbmGBps() const { return base_.hbm_bandwidth.value.value / 1e9; }

  void FitEnvironment() {
    const CalibrationEnv& env = raw_.env;
    SetMeasured({"sm_count"}, env.sm_count, "env.json", "sm_count");
    SetMeasured({"hbm_capacity"}, Fixed(env.total_memory_bytes, 0) + " B", "env.json",
                "total_memory_bytes = " + Fixed(env.total_memory_bytes / (1024.0 * 1024 * 1024), 2) +
                    " GiB usable by CUDA");
    if (env.sm_count != base_.sm_count.value) {
      notes_.push_back("env.json sm_count " + std::to_string(env.sm_count) + " differs from the base profile's " +
                       std::to_string(base_.sm_count.value) + ": is the base profile the right GPU?");
    }
  }

  void FitCopy() {
    copy_efficiency_ = base_.copy_efficiency.value;
    host_gbps_ = base_.host_bandwidth.value.value / 1e9;
    if (!raw_.copy) {
      NotMeasured("copy_efficiency", "copy.csv absent");
      NotMeasured("host_bandwidth", "copy.csv absent");
      copy_lines_.push_back("copy.csv absent: copy_efficiency and host_bandwidth keep the base values.");
      return;
    }
    std::vector<const CopyRow*> large;
    const CopyRow* h2d = nullptr;
    const CopyRow* d2h = nullptr;
    for (const CopyRow& r : *raw_.copy) {
      if (r.kind == "d2d" && r.bytes >= kLargeCopyBytes) large.push_back(&r);
      if (r.kind == "h2d_pinned" && (!h2d || r.bytes > h2d->bytes)) h2d = &r;
    }
    for (const CopyRow& r : *raw_.copy) {
      if (h2d && r.kind == "d2h_pinned" && r.bytes == h2d->bytes) d2h = &r;
    }

    if (large.empty()) {
      NotMeasured("copy_efficiency", "copy.csv has no d2d copy of at least 1 GiB (smaller ones may hit L2)");
      copy_lines_.push_back("copy.csv has no d2d row of at least 1 GiB: copy_efficiency keeps the base value.");
    } else {
      double sum = 0;
      std::vector<std::string> sizes, rates;
      for (const CopyRow* r : large) {
        sum += r->gbps_median;
        sizes.push_back(SizeText(r->bytes));
        rates.push_back(Fixed(r->gbps_median, 1));
      }
      copy_gbps_ = sum / static_cast<double>(large.size());
      double eff = Round(*copy_gbps_ / HbmGBps(), 3);
      if (!(eff > 0) || eff > 1) {
        throw InputError(raw_.dir + "/copy.csv", "gbps_median",
                         "d2d copies reach " + Fixed(*copy_gbps_, 1) + " GB/s, more than the base profile's hbm_bandwidth " +
                             Fixed(HbmGBps(), 1) + " GB/s: is " + options_.base_profile_path + " this GPU's profile?");
      }
      copy_efficiency_ = eff;
      SetMeasured({"copy_efficiency"}, eff, "copy.csv",
                  "d2d copies (bytes read + written) of " + JoinList(sizes) + ": mean of the medians " +
                      JoinList(rates) + " = " + Fixed(*copy_gbps_, 1) + " GB/s / " + Fixed(HbmGBps(), 0) +
                      " GB/s hbm_bandwidth of the base profile");
      copy_lines_.push_back("Device copy (d2d, bytes read + written), " + JoinList(sizes) + ": " +
                            Fixed(*copy_gbps_, 1) + " GB/s = " + Percent(*copy_gbps_ / HbmGBps()) + " of " +
                            Fixed(HbmGBps(), 0) + " GB/s.");
    }

    if (!h2d) {
      NotMeasured("host_bandwidth", "copy.csv has no h2d_pinned row");
    } else {
      host_gbps_ = Round(h2d->gbps_median, 2);
      std::string what = "h2d_pinned at " + SizeText(h2d->bytes) + ": " + Fixed(h2d->gbps_median, 2) + " GB/s median";
      if (d2h) what += " (d2h_pinned " + Fixed(d2h->gbps_median, 2) + " GB/s at the same size)";
      SetMeasured({"host_bandwidth"}, config::BandwidthText(Bandwidth{host_gbps_ * 1e9}), "copy.csv", what);
      copy_lines_.push_back("Host transfers, pinned, " + what + ".");
    }
  }

  void FitLaunch() {
    launch_ = base_.kernel_launch.value;
    const LaunchRow* host = nullptr;
    if (raw_.launch) {
      for (const LaunchRow& r : *raw_.launch) {
        if (r.metric == "host_issue_us_per_launch") host = &r;
        copy_lines_.push_back("launch.csv " + r.metric + ": median " + Fixed(r.median_us, 3) + " us (min " +
                              Fixed(r.min_us, 3) + ", max " + Fixed(r.max_us, 3) + ").");
      }
    }
    if (!host) {
      std::string why = raw_.launch ? "launch.csv has no host_issue_us_per_launch row" : "launch.csv absent";
      NotMeasured("kernel_launch", why);
      copy_lines_.push_back(why + ": kernel_launch keeps the base value.");
      return;
    }
    launch_ = Time::Us(Round(host->median_us, 2));
    SetMeasured({"kernel_launch"}, config::TimeText(launch_), "launch.csv",
                "host_issue_us_per_launch median " + Fixed(host->median_us, 4) + " us (min " + Fixed(host->min_us, 2) +
                    ", max " + Fixed(host->max_us, 2) + "): host time per kernel launch, back to back");
  }

  void FitGemm() {
    GemmTile base_tile = base_.gemm.tile.value;
    double base_kov = base_.gemm.k_overhead.value;
    if (!raw_.gemm || raw_.gemm->empty()) {
      std::string why = raw_.gemm ? "gemm.csv has no rows" : "gemm.csv absent";
      NotMeasured("gemm", why);
      gemm_.push_back(why + ": the GEMM model keeps the base values.");
      return;
    }
    // Serving's decode and short-prefill shapes are checked against the
    // fitted model, not fitted: the training shapes set the parameters.
    std::vector<GemmSample> fitted, serving;
    for (const GemmSample& s : *raw_.gemm) (s.label.rfind(kServingPrefix, 0) == 0 ? serving : fitted).push_back(s);
    std::map<std::string, FlopRate> peaks;
    std::map<std::string, int> rows_per_dtype;
    for (const GemmSample& s : fitted) ++rows_per_dtype[s.dtype];
    for (const GemmDtype& d : GemmDtypes()) {
      auto peak = base_.peak_flops[static_cast<int>(PrecisionOf(d.profile_key))];
      if (peak) {
        peaks[d.csv_name] = peak->value;
      } else if (rows_per_dtype[d.csv_name] > 0) {
        gemm_.push_back("The " + std::to_string(rows_per_dtype[d.csv_name]) + " " + d.csv_name +
                        " rows were not fitted: the base profile has no " + d.profile_key + " peak.");
      }
    }
    GemmMachine machine{raw_.env.sm_count, base_.hbm_bandwidth.value * copy_efficiency_, launch_};
    GemmFit fit = FitGemmModel(fitted, peaks, machine, base_tile, base_kov);
    for (const DtypeFit& d : fit.dtypes) best_gemm_tflops_[d.dtype] = BestTflops(d);

    std::string floors = "floors copy_efficiency " + Fixed(copy_efficiency_, 3) + " x " + Fixed(HbmGBps(), 0) +
                         " GB/s and kernel launch " + Fixed(launch_.us(), 2) + " us";
    std::string shape_text = "tile " + TileText(fit.tile) + " and k_overhead " + Fixed(fit.k_overhead, 0);
    for (const DtypeFit& d : fit.dtypes) {
      std::string residuals = "mean |log error| " + Percent(d.mean_abs_log) + ", " + Percent(d.within_10) + " / " +
                              Percent(d.within_15) + " / " + Percent(d.within_25) +
                              " of shapes within 10/15/25%, median predicted/measured " + Fixed(d.median_ratio, 3);
      std::string n = std::to_string(d.shapes.size()) + " " + d.dtype + " GEMMs";
      std::string what;
      if (d.dtype == "bf16" && fit.shape_fitted) {
        what = "fit of the GEMM cost model (sim/cost/profile_cost_model.cc) to " + n + ": grid over tiles {" +
               TileText(FitTiles().front()) + " .. " + TileText(FitTiles().back()) + "} x k_overhead {" +
               Fixed(FitKOverheads().front(), 0) + " .. " + Fixed(FitKOverheads().back(), 0) +
               "} x max_efficiency in 0.005 steps, least mean |log(predicted / measured)|, " + floors + ": " +
               shape_text + ", max_efficiency " + Fixed(d.max_efficiency, 3) + "; " + residuals;
        SetMeasured({"gemm", "tile"}, json::array({fit.tile.first, fit.tile.second}), "gemm.csv", what);
        SetMeasured({"gemm", "k_overhead"}, KOverheadValue(fit.k_overhead), "gemm.csv", what);
      } else if (d.dtype == "fp8_e4m3") {
        what = "fit of the GEMM cost model (sim/cost/profile_cost_model.cc) to " + n + " with the " +
               (fit.shape_fitted ? "bf16 fit's " : "base profile's ") + "tile " + TileText(fit.tile) +
               ": grid over fp8's own k_overhead {" + Fixed(FitFp8KOverheads().front(), 0) + " .. " +
               Fixed(FitFp8KOverheads().back(), 0) + "} x max_efficiency in 0.005 steps, " + floors +
               ": k_overhead " + Fixed(d.k_overhead, 0) + ", max_efficiency " + Fixed(d.max_efficiency, 3) + "; " +
               residuals;
        SetMeasured({"gemm", "k_overhead_fp8"}, KOverheadValue(d.k_overhead), "gemm.csv", what);
      } else {
        what = "fit of max_efficiency alone in the GEMM cost model (sim/cost/profile_cost_model.cc) to " + n +
               ", with the " + (fit.shape_fitted ? "bf16 fit's " : "base profile's ") + shape_text + " and " +
               floors + ": " + residuals;
      }
      SetMeasured({"gemm", "max_efficiency", PrecisionKey(d.dtype)}, d.max_efficiency, "gemm.csv", what);
    }
    if (!fit.shape_fitted) {
      NotMeasured("gemm.tile", "no bf16 rows in gemm.csv to fit it");
      NotMeasured("gemm.k_overhead", "no bf16 rows in gemm.csv to fit it");
    }
    WriteGemmReport(fit, floors);
    ReportServingShapes(fit, serving, peaks, machine);
  }

  // Serving's shapes (M of 1 to 512) against the fitted model: where decode
  // and short prefills sit between the weights' bytes and the FLOPs.
  void ReportServingShapes(const GemmFit& fit, const std::vector<GemmSample>& rows,
                           const std::map<std::string, FlopRate>& peaks, const GemmMachine& machine) {
    if (rows.empty()) return;
    auto& L = gemm_;
    L.push_back("Serving shapes (decode batches and short prefills, not fitted): measured against the fitted model.");
    L.push_back("");
    std::vector<GemmResidual> compared;
    double sum_abs_log = 0;
    for (const GemmSample& s : rows) {
      const GemmDtype* dtype = FindGemmDtype(s.dtype);
      auto peak = peaks.find(s.dtype);
      auto d = std::find_if(fit.dtypes.begin(), fit.dtypes.end(), [&](const DtypeFit& f) { return f.dtype == s.dtype; });
      if (dtype == nullptr || peak == peaks.end() || d == fit.dtypes.end() || s.median_us <= 0) continue;
      GemmParams p;
      p.tile = fit.tile;
      p.k_overhead = d->k_overhead;
      p.max_efficiency = d->max_efficiency;
      const double predicted_us = PredictedGemmSeconds(s, peak->second, dtype->element_bytes, p, machine) * 1e6;
      compared.push_back({s, predicted_us, std::log(predicted_us / s.median_us)});
      sum_abs_log += std::abs(compared.back().log_error);
    }
    std::vector<const GemmResidual*> table;
    for (const GemmResidual& r : compared) table.push_back(&r);
    WorstTable(table);
    if (!compared.empty()) {
      L.push_back("Serving shapes: " + std::to_string(compared.size()) + " compared, mean |log error| " +
                  Percent(sum_abs_log / static_cast<double>(compared.size())) + ".");
      L.push_back("");
    }
  }

  static Precision PrecisionOf(const std::string& key) {
    for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16, Precision::kFp16, Precision::kFp8}) {
      if (key == config::PrecisionName(p)) return p;
    }
    return Precision::kBf16;
  }

  static std::string PrecisionKey(const std::string& csv_dtype) { return FindGemmDtype(csv_dtype)->profile_key; }

  static std::pair<double, GemmSample> BestTflops(const DtypeFit& d) {
    std::pair<double, GemmSample> best{0, {}};
    for (const GemmResidual& r : d.shapes) {
      const GemmSample& s = r.sample;
      double t = 2.0 * s.m * s.n * s.k / (s.median_us * 1e-6) / 1e12;
      if (t > best.first) best = {t, s};
    }
    return best;
  }

  void WriteGemmReport(const GemmFit& fit, const std::string& floors) {
    auto& L = gemm_;
    L.push_back("The GEMM cost model of sim/cost/profile_cost_model.cc, time = max(flops / (peak x max_efficiency x "
                "quantization x k / (k + k_overhead)), bytes / (hbm_bandwidth x copy_efficiency), launch), fitted by "
                "grid search (the method of tools/gpu/fit_profile_h200.py) with " + floors +
                (fit.shape_fitted ? "." : "; no bf16 rows, so tile and k_overhead are the base profile's."));
    L.push_back("");
    L.push_back("Fitted: tile " + TileText(fit.tile) + ", k_overhead " + Fixed(fit.k_overhead, 0) + ".");
    L.push_back("");
    L.push_back(TableRow({"precision", "max_efficiency", "k_overhead", "shapes", "mean abs log error", "within 10%",
                          "within 15%", "within 25%", "median pred/meas", "best measured"}));
    L.push_back(TableRule(10));
    for (const DtypeFit& d : fit.dtypes) {
      auto [tflops, shape] = best_gemm_tflops_[d.dtype];
      L.push_back(TableRow({d.dtype, Fixed(d.max_efficiency, 3), Fixed(d.k_overhead, 0), std::to_string(d.shapes.size()),
                            Percent(d.mean_abs_log), Percent(d.within_10), Percent(d.within_15), Percent(d.within_25),
                            Fixed(d.median_ratio, 3),
                            Fixed(tflops, 1) + " TFLOP/s (" + shape.label + " " + std::to_string(shape.m) + "x" +
                                std::to_string(shape.n) + "x" + std::to_string(shape.k) + ")"}));
    }
    L.push_back("");
    if (fit.shape_fitted) {
      L.push_back("Best of each tile (bf16):");
      L.push_back("");
      L.push_back(TableRow({"tile", "best k_overhead", "max_efficiency", "mean abs log error"}));
      L.push_back(TableRule(4));
      for (GemmTile tile : FitTiles()) {
        const GridPoint* best = nullptr;
        for (const GridPoint& g : fit.grid) {
          if (g.tile == tile && (!best || g.mean_abs_log < best->mean_abs_log)) best = &g;
        }
        L.push_back(TableRow({TileText(tile), Fixed(best->k_overhead, 0), Fixed(best->max_efficiency, 3),
                              Percent(best->mean_abs_log)}));
      }
      L.push_back("");
    }
    for (const DtypeFit& d : fit.dtypes) {
      std::vector<const GemmResidual*> ranked;
      for (const GemmResidual& r : d.shapes) ranked.push_back(&r);
      std::stable_sort(ranked.begin(), ranked.end(),
                       [](const GemmResidual* a, const GemmResidual* b) { return a->log_error < b->log_error; });
      size_t n = std::min<size_t>(kWorstShapes, ranked.size());
      L.push_back("Worst " + d.dtype + " shapes, model too fast (predicted below measured):");
      L.push_back("");
      WorstTable(std::vector<const GemmResidual*>(ranked.begin(), ranked.begin() + n));
      L.push_back("Worst " + d.dtype + " shapes, model too slow (predicted above measured):");
      L.push_back("");
      WorstTable(std::vector<const GemmResidual*>(ranked.rbegin(), ranked.rbegin() + n));
    }
  }

  void WorstTable(const std::vector<const GemmResidual*>& rows) {
    gemm_.push_back(TableRow({"label", "M x N x K", "measured us", "predicted us", "pred/meas"}));
    gemm_.push_back(TableRule(5));
    for (const GemmResidual* r : rows) {
      const GemmSample& s = r->sample;
      gemm_.push_back(TableRow({s.label, std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k),
                                Fixed(s.median_us, 2), Fixed(r->predicted_us, 2), Fixed(std::exp(r->log_error), 3)}));
    }
    gemm_.push_back("");
  }

  static bool IsAttention(const KernelRow& r) { return r.kernel == "attention_fwd" || r.kernel == "attention_bwd"; }

  void ReportMemoryBoundKernels() {
    auto& L = kernels_;
    if (!raw_.kernels) {
      L.push_back("kernels.csv absent: no fused kernel was measured.");
      return;
    }
    // The largest case of each memory-bound kernel (flops = 0): far beyond L2.
    std::vector<std::string> order;
    std::map<std::string, const KernelRow*> largest;
    for (const KernelRow& r : *raw_.kernels) {
      if (r.flops > 0 || IsAttention(r)) continue;
      if (!largest.count(r.kernel)) order.push_back(r.kernel);
      if (!largest[r.kernel] || r.bytes > largest[r.kernel]->bytes) largest[r.kernel] = &r;
    }
    if (order.empty()) {
      L.push_back("kernels.csv has no memory-bound kernel rows.");
      return;
    }
    double copy = copy_gbps_ ? *copy_gbps_ : HbmGBps() * copy_efficiency_;
    L.push_back("Each memory-bound kernel at its largest case against the device copy bandwidth " + Fixed(copy, 1) +
                " GB/s (" + (copy_gbps_ ? "measured, copy.csv" : "the base profile's hbm_bandwidth x copy_efficiency") +
                "); the target is " + Percent(kKernelBandwidthTarget) + ".");
    L.push_back("");
    L.push_back(TableRow({"kernel", "shape", "GB/s", "of copy", "check rel error", ""}));
    L.push_back(TableRule(6));
    std::vector<std::string> slow;
    for (const std::string& k : order) {
      const KernelRow& r = *largest[k];
      double share = r.gbps_median / copy;
      bool low = share < kKernelBandwidthTarget;
      if (low) slow.push_back(k);
      char err[32];
      std::snprintf(err, sizeof err, "%.2g", r.check_rel_error);
      L.push_back(TableRow({k, r.shape, Fixed(r.gbps_median, 1), Percent(share), err,
                            low ? "**below " + Percent(kKernelBandwidthTarget) + "**" : "ok"}));
    }
    L.push_back("");
    L.push_back(slow.empty() ? "Every memory-bound kernel reaches the target."
                             : "Below the target: " + JoinList(slow) + ".");
  }

  void FitAttention() {
    auto& L = attention_;
    static const char* const kPasses[] = {"fwd", "bwd"};
    for (const char* pass : kPasses) {
      // Our kernel's own rate: the FlashAttention-2 fields keep the base's
      // (FlashAttention-2 proper; our kernel is only in its style).
      std::string own_key = std::string("own_") + pass + "_efficiency";
      std::string main_key = std::string(pass) + "_efficiency";
      const KernelRow* largest = nullptr;
      if (raw_.kernels) {
        for (const KernelRow& r : *raw_.kernels) {
          if (r.kernel == std::string("attention_") + pass && (!largest || r.flops > largest->flops)) largest = &r;
        }
      }
      if (!largest) {
        std::string why = raw_.kernels ? std::string("kernels.csv has no attention_") + pass + " row"
                                       : "kernels.csv absent";
        NotMeasured("attention." + own_key, why);
        NotMeasured("attention." + main_key, why);
        L.push_back(why + ": attention." + own_key + " not written (the FlashAttention-2 rates stand in for our "
                          "kernel).");
        continue;
      }
      FlopRate peak = *base_.Peak(Precision::kBf16);
      double peak_tflops = peak.value / 1e12;
      double eff = Round(largest->tflops_median / peak_tflops, 3);
      if (!(eff > 0) || eff > 1) {
        throw InputError(raw_.dir + "/kernels.csv", "tflops_median",
                         std::string("attention_") + pass + " at " + largest->shape + ": " +
                             Fixed(largest->tflops_median, 1) + " TFLOP/s is not a fraction of the bf16 peak " +
                             Fixed(peak_tflops, 1) + " TFLOP/s");
      }
      std::string what = std::string("attention_") + pass + " (our FlashAttention-2-style kernel) at its largest case " +
                         largest->shape + ": " + Fixed(largest->tflops_median, 1) + " TFLOP/s / " +
                         Fixed(peak_tflops, 1) + " TFLOP/s dense bf16 peak of the base profile";
      SetMeasured({"attention", own_key}, eff, "kernels.csv", what);
      double base_main = pass == std::string("fwd") ? base_.attention_fwd_efficiency.value
                                                    : base_.attention_bwd_efficiency.value;
      std::string verdict;
      if (eff > base_main) {
        SetMeasured({"attention", main_key}, eff, "kernels.csv",
                    what + "; faster than the base profile's fastest kernel (" + Fixed(base_main, 3) + ")");
        verdict = "faster than the base's fastest kernel " + Fixed(base_main, 3) + ": " + main_key + " raised";
      } else {
        NotMeasured("attention." + main_key, "the fastest fused kernel; ours (" + Fixed(eff, 3) +
                                                 ") is slower than the base profile's " + Fixed(base_main, 3));
        verdict = main_key + " keeps the base " + Fixed(base_main, 3);
      }
      auto best = best_gemm_tflops_.find("bf16");
      std::string vs_gemm = best == best_gemm_tflops_.end() ? "no bf16 GEMM measured"
                                                            : Percent(largest->tflops_median / best->second.first) +
                                                                  " of " + Fixed(best->second.first, 1);
      attention_rows_.push_back(TableRow({pass, largest->shape, Fixed(largest->tflops_median, 1), Fixed(eff, 3),
                                          vs_gemm, verdict}));
    }
    if (!attention_rows_.empty()) {
      L.insert(L.begin(), {TableRow({"pass", "largest case", "TFLOP/s", "of bf16 peak", "vs best bf16 GEMM TFLOP/s",
                                     "profile"}),
                           TableRule(6)});
      L.insert(L.begin() + 2, attention_rows_.begin(), attention_rows_.end());
    }
  }

  void FitCollectives() {
    auto& L = collectives_;
    int gpus = 0;
    if (raw_.nccl) {
      for (const NcclRow& r : *raw_.nccl) gpus = std::max(gpus, r.gpus);
    }
    if (gpus < 2) {
      std::string why = !raw_.nccl ? "nccl.csv absent"
                        : raw_.nccl->empty() ? "nccl.csv has no rows (one GPU: no collective can run)"
                                             : "nccl.csv has rows for one GPU only";
      for (const char* f : {"all_reduce", "ring", "reference_link_bandwidth"}) {
        NotMeasured(std::string("collectives.intra_node.") + f, why);
      }
      L.push_back(why + ": the intra-node collective curves are the base profile's, with their (published) sources.");
      return;
    }
    // busbw per size, averaged over repeated sizes and over the listed collectives.
    auto curve = [&](const std::vector<std::string>& names) {
      std::map<double, std::pair<double, int>> sum;
      for (const NcclRow& r : *raw_.nccl) {
        if (r.gpus != gpus || std::find(names.begin(), names.end(), r.collective) == names.end()) continue;
        if (r.busbw_gbps <= 0) continue;  // too small to register
        sum[r.bytes].first += r.busbw_gbps;
        ++sum[r.bytes].second;
      }
      json points = json::array();
      for (const auto& [bytes, s] : sum) {
        points.push_back({SizeText(bytes), config::BandwidthText(Bandwidth{s.first / s.second * 1e9})});
      }
      return points;
    };
    bool any = false;
    auto set_curve = [&](const std::string& key, const std::vector<std::string>& names, const std::string& what) {
      json points = curve(names);
      std::string field = "collectives.intra_node." + key;
      if (points.empty()) {
        NotMeasured(field, "nccl.csv has no " + JoinList(names) + " rows with busbw > 0 on " + std::to_string(gpus) +
                               " GPUs");
        L.push_back("No " + JoinList(names) + " rows on " + std::to_string(gpus) + " GPUs: " + key +
                    " keeps the base curve.");
        return;
      }
      std::string source = Measured("nccl.csv", what + ", " + std::to_string(gpus) + " GPUs, " +
                                                    std::to_string(points.size()) + " sizes");
      out_["collectives"]["intra_node"][key] = {{"gpus", gpus}, {"source", source}, {"busbw", points}};
      RecordMeasured("nccl.csv", field);
      values_.push_back(TableRow({field, std::to_string(points.size()) + " points, " + ValueText(points.front()[1]) +
                                             " .. " + ValueText(points.back()[1]),
                                  "nccl.csv: " + what}));
      L.push_back(key + ", " + what + ", " + std::to_string(gpus) + " GPUs: " + ValueText(points.front()[0]) + " " +
                  ValueText(points.front()[1]) + " .. " + ValueText(points.back()[0]) + " " +
                  ValueText(points.back()[1]) + ".");
      any = true;
    };
    set_curve("all_reduce", {"all_reduce"}, "all_reduce busbw (nccl-tests convention) per size");
    set_curve("ring", {"all_gather", "reduce_scatter"}, "mean of the all_gather and reduce_scatter busbw at each size");
    if (any && gpus != base_.intra_all_reduce.gpus) {
      L.push_back("Measured on " + std::to_string(gpus) + " GPUs; the base profile's curves were for " +
                  std::to_string(base_.intra_all_reduce.gpus) + ".");
    }
    std::string ref = "collectives.intra_node.reference_link_bandwidth";
    if (any) {
      out_["collectives"]["intra_node"]["reference_link_bandwidth"]["source"] =
          "the base profile's value (" + base_.intra_reference_link.source +
          "), kept as the per-GPU link bandwidth of the system the curves above were measured on (" + run_ +
          "): calibrate does not measure link bandwidth";
      NotMeasured(ref, "taken from the base profile as the link bandwidth of the measured system");
      L.push_back("reference_link_bandwidth stays the base profile's " +
                  config::BandwidthText(base_.intra_reference_link.value) +
                  ", taken as the link bandwidth of the measured system.");
    } else {
      NotMeasured(ref, "no collective curve was measured");
    }
  }

  // Every field of a profile, for the list of what was kept.
  std::vector<std::string> AllFields() const {
    std::vector<std::string> fields = {"sm_count", "hbm_capacity", "hbm_bandwidth", "copy_efficiency", "peak_flops"};
    for (const auto& [key, value] : out_["gemm"]["max_efficiency"].items()) {
      fields.push_back("gemm.max_efficiency." + key);
    }
    for (const char* f : {"gemm.tile", "gemm.k_overhead", "attention.fwd_efficiency", "attention.bwd_efficiency",
                          "attention.flash2_fwd_efficiency", "attention.flash2_bwd_efficiency", "eager_kernels",
                          "kernel_launch",
                          "host_bandwidth", "collectives.intra_node.reference_link_bandwidth",
                          "collectives.intra_node.latency", "collectives.intra_node.all_reduce",
                          "collectives.intra_node.ring", "collectives.inter_node.nic_efficiency",
                          "collectives.inter_node.latency"}) {
      fields.push_back(f);
    }
    return fields;
  }

  std::string WhyKept(const std::string& field) const {
    auto it = why_kept_.find(field);
    if (it != why_kept_.end()) return it->second;
    if (field.rfind("gemm.", 0) == 0 && why_kept_.count("gemm")) return why_kept_.at("gemm");
    if (field.rfind("gemm.max_efficiency.", 0) == 0) return "no fitted gemm.csv rows of this precision";
    if (field == "hbm_bandwidth" || field == "peak_flops") {
      return "datasheet figures: calibrate measures achieved rates as fractions of them";
    }
    if (field == "collectives.intra_node.latency") return "not measured by calibrate";
    if (field == "eager_kernels") return "eager PyTorch kernels: calibrate times fused kernels only";
    if (field.rfind("collectives.inter_node.", 0) == 0) return "one node: nothing crosses a network";
    return "not measured";
  }

  FitResult Finish() {
    std::vector<std::string> kept;
    std::vector<std::string> kept_rows;
    for (const std::string& f : AllFields()) {
      if (measured_fields_.count(f)) continue;
      kept.push_back(f);
      kept_rows.push_back(TableRow({f, WhyKept(f)}));
    }
    std::string measured;
    for (const auto& [file, fields] : measured_) {
      if (!measured.empty()) measured += "; ";
      for (const std::string& f : fields) measured += f + ", ";
      measured.replace(measured.size() - 2, 2, " (" + file + ")");
    }

    for (const char* key : {"partial", "missing", "gpus_used", "gpus_requested"}) out_.erase(key);  // the base's
    MarkFallbacks();
    json missing = MissingMeasurements();
    if (!missing.empty()) {
      out_["partial"] = true;
      out_["missing"] = missing;
    }
    if (raw_.outcome && raw_.outcome->gpus_used > 0) out_["gpus_used"] = raw_.outcome->gpus_used;
    if (raw_.outcome && raw_.outcome->gpus_requested) out_["gpus_requested"] = *raw_.outcome->gpus_requested;

    out_["kind"] = "measured";
    std::string partial_note;
    if (!missing.empty()) {
      std::vector<std::string> sections;
      for (const json& m : missing) sections.push_back(m["section"].get<std::string>());
      partial_note = "PARTIAL calibration (see \"missing\": " + JoinList(sections) + "); ";
    }
    if (raw_.outcome && raw_.outcome->busy) partial_note += "GPU busy at start (" + raw_.outcome->busy_reason + "); ";
    if (raw_.outcome && !raw_.outcome->faults.empty()) {
      partial_note = "FAULTS INJECTED (" + JoinList(raw_.outcome->faults) + "), not a measurement to use; " + partial_note;
    }
    out_["provenance"] = partial_note + "measured on " + run_ + " by stacksim calibrate" +
                         (quick_ ? " (--quick run)" : "") + ", raw data " + raw_.dir + ": " + measured +
                         "; datasheet fallbacks from the base profile " + base_.name + " (" +
                         options_.base_profile_path + "), each source saying so: " + JoinList(kept);
    // The result must read back like any profile; a failure here names the fit's output.
    config::ParseProfile(JsonNode(out_, "<profile fitted from " + raw_.dir + ">", ""));

    std::vector<std::string> R;
    R.push_back("# Calibration fit: " + raw_.env.gpu_name);
    R.push_back("");
    R.push_back("Measured on " + run_ + ", raw data `" + raw_.dir + "`" + (quick_ ? ", a --quick run (fewer shapes)" : "") +
                "; base profile `" + options_.base_profile_path + "` (" + base_.name + ", " + base_.gpu + ").");
    for (const std::string& n : notes_) R.push_back("\n**Note:** " + n);
    R.push_back("");
    auto section = [&](const std::string& title, const std::vector<std::string>& lines) {
      R.push_back("## " + title);
      R.push_back("");
      R.insert(R.end(), lines.begin(), lines.end());
      if (!lines.empty() && !lines.back().empty()) R.push_back("");
    };
    std::vector<std::string> values = {TableRow({"field", "value", "from"}), TableRule(3)};
    values.insert(values.end(), values_.begin(), values_.end());
    section("Measured values", values);
    section("GEMM fit", gemm_);
    section("Memory-bound kernels against device copy", kernels_);
    section("Attention (our FlashAttention-2-style kernel)", attention_);
    section("Copy, host transfers and launch", copy_lines_);
    section("Collectives", collectives_);
    std::vector<std::string> kept_table = {TableRow({"field", "why it keeps the base value (its source says datasheet fallback)"}), TableRule(2)};
    kept_table.insert(kept_table.end(), kept_rows.begin(), kept_rows.end());
    if (!raw_.files_present.empty()) {
      kept_table.push_back("");
      kept_table.push_back("Present but not used by the fit: " + JoinList(raw_.files_present) + ".");
    }
    section("Not measured (datasheet fallbacks from the base profile)", kept_table);
    section("Partial profile", PartialReport(missing));

    std::string report;
    for (const std::string& line : R) report += line + "\n";
    return {out_, report};
  }

  // Every value no fit set is a fallback to the base profile, and its source
  // says so first (kept after it, for where the number came from).
  void MarkFallbacks() {
    config::ProfileConfig now = config::ParseProfile(JsonNode(out_, "<profile being fitted>", ""));
    for (const auto& [field, source] : config::ProfileFieldSources(now)) {
      if (measured_fields_.count(field) || config::IsFallbackSource(source)) continue;
      json* node = &out_;
      size_t start = 0;
      for (size_t dot = field.find('.'); ; dot = field.find('.', start)) {
        node = &(*node)[field.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
        if (dot == std::string::npos) break;
        start = dot + 1;
      }
      (*node)["source"] = std::string(config::kFallbackSourcePrefix) + base_.name + ", not measured (base source: " +
                          source + ")";
    }
  }

  // The sections that did not measure all they set out to, each with why
  // and the fields left at their fallback ([] when the fit used the rest).
  json MissingMeasurements() const {
    json out = json::array();
    const RunOutcome* o = raw_.outcome ? &*raw_.outcome : nullptr;
    if (o && o->gpus_requested && *o->gpus_requested > o->gpus_used) {
      out.push_back({{"section", "gpus"},
                     {"reason", std::to_string(*o->gpus_requested) + " GPUs asked for, " +
                                    std::to_string(o->gpus_visible) + " visible: measured with " +
                                    std::to_string(o->gpus_used)},
                     {"fields", json::array()}});
    }
    for (const SectionFields& sf : MeasuredSections()) {
      std::vector<std::string> expected = sf.fields;
      if (std::string(sf.section) == "gemm") {
        for (const GemmDtype& d : GemmDtypes()) {
          if (base_.peak_flops[static_cast<int>(PrecisionOf(d.profile_key))]) {
            expected.push_back(std::string("gemm.max_efficiency.") + d.profile_key);
          }
        }
      }
      json fields = json::array();
      for (const std::string& f : expected) {
        if (!measured_fields_.count(f)) fields.push_back(f);
      }
      std::vector<std::string> why;
      const SectionOutcome* so = o ? o->Find(sf.section) : nullptr;
      // A skipped step whose earlier files were fitted measured its fields all the same.
      bool skipped_but_fitted = so && so->status == SectionStatus::kSkipped && fields.empty();
      if (so && so->status != SectionStatus::kOk && !skipped_but_fitted) {
        why.push_back(SectionStatusName(so->status) + (": " + so->reason));
      }
      auto un = raw_.unstable.find(sf.section);
      if (un != raw_.unstable.end()) {
        why.push_back(std::to_string(un->second.size()) + " measurement(s) unstable after the harness's retries, " +
                      "left out of the fit (first: " + un->second.front() + ")");
      }
      if (so && so->failed_items > 0) why.push_back(std::to_string(so->failed_items) + " measurement(s) failed");
      if (why.empty() && !fields.empty()) why.push_back(WhyKept(fields.front().get<std::string>()));
      if (why.empty()) continue;
      std::string reason;
      for (const std::string& w : why) reason += (reason.empty() ? "" : "; ") + w;
      out.push_back({{"section", sf.section}, {"reason", reason}, {"fields", fields}});
    }
    return out;
  }

  std::vector<std::string> PartialReport(const json& missing) const {
    std::vector<std::string> L;
    if (missing.empty()) {
      L.push_back("Complete: every step measured what it set out to (values no step measures are datasheet "
                  "fallbacks, listed above).");
    } else {
      L.push_back("**Partial profile** (\"partial\": true): these were not measured; their fields keep the base "
                  "profile's values, each source beginning \"" + std::string(config::kFallbackSourcePrefix) + "\".");
      L.push_back("");
      L.push_back(TableRow({"section", "why", "fields at their datasheet fallback"}));
      L.push_back(TableRule(3));
      for (const json& m : missing) {
        std::vector<std::string> f = m["fields"].get<std::vector<std::string>>();
        L.push_back(TableRow({m["section"].get<std::string>(), m["reason"].get<std::string>(),
                              f.empty() ? "none" : JoinList(f)}));
      }
    }
    for (const auto& [section, rows] : raw_.unstable) {
      L.push_back("");
      L.push_back("Unstable " + section + " rows, not fitted: " + JoinList(rows) + ".");
    }
    if (raw_.outcome) {
      L.push_back("");
      L.push_back("GPUs: " + std::to_string(raw_.outcome->gpus_visible) + " visible, " +
                  std::to_string(raw_.outcome->gpus_used) + " used" +
                  (raw_.outcome->gpus_requested ? ", " + std::to_string(*raw_.outcome->gpus_requested) + " asked for"
                                                : std::string()) +
                  ". Preflight: " + (raw_.outcome->busy ? "GPU BUSY: " : "") + raw_.outcome->busy_reason + ".");
      if (!raw_.outcome->faults.empty()) {
        L.push_back("");
        L.push_back("**Faults were injected** (STACKSIM_CALIBRATE_FAULT): " + JoinList(raw_.outcome->faults) +
                    "; this profile is a test of the failure paths, not a measurement to use.");
      }
    }
    return L;
  }

  FitOptions options_;
  json base_json_;
  config::ProfileConfig base_;
  RawData raw_;
  bool quick_ = false;
  std::string run_;  // "NVIDIA H200 (driver 580.159.04, CUDA 13.0, 2026-11-29)"
  json out_;

  double copy_efficiency_ = 0;           // as the profile states it (fit floors use it)
  std::optional<double> copy_gbps_;      // measured d2d GB/s
  double host_gbps_ = 0;
  Time launch_;
  std::map<std::string, std::pair<double, GemmSample>> best_gemm_tflops_;  // by gemm.csv dtype

  std::vector<std::pair<std::string, std::vector<std::string>>> measured_;  // file -> fields, in fit order
  std::set<std::string> measured_fields_;
  std::map<std::string, std::string> why_kept_;
  std::vector<std::string> notes_;
  // Report sections.
  std::vector<std::string> values_, gemm_, kernels_, attention_, attention_rows_, copy_lines_, collectives_;
};

}  // namespace

FitResult FitProfile(const FitOptions& options) { return ProfileFitter(options).Run(); }

}  // namespace stacksim::calibrate
