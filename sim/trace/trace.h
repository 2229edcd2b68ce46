// The execution trace: the contract between what produces work (the workload
// generator, trace importers) and what replays it (the engine).
//
// A trace is a DAG of tasks on per-rank streams. A stream runs its tasks one at
// a time in the order they were added (like a CUDA stream); a task also waits
// for its explicit dependencies, which may be on other streams or ranks.
// Collective tasks that share an `instance` run together: each starts when all
// of the instance's tasks are ready and all finish together.
//
// Ranks in a trace are *simulated* ranks. A trace may stand for a larger job:
// a communication group records its full size and placement, and the simulated
// ranks that belong to it; the rest behave like them (symmetry).
//
// The trace owns all its tasks, groups and strings. Task ids are dense indices.
// Tasks are stored compactly (36 bytes each, payloads shared, in chunks that
// never move) and read back as Task values: see Trace::Stored.
#ifndef STACKSIM_SIM_TRACE_TRACE_H_
#define STACKSIM_SIM_TRACE_TRACE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/trace/chunked_vector.h"
#include "sim/util/precision.h"
#include "sim/util/units.h"

namespace stacksim::trace {

using TaskId = int32_t;
using RankId = int32_t;
using StreamId = int16_t;
using GroupId = int32_t;
using LabelId = int16_t;
inline constexpr GroupId kNoGroup = -1;

enum class TaskKind : uint8_t {
  kCompute,     // a kernel (or a few fused ones) on a GPU
  kCollective,  // a collective over a communication group
  kTransfer,    // point-to-point send from this rank to another
  kDelay,       // a fixed duration (host work, an imported kernel of known length)
};

// How the cost model prices a compute task.
enum class OpClass : uint8_t {
  kGemm,        // m x n x k matrix product, `batch` of them
  kAttention,   // fused attention: batch x heads, seq_q x seq_kv, head_dim
  kMemoryBound, // elementwise, norms, reductions, optimizer: bytes moved
};

// What a task is, in the words of a step's accounting: the row of the
// breakdown its time lands in. Set by whoever makes the task (the workload
// generator knows a GEMM from an expert all-to-all; an importer maps what the
// file says). Labels are display text only; nothing decides on them.
enum class TaskRole : uint8_t {
  kOther,        // none of the below (an imported kernel of unknown class, host work)
  kGemm,
  kAttention,
  kMemoryBound,  // elementwise, norms, reductions, casts
  kOptimizer,
  kTpComm,       // tensor- and context-parallel collectives and exchanges
  kDpComm,       // gradient reduction, parameter gathers (ZeRO, FSDP, distributed optimizer)
  kPpComm,       // pipeline sends of activations and gradients
  kEpComm,       // expert-parallel token dispatch and combine
  kOffload,      // optimizer offload: copies to and from the host, host work, NVMe I/O
  kHostSync,     // the GPU idle while the host waits on a device-to-host copy
};
inline constexpr int kNumTaskRoles = 11;
// The role's display name, as reports and exported traces print it ("gemm",
// "tp-comm", ...).
const char* TaskRoleName(TaskRole r);
// Input parsing only (traces stacksim exported, which carry the display
// name): the role a display name stands for, or nothing.
std::optional<TaskRole> ParseTaskRole(std::string_view name);

// What a communication group is for: which parallel dimension it spans.
enum class GroupRole : uint8_t {
  kOther,           // an imported group of unknown purpose
  kTp,              // tensor parallel
  kCp,              // context parallel
  kDp,              // data parallel (with CP folded in, as Megatron reduces gradients)
  kEp,              // expert parallel
  kExpertDp,        // the data-parallel group of the routed experts
  kPipelinePair,    // two pipeline stages that exchange activations
  kEmbedding,       // first and last stage summing tied-embedding gradients
  kDualPipeMirror,  // DualPipe's two ranks that hold the same two stages
  kStage,           // every rank of one pipeline stage (tp x cp x dp): FP8 amax reductions
};
const char* GroupRoleName(GroupRole r);
// Input parsing only: the role of a group stacksim named (exported traces
// carry the name); an unknown name is kOther.
GroupRole ParseGroupRole(std::string_view name);

enum class CollectiveKind : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast };
const char* CollectiveName(CollectiveKind k);

