#include "sim/serve/serve_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <tuple>

#include "sim/util/error.h"

namespace stacksim::serve {
namespace {

// vLLM keeps 1% of the blocks free when admitting new prompts (V0's
// watermark) so running sequences can grow without immediate preemption.
constexpr double kWatermark = 0.01;

enum class Role { kColocated, kPrefill, kDecode };

struct Seq {
  int64_t prompt = 0, output = 0;
  int64_t to_prefill = 0;   // tokens the next prefill must compute in all
  int64_t prefilled = 0;    // of those, already computed
  int64_t cached = 0;       // tokens in the KV cache
  int64_t generated = 0;
  double drafted = 0;       // speculative decoding: expected tokens of its decode steps so far
  int64_t blocks = 0;       // blocks held on its replica
  int64_t shared_blocks = 0;  // of those, the replica's cached prefix (not freed with the sequence)
  Time last_token;          // when its latest output token came out
  bool done = false;
  bool swapped = false;     // its KV cache waits in host memory
  int replica = -1;
};

struct Work {
  int seq;
  int64_t chunk;  // prefill tokens this iteration; 0: a decode step
};

struct Replica {
  Role role = Role::kColocated;
  std::deque<int> waiting;    // need (re)prefill
  std::deque<int> resumable;  // KV outside the GPU (swapped, or arriving from a prefill pool)
  std::vector<int> running;   // hold blocks
  std::vector<int> static_batch;
  bool busy = false;
  bool prefix_cached = false;  // the shared prefix's blocks are in its cache
  int64_t free_blocks = 0;
  std::vector<Work> work;     // the iteration in flight
  int outstanding() const { return static_cast<int>(waiting.size() + resumable.size() + running.size()); }
};

struct Event {
  Time t;
  int kind;        // 0: iteration done, 1: request arrival, 2: KV arrives at a decode replica
  int64_t order;   // insertion order: ties resolve deterministically
  int replica;
  int seq;
  bool operator>(const Event& o) const { return std::tie(t, kind, order) > std::tie(o.t, o.kind, o.order); }
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A layer group's share of the layers (each layer stores the same KV per token).
double LayerShare(int64_t group, int64_t layers) {
  return layers > 0 ? static_cast<double>(std::min(group, layers)) / static_cast<double>(layers) : 0.0;
}

class Simulation {
 public:
  Simulation(const ServeConfig& c, const std::vector<Request>& requests)
      : c_(c), cost_(c), block_(c.block_tokens), total_blocks_(cost_.kv_plan().blocks),
        persistent_(c.scheduler == SchedulerKind::kPersistent),
        prefix_blocks_(c.prefix_caching ? c.workload.shared_prefix_tokens / c.block_tokens : 0),
        window_(c.sliding_window_kv ? c.model.sliding_window : 0),
        chunk_(c.chunked_attention_kv ? c.model.attention_chunk : 0),
        window_share_(LayerShare(c.model.sliding_window > 0 ? c.model.sliding_window_layers : 0, c.model.num_layers)),
        chunk_share_(LayerShare(c.model.attention_chunk > 0 ? c.model.chunked_attention_layers : 0, c.model.num_layers)) {
    const bool disagg = c.scheduler == SchedulerKind::kDisaggregated;
    const int n = c.total_replicas();
    replicas_.resize(n);
    for (int i = 0; i < n; ++i) {
      replicas_[i].free_blocks = total_blocks_;
      if (disagg) replicas_[i].role = i < c.prefill_replicas ? Role::kPrefill : Role::kDecode;
    }
    seqs_.resize(requests.size());
    result_.requests.resize(requests.size());
    next_of_.assign(requests.size(), -1);
    result_.kv_plan = cost_.kv_plan();
    for (size_t i = 0; i < requests.size(); ++i) {
      const Request& r = requests[i];
      Seq& s = seqs_[i];
      s.prompt = s.to_prefill = r.prompt_tokens;
      // TurboMind's persistent batch leaves the prompt's last token to the
      // iteration's decode step, which emits the first output token.
      if (persistent_ && s.prompt > 1) s.to_prefill = s.prompt - 1;
      s.output = r.output_tokens;
      RequestOutcome& o = result_.requests[i];
      o.arrival = r.arrival;
      o.prompt_tokens = r.prompt_tokens;
      o.output_tokens = r.output_tokens;
      const int64_t need = c.scheduler == SchedulerKind::kStatic ? r.prompt_tokens + r.output_tokens
                                                                 : r.prompt_tokens + r.output_tokens - 1;
      if (BlocksFor(need) > total_blocks_) {
        throw InputError(c.file, "workload", "request " + std::to_string(i) + " needs " + std::to_string(need) +
                                                 " tokens of KV cache; a replica holds " +
                                                 std::to_string(total_blocks_ * block_));
      }
      if (r.after == kAfterAnyFinish) {
        after_any_.push_back(static_cast<int>(i));
      } else if (r.after < 0) {
        Push(r.arrival, 1, -1, static_cast<int>(i));
      } else {
        if (r.after >= static_cast<int64_t>(i) || next_of_[r.after] >= 0) {
          throw InputError(c.file, "workload", "request " + std::to_string(i) + " follows request " +
                                                   std::to_string(r.after) +
                                                   ": a closed loop follows one earlier request, each at most once");
        }
        next_of_[r.after] = static_cast<int>(i);
      }
    }
  }

