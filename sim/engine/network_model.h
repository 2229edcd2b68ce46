// How long communication takes, and which links it occupies.
//
// The engine asks for the cost of a collective or a point-to-point transfer
// when it starts. The answer splits into a latency part (fixed, not shared)
// and a transfer part: the time the bytes would take if the task had its
// links to itself. The transfer part then goes to a FlowSession, which shares
// bandwidth between concurrent communications: the model's own (SimGrid's
// flow-level model) or, for models that have none, EqualShareLinks
// (link_sharing.h), which shares each link of each rank equally, so
// concurrent communication slows down without the model knowing about it.
#ifndef STACKSIM_SIM_ENGINE_NETWORK_MODEL_H_
#define STACKSIM_SIM_ENGINE_NETWORK_MODEL_H_

#include <cstdint>
#include <memory>
#include <span>
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
  // Of the bytes a link carries, the share that is data under the protocol
  // chosen (NCCL's LL128 across nodes: 0.92 in rings; 1 otherwise): a
  // flow-level model sends bytes / share.
  double bandwidth_share = 1.0;
};

// The bandwidth phase of one communication, as the engine hands it to a
// FlowSession. Views into the engine's data, valid during the Start call.
struct CommPhase {
  trace::TaskId task;                      // its first member task: the id AdvanceTo gives back
  std::span<const trace::TaskId> members;  // all its tasks, ascending ids (`task` first)
  Time transfer;                           // CommCost::transfer (> 0)
  uint8_t links = kNoLinks;                // CommCost::links
};

// Shares bandwidth between the bandwidth phases of concurrent communications.
// The engine hands it every one and asks when the next one finishes
// (SimGrid's model contract: "when does my next action finish?" and "advance
// to t"). One session serves one replay; the engine uses the network model's
// own (StartSession) or else EqualShareLinks.
//
// The engine's loop, before each event of its own queue (compute ends,
// latency ends, ends of communications with nothing to send): while the session's next completion comes first, end what
// AdvanceTo gives, in that order. A completion at time t comes first when t
// is earlier than the queued event's time or, at the same time, when
// NextCompletionOrder() <= the event's seq (EventQueue numbering). Ending a
// communication may start others (Start at the same time) or queue events
// earlier than the one waiting, so the engine asks again after each AdvanceTo.
class FlowSession {
 public:
  virtual ~FlowSession() = default;
  // Starts the bandwidth phase of a communication at `now`, after its latency
  // phase. REQUIRES: now >= every time passed before.
  virtual void Start(const CommPhase& phase, Time now) = 0;
  // The earliest time a started communication's flows all finish; Time::Max()
  // if none (unless NextCompletionOrder() > 0: see below).
  virtual Time NextCompletion() = 0;
  // Where that completion falls among the engine's queued events at its time:
  // before those whose seq is at least this. The default, 0, puts a session's
  // completions before every queued event at the same time. A session that
  // numbers its completions from the engine's event counter (EqualShareLinks)
  // returns seq + 1, so both merge as one queue would; only such a session
  // may report a completion at Time::Max() itself.
  virtual uint64_t NextCompletionOrder() { return 0; }
  // Advances to `t` (REQUIRES: t <= NextCompletion()) and appends to `done`
  // tasks (CommPhase::task) whose flows have all finished by `t`, in the
  // order the engine is to end them: all of them (SimGrid's session: in the
  // order they were started), or only the first (EqualShareLinks: the rest
  // stay for the next call, so the engine's events can come between them).
  virtual void AdvanceTo(Time t, std::vector<trace::TaskId>* done) = 0;
  // Where contention added time: the busiest links and what crossed them, one line each.
  virtual std::vector<std::string> ContentionReport() const = 0;
};

class NetworkModel {
 public:
  virtual ~NetworkModel() = default;
  // A flow-level model returns a session for this trace, which then shares
  // bandwidth instead of EqualShareLinks. Analytic models return nullptr (the
  // default). CommCost.latency still comes from Collective() / Transfer().
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