// Which fused attention kernel an attention op runs as: the fastest the
// profile knows (cuDNN/FlashAttention-3 class on Hopper), FlashAttention-2,
// the FlashAttention-1 class (FlashAttention v1 and its Triton port), or the
// project's own FlashAttention-2-style kernel (kernels/attention.cu: the
// kernel `calibrate` measures for the profile's own_* efficiencies, priced
// with them, else the FlashAttention-2 ones, and with its launch grid,
// sim/cost/attention_grid.h).
enum class AttentionKernel : uint8_t { kFastest, kFlash2, kFlash1, kOwn };

struct ComputeOp {
  OpClass op_class = OpClass::kMemoryBound;
  Precision precision = Precision::kBf16;
  Flops flops;       // useful floating-point work
  Bytes bytes;       // device-memory traffic (each input read once, each output written once)
  // Shape, meaning by op_class. kGemm: m, n, k, batch. kAttention: m = seq_q,
  // n = seq_kv, k = head_dim, batch = sequences x heads; causal halves the work.
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool causal = false;
  bool backward = false;  // attention backward runs at its own efficiency
  AttentionKernel attention_kernel = AttentionKernel::kFastest;  // attention ops only
  uint8_t heads_per_kv_head = 1;  // attention ops only: query heads sharing a K/V head (GQA group, <= 255)
  int16_t kernels = 1;    // kernel launches this task stands for
  // Memory-bound kernels: fraction of the GPU's achievable copy bandwidth this
  // kernel reaches (1 for well-fused kernels; less for generic eager ones).
  float bandwidth_efficiency = 1.0f;
};

struct CommOp {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  // Per-rank buffer: the full tensor for all-reduce and broadcast, the gathered
  // output for all-gather, the unreduced input for reduce-scatter, the send
  // buffer for all-to-all.
  Bytes bytes;
  GroupId group = kNoGroup;
  int32_t instance = -1;  // tasks of one collective call share it (-1: this rank alone)
  // kAllToAll only. Negative: a flat pairwise exchange, (nodes-1)/nodes of
  // `bytes` leaving the node through the sender's own NIC. Otherwise a
  // hierarchical exchange (DeepSeek-V3, arXiv:2412.19437 §3.2.2; DeepEP's
  // normal kernels): `bytes` are this rank's deliveries (one per destination
  // GPU), and the rank sends `scale_out_bytes` through its NIC, one copy per
  // destination node, to the GPU of its own local index there, which
  // forwards each delivery over NVLink unless it is the destination itself
  // ((ranks_per_node-1)/ranks_per_node of `bytes` per GPU, by symmetry).
  Bytes scale_out_bytes{-1};
};

struct TransferOp {
  RankId dst = 0;
  Bytes bytes;
  GroupId group = kNoGroup;  // the (src, dst) pair's placement
};

// A communication group and where its members sit.
struct CommGroup {
  std::string name;          // display: "tp", "dp", "pp 0-1", ...
  int size = 1;              // ranks in the group, whole job
  int ranks_per_node = 1;    // members sharing one node (its NVLink domain)
  int nodes = 1;             // nodes the group spans
  std::vector<RankId> simulated;  // simulated ranks that are members
  // Physical placement, in global GPU ranks: members are first_rank +
  // i * stride (i < size). `siblings` copies of this group (counting this
  // one) run the same collective at the same time (the symmetric peers the
  // trace does not simulate: e.g. the data-parallel groups of the other
  // tensor-parallel ranks). The copies come in runs of `sibling_run`
  // (0: one run of all of them), sibling_stride apart within a run and
  // sibling_run_stride apart from run to run: SiblingOffset(j). Two levels,
  // because the context-parallel groups of a stage are tp consecutive copies
  // per data-parallel replica, replicas tp x cp apart. Flow-level network
  // models use this to load shared links; analytic models ignore it.
  int64_t first_rank = 0;
  int64_t stride = 1;
  int siblings = 1;
  int64_t sibling_stride = 0;
  int sibling_run = 0;
  int64_t sibling_run_stride = 0;
  GroupRole role = GroupRole::kOther;  // last, so that aggregate initialisers may leave it out

