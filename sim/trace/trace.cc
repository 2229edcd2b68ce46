#include "sim/trace/trace.h"

#include <algorithm>
#include <bit>
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
    case GroupRole::kStage: return "stage";
  }
  return "?";
}

GroupRole ParseGroupRole(std::string_view name) {
  // Pipeline pairs are named "pp A-B".
  if (name.substr(0, 3) == "pp ") return GroupRole::kPipelinePair;
  for (GroupRole r : {GroupRole::kTp, GroupRole::kCp, GroupRole::kDp, GroupRole::kEp, GroupRole::kExpertDp,
                      GroupRole::kEmbedding, GroupRole::kDualPipeMirror, GroupRole::kStage}) {
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

LabelId Trace::RoleLabel(TaskRole role) {
  // Once per role: interning the role's name for every task hashed a string per task.
  const size_t r = static_cast<size_t>(role);
  if (role_labels_.size() <= r) role_labels_.resize(r + 1, -1);
  if (role_labels_[r] < 0) role_labels_[r] = InternLabel(TaskRoleName(role));
  return role_labels_[r];
}

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

uint64_t Bits(double v) { return std::bit_cast<uint64_t>(v); }
uint64_t Bits(int64_t v) { return static_cast<uint64_t>(v); }

// Payload keys: every field, bit for bit (so -0.0 and 0.0 stay apart).
std::array<uint64_t, 8> ComputeKey(const ComputeOp& op) {
  const uint64_t small = static_cast<uint64_t>(op.op_class) |
                         static_cast<uint64_t>(static_cast<uint32_t>(op.precision)) << 8 |
                         uint64_t{op.causal} << 40 | uint64_t{op.backward} << 41 | uint64_t{static_cast<uint8_t>(op.attention_kernel)} << 42 |
                         static_cast<uint64_t>(static_cast<uint16_t>(op.kernels)) << 48;
  return {small,
          std::bit_cast<uint32_t>(op.bandwidth_efficiency) | uint64_t{op.heads_per_kv_head} << 32,
          Bits(op.flops.value), Bits(op.bytes.value),
          Bits(op.m), Bits(op.n), Bits(op.k), Bits(op.batch)};
}
std::array<uint64_t, 4> CommKey(const CommOp& op) {  // instance excluded
  return {static_cast<uint64_t>(op.kind), Bits(op.bytes.value), static_cast<uint64_t>(static_cast<uint32_t>(op.group)),
          Bits(op.scale_out_bytes.value)};
}
std::array<uint64_t, 2> TransferKey(const TransferOp& op) {
  return {static_cast<uint64_t>(static_cast<uint32_t>(op.dst)) |
              static_cast<uint64_t>(static_cast<uint32_t>(op.group)) << 32,
          Bits(op.bytes.value)};
}
std::array<uint64_t, 1> DurationKey(Time t) { return {Bits(t.ns())}; }

}  // namespace

template <typename T, size_t kWords>
size_t Trace::PayloadTable<T, kWords>::KeyHash::operator()(const Key& k) const {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint64_t w : k) {
    h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
  }
  return static_cast<size_t>(h ^ (h >> 31));
}

template <typename T, size_t kWords>
int32_t Trace::PayloadTable<T, kWords>::Intern(const T& value, const Key& key) {
  auto [it, added] = index_.emplace(key, static_cast<int32_t>(values_.size()));
  if (added) {
    CheckRoom(values_.size(), 0, 0);
    values_.push_back(value);
  }
  return it->second;
}

void Trace::StoreDeps(Stored& s, const TaskId* deps, size_t count) {
  s.dep_count = static_cast<int32_t>(count);
  if (count > decltype(deps_)::kChunkSize) {
    s.dep_begin = -1 - static_cast<int32_t>(big_deps_.size());
    big_deps_.emplace_back(deps, deps + count);
    return;
  }
  deps_.StartChunkIfLessRoomThan(count);
  CheckRoom(0, deps_.size(), count);
  s.dep_begin = static_cast<int32_t>(deps_.size());
  for (size_t i = 0; i < count; ++i) deps_.push_back(deps[i]);
}

