#include "sim/trace/trace.h"

#include <limits>
#include <map>
#include <stdexcept>

namespace stacksim::trace {

const char* CollectiveName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce: return "all-reduce";
    case CollectiveKind::kAllGather: return "all-gather";
    case CollectiveKind::kReduceScatter: return "reduce-scatter";
    case CollectiveKind::kAllToAll: return "all-to-all";
    case CollectiveKind::kBroadcast: return "broadcast";
  }
  return "?";
}

const char* TaskRoleName(TaskRole r) {
  switch (r) {
    case TaskRole::kOther: return "other";
    case TaskRole::kGemm: return "gemm";
    case TaskRole::kAttention: return "attention";
    case TaskRole::kMemoryBound: return "memory-bound";
    case TaskRole::kOptimizer: return "optimizer";
    case TaskRole::kTpComm: return "tp-comm";
    case TaskRole::kDpComm: return "dp-comm";
    case TaskRole::kPpComm: return "pp-comm";
    case TaskRole::kEpComm: return "ep-comm";
    case TaskRole::kOffload: return "offload";
    case TaskRole::kHostSync: return "host-sync";
  }
  return "?";
}

std::optional<TaskRole> ParseTaskRole(std::string_view name) {
  for (int i = 0; i < kNumTaskRoles; ++i) {
    TaskRole r = static_cast<TaskRole>(i);
    if (name == TaskRoleName(r)) return r;
  }
  return std::nullopt;
}

const char* GroupRoleName(GroupRole r) {
  switch (r) {
    case GroupRole::kOther: return "other";
    case GroupRole::kTp: return "tp";
    case GroupRole::kCp: return "cp";
    case GroupRole::kDp: return "dp";
    case GroupRole::kEp: return "ep";
    case GroupRole::kExpertDp: return "expert-dp";
    case GroupRole::kPipelinePair: return "pp";
    case GroupRole::kEmbedding: return "embedding";
    case GroupRole::kDualPipeMirror: return "dualpipe-mirror";
  }
  return "?";
}

GroupRole ParseGroupRole(std::string_view name) {
  // Pipeline pairs are named "pp A-B".
  if (name.substr(0, 3) == "pp ") return GroupRole::kPipelinePair;
  for (GroupRole r : {GroupRole::kTp, GroupRole::kCp, GroupRole::kDp, GroupRole::kEp, GroupRole::kExpertDp,
                      GroupRole::kEmbedding, GroupRole::kDualPipeMirror}) {
    if (name == GroupRoleName(r)) return r;
  }
  return GroupRole::kOther;
}

namespace {
template <typename Id>
Id Intern(const std::string& s, std::vector<std::string>& table, std::unordered_map<std::string, Id>& index) {
  auto it = index.find(s);
  if (it != index.end()) return it->second;
  Id id = static_cast<Id>(table.size());
  table.push_back(s);
  index.emplace(s, id);
  return id;
}
}  // namespace

int32_t Trace::InternName(const std::string& name) { return Intern(name, names_, name_index_); }
LabelId Trace::InternLabel(const std::string& label) { return Intern(label, labels_, label_index_); }
StreamId Trace::InternStream(const std::string& stream) { return Intern(stream, streams_, stream_index_); }

GroupId Trace::AddGroup(CommGroup group) {
  groups_.push_back(std::move(group));
  return static_cast<GroupId>(groups_.size() - 1);
}

namespace {

// TaskId and the dependency offsets are int32: refuse to wrap around. (A
// generated step stays far below: config::kMaxLayerPasses bounds it at ~30M
// tasks; imported traces are bounded only by this.)
void CheckRoom(size_t tasks, size_t deps, size_t more_deps) {
  constexpr size_t kMax = static_cast<size_t>(std::numeric_limits<int32_t>::max());
  if (tasks >= kMax || deps + more_deps > kMax) {
    throw std::length_error("trace: more than 2^31 - 1 tasks or dependencies (ids are int32)");
  }
}

}  // namespace

TaskId Trace::Add(const Task& task, std::initializer_list<TaskId> deps) {
  CheckRoom(tasks_.size(), deps_.size(), deps.size());
  Task t = task;
  t.dep_begin = static_cast<int32_t>(deps_.size());
  t.dep_count = 0;
  for (TaskId d : deps) {
    if (d < 0) continue;  // "no dependency" placeholders
    deps_.push_back(d);
    ++t.dep_count;
  }
  tasks_.push_back(t);
  return static_cast<TaskId>(tasks_.size() - 1);
}

TaskId Trace::Add(const Task& task, const std::vector<TaskId>& deps) {
  CheckRoom(tasks_.size(), deps_.size(), deps.size());
  Task t = task;
  t.dep_begin = static_cast<int32_t>(deps_.size());
  t.dep_count = 0;
  for (TaskId d : deps) {
    if (d < 0) continue;
    deps_.push_back(d);
    ++t.dep_count;
  }
  tasks_.push_back(t);
  return static_cast<TaskId>(tasks_.size() - 1);
}

void Trace::AddDependency(TaskId task, TaskId dep) {
  if (task != static_cast<TaskId>(tasks_.size()) - 1) {
    throw std::logic_error("Trace::AddDependency: only the last task may gain dependencies");
  }
  if (dep < 0) return;
  CheckRoom(0, deps_.size(), 1);
  deps_.push_back(dep);
  ++tasks_[task].dep_count;
}

std::string Trace::Check() const {
  std::map<int32_t, std::pair<int, int>> instances;  // instance -> (count, group)
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Task& t = tasks_[i];
    auto where = [&] {
      std::string n = t.name >= 0 && t.name < static_cast<int32_t>(names_.size()) ? names_[t.name] : "?";
      return "task " + std::to_string(i) + " (" + n + ")";
    };
    if (t.rank < 0 || t.rank >= ranks_) return where() + ": rank out of range";
    if (t.stream < 0 || t.stream >= static_cast<int>(streams_.size())) return where() + ": unknown stream";
    if (t.label < 0 || t.label >= static_cast<int>(labels_.size())) return where() + ": unknown label";
    for (int32_t d = 0; d < t.dep_count; ++d) {
      TaskId dep = deps_[t.dep_begin + d];
      if (dep < 0 || dep >= static_cast<TaskId>(i)) return where() + ": dependency does not point backwards";
    }
    if (t.kind == TaskKind::kCollective) {
      if (t.comm.group < 0 || t.comm.group >= static_cast<GroupId>(groups_.size())) return where() + ": bad group";
      if (t.comm.instance >= 0) {
        auto& inst = instances[t.comm.instance];
        if (inst.first > 0 && inst.second != t.comm.group) return where() + ": instance spans two groups";
        inst.first++;
        inst.second = t.comm.group;
      }
    }
    if (t.kind == TaskKind::kTransfer) {
      if (t.transfer.dst < 0 || t.transfer.dst >= ranks_) return where() + ": transfer destination out of range";
      if (t.transfer.group < 0 || t.transfer.group >= static_cast<GroupId>(groups_.size())) return where() + ": bad group";
    }
    if (t.kind == TaskKind::kDelay && t.duration < Time::Zero()) return where() + ": negative duration";
  }
  for (const auto& [inst, cg] : instances) {
    const CommGroup& g = groups_[cg.second];
    if (cg.first != static_cast<int>(g.simulated.size())) {
      return "collective instance " + std::to_string(inst) + " has " + std::to_string(cg.first) +
             " tasks but its group '" + g.name + "' has " + std::to_string(g.simulated.size()) + " simulated members";
    }
  }
  return "";
}

}  // namespace stacksim::trace