  // Offset in global ranks of copy j (0 <= j < siblings) from this one;
  // offsets grow with j when sibling_run_stride >= sibling_run x sibling_stride.
  int64_t SiblingOffset(int j) const {
    if (sibling_run <= 0 || sibling_run >= siblings) return j * sibling_stride;
    return (j % sibling_run) * sibling_stride + (j / sibling_run) * sibling_run_stride;
  }
};

struct Task {
  TaskKind kind = TaskKind::kCompute;
  TaskRole role = TaskRole::kOther;
  bool recompute = false;    // a forward op run again in the backward pass (activation recomputation)
  bool expert = false;       // work of the routed experts (MoE), scaled by routing imbalance
  bool filler = false;       // an importer's stand-in for time between kernels (gaps, launch latency)
  RankId rank = 0;
  StreamId stream = 0;
  LabelId label = 0;         // display text, from the trace's label table
  int32_t name = 0;          // index in the trace's name table
  int32_t layer = -1;        // for display only (-1: none)
  int32_t micro_batch = -1;  // for display only
  int32_t dep_begin = 0;     // range in Trace::deps_
  int32_t dep_count = 0;
  ComputeOp compute;
  CommOp comm;
  TransferOp transfer;
  Time duration;             // kDelay only
};

class Trace;

// The tasks of a trace as a read-only range of Task values (each one
// assembled from the trace's compact storage when read): for loops,
// `size()` and `[id]` work as on a vector.
class TaskRange {
 public:
  class Iterator {
   public:
    using value_type = Task;
    using difference_type = std::ptrdiff_t;
    Iterator(const Trace* t, TaskId i) : t_(t), i_(i) {}
    Task operator*() const;
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iterator& o) const { return i_ == o.i_; }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }

   private:
    const Trace* t_;
    TaskId i_;
  };
  explicit TaskRange(const Trace* t) : t_(t) {}
  Iterator begin() const { return Iterator(t_, 0); }
  Iterator end() const;
  size_t size() const;
  bool empty() const { return size() == 0; }
  Task operator[](size_t id) const;

 private:
  const Trace* t_;
};

class Trace {
 public:
  // Tables of names; each call with a new string adds an entry.
  int32_t InternName(const std::string& name);
  LabelId InternLabel(const std::string& label);
  // The label that displays a role: InternLabel(TaskRoleName(role)).
  LabelId RoleLabel(TaskRole role);
  StreamId InternStream(const std::string& stream);
  GroupId AddGroup(CommGroup group);

  void SetRankCount(int ranks) { ranks_ = ranks; }
  int rank_count() const { return ranks_; }
  // The stream that runs each rank's kernels one after another (the GPU's
  // compute stream): a step's accounting attributes its busy and idle time.
  void SetComputeStream(StreamId s) { compute_stream_ = s; }
  StreamId compute_stream() const { return compute_stream_; }

