#include "calibrate/fit/raw_data.h"

#include <cmath>
#include <filesystem>

#include "calibrate/fit/report_text.h"
#include "sim/util/csv.h"
#include "sim/util/json_reader.h"

namespace stacksim::calibrate {
namespace {

namespace fs = std::filesystem;

// A version or date field: a string, or a number written without quotes.
std::string TextField(JsonObject& obj, const char* key) {
  JsonNode v = obj.Required(key);
  if (v.IsNumber()) return v.json().dump();
  return v.String();
}

CalibrationEnv ReadEnv(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  JsonObject obj(root);  // further keys (clocks, versions, git_commit) are recorded, not read
  CalibrationEnv env;
  env.gpu_name = obj.Required("gpu_name").String();
  JsonNode sms = obj.Required("sm_count");
  int64_t n = sms.PositiveInt();
  if (n > 1000000) sms.Fail("implausible SM count " + std::to_string(n));
  env.sm_count = static_cast<int>(n);
  env.total_memory_bytes = obj.Required("total_memory_bytes").PositiveNumber();
  env.driver = TextField(obj, "driver");
  env.cuda_runtime = TextField(obj, "cuda_runtime");
  env.date_utc = obj.Required("date_utc").String();
  if (auto quick = obj.Optional("quick")) env.quick = quick->Bool();
  return env;
}

std::string OneOf(const CsvTable& t, size_t row, const std::string& column, const std::vector<std::string>& choices) {
  const std::string& v = t.Text(row, column);
  std::string list;
  for (const std::string& c : choices) {
    if (v == c) return v;
    list += (list.empty() ? "" : ", ") + c;
  }
  t.Fail(row, column, "'" + v + "' is not one of " + list);
}

// Whether row r is stable (no `stable` column: every row is). An unstable
// row is described in (*unstable)[section] and left out by the caller.
bool Stable(const CsvTable& t, size_t r, const std::string& section, const std::string& what,
            std::map<std::string, std::vector<std::string>>* unstable) {
  if (!t.HasColumn("stable")) return true;
  const std::string& v = t.Text(r, "stable");
  if (v == "1") return true;
  if (v != "0") t.Fail(r, "stable", "'" + v + "' is neither 1 nor 0");
  std::string spread = t.HasColumn("spread") ? ", spread " + Fixed(100 * t.Number(r, "spread"), 1) + "%" : "";
  (*unstable)[section].push_back("line " + std::to_string(t.line(r)) + ": " + what + spread);
  return false;
}

std::vector<CopyRow> ReadCopy(const std::string& path, std::map<std::string, std::vector<std::string>>* unstable) {
  CsvTable t = CsvTable::Read(path);
  t.RequireColumns({"kind", "bytes", "median_us", "min_us", "gbps_median"});
  std::vector<CopyRow> rows;
  for (size_t r = 0; r < t.rows(); ++r) {
    CopyRow row{OneOf(t, r, "kind", {"d2d", "h2d_pinned", "d2h_pinned"}), t.PositiveNumber(r, "bytes"),
                t.PositiveNumber(r, "median_us"), t.PositiveNumber(r, "gbps_median")};
    t.Number(r, "min_us");
    if (Stable(t, r, "copy", row.kind + " " + SizeText(row.bytes), unstable)) rows.push_back(row);
  }
  return rows;
}

std::vector<LaunchRow> ReadLaunch(const std::string& path, std::map<std::string, std::vector<std::string>>* unstable) {
  CsvTable t = CsvTable::Read(path);
  t.RequireColumns({"metric", "median_us", "min_us", "max_us"});
  std::vector<LaunchRow> rows;
  for (size_t r = 0; r < t.rows(); ++r) {
    // Besides the four documented metrics the harness adds CUPTI ones
    // (cupti_kernel_us, cupti_gap_us, ...); a gap can be zero.
    LaunchRow row{t.Text(r, "metric"), t.NonNegativeNumber(r, "median_us"), t.NonNegativeNumber(r, "min_us"),
                  t.NonNegativeNumber(r, "max_us")};
    if (row.metric.empty()) t.Fail(r, "metric", "empty metric name");
    if (row.metric == "host_issue_us_per_launch" && !(row.median_us > 0)) t.Fail(r, "median_us", "must be positive");
    if (Stable(t, r, "launch", row.metric, unstable)) rows.push_back(row);
  }
  return rows;
}

std::vector<GemmSample> ReadGemm(const std::string& path, std::map<std::string, std::vector<std::string>>* unstable) {
  CsvTable t = CsvTable::Read(path);
  t.RequireColumns({"dtype", "label", "m", "n", "k", "median_us", "min_us", "tflops_median"});
  std::vector<GemmSample> rows;
  for (size_t r = 0; r < t.rows(); ++r) {
    GemmSample s;
    s.dtype = OneOf(t, r, "dtype", {"bf16", "fp16", "tf32", "fp8_e4m3"});
    s.label = t.Text(r, "label");
    s.m = t.PositiveInt(r, "m");
    s.n = t.PositiveInt(r, "n");
    s.k = t.PositiveInt(r, "k");
    if (s.m > (int64_t{1} << 24) || s.n > (int64_t{1} << 24) || s.k > (int64_t{1} << 24)) {
      t.Fail(r, "m", "implausible GEMM shape (a dimension above 2^24)");
    }
    s.median_us = t.PositiveNumber(r, "median_us");
    t.Number(r, "min_us");
    t.Number(r, "tflops_median");
    std::string what = s.dtype + " " + s.label + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                       std::to_string(s.k);
    if (Stable(t, r, "gemm", what, unstable)) rows.push_back(s);
  }
  return rows;
}

std::vector<KernelRow> ReadKernels(const std::string& path, std::map<std::string, std::vector<std::string>>* unstable) {
  CsvTable t = CsvTable::Read(path);
  t.RequireColumns({"kernel", "shape", "bytes", "flops", "median_us", "min_us", "gbps_median", "tflops_median",
                    "check_rel_error"});
  std::vector<KernelRow> rows;
  for (size_t r = 0; r < t.rows(); ++r) {
    KernelRow k;
    k.kernel = t.Text(r, "kernel");
    if (k.kernel.empty()) t.Fail(r, "kernel", "empty kernel name");
    k.shape = t.Text(r, "shape");
    k.bytes = t.NonNegativeNumber(r, "bytes");
    k.flops = t.NonNegativeNumber(r, "flops");
    k.median_us = t.PositiveNumber(r, "median_us");
    t.Number(r, "min_us");
    k.gbps_median = t.NonNegativeNumber(r, "gbps_median");
    k.tflops_median = t.NonNegativeNumber(r, "tflops_median");
    k.check_rel_error = t.NonNegativeNumber(r, "check_rel_error");
    // The attention step writes the attention_* rows of kernels.csv.
    std::string section = k.kernel.rfind("attention", 0) == 0 ? "attention" : "kernels";
    if (Stable(t, r, section, k.kernel + " " + k.shape, unstable)) rows.push_back(k);
  }
  return rows;
}

std::vector<NcclRow> ReadNccl(const std::string& path, std::map<std::string, std::vector<std::string>>* unstable) {
  CsvTable t = CsvTable::Read(path);
  t.RequireColumns({"collective", "gpus", "bytes", "median_us", "algbw_gbps", "busbw_gbps"});
  std::vector<NcclRow> rows;
  for (size_t r = 0; r < t.rows(); ++r) {
    NcclRow n;
    n.collective = OneOf(t, r, "collective",
                         {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "sendrecv"});
    int64_t gpus = t.PositiveInt(r, "gpus");
    if (gpus > 1000000) t.Fail(r, "gpus", "implausible GPU count");
    n.gpus = static_cast<int>(gpus);
    n.bytes = t.PositiveNumber(r, "bytes");
    n.median_us = t.PositiveNumber(r, "median_us");
    t.Number(r, "algbw_gbps");
    n.busbw_gbps = t.NonNegativeNumber(r, "busbw_gbps");
    std::string what = n.collective + " " + std::to_string(n.gpus) + " GPUs " + SizeText(n.bytes);
    if (Stable(t, r, "nccl", what, unstable)) rows.push_back(n);
  }
  return rows;
}

template <typename Rows, typename Reader>
void ReadIfPresent(const fs::path& dir, const char* name, Reader read, std::optional<Rows>* out,
                   std::map<std::string, std::vector<std::string>>* unstable) {
  fs::path p = dir / name;
  if (fs::exists(p)) *out = read(p.string(), unstable);
}

}  // namespace

std::vector<GemmSample> ReadGemmFile(const std::string& path) {
  std::map<std::string, std::vector<std::string>> unstable;
  return ReadGemm(path, &unstable);
}

RawData ReadRawData(const std::string& dir) {
  fs::path d(dir);
  if (!fs::is_directory(d)) throw InputError(dir, "", "not a folder of calibrate raw data");
  fs::path env = d / "env.json";
  if (!fs::exists(env)) {
    throw InputError(env.string(), "", "missing: calibrate writes env.json first, and every measured value's "
                                       "source names the GPU, driver and date from it");
  }
  RawData raw;
  raw.dir = dir;
  raw.env = ReadEnv(env.string());
  ReadIfPresent(d, "copy.csv", ReadCopy, &raw.copy, &raw.unstable);
  ReadIfPresent(d, "launch.csv", ReadLaunch, &raw.launch, &raw.unstable);
  ReadIfPresent(d, "gemm.csv", ReadGemm, &raw.gemm, &raw.unstable);
  ReadIfPresent(d, "kernels.csv", ReadKernels, &raw.kernels, &raw.unstable);
  ReadIfPresent(d, "nccl.csv", ReadNccl, &raw.nccl, &raw.unstable);
  raw.outcome = RunOutcome::Read((d / "outcome.json").string());
  for (const char* other : {"attention.csv", "checks.csv", "log.txt"}) {
    if (fs::exists(d / other)) raw.files_present.push_back(other);
  }
  return raw;
}

}  // namespace stacksim::calibrate
