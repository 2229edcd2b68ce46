// Replay speed of the discrete-event engine on a synthetic trace shaped like
// a training step: 16 ranks (4-way tensor x 4-way data parallel) with four
// streams each. Per layer and rank: two compute tasks around a tensor-parallel
// all-reduce; every 4th layer a data-parallel all-reduce on its own stream;
// every 8th layer a send to the next data-parallel rank, which the receiver's
// next layer waits for. Reports tasks/s as items_per_second.
#include <benchmark/benchmark.h>

#include <vector>

#include "sim/engine/engine.h"

namespace stacksim::engine {
namespace {

using trace::GroupId;
using trace::RankId;
using trace::Task;
using trace::TaskId;
using trace::TaskKind;

constexpr int kTp = 4;
constexpr int kDp = 4;
constexpr int kRanks = kTp * kDp;  // rank = dp * kTp + tp

trace::Trace SyntheticTrace(int64_t target_tasks) {
  trace::Trace t;
  t.SetRankCount(kRanks);
  t.InternName("task");
  t.InternLabel("bench");
  const auto compute = t.InternStream("compute");
  const auto tp_stream = t.InternStream("tp");
  const auto dp_stream = t.InternStream("dp");
  const auto pp_stream = t.InternStream("pp");

  std::vector<GroupId> tp_group(kDp), dp_group(kTp), pair(kRanks);
  for (int d = 0; d < kDp; ++d) {
    trace::CommGroup g{"tp", kTp, kTp, 1, {}};
    for (int k = 0; k < kTp; ++k) g.simulated.push_back(d * kTp + k);
    tp_group[d] = t.AddGroup(g);
  }
  for (int k = 0; k < kTp; ++k) {
    trace::CommGroup g{"dp", kDp, 1, kDp, {}};
    for (int d = 0; d < kDp; ++d) g.simulated.push_back(d * kTp + k);
    dp_group[k] = t.AddGroup(g);
  }
  for (RankId r = 0; r < kRanks; ++r) pair[r] = t.AddGroup({"pp", 2, 1, 2, {r, (r + kTp) % kRanks}});

  int32_t instance = 0;
  std::vector<TaskId> last(kRanks, -1), incoming(kRanks, -1);
  for (int layer = 0; static_cast<int64_t>(t.size()) < target_tasks; ++layer) {
    std::vector<TaskId> tp_ar(kRanks);
    for (RankId r = 0; r < kRanks; ++r) {
      Task c;
      c.kind = TaskKind::kCompute;
      c.rank = r;
      c.stream = compute;
      c.compute.flops = Flops{1e9 * (1 + (layer + r) % 3)};
      TaskId a = t.Add(c, {incoming[r]});
      incoming[r] = -1;
      Task ar;
      ar.kind = TaskKind::kCollective;
      ar.rank = r;
      ar.stream = tp_stream;
      ar.comm.bytes = Bytes{4e6};
      ar.comm.group = tp_group[r / kTp];
      ar.comm.instance = instance + r / kTp;
      tp_ar[r] = t.Add(ar, {a});
    }
    instance += kDp;
    for (RankId r = 0; r < kRanks; ++r) {
      Task c;
      c.kind = TaskKind::kCompute;
      c.rank = r;
      c.stream = compute;
      c.compute.flops = Flops{2e9};
      last[r] = t.Add(c, {tp_ar[r]});
    }
    if (layer % 4 == 3) {
      for (RankId r = 0; r < kRanks; ++r) {
        Task ar;
        ar.kind = TaskKind::kCollective;
        ar.rank = r;
        ar.stream = dp_stream;
        ar.comm.bytes = Bytes{64e6};
        ar.comm.group = dp_group[r % kTp];
        ar.comm.instance = instance + r % kTp;
        t.Add(ar, {last[r]});
      }
      instance += kTp;
    }
    if (layer % 8 == 7) {
      for (RankId r = 0; r < kRanks; ++r) {
        Task s;
        s.kind = TaskKind::kTransfer;
        s.rank = r;
        s.stream = pp_stream;
        s.transfer.dst = (r + kTp) % kRanks;
        s.transfer.bytes = Bytes{16e6};
        s.transfer.group = pair[r];
        incoming[s.transfer.dst] = t.Add(s, {last[r]});
      }
    }
  }
  return t;
}

void BM_Replay(benchmark::State& state) {
  trace::Trace t = SyntheticTrace(state.range(0));
  FixedCostModel cost(FlopRate{500e12});
  FixedNetworkModel network(Time::Us(5), Bandwidth{200e9});
  Engine engine(cost, network);
  for (auto _ : state) {
    ReplayResult r = engine.Replay(t);
    benchmark::DoNotOptimize(r.makespan);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(t.size()));
  state.counters["tasks"] = static_cast<double>(t.size());
}
BENCHMARK(BM_Replay)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// Trace::Check alone, which Replay runs first.
void BM_TraceCheck(benchmark::State& state) {
  trace::Trace t = SyntheticTrace(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(t.Check());
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(t.size()));
}
BENCHMARK(BM_TraceCheck)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace stacksim::engine

BENCHMARK_MAIN();
