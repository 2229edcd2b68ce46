#include "sim/report/perfetto.h"

#include <map>
#include <sstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/util/error.h"

namespace stacksim::report {
namespace {

// Two ranks, each with a compute and a comm stream: a GEMM per rank, an
// all-reduce across both, and a send from rank 0 to rank 1.
struct TinyStep {
  trace::Trace trace;
  trace::ReplayResult replay;
};

const char kOddName[] = "proj \"out\" \\ x";

TinyStep MakeTinyStep() {
  TinyStep s;
  trace::Trace& t = s.trace;
  t.SetRankCount(2);
  trace::StreamId compute = t.InternStream("compute");
  trace::StreamId comm = t.InternStream("comm");
  trace::GroupId tp = t.AddGroup({"tp", 2, 2, 1, {0, 1}});
  trace::GroupId pp = t.AddGroup({"pp 0-1", 2, 1, 2, {0, 1}});

  trace::Task gemm;
  gemm.kind = trace::TaskKind::kCompute;
  gemm.stream = compute;
  gemm.label = t.InternLabel("gemm");
  gemm.name = t.InternName(kOddName);
  gemm.layer = 3;
  gemm.micro_batch = 2;
  gemm.compute.op_class = trace::OpClass::kGemm;
  gemm.compute.flops = Flops{2e12};
  gemm.compute.bytes = Bytes{3e8};
  gemm.compute.m = 4096;
  gemm.compute.n = 4096;
  gemm.compute.k = 1024;
  gemm.rank = 0;
  trace::TaskId g0 = t.Add(gemm);
  gemm.rank = 1;
  trace::TaskId g1 = t.Add(gemm);

  trace::Task ar;
  ar.kind = trace::TaskKind::kCollective;
  ar.stream = comm;
  ar.label = t.InternLabel("tp comm");
  ar.name = t.InternName("all-reduce");
  ar.comm.kind = trace::CollectiveKind::kAllReduce;
  ar.comm.bytes = Bytes{64e6};
  ar.comm.group = tp;
  ar.comm.instance = 0;
  ar.rank = 0;
  t.Add(ar, {g0});
  ar.rank = 1;
  t.Add(ar, {g1});

  trace::Task send;
  send.kind = trace::TaskKind::kTransfer;
  send.rank = 0;
  send.stream = comm;
  send.label = t.InternLabel("pp comm");
  send.name = t.InternName("send");
  send.transfer.dst = 1;
  send.transfer.bytes = Bytes{8e6};
  send.transfer.group = pp;
  t.Add(send, {g0});

  auto at = [](int64_t ready, int64_t start, int64_t end) {
    return trace::TaskTiming{Time::Ns(ready), Time::Ns(start), Time::Ns(end)};
  };
  s.replay.timings = {at(0, 0, 1500), at(0, 0, 2000), at(1500, 2000, 2750), at(2000, 2000, 2750),
                      at(2750, 2750, 3000)};
  s.replay.contention.assign(5, Time::Zero());
  s.replay.contention[4] = Time::Ns(125);
  s.replay.makespan = Time::Ns(3000);
  return s;
}

nlohmann::json Render(const TinyStep& s) {
  std::ostringstream out;
  WritePerfettoTrace(s.trace, s.replay, out, "tiny \"step\"");
  return nlohmann::json::parse(out.str());  // throws if the output is not JSON
}

TEST(Perfetto, OneCompleteEventPerTaskInMicroseconds) {
  TinyStep s = MakeTinyStep();
  nlohmann::json doc = Render(s);
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
  std::map<int, nlohmann::json> by_task;
  for (const nlohmann::json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "X") by_task[e.at("args").at("task").get<int>()] = e;
  }
  ASSERT_EQ(by_task.size(), s.trace.size());
  const double start_us[] = {0, 0, 2.0, 2.0, 2.75};
  const double dur_us[] = {1.5, 2.0, 0.75, 0.75, 0.25};
  for (size_t id = 0; id < s.trace.size(); ++id) {
    const nlohmann::json& e = by_task.at(static_cast<int>(id));
    EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), start_us[id]) << id;
    EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), dur_us[id]) << id;
    EXPECT_EQ(e.at("pid").get<int>(), s.trace.task(id).rank) << id;
    EXPECT_EQ(e.at("tid").get<int>(), s.trace.task(id).stream) << id;
  }
  // The all-reduce on rank 0 waited 0.5 us for rank 1.
  EXPECT_DOUBLE_EQ(by_task[2].at("args").at("wait_us").get<double>(), 0.5);
  EXPECT_FALSE(by_task[3].at("args").contains("wait_us"));
  EXPECT_DOUBLE_EQ(by_task[4].at("args").at("contention_us").get<double>(), 0.125);
}

