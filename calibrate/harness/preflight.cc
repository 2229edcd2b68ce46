#include "calibrate/harness/preflight.h"

#include <dlfcn.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "calibrate/fit/report_text.h"
#include "calibrate/harness/device_kernels.h"
#include "calibrate/harness/event_pair.h"
#include "kernels/check_util.h"
#include "kernels/cuda_check.h"

namespace stacksim::calibrate {
namespace {

// The few NVML calls used, declared here (the CUDA toolkit ships no nvml.h
// on every machine); their C ABI is stable across driver versions.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr NvmlReturn kNvmlInsufficientSize = 7;
constexpr int kNvmlClockSm = 1;

// What NVML says of one GPU; fields stay empty where it cannot say.
struct NvmlView {
  std::optional<int> processes;
  std::optional<int> utilization_pct;
  std::string clocks;  // "SM clock 1980 of 1980 MHz" (after the probe)
  std::string note;    // why NVML was not used
};

class Nvml {
 public:
  Nvml() {
    handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* e = dlerror();
      note_ = std::string("NVML not used: ") + (e != nullptr ? e : "libnvidia-ml.so.1 cannot be opened");
      return;
    }
    init_ = Sym<NvmlReturn (*)()>("nvmlInit_v2");
    shutdown_ = Sym<NvmlReturn (*)()>("nvmlShutdown");
    by_pci_ = Sym<NvmlReturn (*)(const char*, NvmlDevice*)>("nvmlDeviceGetHandleByPciBusId_v2");
    util_ = Sym<NvmlReturn (*)(NvmlDevice, NvmlUtilization*)>("nvmlDeviceGetUtilizationRates");
    procs_ = Sym<NvmlReturn (*)(NvmlDevice, unsigned int*, void*)>("nvmlDeviceGetComputeRunningProcesses_v3");
    if (procs_ == nullptr) procs_ = Sym<NvmlReturn (*)(NvmlDevice, unsigned int*, void*)>("nvmlDeviceGetComputeRunningProcesses");
    clock_ = Sym<NvmlReturn (*)(NvmlDevice, int, unsigned int*)>("nvmlDeviceGetClockInfo");
    max_clock_ = Sym<NvmlReturn (*)(NvmlDevice, int, unsigned int*)>("nvmlDeviceGetMaxClockInfo");
    if (init_ == nullptr || shutdown_ == nullptr || by_pci_ == nullptr) {
      note_ = "NVML not used: libnvidia-ml.so.1 lacks nvmlInit_v2 or nvmlDeviceGetHandleByPciBusId_v2";
    } else if (NvmlReturn r = init_(); r != kNvmlSuccess) {
      note_ = "NVML not used: nvmlInit_v2 returned " + std::to_string(r);
    } else {
      ready_ = true;
    }
  }
  ~Nvml() {
    if (ready_) shutdown_();
    // Not dlclose'd: the driver library stays loaded by CUDA anyway.
  }

  // Processes and utilization of the GPU at `pci_bus_id` (cudaDeviceGetPCIBusId).
  NvmlView Look(const std::string& pci_bus_id) {
    NvmlView v;
    v.note = note_;
    NvmlDevice dev = nullptr;
    if (!ready_) return v;
    if (NvmlReturn r = by_pci_(pci_bus_id.c_str(), &dev); r != kNvmlSuccess) {
      v.note = "NVML not used: no handle for PCI bus " + pci_bus_id + " (" + std::to_string(r) + ")";
      return v;
    }
    dev_ = dev;
    if (procs_ != nullptr) {
      // Asked with no room: the count comes back (INSUFFICIENT_SIZE when > 0).
      unsigned int count = 0;
      NvmlReturn r = procs_(dev, &count, nullptr);
      if (r == kNvmlSuccess || r == kNvmlInsufficientSize) v.processes = static_cast<int>(count);
    }
    NvmlUtilization u{};
    if (util_ != nullptr && util_(dev, &u) == kNvmlSuccess) v.utilization_pct = static_cast<int>(u.gpu);
    return v;
  }

  std::string Clocks() {
    unsigned int now = 0, max = 0;
    if (!ready_ || dev_ == nullptr || clock_ == nullptr || max_clock_ == nullptr) return "";
    if (clock_(dev_, kNvmlClockSm, &now) != kNvmlSuccess || max_clock_(dev_, kNvmlClockSm, &max) != kNvmlSuccess) {
      return "";
    }
    return "SM clock " + std::to_string(now) + " of " + std::to_string(max) + " MHz";
  }

