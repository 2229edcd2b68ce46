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
#include <memory>
#include <string>
#include <vector>

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

// A flow-level network that shares bandwidth itself (SimGrid's max-min model):
// the engine hands it the bandwidth phase of every communication and asks
// when the next one finishes (SimGrid's model contract: "when does my next
// action finish?" and "advance to t"). One session serves one replay.
class FlowSession {
 public:
  virtual ~FlowSession() = default;
  // Starts the bandwidth phase of communication `task` (a collective's first
  // member task, or a transfer) at `now`, after its latency phase.
  virtual void Start(trace::TaskId task, Time now) = 0;
  // The earliest time a started communication's flows all finish; Time::Max() if none.
  virtual Time NextCompletion() = 0;
  // Advances to `t` (REQUIRES: t <= NextCompletion()) and returns the tasks
  // (as passed to Start) whose flows have all finished by `t`, in the order
  // they were started.
  virtual std::vector<trace::TaskId> AdvanceTo(Time t) = 0;
  // Where contention added time: the busiest links and what crossed them, one line each.
  virtual std::vector<std::string> ContentionReport() const = 0;
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  // A flow-level model returns a session for this trace; the engine then lets
  // the session share bandwidth instead of sharing links itself. Analytic
  // models return nullptr (the default). CommCost.latency still comes from
  // Collective() / Transfer().
  virtual std::unique_ptr<FlowSession> StartSession(const trace::Trace& trace) const { return nullptr; }
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
