#include "sim/workload/pipeline_schedule.h"

#include <algorithm>

namespace stacksim::workload {
namespace {

std::vector<PipelineStep> Gpipe(int m) {
  std::vector<PipelineStep> out;
  for (int i = 0; i < m; ++i) out.push_back({true, i, 0});
  for (int i = 0; i < m; ++i) out.push_back({false, i, 0});
  return out;
}

// Non-interleaved 1F1B (PipeDream-Flush): p-s-1 warm-up forwards, then one
// forward and one backward alternately, then the remaining backwards.
std::vector<PipelineStep> OneFOneB(int p, int s, int m) {
  std::vector<PipelineStep> out;
  int warmup = std::min(p - s - 1, m);
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back({true, f, 0});
  while (f < m) {
    out.push_back({true, f++, 0});
    out.push_back({false, b++, 0});
  }
  while (b < m) out.push_back({false, b++, 0});
  return out;
}

// Interleaved 1F1B as Megatron-LM orders it: virtual micro-batch k (0..m*v-1)
// runs chunk (k / p) % v of micro-batch (k / (p*v)) * p + k % p in the forward
// direction; backwards visit the chunks in reverse.
std::vector<PipelineStep> Interleaved(int p, int v, int s, int m) {
  const int total = m * v;
  auto fwd = [&](int k) {
    int chunk = (k / p) % v;
    int mb = (k / (p * v)) * p + k % p;
    return PipelineStep{true, mb, chunk};
  };
  auto bwd = [&](int k) {
    int chunk = v - 1 - (k / p) % v;
    int mb = (k / (p * v)) * p + k % p;
    return PipelineStep{false, mb, chunk};
  };
  int warmup = m == p ? total : std::min(total, (p - s - 1) * 2 + (v - 1) * p);
  std::vector<PipelineStep> out;
  int f = 0, b = 0;
  for (; f < warmup; ++f) out.push_back(fwd(f));
  while (f < total) {
    out.push_back(fwd(f++));
    out.push_back(bwd(b++));
  }
  while (b < total) out.push_back(bwd(b++));
  return out;
}

}  // namespace

std::vector<std::vector<PipelineStep>> BuildSchedule(config::PipelineScheduleKind kind, int p, int v, int m) {
  std::vector<std::vector<PipelineStep>> out(p);
  for (int s = 0; s < p; ++s) {
    switch (kind) {
      case config::PipelineScheduleKind::kGpipe:
        out[s] = Gpipe(m);
        break;
      case config::PipelineScheduleKind::kOneFOneB:
        out[s] = OneFOneB(p, s, m);
        break;
      case config::PipelineScheduleKind::kInterleaved:
        out[s] = v == 1 ? OneFOneB(p, s, m) : Interleaved(p, v, s, m);
        break;
    }
  }
  return out;
}

int PeakInFlightChunks(const std::vector<PipelineStep>& steps) {
  int live = 0, peak = 0;
  for (const auto& st : steps) {
    live += st.forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace stacksim::workload