  ServeResult Run() {
    while (!events_.empty()) {
      Event e = events_.top();
      events_.pop();
      now_ = e.t;
      if (e.kind == 0) {
        Complete(e.replica);
        Schedule(e.replica);
      } else if (e.kind == 1) {
        int r = Route(c_.scheduler == SchedulerKind::kDisaggregated ? Role::kPrefill : Role::kColocated);
        seqs_[e.seq].replica = r;
        replicas_[r].waiting.push_back(e.seq);
        // Requests arriving at the same instant (a burst, a static batch)
        // are all queued before any replica schedules: the scheduler sees
        // the whole burst, as an engine polling its queue does, instead of
        // starting an iteration for the first arrival alone.
        arrived_.push_back(r);
        if (!events_.empty() && events_.top().t == now_ && events_.top().kind == 1) continue;
        for (int ri : arrived_) Schedule(ri);
        arrived_.clear();
      } else {
        int r = Route(Role::kDecode);
        seqs_[e.seq].replica = r;
        replicas_[r].resumable.push_back(e.seq);
        Schedule(r);
      }
    }
    return std::move(result_);
  }

 private:
  void Push(Time t, int kind, int replica, int seq) { events_.push({t, kind, order_++, replica, seq}); }

  int Route(Role role) {
    std::vector<int> pool;
    for (int i = 0; i < static_cast<int>(replicas_.size()); ++i) {
      if (replicas_[i].role == role) pool.push_back(i);
    }
    if (c_.router == RouterKind::kRoundRobin) return pool[(role == Role::kDecode ? rr_decode_++ : rr_++) % pool.size()];
    int best = pool[0];
    for (int i : pool) {
      if (replicas_[i].outstanding() < replicas_[best].outstanding()) best = i;
    }
    return best;
  }

  // Blocks to grow `s` to `tokens` cached tokens.
  int64_t Grow(const Seq& s, int64_t tokens) const { return std::max<int64_t>(0, BlocksFor(tokens) - s.blocks); }
  // Blocks a sequence of `tokens` cached tokens holds. The pool is sized in
  // blocks of every layer's KV; where the engine keeps only the window in
  // sliding-window layers, those layers hold the window and the block being
  // filled (vLLM V1's hybrid manager frees blocks that slide out).
  // Chunked-attention layers likewise hold at most a chunk.
  int64_t BlocksFor(int64_t tokens) const {
    const double w = window_ > 0 ? window_share_ : 0.0, c = chunk_ > 0 ? chunk_share_ : 0.0;
    if (w <= 0 && c <= 0) return CeilDiv(tokens, block_);
    const double kept = (1.0 - w - c) * static_cast<double>(tokens) +
                        w * static_cast<double>(std::min(tokens, window_ + block_)) +
                        c * static_cast<double>(std::min(tokens, chunk_ + block_));
    return static_cast<int64_t>(std::ceil(kept / static_cast<double>(block_)));
  }

