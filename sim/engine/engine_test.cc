#include "sim/engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace stacksim::engine {
namespace {

using trace::CollectiveKind;
using trace::GroupId;
using trace::RankId;
using trace::StreamId;
using trace::Task;
using trace::TaskId;
using trace::TaskKind;

// Rates chosen so numbers read directly in nanoseconds: at 1e15 FLOP/s,
// 1e6 FLOP take 1000 ns; at 1 GB/s one byte takes 1 ns.
constexpr FlopRate kRate{1e15};
constexpr Bandwidth kBandwidth{1e9};

// A small trace with two streams per rank ("compute", "comm").
class TraceBuilder {
 public:
  explicit TraceBuilder(int ranks) {
    trace_.SetRankCount(ranks);
    trace_.InternName("task");
    trace_.InternLabel("test");
    compute_ = trace_.InternStream("compute");
    comm_ = trace_.InternStream("comm");
  }

  StreamId compute() const { return compute_; }
  StreamId comm() const { return comm_; }

  GroupId Group(const std::string& name, std::vector<RankId> members) {
    trace::CommGroup g;
    g.name = name;
    g.size = static_cast<int>(members.size());
    g.simulated = std::move(members);
    return trace_.AddGroup(g);
  }

  // A compute task of `ns` nanoseconds under kRate.
  TaskId Compute(RankId rank, StreamId stream, int64_t ns, std::vector<TaskId> deps = {}) {
    Task t;
    t.kind = TaskKind::kCompute;
    t.rank = rank;
    t.stream = stream;
    t.compute.flops = Flops{static_cast<double>(ns) * 1e6};
    return trace_.Add(t, deps);
  }

  TaskId Delay(RankId rank, StreamId stream, int64_t ns, std::vector<TaskId> deps = {}) {
    Task t;
    t.kind = TaskKind::kDelay;
    t.rank = rank;
    t.stream = stream;
    t.duration = Time::Ns(ns);
    return trace_.Add(t, deps);
  }

  TaskId Collective(RankId rank, StreamId stream, GroupId group, int32_t instance, double bytes,
                    std::vector<TaskId> deps = {}, CollectiveKind kind = CollectiveKind::kAllReduce) {
    Task t;
    t.kind = TaskKind::kCollective;
    t.rank = rank;
    t.stream = stream;
    t.comm.kind = kind;
    t.comm.bytes = Bytes{bytes};
    t.comm.group = group;
    t.comm.instance = instance;
    return trace_.Add(t, deps);
  }

  TaskId Send(RankId rank, StreamId stream, RankId dst, GroupId pair, double bytes, std::vector<TaskId> deps = {}) {
    Task t;
    t.kind = TaskKind::kTransfer;
    t.rank = rank;
    t.stream = stream;
    t.transfer.dst = dst;
    t.transfer.bytes = Bytes{bytes};
    t.transfer.group = pair;
    return trace_.Add(t, deps);
  }

  trace::Trace& trace() { return trace_; }

 private:
  trace::Trace trace_;
  StreamId compute_ = 0;
  StreamId comm_ = 0;
};

// alpha + bytes at 1 GB/s; groups named "nvlink*" use the scale-up link, the
// rest scale-out; "ring" for messages of 1000 bytes or more, "tree" below.
class LinkByGroupNetwork : public NetworkModel {
 public:
  explicit LinkByGroupNetwork(Time alpha) : alpha_(alpha) {}
  CommCost Collective(const trace::CommOp& op, const trace::CommGroup& group) const override {
    return Cost(op.bytes, group);
  }
  CommCost Transfer(const trace::TransferOp& op, const trace::CommGroup& pair) const override {
    return Cost(op.bytes, pair);
  }
  std::string name() const override { return "link-by-group"; }

