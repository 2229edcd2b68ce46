#include "sim/engine/link_sharing.h"

#include <algorithm>
#include <cmath>

namespace stacksim::engine {
namespace {

inline constexpr int kLinksPerRank = 2;  // kScaleUpLink, kScaleOutLink

}  // namespace

EqualShareLinks::EqualShareLinks(const trace::Trace& trace, uint64_t* event_seq)
    : trace_(trace),
      res_flows_(static_cast<size_t>(trace.rank_count()) * kLinksPerRank),
      rank_mark_(trace.rank_count(), 0),
      ends_(event_seq) {
  ends_.Reserve(1024);
}

void EqualShareLinks::Start(const CommPhase& phase, Time now) {
  const int32_t id = static_cast<int32_t>(flows_.size());
  Flow& f = flows_.emplace_back();
  flow_mark_.push_back(0);
  f.task = phase.task;
  f.transfer = phase.transfer;
  f.res_begin = static_cast<int32_t>(res_pool_.size());
  if (phase.links != kNoLinks && phase.transfer > Time::Zero()) {
    ++epoch_;
    auto add_rank = [&](trace::RankId r) {
      if (rank_mark_[r] == epoch_) return;
      rank_mark_[r] = epoch_;
      if (phase.links & kScaleUpLink) res_pool_.push_back(r * kLinksPerRank + 0);
      if (phase.links & kScaleOutLink) res_pool_.push_back(r * kLinksPerRank + 1);
    };
    for (trace::TaskId m : phase.members) add_rank(trace_.rank(m));
    if (trace_.kind(phase.task) == trace::TaskKind::kTransfer) add_rank(trace_.task(phase.task).transfer.dst);
  }
  f.res_count = static_cast<int32_t>(res_pool_.size()) - f.res_begin;
  if (f.res_count == 0) {
    ends_.Push(CheckedSum(now, f.transfer), FlowEnd{id, f.version});
  } else {
    JoinOrLeave(id, now, /*join=*/true);
  }
  DropStaleEnds();
}

void EqualShareLinks::DropStaleEnds() {
  while (!ends_.empty() && ends_.Top().payload.version != flows_[ends_.Top().payload.flow].version) ends_.Pop();
}

Time EqualShareLinks::NextCompletion() { return ends_.empty() ? Time::Max() : ends_.Top().time; }

uint64_t EqualShareLinks::NextCompletionOrder() { return ends_.empty() ? 0 : ends_.Top().seq + 1; }

void EqualShareLinks::AdvanceTo(Time t, std::vector<trace::TaskId>* done) {
  if (ends_.empty() || ends_.Top().time > t) return;
  const int32_t id = ends_.Pop().payload.flow;
  if (flows_[id].res_count > 0) JoinOrLeave(id, t, /*join=*/false);
  DropStaleEnds();
  done->push_back(flows_[id].task);
}

// Flows on the flow's busiest resource, the flow included once it has joined.
int32_t EqualShareLinks::ShareOf(const Flow& f) const {
  size_t share = 1;
  for (int32_t i = f.res_begin; i < f.res_begin + f.res_count; ++i) {
    share = std::max(share, res_flows_[res_pool_[i]].size());
  }
  return static_cast<int32_t>(share);
}

void EqualShareLinks::ScheduleEnd(int32_t id, Time now) {
  Flow& f = flows_[id];
  ++f.version;
  double left = std::max(0.0, f.remaining * f.share);
  // llround of a double past int64 is unspecified: saturate, and let the sum fail.
  const Time dt = left < 9.2e18 ? Time::Ns(std::llround(left)) : Time::Max();
  ends_.Push(CheckedSum(now, dt), FlowEnd{id, f.version});
}

// Flow `id` starts (join) or ends (leave) at `now`. Only flows sharing one of
// its resources can change rate; each is brought up to date at its old rate,
// then rescheduled if its rate changed.
void EqualShareLinks::JoinOrLeave(int32_t id, Time now, bool join) {
  Flow& f = flows_[id];
  ++epoch_;
  affected_.clear();
  flow_mark_[id] = epoch_;
  for (int32_t i = f.res_begin; i < f.res_begin + f.res_count; ++i) {
    for (int32_t other : res_flows_[res_pool_[i]]) {
      if (flow_mark_[other] == epoch_) continue;
      flow_mark_[other] = epoch_;
      affected_.push_back(other);
      Flow& o = flows_[other];
      o.remaining -= static_cast<double>((now - o.last_update).ns()) / o.share;
      o.last_update = now;
    }
  }
  for (int32_t i = f.res_begin; i < f.res_begin + f.res_count; ++i) {
    std::vector<int32_t>& on_resource = res_flows_[res_pool_[i]];
    if (join) {
      on_resource.push_back(id);
    } else {
      auto it = std::find(on_resource.begin(), on_resource.end(), id);
      *it = on_resource.back();
      on_resource.pop_back();
    }
  }
  for (int32_t other : affected_) {
    Flow& o = flows_[other];
    int32_t share = ShareOf(o);
    if (share == o.share) continue;
    o.share = share;
    ScheduleEnd(other, now);
  }
  if (join) {
    f.remaining = static_cast<double>(f.transfer.ns());
    f.last_update = now;
    f.share = ShareOf(f);
    ScheduleEnd(id, now);
  }
}

}  // namespace stacksim::engine
