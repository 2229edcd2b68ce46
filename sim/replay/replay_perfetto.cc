#include "sim/replay/replay_perfetto.h"

#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/util/error.h"

namespace stacksim::replay {
namespace {

// Thread ids by name, shared by every view so rows line up.
class Threads {
 public:
  int Tid(const std::string& name) {
    auto [it, fresh] = tids_.try_emplace(name, static_cast<int>(tids_.size()) + 1);
    return it->second;
  }
  const std::map<std::string, int>& all() const { return tids_; }

 private:
  std::map<std::string, int> tids_;
};

nlohmann::json Complete(int pid, int tid, const std::string& name, const std::string& cat, Time start, Time dur) {
  return {{"ph", "X"}, {"pid", pid}, {"tid", tid}, {"name", name}, {"cat", cat},
          {"ts", start.ns() / 1000.0}, {"dur", dur.ns() / 1000.0}};
}

nlohmann::json Meta(const char* what, int pid, int tid, const nlohmann::json& args) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", args}};
}

// The replay's filler: host gaps, launch latency, inter-kernel gaps.
bool Filler(const trace::Task& task) { return task.kind == trace::TaskKind::kDelay && task.filler; }

}  // namespace

std::string ReplayComparisonJson(const KinetoStep& step, const std::vector<ReplayView>& views) {
  Threads threads;
  nlohmann::json events = nlohmann::json::array();
  // pid 1: as recorded.
  for (const KinetoHostCall& c : step.calls)
    events.push_back(Complete(1, threads.Tid("host thread " + std::to_string(c.thread)), c.name, "host", c.start,
                              c.duration));
  for (const KinetoKernel& k : step.kernels)
    events.push_back(Complete(1, threads.Tid("gpu stream " + std::to_string(k.stream)), k.name,
                              KernelClassName(k.kernel_class), k.start, k.duration));
  events.push_back(Meta("process_name", 1, 0, {{"name", fmt::format("recorded {} ({}): {:.3f} ms", step.step_name, step.file, step.span.ms())}}));
  events.push_back(Meta("process_sort_index", 1, 0, {{"sort_index", 1}}));
  // pid 2...: the replays.
  int pid = 2;
  for (const ReplayView& v : views) {
    if (v.trace == nullptr || v.replay == nullptr || v.replay->timings.size() != v.trace->size())
      throw std::logic_error("WriteReplayComparison: a view without one timing per task");
    const trace::Trace& t = *v.trace;
    for (size_t id = 0; id < t.size(); ++id) {
      const trace::Task& task = t.task(static_cast<trace::TaskId>(id));
      if (Filler(task)) continue;
      const engine::TaskTiming& tm = v.replay->timings[id];
      events.push_back(Complete(pid, threads.Tid(t.stream_name(task.stream)), t.name(task.name), t.label(task.label),
                                tm.start, tm.end - tm.start));
    }
    events.push_back(Meta("process_name", pid, 0,
                          {{"name", fmt::format("{}: {:.3f} ms", v.name, v.replay->makespan.ms())}}));
    events.push_back(Meta("process_sort_index", pid, 0, {{"sort_index", pid}}));
    ++pid;
  }
  for (int p = 1; p < pid; ++p) {
    for (const auto& [name, tid] : threads.all()) {
      events.push_back(Meta("thread_name", p, tid, {{"name", name}}));
      events.push_back(Meta("thread_sort_index", p, tid, {{"sort_index", tid}}));
    }
  }
  nlohmann::json doc = {{"traceEvents", events},
                        {"displayTimeUnit", "ns"},
                        {"otherData", {{"generator", "stacksim replay"}, {"recorded_step_us", step.span.ns() / 1000.0}}}};
  return doc.dump() + "\n";
}

void WriteReplayComparison(const KinetoStep& step, const std::vector<ReplayView>& views, const std::string& path) {
  std::string text = ReplayComparisonJson(step, views);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path, "", "cannot write the Perfetto trace");
  out << text;
  if (!out) throw InputError(path, "", "error while writing the Perfetto trace");
}

}  // namespace stacksim::replay
