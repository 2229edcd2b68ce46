#include "sim/serve/serve_sim.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "sim/config/scenario.h"

#include "sim/serve/iteration_cost.h"
#include "sim/serve/serve_report.h"
#include "sim/serve/serve_test_util.h"
#include "sim/util/error.h"

namespace stacksim::serve {
namespace {

struct Outcome {
  ServeConfig config;
  ServeResult result;
  ServeMetrics metrics;
};

Outcome Simulate(const nlohmann::json& doc) {
  Outcome r{ParseServeScenario(doc, "t.json"), {}, {}};
  r.result = SimulateServing(r.config, GenerateRequests(r.config.workload));
  r.metrics = ComputeMetrics(r.config, r.result, 0, "");
  return r;
}

TEST(ServeSim, EveryRequestFinishesAfterItsFirstToken) {
  Outcome r = Simulate(TestServeDoc());
  ASSERT_EQ(r.result.requests.size(), 200u);
  for (const RequestOutcome& o : r.result.requests) {
    EXPECT_GT(o.first_token, o.arrival);
    EXPECT_GE(o.finish, o.first_token);
  }
  EXPECT_GT(r.metrics.output_tokens_per_s, 0);
}

// Output lengths spread 10-400: a static batch runs until its longest request
// ends and admits nobody meanwhile; iteration-level scheduling refills slots.
TEST(ServeSim, ContinuousBatchingBeatsStaticBatching) {
  nlohmann::json doc = TestServeDoc();
  doc["workload"]["rate_per_s"] = 20;
  doc["scheduler"]["max_sequences"] = 32;
  Outcome continuous = Simulate(doc);
  doc["scheduler"]["kind"] = "static";
  Outcome fixed = Simulate(doc);
  EXPECT_GT(continuous.metrics.tokens_per_s, 1.2 * fixed.metrics.tokens_per_s);
  EXPECT_LT(continuous.metrics.e2e.mean, 0.8 * fixed.metrics.e2e.mean);
}

// Long prompts prefilled whole stall every running decode for the prefill's
// duration; chunks of 512 tokens mixed into decode steps bound the stall.
TEST(ServeSim, ChunkedPrefillLowersTpotTailUnderLongPrompts) {
  nlohmann::json doc = TestServeDoc();
  doc["workload"]["rate_per_s"] = 1.5;
  doc["workload"]["prompt_tokens"] = {{"kind", "uniform"}, {"min", 4000}, {"max", 8000}};
  doc["workload"]["output_tokens"] = {{"kind", "uniform"}, {"min", 100}, {"max", 300}};
  Outcome continuous = Simulate(doc);
  doc["scheduler"]["kind"] = "chunked-prefill";
  doc["scheduler"]["max_batched_tokens"] = 512;
  Outcome chunked = Simulate(doc);
  EXPECT_LT(chunked.metrics.tpot.p99, 0.8 * continuous.metrics.tpot.p99);
}

// In-flight batching (TensorRT-LLM without chunked context) runs every
// decode and whole prompts in one iteration: with a 4,096-token budget and
// 3,000-token prompts arriving together, the second prompt waits a whole
// iteration for the first (no chunk of it rides along), while decodes never
// wait for a prefill-only iteration.
TEST(ServeSim, InflightBatchingPrefillsWholePromptsBesideDecodes) {
  nlohmann::json doc = TestServeDoc();
  doc["workload"]["prompt_tokens"] = {{"kind", "fixed"}, {"tokens", 3000}};
  doc["scheduler"]["max_batched_tokens"] = 4096;
  Request r;
  r.prompt_tokens = 3000;
  r.output_tokens = 20;
  const std::vector<Request> both(2, r);  // arriving together at t = 0
  doc["scheduler"]["kind"] = "inflight";
  const ServeResult inflight = SimulateServing(ParseServeScenario(doc, "t.json"), both);
  doc["scheduler"]["kind"] = "chunked-prefill";
  const ServeResult chunked = SimulateServing(ParseServeScenario(doc, "t.json"), both);
  const auto& a = inflight.requests;
  // The first prompt alone, then the second beside the first's decode.
  EXPECT_LT(a[0].first_token.seconds(), 0.6 * a[1].first_token.seconds());
  // Chunked: 4,096 tokens of both in the first iteration, so the first
  // prompt's first token comes out of a larger iteration.
  EXPECT_GT(chunked.requests[0].first_token, a[0].first_token);
  // 2 x 20 tokens, the second prefill beside a decode: 21 iterations.
  EXPECT_EQ(inflight.iterations, 21);
}

// Prefill first (SGLang): a prompt longer than the token budget is split;
// its chunks run in prefill-only iterations, one after another, while the
// running decode waits. A 10,000-token prompt under a 4,096 budget arriving
// behind a decoding request: three prefill iterations (4,096 + 4,096 +
// 1,808 tokens), the last emitting its first token. The continuous
// scheduler refuses such a prompt; chunked prefill keeps the decode going.
TEST(ServeSim, PrefillFirstSplitsLongPromptsIntoPrefillOnlyIterations) {
  nlohmann::json doc = TestServeDoc();
  doc["scheduler"]["max_batched_tokens"] = 4096;
  doc["workload"]["prompt_tokens"] = {{"kind", "fixed"}, {"tokens", 10000}};
  EXPECT_THROW(ParseServeScenario(doc, "t.json"), InputError);  // continuous
  doc["scheduler"]["kind"] = "prefill-first";
  const ServeConfig c = ParseServeScenario(doc, "t.json");
  Request a, b;
  a.prompt_tokens = 100;
  a.output_tokens = 200;
  b.prompt_tokens = 10000;
  b.output_tokens = 5;
  b.arrival = Time::Ms(100);  // a is decoding by then
  const ServeResult res = SimulateServing(c, {a, b});
  IterationCost cost(c);
  BatchShape p1, p2, p3;
  p1.AddPrefill(4096, 0, false);
  p2.AddPrefill(4096, 4096, false);
  p3.AddPrefill(1808, 8192, true);
  const Time prefill = cost.Cost(p1) + cost.Cost(p2) + cost.Cost(p3);
  const Time ttft = res.requests[1].first_token - res.requests[1].arrival;
  BatchShape step;
  step.AddDecode(400);
  EXPECT_GE(ttft, prefill);
  EXPECT_LE(ttft, prefill + cost.Cost(step));  // at most the decode step in flight at arrival
  // The decode stalls for all three chunks: some gap between a's tokens
  // spans them.
  double longest = 0;
  for (const TokenGap& g : res.token_gaps) longest = std::max(longest, static_cast<double>(g.gap_s));
  EXPECT_GE(longest, prefill.seconds() * (1 - 1e-6));  // gaps are stored as float
  doc["scheduler"]["kind"] = "chunked-prefill";
  const ServeResult chunked = SimulateServing(ParseServeScenario(doc, "t.json"), {a, b});
  double chunked_longest = 0;
  for (const TokenGap& g : chunked.token_gaps) chunked_longest = std::max(chunked_longest, static_cast<double>(g.gap_s));
  EXPECT_LT(chunked_longest, 0.5 * longest);
}

// TurboMind's persistent batch: an iteration is the new contexts (less
// their last token), then one decode step of everyone, which emits the new
// requests' first tokens. One 128-token request: its first token takes a
// 127-token prefill plus a one-sequence decode step, each a forward pass
// reading every weight; then a token per decode step.
TEST(ServeSim, PersistentBatchEmitsTheFirstTokenFromTheDecodeStep) {
  nlohmann::json doc = TestServeDoc();
  doc["scheduler"]["kind"] = "persistent";
  Request r;
  r.prompt_tokens = 128;
  r.output_tokens = 4;
  const ServeConfig c = ParseServeScenario(doc, "t.json");
  const ServeResult res = SimulateServing(c, {r});
  IterationCost cost(c);
  BatchShape prefill, decode, next;
  prefill.AddPrefill(127, 0, false);
  decode.AddDecode(128);
  next.AddDecode(129);
  EXPECT_EQ(res.requests[0].first_token, cost.Cost(prefill) + cost.Cost(decode));
  EXPECT_EQ(res.iterations, 4);  // contexts + decode, then three decode steps
  EXPECT_GT(res.requests[0].finish - res.requests[0].first_token, cost.Cost(next) + cost.Cost(next));
  // Four requests arriving together: every context in the first iteration,
  // so all first tokens come out at once.
  const ServeResult four = SimulateServing(c, std::vector<Request>(4, r));
  for (const RequestOutcome& o : four.requests) EXPECT_EQ(o.first_token, four.requests[0].first_token);
}

// Guaranteed-no-evict admission reserves a request's prompt and every
// output token up front: with room for fewer whole requests than the
// watermark rule admits, nothing is ever preempted and fewer run at once.
TEST(ServeSim, GuaranteedNoEvictNeverPreempts) {
  nlohmann::json doc = TestServeDoc();
  doc["replica"]["tp"] = 4;
  doc["workload"]["requests"] = 200;
  doc["workload"]["rate_per_s"] = 1e9;
  doc["workload"]["prompt_tokens"] = {{"kind", "fixed"}, {"tokens", 2000}};
  doc["workload"]["output_tokens"] = {{"kind", "fixed"}, {"tokens", 4000}};
  doc["scheduler"]["kind"] = "inflight";
  Outcome greedy = Simulate(doc);
  doc["scheduler"]["admission"] = "guaranteed-no-evict";
  Outcome no_evict = Simulate(doc);
  EXPECT_GT(greedy.result.preemptions, 0);
  EXPECT_EQ(no_evict.result.preemptions, 0);
  // At most blocks / (5,999 tokens in blocks of 16) requests between first
  // token and finish at once; the watermark rule starts more than that.
  const int64_t whole = no_evict.result.kv_plan.blocks / ((2000 + 4000 - 1 + 15) / 16);
  auto most_at_once = [](const ServeResult& r) {
    int most = 0;
    for (const RequestOutcome& a : r.requests) {
      int n = 0;
      for (const RequestOutcome& b : r.requests) n += b.first_token <= a.first_token && a.first_token < b.finish;
      most = std::max(most, n);
    }
    return most;
  };
  EXPECT_GT(whole, 0);
  EXPECT_LE(most_at_once(no_evict.result), whole);
  EXPECT_GT(most_at_once(greedy.result), whole);
}

// One request alone: the disaggregated pair runs the same prefill and decode
// iterations as one replica, plus the KV transfer between them.
TEST(ServeSim, DisaggregationAddsTheKvTransfer) {
  nlohmann::json doc = TestServeDoc();
  doc["workload"]["requests"] = 1;
  doc["workload"]["prompt_tokens"] = {{"kind", "fixed"}, {"tokens", 2000}};
  doc["workload"]["output_tokens"] = {{"kind", "fixed"}, {"tokens", 50}};
  Outcome colocated = Simulate(doc);
  doc["scheduler"]["kind"] = "disaggregated";
  doc["scheduler"]["prefill_replicas"] = 1;
  doc["scheduler"]["decode_replicas"] = 1;
  Outcome disagg = Simulate(doc);
  const RequestOutcome& a = colocated.result.requests[0];
  const RequestOutcome& b = disagg.result.requests[0];
  // 2000 tokens x 40960 B per GPU over one 400 Gb/s NIC per GPU (dgx-h100):
  // about 2 ms.
  Time transfer = IterationCost(disagg.config).KvTransferTime(2000);
  EXPECT_EQ(b.kv_transfer, transfer);
  EXPECT_GT(transfer, Time::Ms(1));
  EXPECT_EQ(b.first_token, a.first_token);
  EXPECT_EQ(b.finish - a.finish, transfer);
}

TEST(ServeSim, SameSeedSameResultOtherSeedOther) {
  nlohmann::json doc = TestServeDoc();
  Outcome a = Simulate(doc), b = Simulate(doc);
  ASSERT_EQ(a.result.requests.size(), b.result.requests.size());
  for (size_t i = 0; i < a.result.requests.size(); ++i) {
    EXPECT_EQ(a.result.requests[i].finish, b.result.requests[i].finish);
    EXPECT_EQ(a.result.requests[i].prompt_tokens, b.result.requests[i].prompt_tokens);
  }
  doc["workload"]["seed"] = 8;
  Outcome c = Simulate(doc);
  EXPECT_NE(a.result.makespan, c.result.makespan);
}

TEST(ServeSim, RunningOutOfKvPreemptsAndStillFinishes) {
  nlohmann::json doc = TestServeDoc();
  doc["memory"] = {{"gpu_memory_utilization", 0.25}};  // leaves about 50k tokens of KV
  doc["workload"]["rate_per_s"] = 100;
  Outcome recompute = Simulate(doc);
  EXPECT_GT(recompute.result.preemptions, 0);
  doc["kv_cache"] = {{"preemption", "swap"}};
  Outcome swap = Simulate(doc);
  EXPECT_GT(swap.result.preemptions, 0);
  for (const Outcome* r : {&recompute, &swap}) {
    for (const RequestOutcome& o : r->result.requests) EXPECT_GT(o.finish, Time::Zero());
  }
}

TEST(ServeSim, LeastLoadedRouterSpreadsReplicas) {
  nlohmann::json doc = TestServeDoc();
  doc["replicas"] = 2;
  doc["scheduler"]["router"] = "least-loaded";
  Outcome two = Simulate(doc);
  doc["replicas"] = 1;
  Outcome one = Simulate(doc);
  EXPECT_LT(two.metrics.e2e.mean, one.metrics.e2e.mean);
}

void ExpectInputError(const nlohmann::json& doc, const std::string& key) {
  try {
    ParseServeScenario(doc, "bad.json");
    ADD_FAILURE() << "no error for " << key;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.key_path(), key) << e.what();
  }
}

TEST(ServeConfig, BadFieldsNameFileAndKey) {
  nlohmann::json doc = TestServeDoc();
  doc["replica"]["tp"] = 3;
  ExpectInputError(doc, "replica.tp");
  doc = TestServeDoc();
  doc["scheduler"]["kind"] = "fifo";
  ExpectInputError(doc, "scheduler.kind");
  doc = TestServeDoc();
  doc["workload"]["rate_per_s"] = -1;
  ExpectInputError(doc, "workload.rate_per_s");
  doc = TestServeDoc();
  doc["precision"] = {{"weights", "int4"}, {"compute", "fp8"}};
  ExpectInputError(doc, "precision.compute");
  doc = TestServeDoc();
  doc["slo"] = {{"ttft", "2"}, {"tpot", "100 ms"}};
  ExpectInputError(doc, "slo.ttft");
  doc = TestServeDoc();
  doc["workload"]["prompt_tokens"]["maxx"] = 5;
  ExpectInputError(doc, "workload.prompt_tokens.maxx");
}

// Speculative decoding: one request of 101 output tokens emits its first
// token from the prefill and the other 100 in steps of 2.5 tokens on
// average, so 40 decode steps; each step verifies its 3 drafts and runs 3
// draft forwards, so with every draft rejected (1 token per step) the same
// request takes longer per token than without drafts.
TEST(ServeSim, SpeculativeDecodingEmitsTheExpectedTokensPerStep) {
  nlohmann::json doc = TestServeDoc();
  doc["workload"] = {{"arrival", "poisson"}, {"rate_per_s", 1},        {"requests", 1}, {"seed", 1},
                     {"prompt_tokens", {{"kind", "fixed"}, {"tokens", 500}}},
                     {"output_tokens", {{"kind", "fixed"}, {"tokens", 101}}}};
  const Outcome plain = Simulate(doc);
  EXPECT_EQ(plain.result.iterations, 1 + 100);
  doc["speculative"] = {{"method", "eagle"}, {"draft_tokens", 3}, {"accepted_tokens_per_step", 2.5}};
  const Outcome eagle = Simulate(doc);
  EXPECT_EQ(eagle.result.iterations, 1 + 40);
  EXPECT_LT(eagle.metrics.tpot.mean, 0.6 * plain.metrics.tpot.mean);
  doc["speculative"]["accepted_tokens_per_step"] = 1.0;
  const Outcome rejected = Simulate(doc);
  EXPECT_EQ(rejected.result.iterations, 1 + 100);
  EXPECT_GT(rejected.metrics.tpot.mean, 1.05 * plain.metrics.tpot.mean);
  // A rate instead of a length: (1 - 0.6^4) / (1 - 0.6) = 2.176 tokens per step.
  doc["speculative"].erase("accepted_tokens_per_step");
  doc["speculative"]["acceptance_rate"] = 0.6;
  EXPECT_NEAR(ParseServeScenario(doc, "t.json").speculative.tokens_per_step, 2.176, 1e-9);
}

// The draft's weights and KV cache come out of the target's KV budget: a
// draft head of one layer costs 1/80 of Llama 3 70B's KV per token, an 8B
// draft model its own 32 layers' worth.
TEST(ServeSim, SpeculativeDraftsTakeMemoryFromTheKvCache) {
  nlohmann::json doc = TestServeDoc();
  const ServeConfig plain = ParseServeScenario(doc, "t.json");
  doc["speculative"] = {{"method", "eagle"}, {"draft_tokens", 3}, {"acceptance_rate", 0.7}};
  const ServeConfig head = ParseServeScenario(doc, "t.json");
  doc["speculative"] = {{"method", "draft-model"}, {"draft_tokens", 4}, {"acceptance_rate", 0.7},
                        {"draft_model", "llama3.1-8b"}};
  const ServeConfig model = ParseServeScenario(doc, "t.json");
  const double base = IterationCost(plain).kv_plan().kv_bytes_per_token.value;
  EXPECT_DOUBLE_EQ(IterationCost(head).kv_plan().kv_bytes_per_token.value, base * 81.0 / 80.0);
  EXPECT_DOUBLE_EQ(IterationCost(model).kv_plan().kv_bytes_per_token.value, base * (80.0 + 32.0) / 80.0);
  EXPECT_GT(IterationCost(model).kv_plan().weights.value, IterationCost(head).kv_plan().weights.value);
  EXPECT_GT(IterationCost(head).kv_plan().weights.value, IterationCost(plain).kv_plan().weights.value);
}

// Prefix caching: prompts of 1000 tokens whose first 800 are shared. The
// first prompt computes all 1000 and leaves the prefix's 50 whole blocks in
// the cache; every later one prefills 200 tokens (after 800 cached), so its
// TTFT falls, and its KV cache holds 13 blocks of its own instead of 63.
TEST(ServeSim, PrefixCachingSkipsTheSharedPrefix) {
  nlohmann::json doc = TestServeDoc();
  doc["workload"]["prompt_tokens"] = {{"kind", "fixed"}, {"tokens", 1000}};
  doc["workload"]["output_tokens"] = {{"kind", "fixed"}, {"tokens", 50}};
  const Outcome plain = Simulate(doc);
  doc["workload"]["shared_prefix_tokens"] = 800;
  const Outcome shared_off = Simulate(doc);  // no engine: prefix caching off
  EXPECT_FALSE(shared_off.config.prefix_caching);
  EXPECT_DOUBLE_EQ(shared_off.metrics.ttft.mean, plain.metrics.ttft.mean);
  doc["kv_cache"] = {{"prefix_caching", true}};
  const Outcome cached = Simulate(doc);
  EXPECT_LT(cached.metrics.ttft.mean, 0.7 * plain.metrics.ttft.mean);
  EXPECT_DOUBLE_EQ(cached.result.requests[0].first_token.seconds(), plain.result.requests[0].first_token.seconds());
  double peak_plain = 0, peak_cached = 0;
  for (const auto& u : plain.result.kv_usage) peak_plain = std::max(peak_plain, u.used);
  for (const auto& u : cached.result.kv_usage) peak_cached = std::max(peak_cached, u.used);
  EXPECT_LT(peak_cached, 0.6 * peak_plain);
}

// GPT-OSS's sliding-window layers (half of them, 128 tokens): an engine that
// keeps only their window (vLLM V1's hybrid KV cache manager) holds long
// sequences in about half the blocks; the whole-context rule in all of them.
TEST(ServeSim, SlidingWindowLayersKeepOnlyTheWindowWhereTheEngineDoes) {
  nlohmann::json doc = TestServeDoc();
  doc["model"] = "gpt-oss-120b";
  doc["replica"] = {{"tp", 4}};
  doc["workload"]["requests"] = 40;
  doc["workload"]["prompt_tokens"] = {{"kind", "fixed"}, {"tokens", 20000}};
  doc["workload"]["output_tokens"] = {{"kind", "fixed"}, {"tokens", 20}};
  doc["scheduler"]["kind"] = "chunked-prefill";
  doc["kv_cache"] = {{"sliding_window_kv", false}};
  const Outcome whole = Simulate(doc);
  doc["kv_cache"] = {{"sliding_window_kv", true}};
  const Outcome window = Simulate(doc);
  EXPECT_TRUE(window.config.sliding_window_kv);
  double peak_whole = 0, peak_window = 0;
  for (const auto& u : whole.result.kv_usage) peak_whole = std::max(peak_whole, u.used);
  for (const auto& u : window.result.kv_usage) peak_window = std::max(peak_window, u.used);
  EXPECT_LT(peak_window, 0.6 * peak_whole);
  EXPECT_GT(peak_window, 0.4 * peak_whole);
  // vLLM V1's profile keeps the window; V0's does not.
  doc.erase("kv_cache");
  doc["engine"] = "vllm-v1";
  EXPECT_TRUE(ParseServeScenario(doc, "t.json").sliding_window_kv);
  EXPECT_TRUE(ParseServeScenario(doc, "t.json").chunked_attention_kv);
  doc["engine"] = "vllm";
  EXPECT_FALSE(ParseServeScenario(doc, "t.json").sliding_window_kv);
  EXPECT_FALSE(ParseServeScenario(doc, "t.json").chunked_attention_kv);
  doc["engine"] = "tensorrt-llm";
  EXPECT_TRUE(ParseServeScenario(doc, "t.json").sliding_window_kv);
  EXPECT_FALSE(ParseServeScenario(doc, "t.json").chunked_attention_kv);  // not sourced for TensorRT-LLM
}

TEST(ServeSim, PrefixCachingIsTheEnginesDefaultAndNeedsAnIterationScheduler) {
  nlohmann::json doc = TestServeDoc();
  doc["engine"] = "vllm-v1";
  doc["scheduler"]["kind"] = "chunked-prefill";
  EXPECT_TRUE(ParseServeScenario(doc, "t.json").prefix_caching);
  doc["engine"] = "vllm";
  doc["scheduler"]["kind"] = "continuous";
  EXPECT_FALSE(ParseServeScenario(doc, "t.json").prefix_caching);
  doc["kv_cache"] = {{"prefix_caching", true}};
  doc["workload"]["shared_prefix_tokens"] = 500;
  doc["scheduler"]["kind"] = "static";
  try {
    ParseServeScenario(doc, "t.json");
    ADD_FAILURE() << "static batching with prefix caching was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.key_path(), "workload.shared_prefix_tokens");
  }
}

TEST(ServeSim, SpeculativeDecodingInputErrorsNameTheField) {
  auto error = [](const nlohmann::json& spec, const std::string& kind = "continuous") {
    nlohmann::json doc = TestServeDoc();
    doc["scheduler"]["kind"] = kind;
    doc["speculative"] = spec;
    try {
      ParseServeScenario(doc, "t.json");
    } catch (const InputError& e) {
      return e.key_path();
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({{"method", "eagle"}, {"draft_tokens", 3}}), "speculative.method");
  EXPECT_EQ(error({{"method", "eagle"}, {"draft_tokens", 3}, {"acceptance_rate", 0.5},
                   {"accepted_tokens_per_step", 2}}), "speculative.method");
  EXPECT_EQ(error({{"method", "eagle"}, {"draft_tokens", 3}, {"accepted_tokens_per_step", 5}}),
            "speculative.accepted_tokens_per_step");
  EXPECT_EQ(error({{"method", "medusa"}, {"draft_tokens", 3}, {"acceptance_rate", 0.5}}), "speculative.method");
  EXPECT_EQ(error({{"method", "draft-model"}, {"draft_tokens", 3}, {"acceptance_rate", 0.5}}), "speculative.method");
  EXPECT_EQ(error({{"method", "eagle"}, {"draft_tokens", 3}, {"acceptance_rate", 0.5}}, "static"), "speculative");
  EXPECT_EQ(error({{"method", "mtp"}, {"draft_tokens", 1}, {"acceptance_rate", 0.5}, {"draft_layers", 80}}),
            "speculative.draft_layers");
}

}  // namespace
}  // namespace stacksim::serve

