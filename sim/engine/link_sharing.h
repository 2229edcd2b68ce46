// Equal sharing of each rank's links: the engine's own FlowSession, used
// whenever the network model brings no flow-level session of its own.
//
// A communication's bandwidth phase is one flow over a set of resources,
// (rank, link) pairs: the links its cost names (CommPhase::links) on the rank
// of each member task and, for a transfer, on its destination, in that order,
// each rank once. A flow progresses at 1/share of its unshared rate, share
// being the number of flows on its busiest resource, itself included
// (processor sharing, recomputed whenever a flow starts or ends). A flow with
// no resources takes exactly its unshared time.
//
// Rounding, which predictions depend on to the nanosecond:
//   - a flow's remaining work (unshared ns, a double) is brought up to date at
//     its old share, remaining -= elapsed / share, whenever a flow starts or
//     ends on one of its resources, whether or not its share then changes;
//   - its end is (re)scheduled only when its share changes (and when it
//     starts), at now + llround(remaining * share);
//   - a flow that ends is not brought up to date: it ends when scheduled.
//
// Ties: every (re)scheduled end is an event numbered from the engine's own
// event counter (see EventQueue), and NextCompletionOrder() is that number
// plus one, so ends merge with the engine's queued events exactly as if one
// queue held both: by time, then by when they were scheduled. AdvanceTo
// gives one communication at a time for the same reason; among ends at one
// time, the earliest scheduled comes first. A flow may end at Time::Max():
// NextCompletion() then says Time::Max() with an order above zero.
//
// Units: Time in ns. Owns its flows; the trace and the counter must outlive
// it. ContentionReport() is empty: this model names no bottleneck.
#ifndef STACKSIM_SIM_ENGINE_LINK_SHARING_H_
#define STACKSIM_SIM_ENGINE_LINK_SHARING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine/event_queue.h"
#include "sim/engine/network_model.h"
#include "sim/trace/trace.h"
#include "sim/util/units.h"

namespace stacksim::engine {

class EqualShareLinks : public FlowSession {
 public:
  // `event_seq`: the counter the engine numbers its queued events from.
  EqualShareLinks(const trace::Trace& trace, uint64_t* event_seq);

  void Start(const CommPhase& phase, Time now) override;
  Time NextCompletion() override;
  uint64_t NextCompletionOrder() override;
  void AdvanceTo(Time t, std::vector<trace::TaskId>* done) override;
  std::vector<std::string> ContentionReport() const override { return {}; }

 private:
  struct Flow {
    trace::TaskId task;
    int32_t res_begin = 0;   // range in res_pool_
    int32_t res_count = 0;
    int32_t share = 1;       // flows on its busiest resource; progresses at 1/share
    uint32_t version = 0;    // bumped whenever its end is rescheduled
    Time transfer;           // unshared transfer time
    Time last_update;        // when `remaining` was last brought up to date
    double remaining = 0;    // unshared transfer work left, ns
  };
  struct FlowEnd {
    int32_t flow;
    uint32_t version;  // stale unless it matches the flow's
  };

  // Keeps the earliest end current: pops ends rescheduled since.
  void DropStaleEnds();
  void JoinOrLeave(int32_t flow, Time now, bool join);
  int32_t ShareOf(const Flow& f) const;
  void ScheduleEnd(int32_t flow, Time now);

  const trace::Trace& trace_;
  std::vector<Flow> flows_;
  std::vector<int32_t> res_pool_;                // rank * kLinksPerRank + link
  std::vector<std::vector<int32_t>> res_flows_;  // active flows per resource
  std::vector<uint32_t> flow_mark_;              // scratch: epoch stamps per flow
  std::vector<uint32_t> rank_mark_;              // scratch: epoch stamps per rank
  std::vector<int32_t> affected_;                // scratch
  uint32_t epoch_ = 0;
  EventQueue<FlowEnd> ends_;  // its top is never stale between calls
};

}  // namespace stacksim::engine

#endif  // STACKSIM_SIM_ENGINE_LINK_SHARING_H_
