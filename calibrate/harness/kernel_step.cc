// The kernels and attention steps: every family of kernels/kernels.h checks
// its correctness first (checks.csv) and is timed (kernels.csv) only when all
// its checks pass. The attention families run later, after the GEMMs (the
// order of docs/calibrate.md), and their rows also go to attention.csv.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/harness/attention_shape.h"
#include "calibrate/harness/csv.h"
#include "calibrate/harness/steps.h"
#include "kernels/cuda_check.h"
#include "kernels/kernels.h"
#include "sim/util/csv.h"
#include "sim/util/error.h"

namespace stacksim::calibrate {

namespace {

const std::vector<std::string> kChecksHeader = {"kernel", "case", "rel_error", "tolerance", "ok"};
const std::vector<std::string> kKernelsHeader = {"kernel",    "shape",  "bytes",         "flops",
                                                 "median_us", "min_us", "gbps_median",   "tflops_median",
                                                 "check_rel_error", "spread", "stable"};
const std::vector<std::string> kAttentionHeader = {"pass",      "batch",  "heads",         "kv_heads",
                                                   "seq",       "head_dim", "causal",      "median_us",
                                                   "min_us",    "tflops_median", "flops_counted"};

bool IsAttention(const std::string& name) { return name.rfind("attention", 0) == 0; }

// checks.csv and kernels.csv hold the rows of both steps: before a step
// appends its own, drop the rows an earlier run of the same step left there
// (keeping the other step's, when that one is skipped this time).
// A file whose header is not `header` (written by an older harness), or
// that does not read as CSV, is dropped whole: its rows could not be appended
// to. The kept rows are written back as CsvWriter wrote them.
void DropOwnRows(const std::string& path, bool attention, const std::vector<std::string>& header_cells) {
  std::string text;
  try {
    text = ReadCsvFile(path);
  } catch (const InputError&) {
    return;  // no file yet
  }
  std::vector<CsvRecord> records;
  try {
    records = SplitCsv(text, path);
  } catch (const InputError&) {
    records.clear();  // not a file this harness wrote
  }
  if (records.empty() || records[0].cells != header_cells) {
    std::remove(path.c_str());
    return;
  }
  std::string keep = CsvLine(header_cells);
  for (size_t i = 1; i < records.size(); ++i) {
    if (IsAttention(records[i].cells[0]) != attention) keep += CsvLine(records[i].cells);
  }
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  out << keep;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string Rate(double amount, double us, double unit) { return Num(us > 0 && amount > 0 ? amount / (us * 1e-6) / unit : 0); }

// Largest relative error of the checks of `kernel` (of all the family's when none is named so).
double CheckError(const std::vector<kernels::CheckResult>& checks, const std::string& kernel) {
  double own = -1, any = 0;
  for (const auto& c : checks) {
    any = std::max(any, c.rel_error);
    if (c.kernel == kernel) own = std::max(own, c.rel_error);
  }
  return own >= 0 ? own : any;
}

void WriteAttentionRow(StepContext& ctx, CsvWriter& out, const kernels::TimingRow& r) {
  std::string pass = AttentionPass(r.kernel);
  std::string why;
  auto shape = ParseAttentionShape(r.shape, &why);
  if (pass.empty() || !shape) {
    ctx.log->Line("attention.csv: row of " + r.kernel + " left out: " +
                  (pass.empty() ? "its name says neither fwd nor bwd" : why) +
                  " (expected key=value words, e.g. 'bf16 b=2 h=64 kv=8 s=8192 d=128 causal=1')");
    return;
  }
  out.Row({pass, Num(shape->batch), Num(shape->heads), Num(shape->kv_heads), Num(shape->seq), Num(shape->head_dim),
           shape->causal ? "1" : "0", Num(r.median_us), Num(r.min_us), Rate(r.flops, r.median_us, 1e12), Num(r.flops)});
}

void RunFamilies(StepContext& ctx, bool attention) {
  std::vector<kernels::KernelFamily> families;
  for (auto& f : kernels::AllKernelFamilies()) {
    if (IsAttention(f.name) == attention) families.push_back(std::move(f));
  }
  DropOwnRows(ctx.RawPath("checks.csv"), attention, kChecksHeader);
  DropOwnRows(ctx.RawPath("kernels.csv"), attention, kKernelsHeader);
  CsvWriter checks_csv(ctx.RawPath("checks.csv"), kChecksHeader, CsvWriter::Mode::kAppend);
  CsvWriter kernels_csv(ctx.RawPath("kernels.csv"), kKernelsHeader, CsvWriter::Mode::kAppend);
  std::unique_ptr<CsvWriter> attention_csv;
  if (attention) attention_csv = std::make_unique<CsvWriter>(ctx.RawPath("attention.csv"), kAttentionHeader);
  if (families.empty()) {
    ctx.log->Line(std::string(attention ? "attention" : "kernels") + ": no kernel family registered");
    return;
  }
  Progress progress(ctx.log, ctx.tag, static_cast<int>(2 * families.size()));
  int done = 0;
  for (const auto& fam : families) {
    std::string where = fam.name + " " + std::to_string(done / 2 + 1) + "/" + std::to_string(families.size());
    if (ctx.deadline.Expired()) {
      ctx.log->Line(fam.name + ": not run, the step's time budget is spent");
      ctx.stopped_early = true;
      done += 2;
      continue;
    }
    kernels::RunOptions ro;
    ro.quick = ctx.quick();
    ro.seed = ctx.options->seed ^ Fnv1a(fam.name);
    ro.l2_bytes = ctx.device.l2_bytes;
    ro.stream = ctx.stream;
    ro.progress = [&ctx, &fam](const std::string& s) { ctx.log->Progress(ctx.tag + " " + fam.name + ": " + s); };
    // Correctness first.
    progress.Report(done, where + " check");
    std::vector<kernels::CheckResult> checks;
    try {
      checks = fam.check(ro);
    } catch (const std::exception& e) {
      ctx.log->Line(fam.name + ": CHECK FAILED: the check threw: " + e.what());
      ++ctx.checks_failed;
      std::string why;
      if (!CudaContextUsable(&why)) throw kernels::CudaError("CUDA unusable after " + fam.name + ": " + why);
      done += 2;
      continue;
    }
    ++done;
    int failed = 0;
    for (const auto& c : checks) {
      bool ok = c.ok && std::isfinite(c.rel_error) && c.rel_error <= c.tolerance;
      checks_csv.Row({c.kernel, c.case_name, Num(c.rel_error), Num(c.tolerance), ok ? "1" : "0"});
      if (!ok) {
        ++failed;
        ctx.log->Line(fam.name + ": CHECK FAILED: " + c.kernel + " " + c.case_name + ": rel_error " +
                      Num(c.rel_error) + " > tolerance " + Num(c.tolerance));
      }
    }
    if (checks.empty()) {
      ctx.log->Line(fam.name + ": CHECK FAILED: the family returned no checks; not timed");
      ++ctx.checks_failed;
      ++done;
      continue;
    }
    if (failed > 0) {
      ctx.checks_failed += failed;
      ctx.log->Line(fam.name + ": " + std::to_string(failed) + " of " + std::to_string(checks.size()) +
                    " checks failed; not timed");
      ++done;
      continue;
    }
    ctx.log->Line(fam.name + ": " + std::to_string(checks.size()) + " checks passed");
    if (ctx.deadline.Expired()) {
      ctx.log->Line(fam.name + ": not timed, the step's time budget is spent");
      ctx.stopped_early = true;
      ++done;
      continue;
    }
    // Then timing.
    progress.Report(done, where + " time");
    std::vector<kernels::TimingRow> rows;
    try {
      rows = fam.time(ro);
    } catch (const std::exception& e) {
      ctx.log->Line(fam.name + ": timing failed: " + e.what());
      ++ctx.items_failed;
      std::string why;
      if (!CudaContextUsable(&why)) throw kernels::CudaError("CUDA unusable after " + fam.name + ": " + why);
      ++done;
      continue;
    }
    for (const auto& r : rows) {
      // kernels/ reports median and minimum only: judged by their gap, not retried.
      StabilityVerdict v = JudgeMedianMin(r.median_us, r.min_us);
      if (ctx.Fault("busy") && ctx.noisy_left > 0) {
        --ctx.noisy_left;
        v = JudgeMedianMin(1.6 * r.median_us, r.min_us);
        v.why += " (fault injection: busy)";
      }
      ctx.RecordVerdict(v, fam.name + " " + r.kernel + " " + r.shape);
      std::vector<std::string> row = {r.kernel, r.shape, Num(r.bytes), Num(r.flops), Num(r.median_us), Num(r.min_us),
                                      Rate(r.bytes, r.median_us, 1e9), Rate(r.flops, r.median_us, 1e12),
                                      Num(CheckError(checks, r.kernel))};
      for (const std::string& c : StabilityCells(v)) row.push_back(c);
      kernels_csv.Row(row);
      if (attention_csv && IsAttention(r.kernel)) WriteAttentionRow(ctx, *attention_csv, r);
    }
    ctx.log->Line(fam.name + ": " + std::to_string(rows.size()) + " timings");
    ++done;
  }
  progress.Report(done, "done");
}

}  // namespace

void RunKernelsStep(StepContext& ctx) { RunFamilies(ctx, false); }

void RunAttentionStep(StepContext& ctx) { RunFamilies(ctx, true); }

}  // namespace stacksim::calibrate