namespace stacksim::serve {
namespace {

TEST(ServeConfig, EveryShippedServingScenarioLoadsAndRuns) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(config::DataRoot() + "/scenarios")) {
    if (entry.path().filename().string().rfind("serve-", 0) != 0) continue;
    SCOPED_TRACE(entry.path().string());
    ServeOverrides o;
    o.requests = 50;
    ServeConfig c = LoadServeScenario(entry.path().string(), o);
    ServeResult r = SimulateServing(c, GenerateRequests(c.workload));
    EXPECT_EQ(r.requests.size(), 50u);
    ++count;
  }
  EXPECT_GE(count, 1);
}

}  // namespace
}  // namespace stacksim::serve

namespace stacksim::serve {
namespace {

TEST(ServeSim, ClosedLoopRequestsFollowOneEarlierRequestEach) {
  ServeConfig c = ParseServeScenario(TestServeDoc(), "t.json");
  Request r;
  r.prompt_tokens = 100;
  r.output_tokens = 10;
  std::vector<Request> reqs(3, r);
  reqs[1].after = 0;
  reqs[2].after = 1;
  ServeResult out = SimulateServing(c, reqs);
  EXPECT_EQ(out.requests[1].arrival, out.requests[0].finish);
  EXPECT_EQ(out.requests[2].arrival, out.requests[1].finish);
  reqs[0].after = 2;  // a later request: not a loop a client can run
  EXPECT_THROW(SimulateServing(c, reqs), InputError);
  reqs[0].after = -1;
  reqs[2].after = 0;  // two requests after the same one
  reqs[1].after = 0;
  EXPECT_THROW(SimulateServing(c, reqs), InputError);
}

// Eight requests arriving at one instant form one static batch: one prefill
// of all eight, then their decode steps (the scheduler sees the whole burst,
// not the first arrival alone).
TEST(ServeSim, RequestsArrivingTogetherAreAdmittedTogether) {
  nlohmann::json doc = TestServeDoc();
  doc["scheduler"] = {{"kind", "static"}, {"max_sequences", 8}, {"max_batched_tokens", 8 * 32}};
  doc["workload"]["prompt_tokens"] = {{"kind", "fixed"}, {"tokens", 32}};
  ServeConfig c = ParseServeScenario(doc, "t.json");
  Request r;
  r.prompt_tokens = 32;
  r.output_tokens = 16;
  std::vector<Request> reqs(8, r);
  ServeResult res = SimulateServing(c, reqs);
  EXPECT_EQ(res.iterations, 16);  // one prefill, 15 decode steps
  for (const RequestOutcome& o : res.requests) EXPECT_EQ(o.finish, res.requests[0].finish);
}

// Every output token after a request's first records its gap; under
// continuous batching a decode that waits through a prefill iteration has a
// longer gap than the plain decode steps, so the median token's gap is below
// the mean request's TPOT when prefills interrupt.
TEST(ServeSim, TokenGapsCoverEveryTokenAfterTheFirst) {
  nlohmann::json doc = TestServeDoc();
  ServeConfig c = ParseServeScenario(doc, "t.json");
  std::vector<Request> reqs = GenerateRequests(c.workload);
  ServeResult res = SimulateServing(c, reqs);
  int64_t expected = 0;
  for (const Request& q : reqs) expected += q.output_tokens - 1;
  EXPECT_EQ(static_cast<int64_t>(res.token_gaps.size()), expected);
  ServeMetrics m = ComputeMetrics(c, res, 0, "");
  EXPECT_GT(m.token_gap.p50, 0);
  EXPECT_LT(m.token_gap.p50, m.tpot.mean);
}

}  // namespace
}  // namespace stacksim::serve