TaskId Trace::Store(const Task& task, const TaskId* deps, size_t count, ComputeRef compute_ref) {
  CheckRoom(tasks_.size(), deps_.size(), count);
  Stored s;
  s.kind = task.kind;
  s.role = task.role;
  s.flags = (task.recompute ? kRecompute : 0) | (task.expert ? kExpert : 0) | (task.filler ? kFiller : 0);
  s.stream = task.stream;
  s.label = task.label;
  s.rank = task.rank;
  s.name = task.name;
  s.layer = task.layer;
  s.micro_batch = task.micro_batch;

  // The fields of the other kinds must be the defaults for the kind's table
  // alone to give the task back; otherwise keep everything.
  static const auto kNoCompute = ComputeKey(ComputeOp{});
  static const auto kNoComm = CommKey(CommOp{});
  static const auto kNoTransfer = TransferKey(TransferOp{});
  const bool interned = compute_ref >= 0;
  const auto compute_key = interned ? kNoCompute : ComputeKey(task.compute);
  const auto comm_key = CommKey(task.comm);
  const auto transfer_key = TransferKey(task.transfer);
  const bool compute = task.kind == TaskKind::kCompute, collective = task.kind == TaskKind::kCollective;
  const bool transfer = task.kind == TaskKind::kTransfer, delay = task.kind == TaskKind::kDelay;
  const bool plain = (compute || compute_key == kNoCompute) &&
                     (collective || (comm_key == kNoComm && task.comm.instance == -1)) &&
                     (transfer || transfer_key == kNoTransfer) && (delay || task.duration.ns() == 0);
  if (!plain) {
    s.flags |= kExtra;
    s.payload = static_cast<int32_t>(extras_.size());
    extras_.push_back(Extra{interned ? compute_ops_[compute_ref] : task.compute, task.comm, task.transfer, task.duration});
  } else {
    switch (task.kind) {
      case TaskKind::kCompute:
        s.payload = interned ? compute_ref : compute_ops_.Intern(task.compute, compute_key);
        break;
      case TaskKind::kCollective: {
        CommOp op = task.comm;
        op.instance = -1;
        s.payload = static_cast<int32_t>(collectives_.size());
        collectives_.push_back(CollectiveRef{comm_ops_.Intern(op, comm_key), task.comm.instance});
        break;
      }
      case TaskKind::kTransfer:
        s.payload = transfer_ops_.Intern(task.transfer, transfer_key);
        break;
      case TaskKind::kDelay:
        s.payload = durations_.Intern(task.duration, DurationKey(task.duration));
        break;
    }
  }
  StoreDeps(s, deps, count);
  tasks_.push_back(s);
  return static_cast<TaskId>(tasks_.size() - 1);
}

namespace {
// The listed dependencies without "no dependency" placeholders, on the stack
// for the usual few.
template <typename Range>
class LiveDeps {
 public:
  explicit LiveDeps(const Range& deps) {
    for (TaskId d : deps) {
      if (d < 0) continue;
      if (count_ < kInline) {
        inline_[count_] = d;
      } else {
        if (heap_.empty()) heap_.assign(inline_, inline_ + kInline);
        heap_.push_back(d);
      }
      ++count_;
    }
  }
  const TaskId* data() const { return count_ <= kInline ? inline_ : heap_.data(); }
  size_t size() const { return count_; }

 private:
  static constexpr size_t kInline = 16;
  TaskId inline_[kInline];
  std::vector<TaskId> heap_;
  size_t count_ = 0;
};
}  // namespace

TaskId Trace::Add(const Task& task, std::initializer_list<TaskId> deps) {
  LiveDeps live(deps);
  return Store(task, live.data(), live.size());
}

TaskId Trace::Add(const Task& task, const std::vector<TaskId>& deps) {
  LiveDeps live(deps);
  return Store(task, live.data(), live.size());
}

Trace::ComputeRef Trace::InternCompute(const ComputeOp& op) { return compute_ops_.Intern(op, ComputeKey(op)); }

TaskId Trace::AddCompute(const Task& task, ComputeRef op, const std::vector<TaskId>& deps) {
  if (task.kind != TaskKind::kCompute || op < 0 || static_cast<size_t>(op) >= compute_ops_.size()) {
    throw std::logic_error("Trace::AddCompute: not a compute task, or an op this trace did not intern");
  }
  LiveDeps live(deps);
  return Store(task, live.data(), live.size(), op);
}

void Trace::AddDependency(TaskId task, TaskId dep) {
  if (task != static_cast<TaskId>(tasks_.size()) - 1) {
    throw std::logic_error("Trace::AddDependency: only the last task may gain dependencies");
  }
  if (dep < 0) return;
  Stored& s = tasks_[task];
  CheckRoom(0, deps_.size(), 1);
  if (s.dep_begin < 0) {
    big_deps_[-1 - s.dep_begin].push_back(dep);
    ++s.dep_count;
    return;
  }
  // The last task's deps end deps_; they stay contiguous, moving to the next
  // chunk (or to big_deps_) when this one is full.
  if (deps_.room_in_chunk() == 0) {
    std::vector<TaskId> all(deps_begin(task), deps_end(task));
    all.push_back(dep);
    StoreDeps(s, all.data(), all.size());
    return;
  }
  deps_.push_back(dep);
  ++s.dep_count;
}

Task Trace::task(TaskId id) const {
  const Stored& s = tasks_[id];
  Task t;
  t.kind = s.kind;
  t.role = s.role;
  t.recompute = (s.flags & kRecompute) != 0;
  t.expert = (s.flags & kExpert) != 0;
  t.filler = (s.flags & kFiller) != 0;
  t.rank = s.rank;
  t.stream = s.stream;
  t.label = s.label;
  t.name = s.name;
  t.layer = s.layer;
  t.micro_batch = s.micro_batch;
  t.dep_begin = s.dep_begin;
  t.dep_count = s.dep_count;
  if (s.flags & kExtra) {
    const Extra& e = extras_[s.payload];
    t.compute = e.compute;
    t.comm = e.comm;
    t.transfer = e.transfer;
    t.duration = e.duration;
    return t;
  }
  switch (s.kind) {
    case TaskKind::kCompute:
      t.compute = compute_ops_[s.payload];
      break;
    case TaskKind::kCollective: {
      const CollectiveRef& c = collectives_[s.payload];
      t.comm = comm_ops_[c.op];
      t.comm.instance = c.instance;
      break;
    }
    case TaskKind::kTransfer:
      t.transfer = transfer_ops_[s.payload];
      break;
    case TaskKind::kDelay:
      t.duration = durations_[s.payload];
      break;
  }
  return t;
}

