// A priority queue of timed events for the discrete-event engine.
//
// Events pop in time order; events at the same time pop in the order they
// were pushed, so a replay is deterministic whatever the heap does with ties.
// Times are stacksim::Time (integer nanoseconds). The queue owns copies of
// the payloads; Payload should be a small trivially copyable struct, since
// every push and pop moves it. Queues built on one sequence counter number
// their events in one order, so comparing (time, seq) merges them exactly as
// one queue would (the engine's queue and EqualShareLinks' flow ends).
#ifndef STACKSIM_SIM_ENGINE_EVENT_QUEUE_H_
#define STACKSIM_SIM_ENGINE_EVENT_QUEUE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/util/units.h"

namespace stacksim::engine {

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    Time time;
    uint64_t seq;  // insertion order, breaks ties in time
    Payload payload;
  };

  EventQueue() = default;
  // Numbers events from `*seq`, which the caller owns and may share with
  // other queues. REQUIRES: `seq` outlives the queue.
  explicit EventQueue(uint64_t* seq) : shared_seq_(seq) {}

  void Reserve(size_t n) { heap_.reserve(n); }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }

  void Push(Time time, const Payload& payload) {
    heap_.push_back(Event{time, shared_seq_ ? (*shared_seq_)++ : next_seq_++, payload});
    std::push_heap(heap_.begin(), heap_.end(), Later);
  }

  // REQUIRES: !empty().
  const Event& Top() const { return heap_.front(); }

  // Removes and returns the earliest event. REQUIRES: !empty().
  Event Pop() {
    std::pop_heap(heap_.begin(), heap_.end(), Later);
    Event e = heap_.back();
    heap_.pop_back();
    return e;
  }

 private:
  // std heap functions keep the "largest" element first; the latest event is
  // the largest, so the earliest one surfaces.
  // (A function object rather than a function, so that the heap
  // algorithms inline it instead of calling through a pointer.)
  struct LaterThan {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      return a.seq > b.seq;
    }
  };
  static constexpr LaterThan Later{};

  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
  uint64_t* shared_seq_ = nullptr;  // when set, numbers come from here instead
};

}  // namespace stacksim::engine

#endif  // STACKSIM_SIM_ENGINE_EVENT_QUEUE_H_
