#include "sim/net/simgrid_fabric.h"

#include <algorithm>

namespace stacksim::net {

int32_t Fabric::AddLink(std::string name, double bw) {
  int32_t id = static_cast<int32_t>(links_.size());
  links_.push_back({name, bw});
  links_.push_back({std::move(name), bw});
  return id;
}

Fabric::Fabric(const config::TopologyConfig& topology, double port_bw, double nic_bw, int cluster_gpus)
    : gpn_(std::max(1, topology.gpus_per_node)), nics_(std::max(0, topology.nics.per_node)) {
  nodes_ = std::max<int64_t>(1, (cluster_gpus + gpn_ - 1) / gpn_);
  gpus_ = nodes_ * gpn_;
  rails_ = topology.fabric.rail_optimized && nics_ > 0 ? nics_ : 1;
  const auto& levels = topology.fabric.levels;
  leaf_span_ = (levels.empty() ? 1 : std::max(1, levels[0].nodes_below)) * static_cast<int64_t>(gpn_);
  links_.reserve(2 * (gpus_ + nodes_ * nics_) + 64);

  const char* port = topology.scale_up.kind == config::ScaleUpKind::kPcie ? "PCIe link" : "NVLink port";
  for (int64_t g = 0; g < gpus_; ++g) {
    AddLink("node " + std::to_string(g / gpn_) + " GPU " + std::to_string(g % gpn_) + " " + port, port_bw);
  }
  nic_base_ = static_cast<int32_t>(links_.size());
  for (int64_t n = 0; n < nodes_; ++n) {
    for (int k = 0; k < nics_; ++k) AddLink("node " + std::to_string(n) + " NIC " + std::to_string(k), nic_bw);
  }
  // Uplinks of every level whose groups do not already hold the whole cluster.
  double up_bw = 0;
  for (size_t i = 0; i < levels.size(); ++i) {
    int64_t below = std::max(1, levels[i].nodes_below);
    below_.push_back(below);
    double down_bw = i == 0 ? static_cast<double>(below) * (nics_ / rails_) * nic_bw
                            : static_cast<double>(below / below_[i - 1]) * (i == 1 ? rails_ : 1) * up_bw;
    up_bw = down_bw / std::max(1.0, levels[i].oversubscription);
    if (below >= nodes_) {
      uplink_base_.push_back(-1);
      continue;
    }
    uplink_base_.push_back(static_cast<int32_t>(links_.size()));
    std::string above = i + 1 < levels.size() ? levels[i + 1].name : "core";
    int64_t groups = (nodes_ + below - 1) / below;
    for (int64_t p = 0; p < groups; ++p) {
      int per = i == 0 ? rails_ : 1;
      for (int r = 0; r < per; ++r) {
        std::string name = levels[i].name + " " + std::to_string(p);
        if (per > 1) name += " rail " + std::to_string(r);
        AddLink(name + " -> " + above + " uplink", up_bw);
      }
    }
  }
}

void Fabric::RouteLinks(int64_t src, int64_t dst, std::vector<int32_t>* out) const {
  int64_t na = src / gpn_, nb = dst / gpn_;
  if (na == nb || nics_ == 0) {
    out->push_back(static_cast<int32_t>(2 * src));
    out->push_back(static_cast<int32_t>(2 * dst + 1));
    return;
  }
  int ka = static_cast<int>(src % gpn_) * nics_ / gpn_;
  int kb = static_cast<int>(dst % gpn_) * nics_ / gpn_;
  int ra = rails_ > 1 ? ka : 0, rb = rails_ > 1 ? kb : 0;
  out->push_back(static_cast<int32_t>(nic_base_ + 2 * (na * nics_ + ka)));
  size_t mark = out->size();
  std::vector<int32_t> down;
  for (size_t i = 0; i < below_.size(); ++i) {
    int64_t ga = na / below_[i], gb = nb / below_[i];
    if (ga == gb && (i > 0 || ra == rb)) break;
    if (uplink_base_[i] < 0) continue;  // one group holds everything: through the top
    int64_t ia = i == 0 ? ga * rails_ + ra : ga;
    int64_t ib = i == 0 ? gb * rails_ + rb : gb;
    out->push_back(static_cast<int32_t>(uplink_base_[i] + 2 * ia));
    down.push_back(static_cast<int32_t>(uplink_base_[i] + 2 * ib + 1));
  }
  (void)mark;
  out->insert(out->end(), down.rbegin(), down.rend());
  out->push_back(static_cast<int32_t>(nic_base_ + 2 * (nb * nics_ + kb) + 1));
}

}  // namespace stacksim::net
