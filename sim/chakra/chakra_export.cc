#include "sim/chakra/chakra_export.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "sim/chakra/comm_size.h"
#include "sim/util/error.h"

namespace stacksim::chakra {
namespace {

using trace::CollectiveKind;
using trace::Task;
using trace::TaskId;
using trace::TaskKind;

int CommTypeOf(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return kAllReduce;
    case CollectiveKind::kAllGather: return kAllGather;
    case CollectiveKind::kReduceScatter: return kReduceScatter;
    case CollectiveKind::kAllToAll: return kAllToAll;
    case CollectiveKind::kBroadcast: return kBroadcast;
  }
  return kAllReduce;
}

int64_t Micros(Time t) { return std::llround(t.us()); }

void AddGroupAttrs(const trace::CommGroup& g, std::vector<Attribute>& attrs) {
  attrs.push_back(Attribute::String("pg_name", g.name));
  std::vector<int64_t> pg{g.size, g.ranks_per_node, g.nodes, g.first_rank, g.stride, g.siblings, g.sibling_stride};
  // Copies in runs (docs/chakra.md): two more values, only where they say something.
  if (g.sibling_run > 0 && g.sibling_run < g.siblings) {
    pg.push_back(g.sibling_run);
    pg.push_back(g.sibling_run_stride);
  }
  attrs.push_back(Attribute::IntList("stacksim_pg", pg));
  attrs.push_back(
      Attribute::IntList("stacksim_pg_members", std::vector<int64_t>(g.simulated.begin(), g.simulated.end())));
}

// comm_size is an integer in Chakra's convention (comm_size.h); stacksim's
// own byte count also travels, exactly, when comm_size does not give it back.
void AddBytes(CollectiveKind kind, Bytes b, int group_size, std::vector<Attribute>& attrs) {
  const int64_t size = ChakraCommSize(kind, b, group_size);
  attrs.push_back(Attribute::Int("comm_size", size));
  if (StacksimCommBytes(kind, size, group_size) != b) attrs.push_back(Attribute::Double("stacksim_comm_bytes", b.value));
}
// A transfer's comm_size is the bytes sent.
void AddBytes(Bytes b, std::vector<Attribute>& attrs) {
  const int64_t size = std::llround(b.value);
  attrs.push_back(Attribute::Int("comm_size", size));
  if (static_cast<double>(size) != b.value) attrs.push_back(Attribute::Double("stacksim_comm_bytes", b.value));
}

}  // namespace

