#include "sim/stepcheck/step_check.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "calibrate/fit/raw_data.h"
#include "sim/config/plan.h"
#include "sim/cost/profile_cost_model.h"
#include "sim/trace/trace.h"
#include "sim/util/csv.h"
#include "sim/util/error.h"
#include "sim/workload/layer_ops.h"
#include "sim/workload/layer_shape.h"
#include "sim/workload/stage_layers.h"
#include "sim/workload/training_step.h"

namespace stacksim::stepcheck {
namespace {

// The plan the harness's step runs: see the header.
config::PlanConfig StepPlan(int tp, int64_t micro_batch) {
  config::PlanConfig plan;
  plan.tp = tp;
  plan.micro_batch = micro_batch;
  plan.global_batch = micro_batch;
  plan.sequence_parallel = false;
  plan.recompute = config::Recompute::kNone;
  plan.precision = config::Precision::kBf16;
  plan.kernels = config::KernelFusion::kFused;
  plan.attention = config::AttentionImpl::kOwn;
  plan.cuda_graphs = false;
  return plan;
}

// The first MoE layer of a MoE model, else layer 0.
int64_t CheckedLayer(const config::ModelConfig& model) {
  for (int64_t l = 0; model.is_moe() && l < model.num_layers; ++l) {
    if (model.IsMoeLayer(l)) return l;
  }
  return 0;
}

KernelClass ClassOf(const trace::ComputeOp& op) {
  switch (op.op_class) {
    case trace::OpClass::kGemm:
      return KernelClass::kGemm;
    case trace::OpClass::kAttention:
      return op.backward ? KernelClass::kAttentionBackward : KernelClass::kAttentionForward;
    case trace::OpClass::kMemoryBound:
      break;
  }
  return KernelClass::kMemoryBound;
}

Time PriceOps(const std::vector<workload::Op>& ops, const cost::ProfileCostModel& cost, LayerStepPrediction* p) {
  Time total;
  for (const workload::Op& op : ops) {
    if (op.is_collective || op.host_wait > Time::Zero()) {
      ++p->left_out_ops;
      continue;
    }
    const Time t = cost.ComputeTime(op.compute);
    total += t;
    p->by_class.SecondsOf(ClassOf(op.compute)) += t.seconds();
    p->by_class.KernelsOf(ClassOf(op.compute)) += op.compute.kernels;
    ++p->priced_ops;
  }
  return total;
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

// A signed whole percentage or millisecond figure, with no "-0" for what
// rounds to zero.
std::string SignedPercent(double pct) { return Fmt("%+.0f%%", std::fabs(pct) < 0.5 ? 0.0 : pct); }
std::string SignedMs(double seconds) { return Fmt("%+.3f", std::fabs(seconds) < 5e-7 ? 0.0 : seconds * 1e3) + " ms"; }

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw InputError(path, "", "cannot write the file");
}

// What makes up a shape's miss, from its recorded kernels: each class's
// predicted minus measured time, largest first, and the time between the
// recorded kernels (which no op prices on its own).
std::string KernelMisses(const StepCheckRow& r) {
  std::vector<std::pair<double, std::string>> misses;
  double kernels = 0;
  for (int c = 0; c < kKernelClasses; ++c) {
    const double m = r.measured_kernels.seconds[c], p = r.prediction.by_class.seconds[c];
    kernels += m;
    if (m <= 0 && p <= 0) continue;
    std::string what = std::string(KernelClassName(static_cast<KernelClass>(c))) + " " + SignedMs(p - m);
    if (m > 0) what += " (" + SignedPercent(100.0 * (p - m) / m) + ")";
    misses.emplace_back(std::fabs(p - m), what);
  }
  const double between = r.measured_s - kernels;
  misses.emplace_back(std::fabs(between), "between kernels " + SignedMs(-between));
  std::stable_sort(misses.begin(), misses.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string out = r.shape + " (" + Fmt("%+.1f%%", r.error_pct) + ", " + SignedMs(r.predicted_s - r.measured_s) +
                    "), predicted minus recorded: ";
  for (size_t i = 0; i < misses.size(); ++i) out += (i ? ", " : "") + misses[i].second;
  return out;
}

// Per kernel class, over the rows with recorded kernels: the prediction's
// mean error and its range ("GEMM +15% (+9 to +17%, 17 shapes)").
std::string ClassErrorSummary(const std::vector<StepCheckRow>& rows) {
  std::string out;
  for (int c = 0; c < kKernelClasses; ++c) {
    std::vector<double> errors;
    for (const StepCheckRow& r : rows) {
      const double m = r.measured_kernels.seconds[c], p = r.prediction.by_class.seconds[c];
      if (r.has_kernels && m > 0) errors.push_back(100.0 * (p - m) / m);
    }
    if (errors.empty()) continue;
    double mean = 0;
    for (double e : errors) mean += e;
    mean /= static_cast<double>(errors.size());
    const auto [lo, hi] = std::minmax_element(errors.begin(), errors.end());
    out += (out.empty() ? "" : "; ") + std::string(KernelClassName(static_cast<KernelClass>(c))) + " " +
           SignedPercent(mean) + " (" + SignedPercent(*lo) + " to " + SignedPercent(*hi) + ", " +
           std::to_string(errors.size()) +
           (errors.size() == 1 ? " shape)" : " shapes)");
  }
  return out;
}

// The range over the shapes of the forward and backward's power state, when
// the profile models one ("" otherwise).
std::string PowerStateLine(const std::vector<StepCheckRow>& rows) {
  double lo[3] = {1e9, 1e9, 1e9}, hi[3] = {0, 0, 0};
  for (const StepCheckRow& r : rows) {
    const cost::ClockState& c = r.prediction.clock;
    if (c.watts <= 0) continue;
    const double v[3] = {c.clock_ratio, c.gemm_rate, c.attention_rate};
    for (int i = 0; i < 3; ++i) lo[i] = std::min(lo[i], v[i]), hi[i] = std::max(hi[i], v[i]);
  }
  if (hi[0] <= 0) return "";
  auto range = [&](int i) { return Fmt("%.2f", lo[i]) + (hi[i] - lo[i] < 0.005 ? "" : "-" + Fmt("%.2f", hi[i])); };
  return "Power state (the profile's power block, sim/cost/power_state.h): forward and backward priced at the clock "
         "their mix of GEMMs, attention and memory-bound kernels allows under the board limit, " +
         range(0) + " of the maximum; GEMMs at x" + range(1) + " and attention at x" + range(2) +
         " of the profile's rates (GEMMs measured back to back under the reference limit, attention at its reference "
         "clock).\n";
}

}  // namespace

LayerStepPrediction PredictLayerStep(const config::ModelConfig& model, int tp, int64_t seq, int64_t micro_batch,
                                     const config::ProfileConfig& profile) {
  const config::PlanConfig plan = StepPlan(tp, micro_batch);
  const int64_t layer = CheckedLayer(model);
  workload::LayerShape shape = workload::LayerShape::From(model, plan, seq, profile);
  if (model.IsMoeLayer(layer)) shape = shape.Moe(model, plan);
  cost::ProfileCostModel cost(profile, plan.cuda_graphs, plan.comm_sms);
  const std::vector<workload::Op> forward = workload::LayerForward(shape), backward = workload::LayerBackward(shape);
  // The harness soaks and times forward and backward back to back, without
  // the optimizer: their mix sets the clock (power_state.h); the optimizer,
  // timed on its own, is memory-bound and keeps its rate at any clock.
  if (profile.power) {
    cost::WorkMix mix;
    for (const auto* ops : {&forward, &backward}) {
      for (const workload::Op& op : *ops) {
        if (!op.is_collective && op.host_wait <= Time::Zero()) cost.AddToMix(op.compute, 1.0, &mix);
      }
    }
    cost.set_clock(cost::SolveClockState(*profile.power, mix));
  }
  LayerStepPrediction p;
  p.clock = cost.clock();
  p.forward = PriceOps(forward, cost, &p);
  p.backward = PriceOps(backward, cost, &p);
  p.parameters = static_cast<double>(workload::LayerParametersPerGpu(model, plan, layer));
  const trace::ComputeOp optimizer = workload::OptimizerStepOp(p.parameters, 1.0);
  p.optimizer = cost.ComputeTime(optimizer);
  p.by_class.SecondsOf(KernelClass::kOptimizer) += p.optimizer.seconds();
  p.by_class.KernelsOf(KernelClass::kOptimizer) += optimizer.kernels;
  return p;
}

const char* KernelClassName(KernelClass c) {
  static constexpr const char* kNames[kKernelClasses] = {"GEMM", "attention fwd", "attention bwd", "memory-bound",
                                                         "optimizer"};  // KernelClass's order
  return kNames[static_cast<int>(c)];
}

KernelClass ClassifyStepKernel(const std::string& part, const std::string& kernel) {
  if (part == "optimizer") return KernelClass::kOptimizer;
  if (kernel.find("AttnFwd") != std::string::npos) return KernelClass::kAttentionForward;
  if (kernel.find("AttnBwd") != std::string::npos) return KernelClass::kAttentionBackward;
  if (kernel.find("stacksim") != std::string::npos) return KernelClass::kMemoryBound;
  return KernelClass::kGemm;
}

std::map<std::string, KernelTotals> ReadStepKernels(const std::string& path) {
  CsvTable t = CsvTable::Read(path);
  t.RequireColumns({"shape", "part", "index", "kernel", "start_us", "duration_us"});
  std::map<std::string, KernelTotals> out;
  for (size_t r = 0; r < t.rows(); ++r) {
    const std::string& part = t.Text(r, "part");
    if (part != "forward" && part != "backward" && part != "optimizer") {
      t.Fail(r, "part", "expected forward, backward or optimizer, got '" + part + "'");
    }
    const std::string& kernel = t.Text(r, "kernel");
    if (kernel.empty()) t.Fail(r, "kernel", "empty");
    const double us = t.NonNegativeNumber(r, "duration_us");
    KernelTotals& k = out[t.Text(r, "shape")];
    k.SecondsOf(ClassifyStepKernel(part, kernel)) += us * 1e-6;
    ++k.KernelsOf(ClassifyStepKernel(part, kernel));
  }
  return out;
}

void AddStepKernels(const std::map<std::string, KernelTotals>& kernels, std::vector<StepCheckRow>* rows) {
  for (StepCheckRow& r : *rows) {
    auto it = kernels.find(r.shape);
    if (it == kernels.end()) continue;
    r.has_kernels = true;
    r.measured_kernels = it->second;
  }
}

std::vector<StepMeasurement> ReadStepMeasurements(const std::string& path) {
  CsvOptions options;
  options.comments = true;  // the harness's header lines (GPU, date) and fixtures' labels
  CsvTable t = CsvTable::Read(path, options);
  t.RequireColumns({"shape", "model", "tp", "seq", "micro_batch", "hidden", "ffn", "heads", "kv_heads", "head_dim",
                    "experts", "top_k", "expert_ffn", "measured_s", "min_s", "spread", "stable"});
  if (t.rows() == 0) throw InputError(path, "", "no measured shapes (only a header)");
  std::vector<StepMeasurement> rows;
  std::map<std::string, int> seen;
  auto count = [&](size_t r, const char* column) {
    double v = t.NonNegativeNumber(r, column);
    if (v != std::floor(v)) t.Fail(r, column, "not a whole number: " + t.Text(r, column));
    return static_cast<int64_t>(v);
  };
  for (size_t r = 0; r < t.rows(); ++r) {
    StepMeasurement m;
    m.line = t.line(r);
    m.shape = t.Text(r, "shape");
    if (m.shape.empty()) t.Fail(r, "shape", "empty");
    if (auto it = seen.find(m.shape); it != seen.end()) {
      t.Fail(r, "shape", "'" + m.shape + "' given twice (first on line " + std::to_string(it->second) + ")");
    }
    seen[m.shape] = m.line;
    m.model = t.Text(r, "model");
    if (m.model.empty() || m.model.find('/') != std::string::npos) t.Fail(r, "model", "not a model name: '" + m.model + "'");
    m.tp = static_cast<int>(t.PositiveInt(r, "tp"));
    m.seq = t.PositiveInt(r, "seq");
    m.micro_batch = t.PositiveInt(r, "micro_batch");
    m.hidden = t.PositiveInt(r, "hidden");
    m.ffn = count(r, "ffn");
    m.heads = t.PositiveInt(r, "heads");
    m.kv_heads = t.PositiveInt(r, "kv_heads");
    m.head_dim = t.PositiveInt(r, "head_dim");
    m.experts = count(r, "experts");
    m.top_k = count(r, "top_k");
    m.expert_ffn = count(r, "expert_ffn");
    m.measured_s = t.PositiveNumber(r, "measured_s");
    m.min_s = t.PositiveNumber(r, "min_s");
    if (m.min_s > m.measured_s) t.Fail(r, "min_s", "above measured_s (the median)");
    m.spread = t.NonNegativeNumber(r, "spread");
    const std::string& stable = t.Text(r, "stable");
    if (stable != "0" && stable != "1") t.Fail(r, "stable", "must be 0 or 1, not '" + stable + "'");
    m.stable = stable == "1";
    for (auto [field, column] : {std::pair{&m.forward_s, "forward_s"}, {&m.backward_s, "backward_s"},
                                 {&m.optimizer_s, "optimizer_s"}}) {
      if (t.HasColumn(column)) *field = t.PositiveNumber(r, column);
    }
    for (auto [value, column] : {std::pair{m.heads, "heads"}, {m.kv_heads, "kv_heads"}}) {
      if (value % m.tp != 0) t.Fail(r, column, std::to_string(value) + " does not divide by tp " + std::to_string(m.tp));
    }
    rows.push_back(m);
  }
  return rows;
}

std::vector<StepCheckRow> RunStepCheck(const std::vector<StepMeasurement>& measured, const std::string& measured_path,
                                       const config::ProfileConfig& profile, const std::string& models_dir) {
  std::vector<StepCheckRow> rows;
  for (const StepMeasurement& m : measured) {
    const std::string at = "line " + std::to_string(m.line) + ": ";
    std::string model_path = (std::filesystem::path(models_dir) / (m.model + ".json")).string();
    if (!std::filesystem::is_regular_file(model_path)) {
      throw InputError(measured_path, "model", at + "no model file " + model_path);
    }
    config::ModelConfig model = config::LoadModelFile(model_path);
    // The widths the harness built must be the model file's.
    const bool moe = model.is_moe();
    const std::vector<std::tuple<const char*, int64_t, int64_t>> widths = {
        {"hidden", m.hidden, model.hidden_size},
        {"ffn", m.ffn, moe ? 0 : model.intermediate_size},
        {"heads", m.heads, model.num_attention_heads},
        {"kv_heads", m.kv_heads, model.num_kv_heads},
        {"head_dim", m.head_dim, model.head_dim},
        {"experts", m.experts, model.num_experts},
        {"top_k", m.top_k, moe ? model.experts_per_token : 0},
        {"expert_ffn", m.expert_ffn, moe ? model.moe_intermediate_size : 0},
    };
    for (const auto& [column, built, expected] : widths) {
      if (built != expected) {
        throw InputError(measured_path, column,
                         at + "the harness built " + std::to_string(built) + " but " + model_path + " gives " +
                             std::to_string(expected) + " (the shape lists have drifted apart)");
      }
    }
    StepCheckRow row;
    row.shape = m.shape;
    row.measured_s = m.measured_s;
    row.stable = m.stable;
    row.measured_forward_s = m.forward_s;
    row.measured_backward_s = m.backward_s;
    row.measured_optimizer_s = m.optimizer_s;
    row.prediction = PredictLayerStep(model, m.tp, m.seq, m.micro_batch, profile);
    row.predicted_s = row.prediction.total().seconds();
    row.error_pct = 100.0 * (row.predicted_s - row.measured_s) / row.measured_s;
    rows.push_back(row);
  }
  return rows;
}

void AddSweepForwardGemms(const std::vector<calibrate::GemmSample>& gemm, const std::vector<StepMeasurement>& measured,
                          std::vector<StepCheckRow>* rows) {
  std::map<std::pair<std::string, int64_t>, double> swept;  // (label, m) -> seconds
  for (const calibrate::GemmSample& g : gemm)
    if (g.dtype == "bf16") swept[{g.label, g.m}] = g.median_us * 1e-6;
  for (size_t i = 0; i < rows->size() && i < measured.size(); ++i) {
    const StepMeasurement& m = measured[i];
    double sum = 0;
    bool all = true;
    for (const char* gemm_name : {"qkv", "proj", "fc1", "fc2"}) {
      auto it = swept.find({m.model + "/tp" + std::to_string(m.tp) + "/" + gemm_name + "/fwd", m.seq * m.micro_batch});
      all = all && it != swept.end();
      if (it != swept.end()) sum += it->second;
    }
    (*rows)[i].sweep_forward_gemms_s = all ? sum : -1;
  }
}

void AddTorchSteps(const std::string& path, std::vector<StepCheckRow>* rows) {
  CsvTable t = CsvTable::Read(path);
  t.RequireColumns({"shape", "mode", "measured_s"});
  std::map<std::string, StepCheckRow*> by_shape;
  for (StepCheckRow& r : *rows) by_shape[r.shape] = &r;
  for (size_t i = 0; i < t.rows(); ++i) {
    const std::string& mode = t.Text(i, "mode");
    if (mode != "eager" && mode != "compile") t.Fail(i, "mode", "expected eager or compile, got '" + mode + "'");
    const double seconds = t.PositiveNumber(i, "measured_s");
    auto it = by_shape.find(t.Text(i, "shape"));
    if (it == by_shape.end()) continue;  // a shape the harness did not time
    (mode == "eager" ? it->second->torch_eager_s : it->second->torch_compile_s) = seconds;
  }
}

StepCheckSummary Summarize(const std::vector<StepCheckRow>& rows) {
  StepCheckSummary out;
  out.shapes = static_cast<int>(rows.size());
  for (const StepCheckRow& r : rows) {
    const double e = std::fabs(r.error_pct);
    out.mean_abs_pct += e;
    out.max_abs_pct = std::max(out.max_abs_pct, e);
    out.above_target += e > kTargetErrorPct ? 1 : 0;
  }
  if (!rows.empty()) out.mean_abs_pct /= static_cast<double>(rows.size());
  return out;
}

std::string DefaultRawDir(const std::string& profile_path) {
  std::filesystem::path own = std::filesystem::path(profile_path).parent_path();
  if (own.empty()) own = ".";
  return std::filesystem::exists(own / "step_measured.csv") ? own.string() : profile_path + ".raw";
}

std::string StepCheckCsv(const std::vector<StepCheckRow>& rows) {
  std::string out = CsvLine({"shape", "measured_s", "predicted_s", "error_pct"});
  for (const StepCheckRow& r : rows) {
    out += CsvLine({r.shape, Fmt("%.6e", r.measured_s), Fmt("%.6e", r.predicted_s), Fmt("%.2f", r.error_pct)});
  }
  return out;
}

std::string StepCheckSection(const std::vector<StepCheckRow>& rows, const std::string& profile_label) {
  std::ostringstream s;
  s << "## Step check\n\n";
  s << "One layer's forward + backward for one micro-batch on one GPU of its tensor-parallel group, plus the "
       "optimizer update of its parameters, timed on the GPU (step_measured.csv) and predicted by the cost model "
       "with "
    << profile_label
    << " (sim/stepcheck/step_check.h; collectives and host waits are not part of one GPU's slice and are left out "
       "of both). Error = (predicted - measured) / measured.\n\n";
  bool power = false;
  for (const StepCheckRow& r : rows) power = power || r.prediction.clock.watts > 0;
  s << "| shape | measured ms | predicted ms | error | fwd / bwd / optimizer ms, measured | predicted |"
    << (power ? " clock, W (model) |\n|---|---|---|---|---|---|---|\n" : "\n|---|---|---|---|---|---|\n");
  std::vector<std::string> above, unstable;
  auto parts = [](double f, double b, double o) {
    if (f < 0 || b < 0 || o < 0) return std::string("-");
    return Fmt("%.3f", f * 1e3) + " / " + Fmt("%.3f", b * 1e3) + " / " + Fmt("%.3f", o * 1e3);
  };
  for (const StepCheckRow& r : rows) {
    const LayerStepPrediction& p = r.prediction;
    s << "| " << r.shape << (r.stable ? "" : " (unstable)") << " | " << Fmt("%.3f", r.measured_s * 1e3) << " | "
      << Fmt("%.3f", r.predicted_s * 1e3) << " | " << Fmt("%+.1f%%", r.error_pct) << " | "
      << parts(r.measured_forward_s, r.measured_backward_s, r.measured_optimizer_s) << " | "
      << parts(p.forward.seconds(), p.backward.seconds(), p.optimizer.seconds()) << " |";
    if (power) s << " " << Fmt("%.2f", p.clock.clock_ratio) << ", " << Fmt("%.0f", p.clock.watts) << " |";
    s << "\n";
    if (std::fabs(r.error_pct) > kTargetErrorPct) above.push_back(r.shape + " (" + Fmt("%+.1f%%", r.error_pct) + ")");
    if (!r.stable) unstable.push_back(r.shape);
  }
  s << "\n";
  if (!rows.empty()) {
    s << "Mean |error| over " << rows.size() << " shapes: " << Fmt("%.1f%%", Summarize(rows).mean_abs_pct) << ".\n";
    s << PowerStateLine(rows);
  }
  if (above.empty()) {
    s << "Every shape is within " << Fmt("%.0f%%", kTargetErrorPct) << " of its prediction.\n";
  } else {
    s << "Above " << Fmt("%.0f%%", kTargetErrorPct) << ": ";
    for (size_t i = 0; i < above.size(); ++i) s << (i ? "; " : "") << above[i];
    s << ".\n";
    for (const StepCheckRow& r : rows) {
      if (std::fabs(r.error_pct) > kTargetErrorPct && r.has_kernels) s << "- " << KernelMisses(r) << "\n";
    }
  }
  std::vector<const StepCheckRow*> swept;
  for (const StepCheckRow& r : rows)
    if (r.sweep_forward_gemms_s > 0 && r.measured_forward_s > 0) swept.push_back(&r);
  if (!swept.empty()) {
    s << "\nThe GEMM sweep (gemm.csv) timed the forward's four GEMMs of " << swept.size()
      << " shapes on their own. Where their sum comes near or above the whole measured forward, the step ran its "
         "GEMMs faster than the sweep measured them: the sweep times long series of large GEMMs, which hold the GPU "
         "at its power cap, and a layer step runs them in short bursts between lighter kernels; a profile with a "
         "power block prices that difference (docs/calibrate.md, \"Power state\").\n\n"
         "| shape | forward's GEMMs in the sweep, ms | measured forward, ms | ratio |\n|---|---|---|---|\n";
    for (const StepCheckRow* r : swept) {
      s << "| " << r->shape << " | " << Fmt("%.3f", r->sweep_forward_gemms_s * 1e3) << " | "
        << Fmt("%.3f", r->measured_forward_s * 1e3) << " | "
        << Fmt("%.2f", r->sweep_forward_gemms_s / r->measured_forward_s) << " |\n";
    }
  }
  bool torch = false;
  for (const StepCheckRow& r : rows) torch = torch || r.torch_eager_s > 0 || r.torch_compile_s > 0;
  if (torch) {
    auto ms = [](double seconds) { return seconds > 0 ? Fmt("%.3f", seconds * 1e3) : std::string("-"); };
    s << "\nThe same layers as PyTorch modules (step_torch.csv: SDPA, fused AdamW; tools/gpu/step_check_torch.py), "
         "beside this harness's: the gap between our kernels and a framework's, measured.\n\n"
         "| shape | harness ms | PyTorch eager ms | torch.compile ms |\n|---|---|---|---|\n";
    for (const StepCheckRow& r : rows) {
      s << "| " << r.shape << " | " << ms(r.measured_s) << " | " << ms(r.torch_eager_s) << " | "
        << ms(r.torch_compile_s) << " |\n";
    }
  }
  bool kernels = false;
  for (const StepCheckRow& r : rows) kernels = kernels || r.has_kernels;
  if (kernels) {
    s << "\nEach shape's kernels, one more step recorded by CUPTI (step_kernels.csv), totalled by class beside the "
         "ops the cost model priced: measured / predicted ms (error of the prediction), and kernel launches. "
         "\"between kernels\" is the measured step less its kernels' sum: from one kernel's end to the next "
         "one's start. The profile's rates are fitted to CUDA-event timings of back-to-back kernels, so each "
         "predicted op holds that gap and each recorded duration does not: a class of many short kernels reads "
         "slow by it. Classes that err in opposite directions can sum to a step within target; this table says "
         "which (docs/calibrate.md, \"Step kernels\").\n\n"
         "| shape |";
    for (int c = 0; c < kKernelClasses; ++c) s << " " << KernelClassName(static_cast<KernelClass>(c)) << " |";
    s << " kernels | between kernels ms |\n|---|";
    for (int c = 0; c <= kKernelClasses + 1; ++c) s << "---|";
    s << "\n";
    for (const StepCheckRow& r : rows) {
      if (!r.has_kernels) continue;
      s << "| " << r.shape << " |";
      double sum = 0;
      int measured_count = 0, predicted_count = 0;
      for (int c = 0; c < kKernelClasses; ++c) {
        const double m = r.measured_kernels.seconds[c], p = r.prediction.by_class.seconds[c];
        sum += m;
        measured_count += r.measured_kernels.kernels[c];
        predicted_count += r.prediction.by_class.kernels[c];
        s << " " << Fmt("%.3f", m * 1e3) << " / " << Fmt("%.3f", p * 1e3);
        if (m > 0) s << " (" << SignedPercent(100.0 * (p - m) / m) << ")";
        s << " |";
      }
      s << " " << measured_count << " / " << predicted_count << " | " << Fmt("%.3f", (r.measured_s - sum) * 1e3)
        << " |\n";
    }
    s << "\nBy class over the shapes (prediction's error, mean and range): " << ClassErrorSummary(rows) << ".\n";
  }
  if (!unstable.empty()) {
    s << "Unstable timings (spread above the threshold after retries): ";
    for (size_t i = 0; i < unstable.size(); ++i) s << (i ? ", " : "") << unstable[i];
    s << ".\n";
  }
  s << "\n";
  return s.str();
}

std::string WithStepCheckSection(const std::string& report, const std::string& section) {
  const std::string heading = "## Step check\n";
  size_t at = report.rfind(heading, 0) == 0 ? 0 : report.find("\n" + heading);
  if (at == std::string::npos) {
    std::string out = report;
    if (!out.empty() && out.back() != '\n') out += "\n";
    if (!out.empty() && out.size() >= 2 && out.substr(out.size() - 2) != "\n\n") out += "\n";
    return out + section;
  }
  if (at > 0) ++at;  // past the newline before the heading
  size_t end = report.find("\n## ", at + heading.size() - 1);
  std::string rest = end == std::string::npos ? "" : report.substr(end + 1);
  return report.substr(0, at) + section + rest;
}

std::vector<StepCheckRow> CheckRawFolder(const std::string& raw_dir, const std::string& profile_path,
                                         const std::string& models_dir) {
  namespace fs = std::filesystem;
  const std::string measured_path = (fs::path(raw_dir) / "step_measured.csv").string();
  if (!fs::is_regular_file(measured_path)) {
    throw InputError(measured_path, "", "no step measurements here (the harness's step check writes them)");
  }
  std::vector<StepMeasurement> measured = ReadStepMeasurements(measured_path);
  config::ProfileConfig profile = config::LoadProfileFile(profile_path);
  std::vector<StepCheckRow> rows = RunStepCheck(measured, measured_path, profile, models_dir);
  const std::string gemm_path = (fs::path(raw_dir) / "gemm.csv").string();
  if (fs::is_regular_file(gemm_path)) AddSweepForwardGemms(calibrate::ReadGemmFile(gemm_path), measured, &rows);
  const std::string torch_path = (fs::path(raw_dir) / "step_torch.csv").string();
  if (fs::is_regular_file(torch_path)) AddTorchSteps(torch_path, &rows);
  const std::string kernels_path = (fs::path(raw_dir) / "step_kernels.csv").string();
  if (fs::is_regular_file(kernels_path)) AddStepKernels(ReadStepKernels(kernels_path), &rows);
  const std::string csv_path = (fs::path(raw_dir) / "step_check.csv").string();
  WriteText(csv_path, StepCheckCsv(rows));
  const std::string report_path = (fs::path(raw_dir) / "fit_report.md").string();
  std::string report;
  if (fs::is_regular_file(report_path)) report = ReadCsvFile(report_path);
  std::string label = "the profile " + profile_path + " (" + profile.name + ")";
  WriteText(report_path, WithStepCheckSection(report, StepCheckSection(rows, label)));
  return rows;
}

}  // namespace stacksim::stepcheck