  // Adds a task; its dependencies are the listed tasks (already added;
  // negative ids are "no dependency" placeholders and are skipped).
  TaskId Add(const Task& task, std::initializer_list<TaskId> deps = {});
  TaskId Add(const Task& task, const std::vector<TaskId>& deps);
  // A compute op stored once, for generators that emit the same op many
  // times (every micro-batch runs the same layer ops): AddCompute with it
  // saves looking the op up on every task.
  using ComputeRef = int32_t;
  ComputeRef InternCompute(const ComputeOp& op);
  // Adds a compute task whose op is `op`; `task.compute` is not read.
  // REQUIRES: task.kind == kCompute; its other kinds' fields are the defaults.
  TaskId AddCompute(const Task& task, ComputeRef op, const std::vector<TaskId>& deps);
  void AddDependency(TaskId task, TaskId dep);  // REQUIRES: task is the last one added

  // Tasks are read as values: the trace stores them compactly (see Stored
  // below) and assembles a Task on each read. Bind with `const Task&` or
  // `auto`; a reference into the trace is never handed out.
  TaskRange tasks() const& { return TaskRange(this); }
  TaskRange tasks() && = delete;  // a range over a temporary trace would dangle
  Task task(TaskId id) const;
  // Single fields, without assembling the whole task (the engine's hot loop).
  TaskKind kind(TaskId id) const { return tasks_[id].kind; }
  RankId rank(TaskId id) const { return tasks_[id].rank; }
  StreamId stream(TaskId id) const { return tasks_[id].stream; }
  TaskRole role(TaskId id) const { return tasks_[id].role; }
  bool expert(TaskId id) const { return (tasks_[id].flags & kExpert) != 0; }
  int32_t dep_count(TaskId id) const { return tasks_[id].dep_count; }
  // The compute op of a compute task. REQUIRES: kind(id) == kCompute.
  const ComputeOp& compute(TaskId id) const;
  // The compute task's op as InternCompute gives it (-1: a task stored with
  // fields of other kinds, whose op is its own), and how many ops there are:
  // tasks with the same ref run the same op.
  ComputeRef compute_ref(TaskId id) const {
    const Stored& s = tasks_[id];
    return s.flags & kExtra ? -1 : s.payload;
  }
  size_t compute_op_count() const { return compute_ops_.size(); }
  // The collective instance of a collective task (-1: this rank alone).
  // REQUIRES: kind(id) == kCollective.
  int32_t instance(TaskId id) const { return instance_of(tasks_[id]); }
  // A task's dependencies, contiguous.
  const TaskId* deps_begin(TaskId id) const;
  const TaskId* deps_end(TaskId id) const { return deps_begin(id) + tasks_[id].dep_count; }
  const CommGroup& group(GroupId g) const { return groups_[g]; }
  const std::vector<CommGroup>& groups() const { return groups_; }
  const std::string& name(int32_t id) const { return names_[id]; }
  const std::string& label(LabelId id) const { return labels_[id]; }
  const std::string& stream_name(StreamId id) const { return streams_[id]; }
  const std::vector<std::string>& labels() const { return labels_; }
  const std::vector<std::string>& streams() const { return streams_; }
  size_t size() const { return tasks_.size(); }
  // Bytes the trace holds in its task and dependency storage (for
  // benchmarks and memory estimates; tables of names and groups excluded).
  size_t StorageBytes() const;

  // Checks internal consistency (ranks, streams, deps pointing backwards,
  // groups, collective instances); returns "" when valid, else the problem.
  std::string Check() const;

