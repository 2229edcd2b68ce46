// How long communication takes, and which links it occupies.
//
// The engine asks for the cost of a collective or a point-to-point transfer
// when it starts. The answer splits into a latency part (fixed, not shared)
// and a transfer part: the time the bytes would take if the task had its
// links to itself. While several transfers use the same link of the same rank
// at once, the engine shares that link's bandwidth equally between them, so
// concurrent communication slows down without the model knowing about it.
#ifndef STACKSIM_SIM_ENGINE_NETWORK_MODEL_H_
#define STACKSIM_SIM_ENGINE_NETWORK_MODEL_H_

#include <cstdint>
#include <string>

#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::engine {

// Links of one rank whose bandwidth concurrent transfers share (a bitmask).
enum LinkMask : uint8_t {
  kNoLinks = 0,
  kScaleUpLink = 1,   // the GPU's NVLink/NVSwitch (or PCIe peer) port
  kScaleOutLink = 2,  // the GPU's share of the node's NICs
};

struct CommCost {
  Time latency;             // fixed part (alpha terms, protocol setup)
  Time transfer;            // bandwidth part at full, unshared link rate
  uint8_t links = kNoLinks; // links the transfer part occupies
  std::string algorithm;    // what the model chose ("ring", "tree", "nvls", "hier-ring"), for reports
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  virtual CommCost Collective(const trace::CommOp& op, const trace::CommGroup& group) const = 0;
  virtual CommCost Transfer(const trace::TransferOp& op, const trace::CommGroup& pair) const = 0;
  virtual std::string name() const = 0;
};

// Test double: alpha + bytes / bandwidth for everything, on the scale-out link.
class FixedNetworkModel : public NetworkModel {
 public:
  FixedNetworkModel(Time alpha, Bandwidth bw) : alpha_(alpha), bw_(bw) {}
  CommCost Collective(const trace::CommOp& op, const trace::CommGroup&) const override {
    return {alpha_, TransferTime(op.bytes, bw_), kScaleOutLink, "fixed"};
  }
  CommCost Transfer(const trace::TransferOp& op, const trace::CommGroup&) const override {
    return {alpha_, TransferTime(op.bytes, bw_), kScaleOutLink, "fixed"};
  }
  std::string name() const override { return "fixed"; }

 private:
  Time alpha_;
  Bandwidth bw_;
};

}  // namespace stacksim::engine

#endif  // STACKSIM_SIM_ENGINE_NETWORK_MODEL_H_
