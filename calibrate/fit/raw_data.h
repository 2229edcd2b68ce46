// calibrate's raw measurements (docs/calibrate.md), read from its --raw
// folder into typed rows. env.json is required: every measured value's source
// names the GPU, driver and date from it. Each CSV file may be absent (that
// part was not measured); one that is present is read strictly, every
// documented column required. Quantities keep the unit of their CSV column,
// which their names carry (_us: microseconds, _gbps: GB/s = 1e9 bytes/s,
// _tflops: 1e12 FLOP/s, bytes, flops). Every CSV may carry the columns
// `spread` (robust coefficient of variation of the row's samples) and
// `stable` (1, or 0 when the spread stayed above the threshold after the
// harness's retries); an unstable row is never fitted.
#ifndef STACKSIM_CALIBRATE_FIT_RAW_DATA_H_
#define STACKSIM_CALIBRATE_FIT_RAW_DATA_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/fit/gemm_fit.h"
#include "calibrate/fit/run_outcome.h"

namespace stacksim::calibrate {

struct CalibrationEnv {
  std::string gpu_name;      // "NVIDIA H200"
  std::string driver;        // "580.159.04"
  std::string cuda_runtime;  // "13.0"
  std::string date_utc;      // "2026-11-29T23:59:20Z"
  int sm_count = 0;
  double total_memory_bytes = 0;
  bool quick = false;        // a --quick run (absent: false)
};

struct CopyRow {             // copy.csv
  std::string kind;          // d2d, h2d_pinned, d2h_pinned
  double bytes = 0;
  double median_us = 0;
  double gbps_median = 0;    // d2d counts bytes read + written
};

struct LaunchRow {           // launch.csv
  std::string metric;        // host_issue_us_per_launch, device_us_per_kernel, ..., cupti_*
  double median_us = 0, min_us = 0, max_us = 0;
};

struct KernelRow {           // kernels.csv: our fused kernels
  std::string kernel;        // "rmsnorm_residual", "attention_fwd"
  std::string shape;         // "bf16 rows=16384 cols=8192"
  double bytes = 0;          // device-memory traffic
  double flops = 0;          // 0 for memory-bound kernels
  double median_us = 0;
  double gbps_median = 0;
  double tflops_median = 0;
  double check_rel_error = 0;
};

struct NcclRow {             // nccl.csv
  std::string collective;    // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, sendrecv
  int gpus = 0;
  double bytes = 0;
  double median_us = 0;
  double busbw_gbps = 0;
};

struct RawData {
  std::string dir;
  CalibrationEnv env;
  // nullopt: the file is absent.
  std::optional<std::vector<CopyRow>> copy;
  std::optional<std::vector<LaunchRow>> launch;
  std::optional<std::vector<GemmSample>> gemm;
  std::optional<std::vector<KernelRow>> kernels;
  std::optional<std::vector<NcclRow>> nccl;
  std::vector<std::string> files_present;  // other known files found (attention.csv, checks.csv, log.txt)
  // outcome.json: what each step of the run did; nullopt for raw data from
  // before the harness wrote it.
  std::optional<RunOutcome> outcome;
  // Rows the harness marked unstable (column stable = 0): left out of the
  // vectors above, listed here by section (copy, launch, gemm, kernels,
  // attention, nccl) as "line 7: bf16 square 4096x4096x4096 (spread 12.3%)".
  std::map<std::string, std::vector<std::string>> unstable;
};

// Throws InputError naming the file (and column and line) on bad data, or if
// `dir` or its env.json is missing.
RawData ReadRawData(const std::string& dir);

// One gemm.csv's stable rows (the same checks as ReadRawData's).
std::vector<GemmSample> ReadGemmFile(const std::string& path);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_RAW_DATA_H_