std::vector<ChakraGraph> ExportChakraGraphs(const trace::Trace& t, const trace::ReplayResult& replay) {
  const TaskId n = static_cast<TaskId>(t.size());
  const TaskId recv_base = n;  // the receive node of transfer x has id n + x
  std::vector<ChakraGraph> graphs(t.rank_count());
  std::map<std::pair<trace::RankId, trace::StreamId>, TaskId> last_on_stream;
  for (TaskId id = 0; id < n; ++id) {
    const Task& task = t.task(id);
    ChakraNode node;
    node.id = id;
    node.name = t.name(task.name);
    std::vector<Attribute>& attrs = node.attrs;
    attrs.push_back(Attribute::Bool("is_cpu_op", false));
    Time duration = replay.timings[id].end - replay.timings[id].start;
    switch (task.kind) {
      case TaskKind::kCompute:
      case TaskKind::kDelay:
        node.type = kCompNode;
        if (task.kind == TaskKind::kDelay) {
          duration = task.duration;
          attrs.push_back(Attribute::String("stacksim_kind", "delay"));
        }
        attrs.push_back(Attribute::Int("num_ops", std::llround(task.compute.flops.value)));
        attrs.push_back(Attribute::Int("tensor_size", std::llround(task.compute.bytes.value)));
        break;
      case TaskKind::kCollective:
        node.type = kCollNode;
        attrs.push_back(Attribute::Int("comm_type", CommTypeOf(task.comm.kind)));
        AddBytes(task.comm.kind, task.comm.bytes, t.group(task.comm.group).size, attrs);
        AddGroupAttrs(t.group(task.comm.group), attrs);
        if (task.comm.instance >= 0) attrs.push_back(Attribute::Int("stacksim_instance", task.comm.instance));
        if (task.comm.scale_out_bytes.value >= 0) {
          attrs.push_back(Attribute::Double("stacksim_scale_out_bytes", task.comm.scale_out_bytes.value));
        }
        break;
      case TaskKind::kTransfer:
        node.type = kSendNode;
        attrs.push_back(Attribute::Int("comm_src", task.rank));
        attrs.push_back(Attribute::Int("comm_dst", task.transfer.dst));
        attrs.push_back(Attribute::Int("comm_tag", id));
        AddBytes(task.transfer.bytes, attrs);
        AddGroupAttrs(t.group(task.transfer.group), attrs);
        break;
    }
    attrs.push_back(Attribute::String("stacksim_stream", t.stream_name(task.stream)));
    attrs.push_back(Attribute::String("stacksim_label", t.label(task.label)));
    if (task.layer >= 0) attrs.push_back(Attribute::Int("stacksim_layer", task.layer));
    if (task.micro_batch >= 0) attrs.push_back(Attribute::Int("stacksim_micro_batch", task.micro_batch));
    attrs.push_back(Attribute::Int("stacksim_duration_ns", duration.ns()));

    // Dependencies on the same rank are data deps; one on another rank's
    // transfer to this rank goes through this rank's receive node.
    for (const TaskId* d = t.deps_begin(id); d != t.deps_end(id); ++d) {
      const Task& dep = t.task(*d);
      TaskId ref = *d;
      if (dep.rank != task.rank) {
        if (dep.kind != TaskKind::kTransfer || dep.transfer.dst != task.rank) {
          throw InputError("", "", "task " + std::to_string(id) + " (" + t.name(task.name) + ") on rank " +
                                       std::to_string(task.rank) + " depends on task " + std::to_string(*d) +
                                       " of rank " + std::to_string(dep.rank) +
                                       ", which Chakra cannot express (only through a send to this rank)");
        }
        ref = recv_base + *d;
      }
      if (std::find(node.data_deps.begin(), node.data_deps.end(), ref) == node.data_deps.end()) {
        node.data_deps.push_back(ref);
      }
    }
    // Stream order, which Chakra has no word for, becomes a control dependency.
    auto [it, first] = last_on_stream.try_emplace({task.rank, task.stream}, id);
    if (!first) {
      if (std::find(node.data_deps.begin(), node.data_deps.end(), it->second) == node.data_deps.end()) {
        node.ctrl_deps.push_back(it->second);
      }
      it->second = id;
    }
    node.start_time_micros = Micros(replay.timings[id].start);
    node.duration_micros = Micros(duration);
    graphs[task.rank].nodes.push_back(std::move(node));

    if (task.kind == TaskKind::kTransfer) {
      ChakraNode recv;
      recv.id = recv_base + id;
      recv.name = t.name(task.name) + " (recv)";
      recv.type = kRecvNode;
      recv.attrs.push_back(Attribute::Bool("is_cpu_op", false));
      recv.attrs.push_back(Attribute::Int("comm_src", task.rank));
      recv.attrs.push_back(Attribute::Int("comm_dst", task.transfer.dst));
      recv.attrs.push_back(Attribute::Int("comm_tag", id));
      AddBytes(task.transfer.bytes, recv.attrs);
      AddGroupAttrs(t.group(task.transfer.group), recv.attrs);
      recv.start_time_micros = Micros(replay.timings[id].start);
      recv.duration_micros = Micros(duration);
      graphs[task.transfer.dst].nodes.push_back(std::move(recv));
    }
  }
  for (int r = 0; r < t.rank_count(); ++r) {
    graphs[r].version = "0.0.4";
    graphs[r].metadata = {Attribute::String("producer", "stacksim"), Attribute::Int("rank", r),
                          Attribute::Int("ranks", t.rank_count())};
  }
  return graphs;
}

}  // namespace stacksim::chakra