TEST(Perfetto, NamesCategoriesAndArgs) {
  nlohmann::json doc = Render(MakeTinyStep());
  std::map<int, nlohmann::json> by_task;
  for (const nlohmann::json& e : doc.at("traceEvents")) {
    if (e.at("ph") == "X") by_task[e.at("args").at("task").get<int>()] = e;
  }
  EXPECT_EQ(by_task[0].at("name"), std::string(kOddName) + " L3 mb2");
  EXPECT_EQ(by_task[0].at("cat"), "gemm");
  EXPECT_DOUBLE_EQ(by_task[0].at("args").at("flops").get<double>(), 2e12);
  EXPECT_DOUBLE_EQ(by_task[0].at("args").at("bytes").get<double>(), 3e8);
  EXPECT_EQ(by_task[0].at("args").at("k").get<int>(), 1024);
  EXPECT_EQ(by_task[2].at("name"), "all-reduce");
  EXPECT_EQ(by_task[2].at("cat"), "tp comm");
  EXPECT_EQ(by_task[2].at("args").at("collective"), "all-reduce");
  EXPECT_EQ(by_task[2].at("args").at("group"), "tp");
  EXPECT_DOUBLE_EQ(by_task[2].at("args").at("bytes").get<double>(), 64e6);
  EXPECT_EQ(by_task[4].at("args").at("group"), "pp 0-1");
  EXPECT_EQ(by_task[4].at("args").at("dst_rank").get<int>(), 1);
  EXPECT_EQ(doc.at("otherData").at("title"), "tiny \"step\"");
}

TEST(Perfetto, MetadataNamesEveryRankAndStream) {
  nlohmann::json doc = Render(MakeTinyStep());
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  for (const nlohmann::json& e : doc.at("traceEvents")) {
    if (e.at("ph") != "M") continue;
    if (e.at("name") == "process_name") processes[e.at("pid")] = e.at("args").at("name");
    if (e.at("name") == "thread_name") threads[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
  std::map<std::pair<int, int>, std::string> expected = {
      {{0, 0}, "compute"}, {{0, 1}, "comm"}, {{1, 0}, "compute"}, {{1, 1}, "comm"}};
  EXPECT_EQ(threads, expected);
}

TEST(Perfetto, TimestampsAreExactDecimalMicroseconds) {
  TinyStep s = MakeTinyStep();
  s.replay.timings[0] = {Time::Zero(), Time::Ns(1017), Time::Ns(123456789)};
  s.replay.timings[1] = {Time::Zero(), Time::Ns(1000000), Time::Ns(1000010)};
  std::ostringstream out;
  WritePerfettoTrace(s.trace, s.replay, out, "t");
  std::string text = out.str();
  EXPECT_NE(text.find(R"("ts":1.017,"dur":123455.772,)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("ts":1000,"dur":0.01,)"), std::string::npos) << text;
}

TEST(Perfetto, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonEscape("a\"b\\c\nd\x01"), "a\\\"b\\\\c\\nd\\u0001");
  std::string odd = std::string("tab\there, quote \" slash \\ bell \x07 \xc2\xb5s");
  EXPECT_EQ(nlohmann::json::parse("\"" + JsonEscape(odd) + "\"").get<std::string>(), odd);
}

TEST(Perfetto, MismatchedTimingsAreAnInternalError) {
  TinyStep s = MakeTinyStep();
  s.replay.timings.pop_back();
  std::ostringstream out;
  EXPECT_THROW(WritePerfettoTrace(s.trace, s.replay, out, "x"), std::logic_error);
}

TEST(Perfetto, UnwritablePathIsAnInputError) {
  TinyStep s = MakeTinyStep();
  try {
    WritePerfettoTraceFile(s.trace, s.replay, "x", "/nonexistent-folder/trace.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "/nonexistent-folder/trace.json");
    EXPECT_NE(std::string(e.what()).find("cannot write"), std::string::npos);
  }
}

}  // namespace
}  // namespace stacksim::report