size_t Trace::StorageBytes() const {
  size_t bytes = tasks_.size() * sizeof(Stored) + deps_.size() * sizeof(TaskId) +
                 collectives_.size() * sizeof(CollectiveRef) + extras_.size() * sizeof(Extra);
  for (const auto& d : big_deps_) bytes += d.size() * sizeof(TaskId);
  bytes += compute_ops_.size() * sizeof(ComputeOp) + comm_ops_.size() * sizeof(CommOp) +
           transfer_ops_.size() * sizeof(TransferOp) + durations_.size() * sizeof(Time);
  return bytes;
}

std::string Trace::Check() const {
  // Collective instances: count and group of each, in instance order. Dense
  // instance numbers (the generator's) index a vector; others go to a map.
  int64_t max_instance = -1;
  for (size_t i = 0; i < collectives_.size(); ++i) max_instance = std::max<int64_t>(max_instance, collectives_[i].instance);
  for (const Extra& e : extras_) max_instance = std::max<int64_t>(max_instance, e.comm.instance);
  const bool dense = max_instance < static_cast<int64_t>(4 * tasks_.size() + 1024);
  std::vector<std::pair<int, int>> dense_instances(dense ? static_cast<size_t>(max_instance + 1) : 0, {0, 0});
  std::map<int32_t, std::pair<int, int>> sparse_instances;  // instance -> (count, group)
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Stored& s = tasks_[i];
    auto where = [&] {
      std::string n = s.name >= 0 && s.name < static_cast<int32_t>(names_.size()) ? names_[s.name] : "?";
      return "task " + std::to_string(i) + " (" + n + ")";
    };
    if (s.rank < 0 || s.rank >= ranks_) return where() + ": rank out of range";
    if (s.stream < 0 || s.stream >= static_cast<int>(streams_.size())) return where() + ": unknown stream";
    if (s.label < 0 || s.label >= static_cast<int>(labels_.size())) return where() + ": unknown label";
    const TaskId* deps = deps_begin(static_cast<TaskId>(i));
    for (int32_t d = 0; d < s.dep_count; ++d) {
      TaskId dep = deps[d];
      if (dep < 0 || dep >= static_cast<TaskId>(i)) return where() + ": dependency does not point backwards";
    }
    if (s.kind == TaskKind::kCollective) {
      const bool extra = s.flags & kExtra;
      const GroupId group = extra ? extras_[s.payload].comm.group : comm_ops_[collectives_[s.payload].op].group;
      const int32_t instance = instance_of(s);
      if (group < 0 || group >= static_cast<GroupId>(groups_.size())) return where() + ": bad group";
      if (instance >= 0) {
        auto& inst = dense ? dense_instances[instance] : sparse_instances[instance];
        if (inst.first > 0 && inst.second != group) return where() + ": instance spans two groups";
        inst.first++;
        inst.second = group;
      }
    }
    if (s.kind == TaskKind::kTransfer) {
      const TransferOp& x = s.flags & kExtra ? extras_[s.payload].transfer : transfer_ops_[s.payload];
      if (x.dst < 0 || x.dst >= ranks_) return where() + ": transfer destination out of range";
      if (x.group < 0 || x.group >= static_cast<GroupId>(groups_.size())) return where() + ": bad group";
    }
    if (s.kind == TaskKind::kDelay) {
      const Time d = s.flags & kExtra ? extras_[s.payload].duration : durations_[s.payload];
      if (d < Time::Zero()) return where() + ": negative duration";
    }
  }
  auto check_instance = [&](int32_t inst, const std::pair<int, int>& cg) -> std::string {
    const CommGroup& g = groups_[cg.second];
    if (cg.first != static_cast<int>(g.simulated.size())) {
      return "collective instance " + std::to_string(inst) + " has " + std::to_string(cg.first) +
             " tasks but its group '" + g.name + "' has " + std::to_string(g.simulated.size()) + " simulated members";
    }
    return "";
  };
  for (size_t inst = 0; inst < dense_instances.size(); ++inst) {
    if (dense_instances[inst].first == 0) continue;  // unused (a used one has at least one task)
    std::string problem = check_instance(static_cast<int32_t>(inst), dense_instances[inst]);
    if (!problem.empty()) return problem;
  }
  for (const auto& [inst, cg] : sparse_instances) {
    std::string problem = check_instance(inst, cg);
    if (!problem.empty()) return problem;
  }
  return "";
}

}  // namespace stacksim::trace