  void Take(Replica& r, Seq& s, int64_t blocks) {
    r.free_blocks -= blocks;
    s.blocks += blocks;
  }

  void Release(Replica& r, Seq& s) {
    r.free_blocks += s.blocks - s.shared_blocks;
    s.blocks = 0;
    s.shared_blocks = 0;
  }

  // Prefix caching: a prompt admitted after its replica cached the shared
  // prefix starts with the prefix's whole blocks in place (at least its last
  // token is still computed, as vLLM recomputes a fully cached prompt's last).
  void ReusePrefix(const Replica& r, Seq& s) const {
    if (!r.prefix_cached || s.prefilled > 0 || s.cached > 0) return;
    const int64_t reuse = std::min(prefix_blocks_, (s.to_prefill - 1) / block_);
    if (reuse <= 0) return;
    s.cached = s.prefilled = reuse * block_;
    s.blocks = s.shared_blocks = reuse;
  }

  // Preempts the newest running sequence; returns the extra
  // time swapping it out costs.
  Time Preempt(Replica& r) {
    int victim = r.running.back();
    r.running.pop_back();
    Seq& s = seqs_[victim];
    ++result_.requests[victim].preemptions;
    ++result_.preemptions;
    Time extra;
    if (c_.preemption == Preemption::kSwap) {
      extra = cost_.KvSwapTime(s.cached);
      s.swapped = true;
      Release(r, s);
      r.resumable.push_front(victim);
    } else {
      Release(r, s);
      s.cached = 0;
      s.prefilled = 0;
      s.to_prefill = s.prompt + s.generated - (persistent_ && s.generated == 0 && s.prompt > 1 ? 1 : 0);
      r.waiting.push_front(victim);
    }
    return extra;
  }

  void Schedule(int ri) {
    Replica& r = replicas_[ri];
    if (r.busy) return;
    BatchShape shape, decode_step;  // decode_step: the persistent batch's second forward
    shape.window = decode_step.window = c_.model.sliding_window;
    shape.chunk = decode_step.chunk = c_.model.attention_chunk;
    Time extra;
    r.work.clear();
    if (c_.scheduler == SchedulerKind::kStatic) {
      ScheduleStatic(r, shape);
    } else {
      extra = ScheduleIteration(r, shape, decode_step);
      // Sequences mid-prefill that cannot grow and nothing else to run:
      // free blocks by preempting until something runs.
      while (r.work.empty() && !r.running.empty()) {
        extra += Preempt(r);
        shape = decode_step = BatchShape();
        extra += ScheduleIteration(r, shape, decode_step);
      }
    }
    if (r.work.empty()) return;
    r.busy = true;
    ++result_.iterations;
    result_.kv_usage.push_back({now_, ri, 1.0 - static_cast<double>(r.free_blocks) / total_blocks_});
    // A persistent-batch iteration is two forwards: the new contexts, then
    // the decode step (one host overhead: Cost adds it to a non-empty batch,
    // and the decode step's is taken off when both run).
    Time t = cost_.Cost(shape) + cost_.Cost(decode_step);
    if (shape.tokens() > 0 && decode_step.tokens() > 0) t -= c_.iteration_overhead;
    Push(now_ + t + extra, 0, ri, -1);
  }

