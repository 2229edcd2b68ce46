// env.json: which GPU, driver and libraries the measurements come from.
#include <cublasLt.h>
#include <cuda_runtime.h>
#ifdef STACKSIM_HAVE_NCCL
#include "calibrate/harness/nccl_library.h"
#endif

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>

#include "calibrate/harness/steps.h"
#include "kernels/cuda_check.h"

namespace stacksim::calibrate {

namespace {

std::string CudaVersionText(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// The kernel module's version ("580.159.04") where Linux shows it.
std::string DriverModuleVersion() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  std::smatch m;
  if (std::regex_search(line, m, std::regex(R"((\d+\.\d+(\.\d+)?))"))) return m[1];
  return "";
}

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

void RunEnvStep(StepContext& ctx) {
  const cudaDeviceProp& p = ctx.device.props;
  int driver = 0, runtime = 0, clock_khz = 0, mem_clock_khz = 0;
  CUDA_OK(cudaDriverGetVersion(&driver));
  CUDA_OK(cudaRuntimeGetVersion(&runtime));
  CUDA_OK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  CUDA_OK(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, 0));
  size_t lt = cublasLtGetVersion();
  std::string module = DriverModuleVersion();
  std::string nccl = "not built with NCCL";
#ifdef STACKSIM_HAVE_NCCL
  NcclLibrary lib(ctx.Fault("nccl-missing"));
  int nv = 0;
  if (!lib.ok()) {
    nccl = "missing at run time (" + lib.error() + ")";
  } else if (lib.GetVersion(&nv) == ncclSuccess) {
    // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
    nccl = std::to_string(nv / 10000) + "." + std::to_string(nv / 100 % 100) + "." + std::to_string(nv % 100);
  } else {
    nccl = "linked, version unknown";
  }
#endif
  const char* commit = std::getenv("STACKSIM_GIT_COMMIT");
  nlohmann::json env = {
      {"gpu_name", p.name},
      {"sm_count", p.multiProcessorCount},
      {"total_memory_bytes", static_cast<uint64_t>(p.totalGlobalMem)},
      {"l2_cache_bytes", p.l2CacheSize},
      {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
      {"clock_mhz", clock_khz / 1000},
      {"memory_clock_mhz", mem_clock_khz / 1000},
      {"driver", module.empty() ? "CUDA " + CudaVersionText(driver)
                                : module + " (CUDA " + CudaVersionText(driver) + ")"},
      {"cuda_runtime", CudaVersionText(runtime)},
      {"cublas", std::to_string(lt / 10000) + "." + std::to_string(lt / 100 % 100) + "." + std::to_string(lt % 100)},
      {"nccl", nccl},
      {"date_utc", NowUtc()},
      {"git_commit", commit != nullptr && *commit != '\0' ? commit : "unknown"},
      {"quick", ctx.quick()},
      {"gpus_visible", ctx.device.device_count},
      {"gpus_used", ctx.device.gpus},
  };
  std::string path = ctx.RawPath("env.json");
  std::ofstream f(path);
  f << env.dump(1) << "\n";
  if (!f) throw std::runtime_error("cannot write " + path);
  ctx.log->Line("env: " + std::string(p.name) + ", " + std::to_string(p.multiProcessorCount) + " SMs, " +
                std::to_string(p.totalGlobalMem >> 20) + " MiB, L2 " + std::to_string(p.l2CacheSize >> 20) +
                " MiB, cc " + env["compute_capability"].get<std::string>() + ", driver " +
                env["driver"].get<std::string>() + ", cuBLASLt " + env["cublas"].get<std::string>() + ", NCCL " +
                nccl + ", " + std::to_string(ctx.device.device_count) + " GPU(s) visible, " +
                std::to_string(ctx.device.gpus) + " used");
}

}  // namespace stacksim::calibrate
