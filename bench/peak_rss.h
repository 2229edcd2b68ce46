// Peak resident memory of this process, for the benchmarks that report it.
#ifndef STACKSIM_BENCH_PEAK_RSS_H_
#define STACKSIM_BENCH_PEAK_RSS_H_

#include <fstream>
#include <string>

namespace stacksim::bench {

// VmHWM of /proc/self/status in MiB (0 where the file is absent).
inline double PeakRssMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  }
  return 0;
}

}  // namespace stacksim::bench

#endif  // STACKSIM_BENCH_PEAK_RSS_H_