 private:
  CommCost Cost(Bytes bytes, const trace::CommGroup& group) const {
    uint8_t links = group.name.rfind("nvlink", 0) == 0 ? kScaleUpLink : kScaleOutLink;
    return {alpha_, TransferTime(bytes, kBandwidth), links, bytes.value >= 1000 ? "ring" : "tree"};
  }
  Time alpha_;
};

ReplayResult ReplayFixed(const trace::Trace& trace, Time alpha = Time::Zero()) {
  FixedCostModel cost(kRate);
  FixedNetworkModel network(alpha, kBandwidth);
  return Engine(cost, network).Replay(trace);
}

// Compute takes twice as long when it starts beside a collective.
class SlowBesideCommCost : public FixedCostModel {
 public:
  SlowBesideCommCost() : FixedCostModel(kRate) {}
  Time ComputeTimeBesideComm(const trace::ComputeOp& op, trace::RankId rank) const override {
    return ComputeTimeOnRank(op, rank) * 2.0;
  }
};

TEST(Engine, ComputeThatStartsBesideACollectiveTakesTheContendedTime) {
  TraceBuilder b(2);
  GroupId g = b.Group("dp", {0, 1});
  // Rank 0: the collective runs 0-10000 ns on the comm stream; compute that
  // starts at 0 and at 1000 is beside it, compute starting at 12000 is not.
  TaskId c0 = b.Collective(0, b.comm(), g, 0, 10000);
  b.Collective(1, b.comm(), g, 0, 10000);
  TaskId a = b.Compute(0, b.compute(), 1000);
  TaskId after = b.Compute(0, b.compute(), 1000, {c0});
  TaskId other = b.Compute(1, b.compute(), 500, {c0});
  SlowBesideCommCost cost;
  FixedNetworkModel network(Time::Zero(), kBandwidth);
  ReplayResult r = Engine(cost, network).Replay(b.trace());
  EXPECT_EQ(r.timings[c0].end, Time::Ns(10000));
  EXPECT_EQ(r.timings[a].end - r.timings[a].start, Time::Ns(2000));         // beside the collective
  EXPECT_EQ(r.timings[after].end - r.timings[after].start, Time::Ns(1000));  // after it ended
  EXPECT_EQ(r.timings[other].end - r.timings[other].start, Time::Ns(500));
  // The default cost model takes nothing from compute beside communication.
  ReplayResult plain = ReplayFixed(b.trace());
  EXPECT_EQ(plain.timings[a].end - plain.timings[a].start, Time::Ns(1000));
}

TEST(Engine, TransfersTakeNoSmsFromCompute) {
  TraceBuilder b(2);
  GroupId pair = b.Group("pp", {0, 1});
  b.Send(0, b.comm(), 1, pair, 10000);
  TaskId a = b.Compute(0, b.compute(), 1000);
  SlowBesideCommCost cost;
  FixedNetworkModel network(Time::Zero(), kBandwidth);
  ReplayResult r = Engine(cost, network).Replay(b.trace());
  EXPECT_EQ(r.timings[a].end - r.timings[a].start, Time::Ns(1000));
}

TEST(Engine, ChainOnOneStreamSumsDurations) {
  TraceBuilder b(1);
  TaskId a = b.Compute(0, b.compute(), 1000);
  TaskId c = b.Compute(0, b.compute(), 2000);
  TaskId d = b.Delay(0, b.compute(), 3000);
  ReplayResult r = ReplayFixed(b.trace());
  EXPECT_EQ(r.makespan, Time::Ns(6000));
  EXPECT_EQ(r.timings[a].end, Time::Ns(1000));
  EXPECT_EQ(r.timings[c].ready, Time::Ns(1000));
  EXPECT_EQ(r.timings[c].start, Time::Ns(1000));
  EXPECT_EQ(r.timings[c].end, Time::Ns(3000));
  EXPECT_EQ(r.timings[d].start, Time::Ns(3000));
  EXPECT_EQ(r.contention[c], Time::Zero());
}

TEST(Engine, EmptyTraceHasZeroMakespan) {
  TraceBuilder b(1);
  ReplayResult r = ReplayFixed(b.trace());
  EXPECT_EQ(r.makespan, Time::Zero());
  EXPECT_TRUE(r.timings.empty());
}

TEST(Engine, StreamKeepsAddedOrderEvenWhenLaterTaskIsReadyFirst) {
  TraceBuilder b(1);
  TaskId slow = b.Delay(0, b.compute(), 5000);
  TaskId waits = b.Delay(0, b.comm(), 1000, {slow});
  // No dependencies of its own, but it was added after `waits` on the same stream.
  TaskId free = b.Delay(0, b.comm(), 1000);
  ReplayResult r = ReplayFixed(b.trace());
  EXPECT_EQ(r.timings[waits].start, Time::Ns(5000));
  EXPECT_EQ(r.timings[free].ready, Time::Ns(6000));
  EXPECT_EQ(r.timings[free].start, Time::Ns(6000));
  EXPECT_EQ(r.timings[free].end, Time::Ns(7000));
  EXPECT_EQ(r.makespan, Time::Ns(7000));
}

TEST(Engine, CrossStreamAndCrossRankDependenciesWaitForTheLatest) {
  TraceBuilder b(2);
  TaskId a = b.Compute(0, b.compute(), 2000);
  TaskId c = b.Compute(1, b.compute(), 3500);
  TaskId both = b.Compute(0, b.comm(), 100, {a, c});
  TaskId after_a = b.Compute(1, b.comm(), 100, {a});
  ReplayResult r = ReplayFixed(b.trace());
  EXPECT_EQ(r.timings[both].ready, Time::Ns(3500));
  EXPECT_EQ(r.timings[both].end, Time::Ns(3600));
  EXPECT_EQ(r.timings[after_a].start, Time::Ns(2000));
  EXPECT_EQ(r.timings[after_a].end, Time::Ns(2100));
}

TEST(Engine, CollectiveWaitsForSlowestMemberAndAllMembersEndTogether) {
  TraceBuilder b(3);
  GroupId dp = b.Group("dp", {0, 1, 2});
  std::vector<TaskId> ar;
  const int64_t before[3] = {1000, 3000, 2000};
  for (RankId r = 0; r < 3; ++r) {
    TaskId w = b.Delay(r, b.compute(), before[r]);
    ar.push_back(b.Collective(r, b.compute(), dp, /*instance=*/7, 4000, {w}));
  }
  TaskId next = b.Delay(0, b.compute(), 10);
  ReplayResult r = ReplayFixed(b.trace(), Time::Ns(500));
  for (RankId k = 0; k < 3; ++k) {
    EXPECT_EQ(r.timings[ar[k]].ready, Time::Ns(before[k]));
    EXPECT_EQ(r.timings[ar[k]].start, Time::Ns(3000));
    EXPECT_EQ(r.timings[ar[k]].end, Time::Ns(3000 + 500 + 4000));
    // One flow across three ranks shares nothing with itself.
    EXPECT_EQ(r.contention[ar[k]], Time::Zero());
  }
  // The member's stream stays blocked until the collective ends.
  EXPECT_EQ(r.timings[next].start, Time::Ns(7500));
  EXPECT_EQ(r.makespan, Time::Ns(7510));
}

TEST(Engine, SingleMemberCollectiveStartsWhenItIsReady) {
  TraceBuilder b(2);
  GroupId g = b.Group("dp", {0, 1});
  TaskId w = b.Delay(1, b.compute(), 1200);
  TaskId ar = b.Collective(1, b.comm(), g, /*instance=*/-1, 800, {w});
  ReplayResult r = ReplayFixed(b.trace(), Time::Ns(300));
  EXPECT_EQ(r.timings[ar].start, Time::Ns(1200));
  EXPECT_EQ(r.timings[ar].end, Time::Ns(1200 + 300 + 800));
}

TEST(Engine, TwoEqualTransfersOnOneLinkTakeTwiceAsLong) {
  TraceBuilder b(1);
  GroupId g = b.Group("dp", {0});
  TaskId x = b.Collective(0, b.compute(), g, -1, 1000);
  TaskId y = b.Collective(0, b.comm(), g, -1, 1000);
  ReplayResult r = ReplayFixed(b.trace(), Time::Ns(100));
  // Latency is not shared: both transfer phases run from 100 to 100 + 2 * 1000.
  EXPECT_EQ(r.timings[x].end, Time::Ns(2100));
  EXPECT_EQ(r.timings[y].end, Time::Ns(2100));
  EXPECT_EQ(r.contention[x], Time::Ns(1000));
  EXPECT_EQ(r.contention[y], Time::Ns(1000));
}

TEST(Engine, DifferentLinksAndDifferentRanksDoNotInterfere) {
  TraceBuilder b(2);
  GroupId up = b.Group("nvlink tp", {0});
  GroupId out = b.Group("dp", {0});
  GroupId out1 = b.Group("dp", {1});
  TaskId x = b.Collective(0, b.compute(), up, -1, 1000);
  TaskId y = b.Collective(0, b.comm(), out, -1, 1000);
  TaskId z = b.Collective(1, b.comm(), out1, -1, 1000);
  FixedCostModel cost(kRate);
  LinkByGroupNetwork network(Time::Ns(50));
  ReplayResult r = Engine(cost, network).Replay(b.trace());
  EXPECT_EQ(r.timings[x].end, Time::Ns(1050));
  EXPECT_EQ(r.timings[y].end, Time::Ns(1050));
  EXPECT_EQ(r.timings[z].end, Time::Ns(1050));
  EXPECT_EQ(r.contention[y], Time::Zero());
}

TEST(Engine, TransferJoiningMidwayGetsPiecewiseTime) {
  TraceBuilder b(1);
  GroupId g = b.Group("dp", {0});
  TaskId first = b.Collective(0, b.compute(), g, -1, 1000);
  TaskId w = b.Delay(0, b.comm(), 500);
  TaskId second = b.Collective(0, b.comm(), g, -1, 1000, {w});
  ReplayResult r = ReplayFixed(b.trace());
  // 0-500: first alone (500 done). 500-1500: both at half rate, first
  // finishes its last 500; second has 500 done. 1500-2000: second alone.
  EXPECT_EQ(r.timings[first].end, Time::Ns(1500));
  EXPECT_EQ(r.timings[second].start, Time::Ns(500));
  EXPECT_EQ(r.timings[second].end, Time::Ns(2000));
}

TEST(Engine, ContentionRecordsTimeLostToSharingNotLatency) {
  TraceBuilder b(1);
  GroupId g = b.Group("dp", {0});
  TaskId first = b.Collective(0, b.compute(), g, -1, 1000);
  TaskId w = b.Delay(0, b.comm(), 800);
  TaskId second = b.Collective(0, b.comm(), g, -1, 1000, {w});
  ReplayResult r = ReplayFixed(b.trace(), Time::Ns(300));
  // first: latency to 300, alone until 1100 (800 done), then half rate for its
  // last 200 -> 1500. second: latency 800-1100, half rate to 1500 (200 done),
  // alone for 800 -> 2300.
  EXPECT_EQ(r.timings[first].end, Time::Ns(1500));
  EXPECT_EQ(r.timings[second].end, Time::Ns(2300));
  EXPECT_EQ(r.contention[first], Time::Ns(200));
  EXPECT_EQ(r.contention[second], Time::Ns(200));
  EXPECT_EQ(r.contention[w], Time::Zero());
}

TEST(Engine, FlowRateIsSetByItsBusiestResource) {
  TraceBuilder b(2);
  GroupId pair = b.Group("dp", {0, 1});
  GroupId solo = b.Group("dp", {1});
  TaskId c0 = b.Collective(0, b.comm(), pair, /*instance=*/0, 2000);
  TaskId c1 = b.Collective(1, b.comm(), pair, /*instance=*/0, 2000);
  TaskId s = b.Collective(1, b.compute(), solo, -1, 1000);
  ReplayResult r = ReplayFixed(b.trace());
  // Rank 1 carries both flows, so both run at half rate although rank 0's
  // link is free; s ends at 2000, then the collective's last 1000 runs alone.
  EXPECT_EQ(r.timings[s].end, Time::Ns(2000));
  EXPECT_EQ(r.timings[c0].end, Time::Ns(3000));
  EXPECT_EQ(r.timings[c1].end, Time::Ns(3000));
  EXPECT_EQ(r.contention[c0], Time::Ns(1000));
}

TEST(Engine, TransferDelaysReceiversDependentTask) {
  TraceBuilder b(2);
  GroupId pair = b.Group("pp 0-1", {0, 1});
  TaskId fwd = b.Compute(0, b.compute(), 1000);
  TaskId send = b.Send(0, b.comm(), /*dst=*/1, pair, 3000, {fwd});
  TaskId local = b.Compute(1, b.compute(), 400);
  TaskId recv_use = b.Compute(1, b.compute(), 500, {send});
  ReplayResult r = ReplayFixed(b.trace(), Time::Ns(200));
  EXPECT_EQ(r.timings[send].start, Time::Ns(1000));
  EXPECT_EQ(r.timings[send].end, Time::Ns(1000 + 200 + 3000));
  EXPECT_EQ(r.timings[local].end, Time::Ns(400));
  EXPECT_EQ(r.timings[recv_use].ready, Time::Ns(4200));
  EXPECT_EQ(r.timings[recv_use].end, Time::Ns(4700));
}

TEST(Engine, TransferSharesTheReceiversLink) {
  TraceBuilder b(2);
  GroupId pair = b.Group("pp 0-1", {0, 1});
  GroupId solo = b.Group("dp", {1});
  TaskId send = b.Send(0, b.comm(), /*dst=*/1, pair, 1000);
  TaskId on_receiver = b.Collective(1, b.comm(), solo, -1, 1000);
  ReplayResult r = ReplayFixed(b.trace());
  EXPECT_EQ(r.timings[send].end, Time::Ns(2000));
  EXPECT_EQ(r.timings[on_receiver].end, Time::Ns(2000));
}

TEST(Engine, ReportsEachAlgorithmPerCollectiveAndGroupOnce) {
  TraceBuilder b(2);
  GroupId dp = b.Group("dp", {0, 1});
  GroupId tp = b.Group("nvlink tp", {0});
  for (int32_t inst = 0; inst < 2; ++inst) {
    b.Collective(0, b.comm(), dp, inst, 2000);
    b.Collective(1, b.comm(), dp, inst, 2000);
  }
  b.Collective(0, b.comm(), dp, 5, 10);
  b.Collective(1, b.comm(), dp, 5, 10);
  b.Collective(0, b.compute(), tp, -1, 4000, {}, CollectiveKind::kAllGather);
  b.Collective(0, b.compute(), tp, -1, 4000, {}, CollectiveKind::kAllGather);
  FixedCostModel cost(kRate);
  LinkByGroupNetwork network(Time::Zero());
  ReplayResult r = Engine(cost, network).Replay(b.trace());
  // In the order first started: dp instance 0 (tasks 0, 1) starts at time 0
  // before the all-gather (task 6); the small all-reduce queues behind the others.
  EXPECT_EQ(r.algorithms, (std::vector<std::string>{"all-reduce dp: ring", "all-gather nvlink tp: ring",
                                                    "all-reduce dp: tree"}));
}

TEST(Engine, LinkSharingEndsTieWithQueuedEventsInTheOrderTheyWereScheduled) {
  // Without a session of the network model's own, a transfer that ends when a
  // compute task does ends after it if its end was scheduled later (a
  // flow-level session's completions would come first). The collectives they
  // release are reported in the order they start, which shows which came first.
  for (bool compute_first : {true, false}) {
    TraceBuilder b(1);
    GroupId g = b.Group("a", {0});
    GroupId h = b.Group("b", {0});
    TaskId c = -1;
    if (compute_first) c = b.Compute(0, b.compute(), 1000);
    TaskId x = b.Collective(0, b.comm(), g, -1, 1000);
    if (!compute_first) c = b.Compute(0, b.compute(), 1000);
    b.Collective(0, b.compute(), h, -1, 10, {c});   // "tree"
    b.Collective(0, b.comm(), h, -1, 2000, {x});    // "ring"
    FixedCostModel cost(kRate);
    LinkByGroupNetwork network(Time::Zero());
    ReplayResult r = Engine(cost, network).Replay(b.trace());
    EXPECT_EQ(r.timings[x].end, Time::Ns(1000));
    EXPECT_EQ(r.timings[c].end, Time::Ns(1000));
    std::vector<std::string> expected{"all-reduce a: ring", "all-reduce b: tree", "all-reduce b: ring"};
    if (!compute_first) std::swap(expected[1], expected[2]);
    EXPECT_EQ(r.algorithms, expected) << compute_first;
  }
}

TEST(Engine, ATransferMayEndAtTheLastRepresentableTime) {
  // 1e30 bytes at 1 GB/s saturate Time: the transfer, started at 0, ends at
  // Time::Max() like any event there.
  TraceBuilder b(1);
  GroupId g = b.Group("a", {0});
  TaskId x = b.Collective(0, b.comm(), g, -1, 1e30);
  ReplayResult r = ReplayFixed(b.trace());
  EXPECT_EQ(r.timings[x].end, Time::Max());
  EXPECT_EQ(r.makespan, Time::Max());
}

TEST(Engine, DeadlockThrowsAndNamesTheStuckTasks) {
  TraceBuilder b(2);
  GroupId dp = b.Group("dp", {0, 1});
  b.Collective(0, b.comm(), dp, /*instance=*/1, 100);  // task 0
  b.Collective(0, b.comm(), dp, /*instance=*/2, 100);  // task 1
  b.Collective(1, b.comm(), dp, /*instance=*/2, 100);  // task 2
  b.Collective(1, b.comm(), dp, /*instance=*/1, 100);  // task 3: behind task 2
  try {
    ReplayFixed(b.trace());
    FAIL() << "expected a deadlock";
  } catch (const std::logic_error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("deadlock"), std::string::npos) << msg;
    EXPECT_NE(msg.find("task 0 "), std::string::npos) << msg;
    EXPECT_NE(msg.find("instance 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("task 3 "), std::string::npos) << msg;
  }
}

TEST(Engine, InvalidTraceThrows) {
  TraceBuilder b(2);
  b.Compute(5, b.compute(), 100);  // rank out of range
  EXPECT_THROW(ReplayFixed(b.trace()), std::logic_error);
}

TEST(Engine, ReplayIsDeterministicAndEnginesAreIndependent) {
  // A few hundred tasks with collectives, sends and shared links, whose
  // timings depend on the order of many same-time events.
  TraceBuilder b(4);
  GroupId all = b.Group("dp", {0, 1, 2, 3});
  GroupId pair = b.Group("pp", {0, 1});
  int32_t instance = 0;
  std::vector<TaskId> last(4, -1);
  for (int step = 0; step < 50; ++step) {
    for (RankId k = 0; k < 4; ++k) last[k] = b.Compute(k, b.compute(), 100 * (1 + (step * 7 + k * 3) % 5));
    for (RankId k = 0; k < 4; ++k) b.Collective(k, b.comm(), all, instance, 300 + 10 * step, {last[k]});
    ++instance;
    b.Send(0, b.compute(), 1, pair, 250, {last[0]});
  }
  FixedCostModel cost(kRate);
  FixedNetworkModel network(Time::Ns(20), kBandwidth);
  Engine one(cost, network);
  Engine two(cost, network);
  ReplayResult a = one.Replay(b.trace());
  ReplayResult c = two.Replay(b.trace());
  ReplayResult d = one.Replay(b.trace());
  ASSERT_EQ(a.timings.size(), b.trace().size());
  for (size_t i = 0; i < a.timings.size(); ++i) {
    EXPECT_EQ(a.timings[i].start, c.timings[i].start) << i;
    EXPECT_EQ(a.timings[i].end, c.timings[i].end) << i;
    EXPECT_EQ(a.timings[i].end, d.timings[i].end) << i;
    EXPECT_EQ(a.contention[i], d.contention[i]) << i;
  }
  EXPECT_EQ(a.makespan, c.makespan);
  EXPECT_GT(a.makespan, Time::Zero());
}

// A flow-level fake: every started communication is one flow of `bytes` ns
// of work (1 GB/s) on a single link shared equally by all active flows.
class OneLinkSession : public FlowSession {
 public:
  explicit OneLinkSession(const trace::Trace& trace) : trace_(trace) {}
  void Start(const CommPhase& phase, Time now) override {
    Update(now);
    const Task& t = trace_.task(phase.task);
    double work = t.kind == TaskKind::kTransfer ? t.transfer.bytes.value : t.comm.bytes.value;
    flows_.push_back({phase.task, work});
    started_.push_back(phase.task);
  }
  Time NextCompletion() override {
    if (flows_.empty()) return Time::Max();
    double least = flows_.front().left;
    for (const Flow& f : flows_) least = std::min(least, f.left);
    return now_ + Time::Ns(std::llround(least * static_cast<double>(flows_.size())));
  }
  void AdvanceTo(Time t, std::vector<TaskId>* done) override {
    Update(t);
    for (size_t i = 0; i < flows_.size();) {
      if (flows_[i].left <= 0.5) {
        done->push_back(flows_[i].task);
        flows_.erase(flows_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }
  std::vector<std::string> ContentionReport() const override { return {"the one link"}; }
  std::vector<TaskId> started_;

 private:
  struct Flow {
    TaskId task;
    double left;  // ns of work at full rate
  };
  void Update(Time now) {
    if (!flows_.empty()) {
      double dt = static_cast<double>((now - now_).ns()) / static_cast<double>(flows_.size());
      for (Flow& f : flows_) f.left -= dt;
    }
    now_ = now;
  }
  const trace::Trace& trace_;
  std::vector<Flow> flows_;
  Time now_;
};

// FixedNetworkModel's costs, bandwidth shared by OneLinkSession.
class OneLinkNetwork : public FixedNetworkModel {
 public:
  explicit OneLinkNetwork(Time alpha) : FixedNetworkModel(alpha, kBandwidth) {}
  std::unique_ptr<FlowSession> StartSession(const trace::Trace& trace) const override {
    return std::make_unique<OneLinkSession>(trace);
  }
};

TEST(Engine, FlowSessionSharesBandwidthBetweenRanksThatDoNotShareLinks) {
  // Two single-rank collectives on different ranks: the engine's own link
  // sharing keeps them apart, the session's one link makes them share.
  TraceBuilder b(2);
  GroupId g0 = b.Group("a", {0});
  GroupId g1 = b.Group("b", {1});
  TaskId x = b.Collective(0, b.comm(), g0, -1, 1000);
  TaskId y = b.Collective(1, b.comm(), g1, -1, 3000);
  TaskId after = b.Compute(0, b.comm(), 500, {x});
  FixedCostModel cost(kRate);
  OneLinkNetwork network(Time::Ns(100));
  ReplayResult r = Engine(cost, network).Replay(b.trace());
  // Both flows start at 100 at half rate; x's 1000 ns of work end at 2100,
  // when y has 2000 left, which it then runs alone.
  EXPECT_EQ(r.timings[x].end, Time::Ns(2100));
  EXPECT_EQ(r.timings[y].end, Time::Ns(4100));
  EXPECT_EQ(r.contention[x], Time::Ns(1000));
  EXPECT_EQ(r.contention[y], Time::Ns(1000));
  EXPECT_EQ(r.timings[after].start, Time::Ns(2100));
  EXPECT_EQ(r.makespan, Time::Ns(4100));
  ASSERT_EQ(r.bottlenecks.size(), 1u);
  EXPECT_EQ(r.bottlenecks[0], "the one link");
  // Without a session the two ranks' links are separate: no contention.
  ReplayResult plain = ReplayFixed(b.trace(), Time::Ns(100));
  EXPECT_EQ(plain.timings[y].end, Time::Ns(3100));
  EXPECT_TRUE(plain.bottlenecks.empty());
}

TEST(Engine, FlowSessionCompletionsComeBeforeQueueEventsAtTheSameTime) {
  // x's flow ends at 1000 exactly when a compute task ends; both release the
  // next task, which must see x as finished at 1000.
  TraceBuilder b(1);
  GroupId g = b.Group("a", {0});
  TaskId x = b.Collective(0, b.comm(), g, -1, 1000);
  TaskId c = b.Compute(0, b.compute(), 1000);
  TaskId z = b.Compute(0, b.compute(), 10, {x});
  TaskId s = b.Send(0, b.comm(), 0, g, 200, {c});
  FixedCostModel cost(kRate);
  OneLinkNetwork network(Time::Zero());
  ReplayResult r = Engine(cost, network).Replay(b.trace());
  EXPECT_EQ(r.timings[x].end, Time::Ns(1000));
  EXPECT_EQ(r.timings[z].start, Time::Ns(1000));
  EXPECT_EQ(r.timings[s].start, Time::Ns(1000));
  EXPECT_EQ(r.timings[s].end, Time::Ns(1200));
  EXPECT_EQ(r.contention[s], Time::Zero());
}

}  // namespace
}  // namespace stacksim::engine
