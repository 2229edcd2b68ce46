#include "sim/simulate/critical_path.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dag_shortest_paths.hpp>
#include <boost/graph/exception.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace stacksim::simulate {
namespace {

using Dag = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                  boost::property<boost::edge_weight_t, int64_t>>;
using DagVertex = boost::graph_traits<Dag>::vertex_descriptor;

const char* KindName(trace::TaskKind k) {
  switch (k) {
    case trace::TaskKind::kCompute: return "compute";
    case trace::TaskKind::kCollective: return "collective";
    case trace::TaskKind::kTransfer: return "transfer";
    case trace::TaskKind::kDelay: return "delay";
  }
  return "?";
}

Time Duration(const trace::ReplayResult& r, trace::TaskId t) { return r.timings[t].end - r.timings[t].start; }

std::string Ms(Time t) { return fmt::format("{:.3f} ms", t.seconds() * 1e3); }

}  // namespace

CriticalPath FindCriticalPath(const trace::Trace& trace, const trace::ReplayResult& replay) {
  CriticalPath path;
  const size_t n = trace.size();
  if (n == 0) return path;
  if (replay.timings.size() != n) throw std::logic_error("FindCriticalPath: the replay is not of this trace");

  // Join vertices: one per collective instance, numbered after the tasks.
  std::unordered_map<int32_t, DagVertex> join_of;
  for (trace::TaskId t = 0; t < static_cast<trace::TaskId>(n); ++t) {
    if (trace.kind(t) == trace::TaskKind::kCollective && trace.instance(t) >= 0) {
      join_of.try_emplace(trace.instance(t), n + join_of.size());
    }
  }
  const DagVertex source = n + join_of.size(), sink = source + 1;
  Dag dag(sink + 1);
  auto add = [&](DagVertex a, DagVertex b, Time weight) { boost::add_edge(a, b, -weight.ns(), dag); };

  const size_t streams = trace.streams().size();
  std::vector<trace::TaskId> last_on_stream(static_cast<size_t>(trace.rank_count()) * streams, -1);
  std::vector<bool> join_linked(join_of.size(), false);
  for (trace::TaskId t = 0; t < static_cast<trace::TaskId>(n); ++t) {
    DagVertex target = t;
    if (trace.kind(t) == trace::TaskKind::kCollective && trace.instance(t) >= 0) {
      target = join_of.at(trace.instance(t));
      add(target, t, Time::Zero());
      if (!join_linked[target - n]) {
        join_linked[target - n] = true;
        add(source, target, Time::Zero());
      }
    }
    trace::TaskId& last = last_on_stream[static_cast<size_t>(trace.rank(t)) * streams + trace.stream(t)];
    if (last >= 0) add(last, target, Duration(replay, last));
    last = t;
    for (const trace::TaskId* d = trace.deps_begin(t); d != trace.deps_end(t); ++d) add(*d, target, Duration(replay, *d));
    if (target == static_cast<DagVertex>(t)) add(source, t, Time::Zero());
    add(t, sink, Duration(replay, t));
  }

  std::vector<int64_t> distance(boost::num_vertices(dag), std::numeric_limits<int64_t>::max());
  std::vector<DagVertex> predecessor(boost::num_vertices(dag));
  for (DagVertex v = 0; v < predecessor.size(); ++v) predecessor[v] = v;
  try {
    boost::dag_shortest_paths(dag, source,
                              boost::distance_map(distance.data())
                                  .predecessor_map(predecessor.data())
                                  .distance_inf(std::numeric_limits<int64_t>::max()));
  } catch (const boost::not_a_dag&) {
    throw std::logic_error("FindCriticalPath: the trace's dependencies close a cycle");
  }
  path.length = Time::Ns(-distance[sink]);
  for (DagVertex v = predecessor[sink]; v != source && v != predecessor[v]; v = predecessor[v]) {
    if (v < n) path.tasks.push_back(static_cast<trace::TaskId>(v));
  }
  std::reverse(path.tasks.begin(), path.tasks.end());
  return path;
}

std::vector<std::pair<std::string, Time>> TimeOnPathByRole(const trace::Trace& trace, const trace::ReplayResult& replay,
                                                          const CriticalPath& path) {
  std::map<std::string, Time> by_role;
  for (trace::TaskId t : path.tasks) {
    Time& sum = by_role[std::string(KindName(trace.kind(t))) + " " + trace::TaskRoleName(trace.role(t))];
    sum = sum + Duration(replay, t);
  }
  std::vector<std::pair<std::string, Time>> roles(by_role.begin(), by_role.end());
  std::stable_sort(roles.begin(), roles.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return roles;
}

std::string CriticalPathText(const trace::Trace& trace, const trace::ReplayResult& replay, const CriticalPath& path,
                             size_t max_rows) {
  std::string out = fmt::format("critical path: {} tasks, {} (step {})\n", path.tasks.size(), Ms(path.length),
                                Ms(replay.makespan));
  const auto roles = TimeOnPathByRole(trace, replay, path);
  out += "  on the path, by kind and role:\n";
  for (const auto& [name, time] : roles) {
    out += fmt::format("    {:<32} {:>12}  {:5.1f}%\n", name, Ms(time),
                       path.length.ns() > 0 ? 100.0 * time.ns() / path.length.ns() : 0.0);
  }
  out += fmt::format("  {:>6} {:<10} {:<22} {:>5} {:<10} {:>12} {:>12}  {}\n", "#", "kind", "role", "rank", "stream",
                     "start", "duration", "label");
  const size_t rows = path.tasks.size();
  for (size_t i = 0; i < rows; ++i) {
    if (rows > max_rows && i == max_rows / 2) {
      out += fmt::format("  ... {} tasks (--format json lists every one)\n", rows - max_rows);
      i = rows - max_rows / 2 - 1;
      continue;
    }
    const trace::TaskId t = path.tasks[i];
    const trace::Task task = trace.task(t);
    out += fmt::format("  {:>6} {:<10} {:<22} {:>5} {:<10} {:>12} {:>12}  {}\n", i, KindName(task.kind),
                       trace::TaskRoleName(task.role), task.rank, trace.stream_name(task.stream),
                       Ms(replay.timings[t].start), Ms(Duration(replay, t)), trace.label(task.label));
  }
  return out;
}

nlohmann::json CriticalPathJson(const trace::Trace& trace, const trace::ReplayResult& replay,
                                const CriticalPath& path) {
  nlohmann::json tasks = nlohmann::json::array();
  for (trace::TaskId t : path.tasks) {
    const trace::Task task = trace.task(t);
    tasks.push_back({{"task", t},
                     {"kind", KindName(task.kind)},
                     {"role", trace::TaskRoleName(task.role)},
                     {"rank", task.rank},
                     {"stream", trace.stream_name(task.stream)},
                     {"start_s", replay.timings[t].start.seconds()},
                     {"duration_s", Duration(replay, t).seconds()},
                     {"label", trace.label(task.label)}});
  }
  return {{"length_s", path.length.seconds()}, {"step_s", replay.makespan.seconds()}, {"tasks", tasks}};
}

}  // namespace stacksim::simulate
