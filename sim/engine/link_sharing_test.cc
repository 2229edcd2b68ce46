#include "sim/engine/link_sharing.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/engine/event_queue.h"

namespace stacksim::engine {
namespace {

using trace::RankId;
using trace::TaskId;
using trace::TaskKind;

// A trace of single-rank collectives and transfers, for their ranks only;
// Start gets each one's transfer time and links directly.
class Flows {
 public:
  explicit Flows(int ranks) : trace_(Ranks(ranks)) {}

  // A collective task on `rank` (its own instance), or a transfer to `dst`.
  TaskId Task(RankId rank, RankId dst = -1) {
    trace::Task t;
    t.kind = dst < 0 ? TaskKind::kCollective : TaskKind::kTransfer;
    t.rank = rank;
    t.comm.group = group_;
    t.transfer.dst = dst < 0 ? 0 : dst;
    t.transfer.group = group_;
    return trace_.Add(t, {});
  }

  // Starts `members` (the first one names the flow) for `ns` at full rate.
  void Start(std::vector<TaskId> members, int64_t ns, Time now, uint8_t links = kScaleOutLink) {
    session_.Start(CommPhase{members[0], members, Time::Ns(ns), links}, now);
  }

  // What AdvanceTo(t) gives.
  std::vector<TaskId> Advance(Time t) {
    std::vector<TaskId> done;
    session_.AdvanceTo(t, &done);
    return done;
  }

  // Every completion in order, as the engine would take them: (task, time).
  std::vector<std::pair<TaskId, int64_t>> Drain() {
    std::vector<std::pair<TaskId, int64_t>> out;
    for (Time t = session_.NextCompletion(); t != Time::Max(); t = session_.NextCompletion()) {
      std::vector<TaskId> done = Advance(t);
      EXPECT_EQ(done.size(), 1u);  // one at a time
      for (TaskId task : done) out.push_back({task, t.ns()});
    }
    return out;
  }

  uint64_t seq_ = 0;  // the engine's event counter
  trace::Trace trace_;
  trace::GroupId group_ = 0;  // the one group
  EqualShareLinks session_{trace_, &seq_};  // after trace_, which it reads when built