 private:
  // One task as stored, 36 bytes (a Task is 176): what every task has, and
  // an index to its kind's payload. Compute ops, collectives without their
  // instance, transfers and delays repeat across micro-batches and layers,
  // so each distinct one is stored once (PayloadTable); a collective's
  // instance, unique per call, sits in collectives_. A task whose fields of
  // other kinds are not the defaults (nothing the generator makes) keeps
  // all its payloads in extras_, so that every Task reads back as added.
  struct Stored {  // trivial, so that a new chunk is not written twice; Store sets every field
    TaskKind kind;
    TaskRole role;
    uint8_t flags;  // kRecompute | kExpert | kFiller | kExtra
    StreamId stream;
    LabelId label;
    RankId rank;
    int32_t name;
    int32_t layer;
    int32_t micro_batch;
    int32_t dep_begin;  // >= 0: index in deps_; < 0: -1 - index in big_deps_
    int32_t dep_count;
    int32_t payload;    // index in the kind's table, or in extras_
  };
  static constexpr uint8_t kRecompute = 1, kExpert = 2, kFiller = 4, kExtra = 8;
  struct CollectiveRef {
    int32_t op;        // in comm_ops_ (instance -1)
    int32_t instance;
  };
  struct Extra {
    ComputeOp compute;
    CommOp comm;
    TransferOp transfer;
    Time duration;
  };
  // Distinct values, each stored once; Intern gives the index of an equal
  // (bit for bit) value, adding it if new.
  template <typename T, size_t kWords>
  class PayloadTable {
   public:
    using Key = std::array<uint64_t, kWords>;
    int32_t Intern(const T& value, const Key& key);
    const T& operator[](int32_t i) const { return values_[i]; }
    size_t size() const { return values_.size(); }

   private:
    struct KeyHash {
      size_t operator()(const Key& k) const;
    };
    std::vector<T> values_;
    std::unordered_map<Key, int32_t, KeyHash> index_;
  };

  int32_t instance_of(const Stored& s) const;  // REQUIRES: a collective
  void StoreDeps(Stored& s, const TaskId* deps, size_t count);
  // compute_ref >= 0: the task's op, already interned.
  TaskId Store(const Task& task, const TaskId* deps, size_t count, ComputeRef compute_ref = -1);

  int ranks_ = 1;
  StreamId compute_stream_ = 0;
  ChunkedVector<Stored> tasks_;
  ChunkedVector<TaskId, 16> deps_;          // each task's deps contiguous within a chunk
  std::vector<std::vector<TaskId>> big_deps_;  // dependency lists longer than a chunk
  PayloadTable<ComputeOp, 8> compute_ops_;
  PayloadTable<CommOp, 4> comm_ops_;
  PayloadTable<TransferOp, 2> transfer_ops_;
  PayloadTable<Time, 1> durations_;
  ChunkedVector<CollectiveRef> collectives_;
  std::vector<Extra> extras_;
  std::vector<CommGroup> groups_;
  std::vector<std::string> names_;
  std::vector<std::string> labels_;
  std::vector<std::string> streams_;
  std::vector<LabelId> role_labels_;  // per TaskRole: its label, or -1 before first use
  std::unordered_map<std::string, int32_t> name_index_;
  std::unordered_map<std::string, LabelId> label_index_;
  std::unordered_map<std::string, StreamId> stream_index_;
};

inline const ComputeOp& Trace::compute(TaskId id) const {
  const Stored& s = tasks_[id];
  return s.flags & kExtra ? extras_[s.payload].compute : compute_ops_[s.payload];
}

inline int32_t Trace::instance_of(const Stored& s) const {
  return s.flags & kExtra ? extras_[s.payload].comm.instance : collectives_[s.payload].instance;
}

inline const TaskId* Trace::deps_begin(TaskId id) const {
  const Stored& s = tasks_[id];
  if (s.dep_count == 0) return nullptr;  // its begin may be a chunk not allocated yet
  if (s.dep_begin < 0) return big_deps_[-1 - s.dep_begin].data();
  return &deps_[static_cast<size_t>(s.dep_begin)];
}

inline Task TaskRange::Iterator::operator*() const { return t_->task(i_); }
inline TaskRange::Iterator TaskRange::end() const { return Iterator(t_, static_cast<TaskId>(t_->size())); }
inline size_t TaskRange::size() const { return t_->size(); }
inline Task TaskRange::operator[](size_t id) const { return t_->task(static_cast<TaskId>(id)); }

}  // namespace stacksim::trace

#endif  // STACKSIM_SIM_TRACE_TRACE_H_