  // Static batching: a batch is admitted whole (blocks for prompt and all
  // output reserved up front), prefilled in one iteration, then decoded
  // until its longest request ends; finished requests stay in the batch as
  // padding (their slots are still computed), as in FasterTransformer-style
  // serving before iteration-level scheduling (Orca, OSDI'22 §2).
  void ScheduleStatic(Replica& r, BatchShape& shape) {
    if (r.static_batch.empty()) {
      int64_t tokens = 0;
      while (!r.waiting.empty() && static_cast<int64_t>(r.static_batch.size()) < c_.max_sequences) {
        Seq& s = seqs_[r.waiting.front()];
        int64_t need = BlocksFor(s.prompt + s.output);
        if (need > r.free_blocks || (!r.static_batch.empty() && tokens + s.prompt > c_.max_batched_tokens)) break;
        Take(r, s, need);
        tokens += s.prompt;
        r.static_batch.push_back(r.waiting.front());
        r.waiting.pop_front();
      }
      for (int id : r.static_batch) {
        shape.AddPrefill(seqs_[id].prompt, 0, true);
        r.work.push_back({id, seqs_[id].prompt});
      }
      return;
    }
    for (int id : r.static_batch) {
      Seq& s = seqs_[id];
      shape.AddDecode(s.cached + (s.done ? 0 : 1));
      r.work.push_back({id, 0});
    }
  }

