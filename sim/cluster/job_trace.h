// The jobs that share a cluster: read from a trace file (CSV or JSON) or drawn
// from a generator (Poisson arrivals, a weighted mix of job sizes, log-normal
// durations, a seed).
//
// A job asks for GPUs and either gives its duration (the time it runs on its
// minimal set of leaf switches) or names a model, a plan (an entry of the
// cluster scenario's "plans") and a token budget, whose duration the step
// simulator supplies (sim/cluster/step_times.h). Times are stacksim::Time
// from the start of the trace; every job remembers its file and row so that
// later errors (an unknown plan, a plan that does not fit its GPUs) name them.
#ifndef STACKSIM_SIM_CLUSTER_JOB_TRACE_H_
#define STACKSIM_SIM_CLUSTER_JOB_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/util/json_reader.h"
#include "sim/util/units.h"

namespace stacksim::cluster {

struct JobSpec {
  std::string id;      // the trace's id, or "job-<row>"
  std::string user;    // fair-share account ("default" when the trace has none)
  Time submit;         // when the job enters the queue
  int gpus = 0;
  // Duration on the job's minimal leaf set; for a model job it is filled in
  // from the step simulator before the cluster runs.
  Time duration;
  // How much longer the job runs with all of its nodes outside its minimal
  // leaf set (1: placement-independent). Placements in between interpolate.
  double scattered_slowdown = 1.0;
  // A model job (all three set) instead of a duration.
  std::string model;   // models/ name or path
  std::string plan;    // name in the cluster scenario's "plans"
  int64_t tokens = 0;  // token budget
  std::string file;    // where the job came from
  std::string row;     // "line 7" (CSV) or "jobs[6]" (JSON): with file, names the job in errors
  bool is_model_job() const { return !plan.empty(); }
};

// Times as the cluster files write them: ParseTime's units (ns to h) and
// "d" (days of 24 h), e.g. "90 min", "7 d".
Time ParseClusterTime(std::string_view text, const std::string& file, const std::string& path);

// Reads a trace: ".csv" (a header row naming the columns, then one job per
// line; '#' lines and blank lines skipped) or ".json" ({"jobs": [...]}).
// Columns / keys: submit, gpus (required); duration or model + plan + tokens;
// id, user, scattered_slowdown (optional). Throws InputError naming the file,
// the line or element, and the field.
std::vector<JobSpec> ReadJobTrace(const std::string& path);
// The same from text; `origin` is the name errors give, and its extension
// picks the format.
std::vector<JobSpec> ParseJobTrace(const std::string& text, const std::string& origin);

// A synthetic trace. Every job draws its mix entry by weight; arrivals are a
// Poisson process; a duration job's duration is log-normal (median, sigma),
// capped at max_duration; users are drawn uniformly from "user-0".."user-N-1".
struct JobMixEntry {
  double weight = 1;
  int gpus = 0;
  double scattered_slowdown = 1.0;
  std::string model, plan;  // a model job when plan is set
  int64_t tokens = 0;
};

struct JobGenerator {
  uint64_t seed = 1;
  int jobs = 0;
  double arrivals_per_hour = 0;
  int users = 1;
  Time median_duration;
  double duration_sigma = 1.0;  // of ln(duration)
  Time max_duration = Time::Max();
  std::vector<JobMixEntry> mix;
  std::string file;  // where it was read from, for errors
};

// Reads a scenario's "generate" object.
JobGenerator ParseJobGenerator(const JsonNode& node);
// Same generator, same jobs, on every machine: draws come from a 64-bit
// Mersenne Twister through our own transforms, not <random>'s distributions,
// whose algorithms the standard leaves to the library.
std::vector<JobSpec> GenerateJobs(const JobGenerator& g);

}  // namespace stacksim::cluster

#endif  // STACKSIM_SIM_CLUSTER_JOB_TRACE_H_
