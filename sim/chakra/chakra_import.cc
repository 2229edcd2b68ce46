#include "sim/chakra/chakra_import.h"

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "sim/chakra/chakra_group_table.h"
#include "sim/chakra/comm_size.h"
#include "sim/chakra/chakra_node_view.h"
#include "sim/util/error.h"

namespace stacksim::chakra {
namespace {

struct Ref {  // a node of one rank
  int rank;
  int index;
  bool operator<(const Ref& o) const { return std::tie(rank, index) < std::tie(o.rank, o.index); }
};

// Why a node waits for another: named in a cycle's report.
enum class EdgeKind { kData, kCtrl, kStream, kReceive };
const char* EdgeName(EdgeKind k) {
  switch (k) {
    case EdgeKind::kData: return "data dep";
    case EdgeKind::kCtrl: return "ctrl dep";
    case EdgeKind::kStream: return "stream order";
    case EdgeKind::kReceive: return "receive after its send";
  }
  return "?";
}

// Nodes that become no task: they pass their dependencies on.
bool PassThrough(int type) { return type == kMetadataNode || type == kInvalidNode; }

// The stream a node runs on, from what the trace says: stacksim's own name;
// else Chakra's PyTorch converter's GPU `stream`, or its `tid` (a CPU
// thread's id, or for GPU ops of earlier converter versions the stream's);
// else one stream per kind of work.
std::string StreamOf(const ImportNode& node, const NodeView& v) {
  if (v.Has("stacksim_stream")) return v.String("stacksim_stream", "");
  const bool cpu = v.BoolOr("is_cpu_op", false);
  if (!cpu && v.Has("stream")) return "stream " + std::to_string(v.Int("stream"));
  if (v.Has("tid")) return (cpu ? "thread " : "stream ") + std::to_string(v.Int("tid"));
  if (cpu) return "host";
  switch (node.type) {
    case kCollNode: return "comm";
    case kSendNode: return "send";
    case kMemLoadNode: case kMemStoreNode: return "memory";
    default: return "compute";
  }
}

using trace::CollectiveKind;
using trace::Task;
using trace::TaskId;
using trace::TaskKind;


// A dependency cycle that ctrl deps are on (CtrlDeps::kAuto then drops them).
class CtrlCycle : public InputError {
 public:
  using InputError::InputError;
};

// Nodes still waiting after the topological pass lie on or behind a cycle.
// Walking back from one of them along waiting predecessors must come round;
// the loop found is reported edge by edge, each edge with its reason.
[[noreturn]] void ReportCycle(const std::vector<RankGraph>& inputs, const std::vector<std::vector<ImportNode>>& nodes,
                              const std::map<Ref, int>& waiting,
                              const std::map<Ref, std::vector<std::pair<Ref, EdgeKind>>>& before_of) {
  Ref at{-1, -1};
  for (const auto& [ref, count] : waiting) {
    if (count > 0) {
      at = ref;
      break;
    }
  }
  std::map<Ref, size_t> seen;  // node -> its place on the walk
  std::vector<std::pair<Ref, EdgeKind>> walk;  // (node, why it waits for the next one on the walk)
  while (!seen.count(at)) {
    seen[at] = walk.size();
    const auto& preds = before_of.at(at);
    auto it = std::find_if(preds.begin(), preds.end(), [&](const auto& p) { return waiting.at(p.first) > 0; });
    walk.push_back({at, it->second});
    at = it->first;
  }
  // walk[k] waits for walk[k+1]; the loop is walk[seen[at]..]. Print it in
  // execution order: each node, then the edge to the node that waits for it.
  std::vector<std::pair<Ref, EdgeKind>> loop(walk.begin() + static_cast<long>(seen[at]), walk.end());
  std::reverse(loop.begin(), loop.end());
  auto name = [&](const Ref& r) {
    const ImportNode& n = nodes[r.rank][r.index];
    std::string s = n.where;
    if (r.rank != at.rank) s = "rank " + std::to_string(r.rank) + " " + s;
    if (n.name != n.where) s += " (" + (n.name.size() > 48 ? n.name.substr(0, 45) + "..." : n.name) + ")";
    return s;
  };
  std::string text = "dependency cycle: " + name(loop.front().first);
  bool ctrl = false;
  for (size_t k = 0; k < loop.size(); ++k) {
    const Ref& next = loop[(k + 1) % loop.size()].first;
    // loop[k+1] waits for loop[k] for the reason walk recorded at loop[k+1].
    const EdgeKind why = loop[(k + 1) % loop.size()].second;
    ctrl = ctrl || why == EdgeKind::kCtrl;
    text += " -> [" + std::string(EdgeName(why)) + "] " + name(next);
  }
  if (ctrl) {
    text += "; ctrl deps are on it: Chakra's feeder orders by data deps only, and Chakra's PyTorch converter "
            "writes each op's caller as its ctrl dep (replay-chakra --ctrl-deps ignore)";
    throw CtrlCycle(inputs[at.rank].file, nodes[at.rank][at.index].where, text);
  }
  throw InputError(inputs[at.rank].file, nodes[at.rank][at.index].where, text);
}

}  // namespace

namespace {

trace::Trace Import(const std::vector<RankGraph>& inputs, const ImportOptions& options, ImportNotes* notes_out);

}  // namespace

trace::Trace ImportChakraGraphs(const std::vector<RankGraph>& inputs, const ImportOptions& options,
                                ImportNotes* notes_out) {
  if (options.ctrl_deps != CtrlDeps::kAuto) return Import(inputs, options, notes_out);
  try {
    return Import(inputs, options, notes_out);
  } catch (const CtrlCycle& cycle) {
    ImportOptions data_only = options;
    data_only.ctrl_deps = CtrlDeps::kIgnore;
    trace::Trace t = Import(inputs, data_only, notes_out);
    if (notes_out) notes_out->ctrl_cycle = cycle.what();
    return t;
  }
}

namespace {

trace::Trace Import(const std::vector<RankGraph>& inputs, const ImportOptions& options, ImportNotes* notes_out) {
  const int ranks = static_cast<int>(inputs.size());
  if (ranks == 0) throw InputError("", "", "no Chakra files");
  ImportNotes notes;
  std::vector<std::vector<ImportNode>> nodes(ranks);
  std::vector<std::map<int64_t, int>> by_id(ranks);
  // Per node: the nodes it waits for on its rank (index) and why.
  std::vector<std::vector<std::vector<std::pair<int, EdgeKind>>>> deps(ranks);
  for (int r = 0; r < ranks; ++r) {
    const std::string& file = inputs[r].file;
    for (const ChakraNode& n : inputs[r].graph.nodes) {
      ImportNode node = ViewNode(n);
      if (!by_id[r].emplace(node.id, static_cast<int>(nodes[r].size())).second) {
        throw InputError(file, node.where, "duplicate node id");
      }
      nodes[r].push_back(std::move(node));
    }
    deps[r].resize(nodes[r].size());
    for (int i = 0; i < static_cast<int>(nodes[r].size()); ++i) {
      const ImportNode& node = nodes[r][i];
      switch (node.type) {
        case kCompNode: case kCollNode: case kSendNode: case kRecvNode: case kMemLoadNode: case kMemStoreNode:
        case kMetadataNode: case kInvalidNode:
          break;
        default:
          throw InputError(file, node.where + ".type",
                           std::string("unsupported node type ") + NodeTypeName(node.type) + " (" +
                               std::to_string(node.type) + ")");
      }
      auto add = [&](int64_t d, EdgeKind kind) {
        auto it = by_id[r].find(d);
        if (it == by_id[r].end()) {
          ++notes.absent_dependencies;  // Chakra's feeder never waits for a node it does not read
        } else if (it->second == i) {
          ++notes.self_dependencies;
        } else {
          deps[r][i].push_back({it->second, kind});
        }
      };
      for (int64_t d : node.data_deps) add(d, EdgeKind::kData);
      if (options.ctrl_deps != CtrlDeps::kIgnore) {
        for (int64_t d : node.ctrl_deps) add(d, EdgeKind::kCtrl);
      } else {
        notes.ignored_ctrl_deps += static_cast<int64_t>(node.ctrl_deps.size());
      }
    }
  }

  // A collective the file puts on the CPU is the host side of a call (its
  // GPU side is another node): a delay on its thread.
  auto host_side = [&](const ImportNode& node, const NodeView& v) {
    return node.type == kCollNode && v.BoolOr("is_cpu_op", false);
  };

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
      if (dst == r) v.Fail("comm_dst " + std::to_string(dst) + " is the sender itself");
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
  std::vector<std::vector<std::string>> stream(ranks);
  std::map<Ref, std::vector<Ref>> users;
  std::map<Ref, std::vector<std::pair<Ref, EdgeKind>>> before_of;  // for a cycle's report
  std::map<Ref, int> waiting;
  for (int r = 0; r < ranks; ++r) {
    std::map<std::string, int> last;
    stream[r].resize(nodes[r].size());
    for (int i = 0; i < static_cast<int>(nodes[r].size()); ++i) {
      const ImportNode& node = nodes[r][i];
      Ref me{r, i};
      std::map<Ref, EdgeKind> before;
      for (const auto& [d, kind] : deps[r][i]) before.emplace(Ref{r, d}, kind);
      if (node.type == kRecvNode) {
        before.emplace(recv_send[me], EdgeKind::kReceive);
      } else if (!PassThrough(node.type)) {
        stream[r][i] = StreamOf(node, NodeView(node, inputs[r].file));
        auto [it, first] = last.try_emplace(stream[r][i], i);
        if (!first) before.emplace(Ref{r, std::exchange(it->second, i)}, EdgeKind::kStream);
      }
      waiting[me] = static_cast<int>(before.size());
      for (const auto& [b, kind] : before) {
        users[b].push_back(me);
        before_of[me].push_back({b, kind});
      }
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
    std::vector<TaskId> task_deps;
    for (const auto& [d, kind] : deps[me.rank][me.index]) {
      for (TaskId x : done[{me.rank, d}]) task_deps.push_back(x);
    }
    if (node.type == kRecvNode) {
      for (TaskId x : done[recv_send[me]]) task_deps.push_back(x);
    }
    std::sort(task_deps.begin(), task_deps.end());
    task_deps.erase(std::unique(task_deps.begin(), task_deps.end()), task_deps.end());

    if (node.type == kRecvNode || PassThrough(node.type)) {
      done[me] = task_deps;  // a receive is its send's arrival; metadata is no work
    } else {
      Task task;
      task.rank = me.rank;
      task.name = t.InternName(node.name);
      task.stream = t.InternStream(stream[me.rank][me.index]);
      task.layer = static_cast<int32_t>(v.IntOr("stacksim_layer", -1));
      task.micro_batch = static_cast<int32_t>(v.IntOr("stacksim_micro_batch", -1));
      Time recorded = v.Has("stacksim_duration_ns") ? Time::Ns(v.Int("stacksim_duration_ns"))
                                                    : Time::Ns(node.duration_us * 1000);
      if (recorded < Time::Zero()) v.Fail("stacksim_duration_ns must not be negative");
      std::string label;
      if (host_side(node, v)) {
        ++notes.host_collectives;
        task.kind = TaskKind::kDelay;
        task.duration = recorded;
        label = "host";
      } else if (node.type == kCollNode) {
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
        std::vector<trace::RankId> all(ranks);
        for (int r = 0; r < ranks; ++r) all[r] = r;
        task.comm.group = groups.FromNode(v, all);
        const trace::CommGroup& g = t.group(task.comm.group);
        task.comm.bytes = v.Has("stacksim_comm_bytes") ? Bytes{v.Double("stacksim_comm_bytes")}
                                                       : StacksimCommBytes(task.comm.kind, v.CommSize(), g.size);
        if (v.Has("stacksim_scale_out_bytes")) task.comm.scale_out_bytes = Bytes{v.Double("stacksim_scale_out_bytes")};
        if (options.recorded_comm_durations) {
          task.kind = TaskKind::kDelay;
          task.duration = recorded;
        } else {
          task.kind = TaskKind::kCollective;
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
        task.transfer.bytes = v.TransferBytes();
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
      done[me] = {t.Add(task, task_deps)};
    }
    for (const Ref& u : users[me]) {
      if (--waiting[u] == 0) ready.push(u);
    }
  }
  if (emitted != waiting.size()) ReportCycle(inputs, nodes, waiting, before_of);
  std::string problem = t.Check();
  if (!problem.empty()) throw InputError(inputs[0].file, "", "imported trace is inconsistent: " + problem);
  if (notes_out) *notes_out = notes;
  return t;
}

}  // namespace

int64_t GpusSpanned(const trace::Trace& t) {
  int64_t span = t.rank_count();
  for (const trace::CommGroup& g : t.groups()) {
    const int64_t last_member = g.first_rank + static_cast<int64_t>(std::max(g.size - 1, 0)) * g.stride;
    const int64_t sibling_reach = std::max<int64_t>(g.SiblingOffset(std::max(g.siblings - 1, 0)), 0);
    span = std::max(span, std::max(g.first_rank, last_member) + sibling_reach + 1);
  }
  return span;
}

}  // namespace stacksim::chakra