  // Continuous batching (vLLM V0: a prefill-only iteration whenever new
  // prompts fit, else one decode step of every running sequence), prefill
  // first (SGLang: the same, but a prompt longer than the budget is split
  // and its chunks run first in the following prefill-only iterations),
  // chunked prefill (Sarathi-Serve / vLLM V1: decodes first, then prefill
  // chunks in the remaining token budget), and the pools of a disaggregated
  // deployment (prefill-only; decode-only with transferred KV).
  //
  // Persistent batch (TurboMind v0.1): every iteration runs the contexts of
  // all newly admitted requests (less their last token) in `shape`, then
  // one decode step of every running sequence, the new ones included, in
  // `decode_step`.
  Time ScheduleIteration(Replica& r, BatchShape& shape, BatchShape& decode_step) {
    Time extra;
    const int64_t watermark = static_cast<int64_t>(kWatermark * static_cast<double>(total_blocks_));
    // Resume swapped-out (or transferred-in) sequences first, oldest first.
    while (!r.resumable.empty() && static_cast<int64_t>(r.running.size()) < c_.max_sequences) {
      Seq& s = seqs_[r.resumable.front()];
      int64_t need = BlocksFor(s.cached + 1);
      if (need > r.free_blocks) break;
      Take(r, s, need);
      if (s.swapped) extra += cost_.KvSwapTime(s.cached);
      s.swapped = false;
      r.running.push_back(r.resumable.front());
      r.resumable.pop_front();
    }
    const bool chunked = c_.scheduler == SchedulerKind::kChunked;
    // Prompts longer than the budget are split (chunked prefill, prefill first).
    const bool split = chunked || c_.scheduler == SchedulerKind::kPrefillFirst;
    // Decodes share every iteration with prefills (chunked prefill, and
    // in-flight batching, which prefills whole prompts).
    const bool mixed = chunked || c_.scheduler == SchedulerKind::kInflight;
    const bool no_evict = c_.admission == Admission::kGuaranteedNoEvict;
    // The persistent batch runs every admitted context in one iteration
    // (max_batched_tokens sizes its context sub-batches, not the iteration).
    int64_t budget = persistent_ ? std::numeric_limits<int64_t>::max() / 2 : c_.max_batched_tokens;
    // Decode steps (chunked: always; continuous: only when no prompt is admitted).
    auto decode_all = [&]() {
      for (size_t i = 0; i < r.running.size(); ++i) {
        Seq& s = seqs_[r.running[i]];
        if (s.prefilled < s.to_prefill) continue;  // mid-prefill (chunked)
        // Speculative decoding holds slots for the drafts it verifies.
        const int64_t drafts = c_.speculative.draft_tokens;
        int64_t need = Grow(s, s.cached + 1 + drafts);
        while (need > r.free_blocks && r.running.size() > i + 1) extra += Preempt(r);
        if (need > r.free_blocks) {  // the sequence itself is the newest: preempt it
          extra += Preempt(r);
          break;
        }
        Take(r, s, need);
        if (drafts > 0) {
          shape.AddVerify(s.cached + 1, drafts);
        } else {
          shape.AddDecode(s.cached + 1);
        }
        r.work.push_back({r.running[i], 0});
        budget -= 1 + drafts;
      }
    };
    if (mixed && r.role == Role::kColocated) decode_all();
    // Prefill: continue partial prefills, then admit waiting prompts.
    if (r.role != Role::kDecode || !r.waiting.empty()) {
      for (int id : r.running) {
        Seq& s = seqs_[id];
        if (s.prefilled >= s.to_prefill || budget <= 0) continue;
        int64_t chunk = std::min(budget, s.to_prefill - s.prefilled);
        int64_t need = Grow(s, s.cached + chunk);
        if (need > r.free_blocks) continue;
        Take(r, s, need);
        shape.AddPrefill(chunk, s.cached, s.prefilled + chunk == s.to_prefill);
        r.work.push_back({id, chunk});
        budget -= chunk;
      }
      while (!r.waiting.empty() && budget > 0 && static_cast<int64_t>(r.running.size()) < c_.max_sequences) {
        Seq& s = seqs_[r.waiting.front()];
        ReusePrefix(r, s);
        int64_t remaining = s.to_prefill - s.prefilled;
        // Without splitting a prompt is prefilled whole; a prompt longer
        // than the budget runs alone.
        int64_t chunk = split ? std::min(budget, remaining) : remaining;
        if (!split && chunk > budget && !r.work.empty()) break;
        int64_t need = Grow(s, s.cached + chunk);
        if (no_evict) {
          // Blocks for the prompt and every output token still to come
          // (the last token's KV is never written), taken now: the
          // sequence never grows into blocks it might not get.
          need = Grow(s, s.to_prefill + (s.output - s.generated) - 1);
          if (need > r.free_blocks) break;
        } else if (need + watermark > r.free_blocks && !(r.running.empty() && need <= r.free_blocks)) {
          break;
        }
        Take(r, s, need);
        shape.AddPrefill(chunk, s.cached, chunk == remaining && !(persistent_ && s.generated == 0));
        r.work.push_back({r.waiting.front(), chunk});
        r.running.push_back(r.waiting.front());
        r.waiting.pop_front();
        budget -= chunk;
      }
    }
    if (persistent_) {
      const size_t prefills = r.work.size();
      for (size_t i = 0; i < r.running.size(); ++i) {
        const int id = r.running[i];
        Seq& s = seqs_[id];
        int64_t pending = 0;  // context tokens this iteration computes first
        for (size_t w = 0; w < prefills; ++w) {
          if (r.work[w].seq == id) pending = r.work[w].chunk;
        }
        if (s.prefilled + pending < s.to_prefill) continue;
        const int64_t context = s.cached + pending + 1;
        const int64_t need = Grow(s, context);
        if (need > r.free_blocks) continue;  // waits a step (no preemption in the persistent batch)
        Take(r, s, need);
        decode_step.AddDecode(context);
        r.work.push_back({id, 0});
      }
    } else if (!mixed && r.work.empty() && r.role != Role::kPrefill) {
      decode_all();
    }
    return extra;
  }

  void Finish(Replica& r, int id) {
    Seq& s = seqs_[id];
    s.done = true;
    result_.requests[id].finish = now_;
    result_.makespan = std::max(result_.makespan, now_);
    if (const int next = next_of_[id]; next >= 0) {  // the client's next request
      result_.requests[next].arrival = now_;
      Push(now_, 1, -1, next);
    }
    if (next_after_any_ < after_any_.size()) {  // a concurrency slot frees: the next waiting request takes it
      const int next = after_any_[next_after_any_++];
      const Time at = std::max(now_, result_.requests[next].arrival);  // not before the client has it
      result_.requests[next].arrival = at;
      Push(at, 1, -1, next);
    }
    if (c_.scheduler != SchedulerKind::kStatic) {
      Release(r, s);
      r.running.erase(std::find(r.running.begin(), r.running.end(), id));
    }
  }

