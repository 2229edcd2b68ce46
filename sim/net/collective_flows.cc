#include "sim/net/collective_flows.h"

namespace stacksim::net {

void RingFlows(const MemberGpu& at, int n, int gl, double edge, std::vector<GpuFlow>* out) {
  for (int k = 0; k < n; ++k) {
    for (int c = 0; c < gl; ++c) {
      if (n > 1) out->push_back({at(k, c), at((k + 1) % n, c), edge});
      if (gl > 1) out->push_back({at(k, c), at(k, (c + 1) % gl), (gl - 1) * edge});
    }
  }
}

namespace {
// Between every ordered pair of domains, GPU c to GPU c; then inside each
// domain, every ordered pair of GPUs.
void ExchangeFlows(const MemberGpu& at, int n, int gl, double across, double within, std::vector<GpuFlow>* out) {
  for (int k = 0; k < n; ++k)
    for (int l = 0; l < n; ++l)
      if (k != l)
        for (int c = 0; c < gl; ++c) out->push_back({at(k, c), at(l, c), across});
  for (int k = 0; k < n; ++k)
    for (int c = 0; c < gl; ++c)
      for (int d = 0; d < gl; ++d)
        if (c != d) out->push_back({at(k, c), at(k, d), within});
}
}  // namespace

void PairwiseFlows(const MemberGpu& at, int n, int gl, double bytes, std::vector<GpuFlow>* out) {
  const double p = static_cast<double>(n) * gl;
  ExchangeFlows(at, n, gl, gl * bytes / p, bytes / p, out);
}

void HierarchicalFlows(const MemberGpu& at, int n, int gl, double bytes, double scale_out_bytes,
                       std::vector<GpuFlow>* out) {
  ExchangeFlows(at, n, gl, scale_out_bytes / (n - 1), bytes / gl, out);
}

}  // namespace stacksim::net