 private:
  template <typename F>
  F Sym(const char* name) {
    return reinterpret_cast<F>(dlsym(handle_, name));
  }

  void* handle_ = nullptr;
  bool ready_ = false;
  std::string note_;
  NvmlDevice dev_ = nullptr;
  NvmlReturn (*init_)() = nullptr;
  NvmlReturn (*shutdown_)() = nullptr;
  NvmlReturn (*by_pci_)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*util_)(NvmlDevice, NvmlUtilization*) = nullptr;
  NvmlReturn (*procs_)(NvmlDevice, unsigned int*, void*) = nullptr;
  NvmlReturn (*clock_)(NvmlDevice, int, unsigned int*) = nullptr;
  NvmlReturn (*max_clock_)(NvmlDevice, int, unsigned int*) = nullptr;
};

constexpr int kProbeKernels = 16;
constexpr int kProbeIterations = 20000;  // ~50 us per kernel on a Hopper SM clock
constexpr int kProbeRounds = 3;

// Microseconds of each of kProbeKernels identical fixed-work kernels.
std::vector<double> Probe(const cudaDeviceProp& props, cudaStream_t stream) {
  int blocks = 2 * props.multiProcessorCount;
  kernels::DeviceBuffer<float> sink(blocks);
  EventPair ev;
  LaunchFixedWork(sink.get(), blocks, kProbeIterations, stream);  // warm-up
  CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<double> us;
  for (int i = 0; i < kProbeKernels; ++i) {
    CUDA_OK(cudaEventRecord(ev.start, stream));
    LaunchFixedWork(sink.get(), blocks, kProbeIterations, stream);
    CUDA_OK(cudaEventRecord(ev.stop, stream));
    CUDA_OK(cudaEventSynchronize(ev.stop));
    us.push_back(ev.ElapsedUs());
  }
  return us;
}

}  // namespace

BusyVerdict CheckGpuIdle(Log& log, const cudaDeviceProp& props, cudaStream_t stream, bool fault_busy) {
  char pci[32] = {0};
  CUDA_OK(cudaDeviceGetPCIBusId(pci, sizeof pci, 0));
  Nvml nvml;
  BusyVerdict verdict;
  for (int round = 1; round <= kProbeRounds; ++round) {
    BusyObservation o;
    NvmlView view = nvml.Look(pci);  // before our probe runs
    o.compute_processes = view.processes;
    o.utilization_pct = view.utilization_pct;
    size_t free_bytes = 0, total = 0;
    CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
    o.memory_used_bytes = static_cast<double>(total - free_bytes);
    o.probe_us = Probe(props, stream);
    if (fault_busy) {
      for (size_t i = 0; i < o.probe_us.size(); ++i) o.probe_us[i] *= 1.0 + 0.15 * static_cast<double>(i);
    }
    verdict = JudgeBusy(o);
    SampleStats s = Stats(o.probe_us);
    std::string seen = "probe " + Fixed(s.median, 1) + " us median, spread " + PercentText(s.spread) +
                       (o.compute_processes ? ", " + std::to_string(*o.compute_processes) + " CUDA process(es)" : "") +
                       (o.utilization_pct ? ", utilization " + std::to_string(*o.utilization_pct) + "%" : "") +
                       ", " + std::to_string(static_cast<long long>(o.memory_used_bytes / (1 << 20))) + " MiB in use";
    std::string clocks = nvml.Clocks();
    if (!clocks.empty()) seen += ", " + clocks;
    if (round == 1 && !view.note.empty()) log.Line("preflight: " + view.note + "; judging by the probe and memory");
    if (fault_busy && round == 1) log.Line("preflight: fault injection (busy): probe timings made noisy");
    if (!verdict.busy) {
      log.Line("preflight: GPU idle (" + seen + ")");
      return verdict;
    }
    log.Line("preflight: GPU BUSY, try " + std::to_string(round) + "/" + std::to_string(kProbeRounds) + ": " +
             verdict.Text() + " (" + seen + ")");
    if (round < kProbeRounds) std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  log.Line("preflight: the GPU stayed busy; measuring anyway: every timing is checked for spread and retried, "
           "unstable ones are marked stable=0 and not fitted, and the profile says the GPU was busy");
  return verdict;
}

}  // namespace stacksim::calibrate
