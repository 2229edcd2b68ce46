#include "sim/engine/event_queue.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace stacksim::engine {
namespace {

TEST(EventQueue, PopsEarliestTimeFirst) {
  EventQueue<int> q;
  q.Push(Time::Ns(30), 3);
  q.Push(Time::Ns(10), 1);
  q.Push(Time::Ns(20), 2);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q.Top().time, Time::Ns(10));
  std::vector<int> order;
  while (!q.empty()) order.push_back(q.Pop().payload);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(EventQueue, TiesBreakByInsertionOrder) {
  EventQueue<int> q;
  // Payloads pushed in an order a heap would scramble if it compared time only.
  for (int i = 0; i < 9; ++i) q.Push(Time::Ns(5), 100 + i);
  q.Push(Time::Ns(4), 0);
  std::vector<int> order;
  while (!q.empty()) order.push_back(q.Pop().payload);
  EXPECT_EQ(order, (std::vector<int>{0, 100, 101, 102, 103, 104, 105, 106, 107, 108}));
}

TEST(EventQueue, EventsPushedWhilePoppingKeepTimeThenInsertionOrder) {
  EventQueue<int> q;
  q.Push(Time::Ns(10), 1);
  q.Push(Time::Ns(20), 2);
  EXPECT_EQ(q.Pop().payload, 1);
  // Same time as a queued event but pushed later: pops after it.
  q.Push(Time::Ns(20), 3);
  q.Push(Time::Ns(15), 4);
  EXPECT_EQ(q.Pop().payload, 4);
  EXPECT_EQ(q.Pop().payload, 2);
  auto last = q.Pop();
  EXPECT_EQ(last.payload, 3);
  EXPECT_EQ(last.time, Time::Ns(20));
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, QueuesOnOneCounterNumberTheirEventsInOnePushOrder) {
  uint64_t seq = 0;
  EventQueue<int> a(&seq), b(&seq);
  a.Push(Time::Ns(5), 1);
  b.Push(Time::Ns(5), 2);
  a.Push(Time::Ns(5), 3);
  EXPECT_EQ(seq, 3u);
  auto first = a.Pop(), second = b.Pop(), third = a.Pop();
  // At equal times, (time, seq) orders events across queues as one queue would.
  EXPECT_LT(first.seq, second.seq);
  EXPECT_LT(second.seq, third.seq);
  EXPECT_EQ(third.payload, 3);
}

}  // namespace
}  // namespace stacksim::engine
