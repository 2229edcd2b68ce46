#include "sim/chakra/chakra_import.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "sim/chakra/chakra_group_table.h"
#include "sim/chakra/chakra_node_view.h"
#include "sim/util/error.h"

namespace stacksim::chakra {
namespace {

struct Ref {  // a node of one rank
  int rank;
  int index;
  bool operator<(const Ref& o) const { return std::tie(rank, index) < std::tie(o.rank, o.index); }
};

using trace::CollectiveKind;
using trace::Task;
using trace::TaskId;
using trace::TaskKind;

}  // namespace

trace::Trace ImportChakraGraphs(const std::vector<RankGraph>& inputs, const ImportOptions& options) {
  const int ranks = static_cast<int>(inputs.size());
  if (ranks == 0) throw InputError("", "", "no Chakra files");
  std::vector<std::vector<ImportNode>> nodes(ranks);
  std::vector<std::map<int64_t, int>> by_id(ranks);
  for (int r = 0; r < ranks; ++r) {
    const std::string& file = inputs[r].file;
    for (const ChakraNode& n : inputs[r].graph.nodes) {
      ImportNode node = ViewNode(n);
      if (node.type == kMetadataNode) continue;
      if (!by_id[r].emplace(node.id, static_cast<int>(nodes[r].size())).second) {
        throw InputError(file, node.where, "duplicate node id");
      }
      nodes[r].push_back(std::move(node));
    }
    for (const ImportNode& node : nodes[r]) {
      for (int64_t d : node.deps) {
        if (!by_id[r].count(d)) throw InputError(file, node.where, "dependency on unknown node " + std::to_string(d));
      }
      switch (node.type) {
        case kCompNode: case kCollNode: case kSendNode: case kRecvNode: case kMemLoadNode: case kMemStoreNode:
          break;
        default:
          throw InputError(file, node.where + ".type",
                           std::string("unsupported node type ") + NodeTypeName(node.type) + " (" +
                               std::to_string(node.type) + ")");
      }
    }
  }

  // Receives: each matches the next unmatched send with the same (src, dst, tag).
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::queue<Ref>> sends;
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < static_cast<int>(nodes[r].size()); ++i) {
      const ImportNode& node = nodes[r][i];
      if (node.type != kSendNode) continue;
      NodeView v(node, inputs[r].file);
      int64_t src = v.IntOr("comm_src", r), dst = v.Int("comm_dst");
      if (src != r) v.Fail("comm_src " + std::to_string(src) + " is not this file's rank " + std::to_string(r));
      if (dst < 0 || dst >= ranks) v.Fail("comm_dst " + std::to_string(dst) + " out of range");
      sends[{src, dst, v.IntOr("comm_tag", 0)}].push({r, i});
    }
  }
  std::map<Ref, Ref> recv_send;  // receive -> its send
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < static_cast<int>(nodes[r].size()); ++i) {
      const ImportNode& node = nodes[r][i];
      if (node.type != kRecvNode) continue;
      NodeView v(node, inputs[r].file);
      int64_t src = v.Int("comm_src"), dst = v.IntOr("comm_dst", r);
      if (dst != r) v.Fail("comm_dst " + std::to_string(dst) + " is not this file's rank " + std::to_string(r));
      auto it = sends.find({src, dst, v.IntOr("comm_tag", 0)});
      if (it == sends.end() || it->second.empty()) {
        v.Fail("no send matches this receive (comm_src " + std::to_string(src) + ", comm_tag " +
               std::to_string(v.IntOr("comm_tag", 0)) + ")");
      }
      recv_send[{r, i}] = it->second.front();
      it->second.pop();
    }
  }

  // Order: a topological order of all ranks' nodes (dependencies, receive
  // after send, and each stream in file order), smallest (id, rank) first so
  // that a stacksim export comes back in its original task order.
  auto stream_of = [&](const ImportNode& node, const std::string& file) {
    NodeView v(node, file);
    switch (node.type) {
      case kCollNode: return v.String("stacksim_stream", "comm");
      case kSendNode: return v.String("stacksim_stream", "send");
      case kMemLoadNode: case kMemStoreNode: return v.String("stacksim_stream", "memory");
      default: return v.String("stacksim_stream", "compute");
    }
  };
  std::map<Ref, std::vector<Ref>> users;
  std::map<Ref, int> waiting;
  for (int r = 0; r < ranks; ++r) {
    std::map<std::string, int> last;
    for (int i = 0; i < static_cast<int>(nodes[r].size()); ++i) {
      const ImportNode& node = nodes[r][i];
      Ref me{r, i};
      std::set<Ref> before;
      for (int64_t d : node.deps) before.insert({r, by_id[r][d]});
      if (node.type == kRecvNode) {
        before.insert(recv_send[me]);
      } else {
        auto [it, first] = last.try_emplace(stream_of(node, inputs[r].file), i);
        if (!first) before.insert({r, std::exchange(it->second, i)});
      }
      before.erase(me);
      waiting[me] = static_cast<int>(before.size());
      for (const Ref& b : before) users[b].push_back(me);
    }
  }
  // A receive sorts with its send: it resolves as soon as the send is added.
  auto key = [&](const Ref& a) {
    auto it = recv_send.find(a);
    const Ref& k = it == recv_send.end() ? a : it->second;
    return std::make_tuple(nodes[k.rank][k.index].id, k.rank, a.rank);
  };
  auto later = [&](const Ref& a, const Ref& b) { return key(a) > key(b); };
  std::priority_queue<Ref, std::vector<Ref>, decltype(later)> ready(later);
  for (const auto& [ref, count] : waiting) if (count == 0) ready.push(ref);

  trace::Trace t;
  t.SetRankCount(ranks);
  GroupTable groups(t, ranks, std::max(options.ranks_per_node, 1));
  std::map<Ref, std::vector<TaskId>> done;  // node -> the tasks that stand for its completion
  std::map<std::pair<trace::GroupId, int>, int> call_count;  // (group, rank) -> collectives so far
  std::map<std::pair<trace::GroupId, int>, int32_t> order_instance;  // (group, k-th call) -> instance
  std::map<int64_t, int32_t> instance_of;  // stacksim_instance -> instance
  int32_t next_instance = 0;
  size_t emitted = 0;
  while (!ready.empty()) {
    Ref me = ready.top();
    ready.pop();
    ++emitted;
    const ImportNode& node = nodes[me.rank][me.index];
    const std::string& file = inputs[me.rank].file;
    NodeView v(node, file);
    std::vector<TaskId> deps;
    for (int64_t d : node.deps) {
      for (TaskId x : done[{me.rank, by_id[me.rank][d]}]) deps.push_back(x);
    }
    if (node.type == kRecvNode) {
      for (TaskId x : done[recv_send[me]]) deps.push_back(x);
    }
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());

    if (node.type == kRecvNode) {
      done[me] = deps;  // a receive is its send's arrival: no task of its own
    } else {
      Task task;
      task.rank = me.rank;
      task.name = t.InternName(node.name);
      task.stream = t.InternStream(stream_of(node, file));
      task.layer = static_cast<int32_t>(v.IntOr("stacksim_layer", -1));
      task.micro_batch = static_cast<int32_t>(v.IntOr("stacksim_micro_batch", -1));
      Time recorded = v.Has("stacksim_duration_ns") ? Time::Ns(v.Int("stacksim_duration_ns"))
                                                    : Time::Ns(node.duration_us * 1000);
      if (recorded < Time::Zero()) v.Fail("stacksim_duration_ns must not be negative");
      std::string label;
      if (node.type == kCollNode) {
        int64_t type = v.Int("comm_type");
        switch (type) {
          case kAllReduce: task.comm.kind = CollectiveKind::kAllReduce; break;
          case kAllGather: task.comm.kind = CollectiveKind::kAllGather; break;
          case kReduceScatter: task.comm.kind = CollectiveKind::kReduceScatter; break;
          case kAllToAll: task.comm.kind = CollectiveKind::kAllToAll; break;
          case kBroadcast: task.comm.kind = CollectiveKind::kBroadcast; break;
          default:
            v.Fail("comm_type " + std::to_string(type) + " (" +
                   CommTypeName(type >= 0 && type < 100 ? static_cast<int>(type) : -1) + ") is not supported");
        }
        task.comm.bytes = v.CommBytes();
        std::vector<trace::RankId> all(ranks);
        for (int r = 0; r < ranks; ++r) all[r] = r;
        task.comm.group = groups.FromNode(v, all);
        if (v.Has("stacksim_scale_out_bytes")) task.comm.scale_out_bytes = Bytes{v.Double("stacksim_scale_out_bytes")};
        if (options.recorded_comm_durations) {
          task.kind = TaskKind::kDelay;
          task.duration = recorded;
        } else {
          task.kind = TaskKind::kCollective;
          const trace::CommGroup& g = t.group(task.comm.group);
          if (v.Has("stacksim_instance")) {
            auto [it, added] = instance_of.try_emplace(v.Int("stacksim_instance"), next_instance);
            if (added) ++next_instance;
            task.comm.instance = it->second;
          } else if (g.simulated.size() > 1) {
            // Members issue a group's collectives in the same order (as NCCL requires).
            int k = call_count[{task.comm.group, me.rank}]++;
            auto [it, added] = order_instance.try_emplace({task.comm.group, k}, next_instance);
            if (added) ++next_instance;
            task.comm.instance = it->second;
          }
        }
        label = "comm";
      } else if (node.type == kSendNode) {
        task.kind = TaskKind::kTransfer;
        task.transfer.dst = static_cast<trace::RankId>(v.Int("comm_dst"));
        task.transfer.bytes = v.CommBytes();
        task.transfer.group = groups.FromNode(v, {me.rank, task.transfer.dst});
        label = "p2p";
      } else {
        task.kind = TaskKind::kDelay;
        task.duration = recorded;
        task.compute.flops = Flops{static_cast<double>(v.IntOr("num_ops", 0))};
        task.compute.bytes = Bytes{static_cast<double>(v.IntOr("tensor_size", 0))};
        if (node.type == kCompNode && recorded == Time::Zero() && options.roofline != nullptr &&
            !v.Has("stacksim_duration_ns")) {
          const config::ProfileConfig& p = *options.roofline;
          auto peak = p.Peak(config::Precision::kBf16);
          double bw = p.hbm_bandwidth.value.value * p.copy_efficiency.value;
          double s = std::max(peak && peak->value > 0 ? task.compute.flops.value / peak->value : 0.0,
                              bw > 0 ? task.compute.bytes.value / bw : 0.0);
          if (!(s < 1e6)) v.Fail("num_ops / tensor_size give a duration over 10^6 s on the roofline");
          task.duration = Time::FromSeconds(s);
        }
        label = node.type == kCompNode ? "compute" : "memory";
      }
      label = v.String("stacksim_label", label);
      task.role = trace::ParseTaskRole(label).value_or(trace::TaskRole::kOther);
      task.label = t.InternLabel(label);
      done[me] = {t.Add(task, deps)};
    }
    for (const Ref& u : users[me]) {
      if (--waiting[u] == 0) ready.push(u);
    }
  }
  if (emitted != waiting.size()) {
    for (const auto& [ref, count] : waiting) {
      if (count > 0) {
        throw InputError(inputs[ref.rank].file, nodes[ref.rank][ref.index].where,
                         "dependency cycle (or a receive waiting on its own rank's future)");
      }
    }
  }
  std::string problem = t.Check();
  if (!problem.empty()) throw InputError(inputs[0].file, "", "imported trace is inconsistent: " + problem);
  return t;
}

}  // namespace stacksim::chakra