  void Complete(int ri) {
    Replica& r = replicas_[ri];
    r.busy = false;
    for (const Work& w : r.work) {
      Seq& s = seqs_[w.seq];
      if (s.done) continue;  // static padding
      if (w.chunk > 0) {
        s.prefilled += w.chunk;
        s.cached += w.chunk;
        // The first prompt through the shared prefix leaves its blocks in
        // the replica's cache for the prompts after it.
        if (prefix_blocks_ > 0 && !r.prefix_cached && s.shared_blocks == 0 && s.prefilled >= prefix_blocks_ * block_) {
          r.prefix_cached = true;
          s.shared_blocks = prefix_blocks_;
        }
        if (s.prefilled < s.to_prefill) continue;
        if (persistent_ && s.generated == 0) continue;  // the decode step emits the first token
        if (s.generated == 0) result_.requests[w.seq].first_token = now_;
      } else {
        if (s.generated == 0) result_.requests[w.seq].first_token = now_;
      }
      if (s.generated > 0) {
        result_.token_gaps.push_back({static_cast<float>(now_.seconds()), static_cast<float>((now_ - s.last_token).seconds())});
      }
      s.last_token = now_;
      // A decode step emits one token, or with speculative decoding the
      // expected accepted drafts and the target's own, tokens_per_step on
      // average (whole tokens, carried over from step to step).
      int64_t emitted = 1;
      if (w.chunk == 0 && c_.speculative.enabled()) {
        const double before = s.drafted;
        s.drafted += c_.speculative.tokens_per_step;
        emitted = std::min(s.output - s.generated,
                           std::max<int64_t>(1, static_cast<int64_t>(std::floor(s.drafted) - std::floor(before))));
      }
      if (w.chunk == 0) s.cached += emitted;
      s.generated += emitted;
      if (s.generated >= s.output) {
        Finish(r, w.seq);
      } else if (r.role == Role::kPrefill) {
        // Hand the KV cache to a decode replica over the network.
        Time transfer = cost_.KvTransferTime(s.cached);
        result_.requests[w.seq].kv_transfer = transfer;
        Release(r, s);
        r.running.erase(std::find(r.running.begin(), r.running.end(), w.seq));
        s.prefilled = s.to_prefill = 0;
        Push(now_ + transfer, 2, -1, w.seq);
      }
    }
    if (c_.scheduler == SchedulerKind::kStatic) {
      bool all_done = std::all_of(r.static_batch.begin(), r.static_batch.end(), [&](int id) { return seqs_[id].done; });
      if (all_done) {
        for (int id : r.static_batch) Release(r, seqs_[id]);
        r.static_batch.clear();
      }
    }
  }

  const ServeConfig& c_;
  IterationCost cost_;
  const int64_t block_;
  const int64_t total_blocks_;
  const bool persistent_;
  const int64_t prefix_blocks_;  // whole blocks of the shared prefix that prefix caching reuses (0: none)
  const int64_t window_;         // sliding-window tokens whose KV alone is kept (0: whole context)
  const int64_t chunk_;          // attention-chunk tokens whose KV alone is kept (0: whole context)
  const double window_share_;    // the sliding-window layers' share of a token's KV
  const double chunk_share_;     // the chunked-attention layers' share
  std::vector<Replica> replicas_;
  std::vector<Seq> seqs_;
  std::vector<int> arrived_;  // replicas that received requests at now_, not yet scheduled
  std::vector<int> next_of_;  // closed loop: the request that arrives when this one finishes (-1: none)
  std::vector<int> after_any_;  // kAfterAnyFinish requests, in index order
  size_t next_after_any_ = 0;   // the next of them to arrive
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t order_ = 0;
  size_t rr_ = 0, rr_decode_ = 0;
  Time now_;
  ServeResult result_;
};

}  // namespace

ServeResult SimulateServing(const ServeConfig& c, const std::vector<Request>& requests) {
  return Simulation(c, requests).Run();
}

}  // namespace stacksim::serve