 private:
  static trace::Trace Ranks(int ranks) {
    trace::Trace t;
    t.SetRankCount(ranks);
    t.InternName("flow");
    t.InternLabel("test");
    t.InternStream("comm");
    trace::CommGroup g;
    g.name = "g";
    t.AddGroup(g);
    return t;
  }
};

using Done = std::vector<std::pair<TaskId, int64_t>>;

TEST(EqualShareLinks, TwoFlowsOnOneLinkFinishAtTheSharedRate) {
  Flows f(1);
  TaskId a = f.Task(0), b = f.Task(0);
  f.Start({a}, 1000, Time::Zero());
  f.Start({b}, 3000, Time::Zero());
  // Both at half rate: a's 1000 ns of work end at 2000, when b has done 1000
  // of its 3000 and runs the other 2000 alone.
  EXPECT_EQ(f.Drain(), (Done{{a, 2000}, {b, 4000}}));
  EXPECT_TRUE(f.session_.ContentionReport().empty());
}

TEST(EqualShareLinks, AFlowThatJoinsSlowsTheOneRunning) {
  Flows f(1);
  TaskId a = f.Task(0), b = f.Task(0);
  f.Start({a}, 1000, Time::Zero());
  EXPECT_EQ(f.session_.NextCompletion(), Time::Ns(1000));
  // At 400 a has 600 left; shared, it needs 1200 more: 1600. b has done 600
  // of its 1000 by then and runs the last 400 alone: 2000.
  f.Start({b}, 1000, Time::Ns(400));
  EXPECT_EQ(f.session_.NextCompletion(), Time::Ns(1600));
  EXPECT_EQ(f.Drain(), (Done{{a, 1600}, {b, 2000}}));
}

TEST(EqualShareLinks, SharedProgressRoundsToTheNearestNanosecondWhenRescheduled) {
  Flows f(1);
  TaskId a = f.Task(0), b = f.Task(0), c = f.Task(0);
  f.Start({a}, 7, Time::Zero());
  f.Start({b}, 7, Time::Zero());
  // At 1, a and b have 6.5 ns of work left; at a third each they end at
  // 1 + 19.5, rounded half away from zero: 21. c's 3 ns end at 1 + 9 = 10.
  f.Start({c}, 3, Time::Ns(1));
  EXPECT_EQ(f.session_.NextCompletion(), Time::Ns(10));
  // Then a and b have 6.5 - 9/3 = 3.5 left at half rate: 7 more, both at 17;
  // a was rescheduled first, so it ends first.
  EXPECT_EQ(f.Drain(), (Done{{c, 10}, {a, 17}, {b, 17}}));
}

TEST(EqualShareLinks, FlowsShareOnlyTheLinksOfTheRanksTheyUse) {
  Flows f(3);
  TaskId a = f.Task(0, /*dst=*/1), b = f.Task(1), c = f.Task(2), d = f.Task(2);
  f.Start({a}, 1000, Time::Zero());                   // ranks 0 and 1
  f.Start({b}, 1000, Time::Zero());                   // rank 1: shares with a
  f.Start({c}, 1000, Time::Zero(), kScaleUpLink);     // rank 2, scale-up
  f.Start({d}, 1000, Time::Zero(), kScaleOutLink);    // rank 2, scale-out: alone
  EXPECT_EQ(f.Drain(), (Done{{c, 1000}, {d, 1000}, {a, 2000}, {b, 2000}}));
}

TEST(EqualShareLinks, ACollectiveRunsAtTheRateOfItsBusiestRank) {
  Flows f(2);
  TaskId m0 = f.Task(0), m1 = f.Task(1), x = f.Task(1), y = f.Task(1);
  f.Start({x}, 3000, Time::Zero());
  f.Start({y}, 3000, Time::Zero());
  f.Start({m0, m1}, 1000, Time::Zero());  // rank 1 carries three flows
  // m0's 1000 ns at a third: 3000. x and y then have 2000 left at half rate.
  EXPECT_EQ(f.Drain(), (Done{{m0, 3000}, {x, 7000}, {y, 7000}}));
}

TEST(EqualShareLinks, AFlowWithoutLinksTakesItsTimeExactly) {
  Flows f(1);
  TaskId a = f.Task(0), b = f.Task(0);
  const int64_t long_ns = (int64_t{1} << 60) + 1;  // a double would round it
  f.Start({a}, long_ns, Time::Ns(5), kNoLinks);
  f.Start({b}, 10, Time::Ns(5), kNoLinks);
  EXPECT_EQ(f.Drain(), (Done{{b, 15}, {a, long_ns + 5}}));
}

TEST(EqualShareLinks, TiesWithQueuedEventsGoInTheOrderTheyWereScheduled) {
  Flows f(2);
  EventQueue<int> queue(&f.seq_);  // the engine's queue, on the same counter
  TaskId a = f.Task(0), b = f.Task(1);
  f.Start({a}, 100, Time::Zero());
  queue.Push(Time::Ns(100), 1);
  f.Start({b}, 50, Time::Ns(50));
  // a's end was scheduled before the queued event at the same time: it goes
  // first; b's, scheduled after it, goes after it.
  EXPECT_EQ(f.session_.NextCompletion(), Time::Ns(100));
  EXPECT_LE(f.session_.NextCompletionOrder(), queue.Top().seq);
  EXPECT_EQ(f.Advance(Time::Ns(100)), std::vector<TaskId>{a});
  EXPECT_EQ(f.session_.NextCompletion(), Time::Ns(100));
  EXPECT_GT(f.session_.NextCompletionOrder(), queue.Top().seq);
  EXPECT_EQ(f.Advance(Time::Ns(100)), std::vector<TaskId>{b});
}

TEST(EqualShareLinks, AdvanceToBeforeTheNextCompletionEndsNothing) {
  Flows f(1);
  TaskId a = f.Task(0);
  EXPECT_EQ(f.session_.NextCompletion(), Time::Max());
  EXPECT_EQ(f.session_.NextCompletionOrder(), 0u);  // none
  f.Start({a}, 100, Time::Zero());
  EXPECT_TRUE(f.Advance(Time::Ns(99)).empty());
  EXPECT_EQ(f.Drain(), (Done{{a, 100}}));
}

TEST(EqualShareLinks, AFlowMayEndAtTimeMax) {
  Flows f(1);
  TaskId a = f.Task(0);
  f.Start({a}, Time::Max().ns(), Time::Zero(), kNoLinks);
  EXPECT_EQ(f.session_.NextCompletion(), Time::Max());
  EXPECT_GT(f.session_.NextCompletionOrder(), 0u);  // a completion, not none
  EXPECT_EQ(f.Advance(Time::Max()), std::vector<TaskId>{a});
  EXPECT_EQ(f.session_.NextCompletionOrder(), 0u);
}

}  // namespace
}  // namespace stacksim::engine
