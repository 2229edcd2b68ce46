#include "sim/cluster/job_trace.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "sim/util/token_count.h"
#include "sim/util/csv.h"
#include "sim/util/json_reader.h"

namespace stacksim::cluster {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

double ParseNumber(const std::string& text, const std::string& file, const std::string& path) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v)) {
    throw InputError(file, path, "expected a number, got '" + text + "'");
  }
  return v;
}

int ParseGpus(const std::string& text, const std::string& file, const std::string& path) {
  const double v = ParseNumber(text, file, path);
  if (v < 1 || v != std::floor(v) || v > 1e7) {
    throw InputError(file, path, "expected a positive whole number of GPUs, got '" + text + "'");
  }
  return static_cast<int>(v);
}

int64_t ParseTokens(const std::string& text, const std::string& file, const std::string& path) {
  try {
    return ParseTokenCount(text, file);
  } catch (const InputError& e) {
    throw InputError(file, path, "expected a positive token count such as 300B or 2.5T, got '" + text + "'");
  }
}

double ParseSlowdown(const std::string& text, const std::string& file, const std::string& path) {
  const double v = ParseNumber(text, file, path);
  if (v < 1 || v > 100) throw InputError(file, path, "must be at least 1 (no slowdown) and at most 100");
  return v;
}

// The rules a job must meet whichever format it came in.
void CheckJob(const JobSpec& j) {
  const bool model_job = !j.model.empty() || !j.plan.empty() || j.tokens > 0;
  if (model_job) {
    if (j.duration > Time::Zero()) {
      throw InputError(j.file, j.row + ": duration", "give either a duration or model, plan and tokens, not both");
    }
    for (auto [present, name] : {std::pair{!j.model.empty(), "model"}, {!j.plan.empty(), "plan"},
                                 {j.tokens > 0, "tokens"}}) {
      if (!present) throw InputError(j.file, j.row + ": " + name, "a model job needs model, plan and tokens");
    }
    if (j.scattered_slowdown != 1.0) {
      throw InputError(j.file, j.row + ": scattered_slowdown",
                       "a model job's placement sensitivity comes from the step simulator; drop the field");
    }
  } else if (j.duration <= Time::Zero()) {
    throw InputError(j.file, j.row + ": duration", "missing: give a duration, or model, plan and tokens");
  }
}

const std::set<std::string, std::less<>> kFields = {"id",    "user",  "submit", "gpus",   "duration",
                                                    "model", "plan",  "tokens", "scattered_slowdown"};

void SetField(JobSpec& j, const std::string& field, const std::string& value, const std::string& path) {
  if (field == "id") j.id = value;
  else if (field == "user") j.user = value;
  else if (field == "submit") j.submit = ParseClusterTime(value, j.file, path);
  else if (field == "gpus") j.gpus = ParseGpus(value, j.file, path);
  else if (field == "duration") j.duration = ParseClusterTime(value, j.file, path);
  else if (field == "model") j.model = value;
  else if (field == "plan") j.plan = value;
  else if (field == "tokens") j.tokens = ParseTokens(value, j.file, path);
  else if (field == "scattered_slowdown") j.scattered_slowdown = ParseSlowdown(value, j.file, path);
  if (field == "duration" && j.duration <= Time::Zero()) throw InputError(j.file, path, "must be positive");
}

void Finish(JobSpec& j, bool has_submit, bool has_gpus, const std::string& fallback_id) {
  if (!has_submit) throw InputError(j.file, j.row + ": submit", "missing (when the job enters the queue)");
  if (!has_gpus) throw InputError(j.file, j.row + ": gpus", "missing");
  if (j.id.empty()) j.id = fallback_id;
  if (j.user.empty()) j.user = "default";
  CheckJob(j);
}

std::vector<JobSpec> ParseCsv(const std::string& text, const std::string& origin) {
  std::vector<JobSpec> jobs;
  std::vector<std::string> columns;
  for (const CsvRecord& record : SplitCsv(text, origin, {.comments = true})) {
    const std::vector<std::string>& cells = record.cells;
    const std::string where = "line " + std::to_string(record.line);
    if (columns.empty()) {
      for (const std::string& c : cells) {
        if (!kFields.count(c)) throw InputError(origin, where + ": " + c, "unknown column");
        for (const std::string& seen : columns) {
          if (seen == c) throw InputError(origin, where + ": " + c, "column given twice");
        }
        columns.push_back(c);
      }
      continue;
    }
    if (cells.size() != columns.size()) {
      throw InputError(origin, where, "has " + std::to_string(cells.size()) + " fields, the header " +
                                          std::to_string(columns.size()));
    }
    JobSpec j;
    j.file = origin;
    j.row = where;
    bool has_submit = false, has_gpus = false;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (cells[c].empty()) continue;  // an empty cell is an absent field
      SetField(j, columns[c], cells[c], where + ": " + columns[c]);
      has_submit |= columns[c] == "submit";
      has_gpus |= columns[c] == "gpus";
    }
    Finish(j, has_submit, has_gpus, "job-" + std::to_string(record.line));
    jobs.push_back(std::move(j));
  }
  if (columns.empty()) throw InputError(origin, "", "empty trace: expected a header row and jobs");
  return jobs;
}

std::vector<JobSpec> ParseJson(const std::string& text, const std::string& origin) {
  nlohmann::json doc = ParseJsonText(text, origin);
  JsonNode root(doc, origin, "");
  if (!root.IsObject()) root.Fail("expected an object {\"jobs\": [...]}");
  JsonObject top(root);
  JsonNode list = top.Required("jobs");
  top.Finish();
  if (!list.IsArray()) list.Fail("expected an array of jobs");
  std::vector<JobSpec> jobs;
  int index = 0;
  for (const JsonNode& e : list.Elements()) {
    JobSpec j;
    j.file = origin;
    j.row = e.path();
    if (!e.IsObject()) e.Fail("expected a job object");
    JsonObject obj(e);
    for (const std::string& key : obj.Keys()) {
      if (!kFields.count(key)) continue;  // Finish() names it
      JsonNode v = obj.Required(key);
      std::string value;
      if (v.IsString()) value = v.String();
      else if (v.IsNumber() && (key == "gpus" || key == "tokens" || key == "scattered_slowdown")) value = v.json().dump();
      else v.Fail(key == "submit" || key == "duration" ? "expected a time with its unit, such as \"2 h\""
                                                        : "expected a string");
      SetField(j, key, value, v.path());
    }
    obj.Finish();
    Finish(j, obj.Has("submit"), obj.Has("gpus"), "job-" + std::to_string(index));
    jobs.push_back(std::move(j));
    ++index;
  }
  return jobs;
}

// Uniform in [0, 1) from the top 53 bits.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

double StandardNormal(std::mt19937_64& rng) {
  // Box-Muller; 1 - u keeps the logarithm finite.
  const double u = 1.0 - Uniform(rng), v = Uniform(rng);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

}  // namespace

Time ParseClusterTime(std::string_view text, const std::string& file, const std::string& path) {
  // ParseTime knows ns to d and rejects spans beyond 100 years.
  return ParseTime(Trim(text), file, path);
}

std::vector<JobSpec> ParseJobTrace(const std::string& text, const std::string& origin) {
  if (EndsWith(origin, ".csv")) return ParseCsv(text, origin);
  if (EndsWith(origin, ".json")) return ParseJson(text, origin);
  throw InputError(origin, "", "a job trace is a .csv or a .json file");
}

std::vector<JobSpec> ReadJobTrace(const std::string& path) {
  return ParseJobTrace(ReadInputFile(path), path);
}

JobGenerator ParseJobGenerator(const JsonNode& node) {
  JobGenerator g;
  g.file = node.file();
  JsonObject obj(node);
  if (auto s = obj.Optional("seed")) g.seed = static_cast<uint64_t>(s->Int());
  JsonNode jobs = obj.Required("jobs");
  const int64_t job_count = jobs.PositiveInt();
  if (job_count > 10'000'000) {
    jobs.Fail(std::to_string(job_count) + " jobs is more than stacksim simulates (at most 10000000)");
  }
  g.jobs = static_cast<int>(job_count);
  JsonNode rate = obj.Required("arrivals_per_hour");
  g.arrivals_per_hour = rate.PositiveNumber();
  // Submit times are int64 nanoseconds: the last arrival, about jobs / rate
  // hours in, must stay well inside 100 years.
  if (!(g.jobs / g.arrivals_per_hour * 3600 <= kMaxInputSeconds / 2)) {
    rate.Fail(std::to_string(g.jobs) + " jobs at " + rate.json().dump() +
              " per hour take more than 50 years to arrive; stacksim's clock holds 100");
  }
  if (auto u = obj.Optional("users")) {
    const int64_t users = u->PositiveInt();
    if (users > 10'000'000) u->Fail("more than 10000000 users");
    g.users = static_cast<int>(users);
  }
  {
    JsonObject d(obj.Required("duration"));
    JsonNode median = d.Required("median");
    g.median_duration = ParseClusterTime(median.String(), median.file(), median.path());
    if (g.median_duration <= Time::Zero()) median.Fail("must be positive");
    if (auto s = d.Optional("sigma")) g.duration_sigma = s->NonNegativeNumber();
    if (auto m = d.Optional("max")) {
      g.max_duration = ParseClusterTime(m->String(), m->file(), m->path());
      if (g.max_duration < g.median_duration) m->Fail("must be at least the median");
    }
    d.Finish();
  }
  JsonNode mix = obj.Required("mix");
  if (!mix.IsArray() || mix.json().empty()) mix.Fail("expected a non-empty array of {\"weight\", \"gpus\", ...}");
  for (const JsonNode& e : mix.Elements()) {
    JsonObject m(e);
    JobMixEntry entry;
    entry.weight = m.Required("weight").PositiveNumber();
    entry.gpus = static_cast<int>(m.Required("gpus").PositiveInt());
    if (auto s = m.Optional("scattered_slowdown")) {
      entry.scattered_slowdown = ParseSlowdown(s->json().dump(), s->file(), s->path());
    }
    const bool model_job = m.Has("model") || m.Has("plan") || m.Has("tokens");
    if (model_job) {
      entry.model = m.Required("model").String();
      entry.plan = m.Required("plan").String();
      JsonNode t = m.Required("tokens");
      entry.tokens = ParseTokens(t.IsString() ? t.String() : t.json().dump(), t.file(), t.path());
      if (entry.scattered_slowdown != 1.0) {
        m.Required("scattered_slowdown").Fail("a model job's placement sensitivity comes from the step simulator");
      }
    }
    m.Finish();
    g.mix.push_back(entry);
  }
  obj.Finish();
  return g;
}

std::vector<JobSpec> GenerateJobs(const JobGenerator& g) {
  std::mt19937_64 rng(g.seed);
  double total_weight = 0;
  for (const JobMixEntry& e : g.mix) total_weight += e.weight;
  const double mean_gap_s = 3600.0 / g.arrivals_per_hour;
  std::vector<JobSpec> jobs;
  jobs.reserve(static_cast<size_t>(g.jobs));
  double t = 0;
  for (int i = 0; i < g.jobs; ++i) {
    t += -std::log(1.0 - Uniform(rng)) * mean_gap_s;
    double pick = Uniform(rng) * total_weight;
    size_t k = 0;
    while (k + 1 < g.mix.size() && pick >= g.mix[k].weight) pick -= g.mix[k++].weight;
    const JobMixEntry& e = g.mix[k];
    const double z = StandardNormal(rng);
    const int user = static_cast<int>(Uniform(rng) * g.users);
    JobSpec j;
    j.id = "job-" + std::to_string(i);
    j.user = "user-" + std::to_string(user);
    j.submit = Time::FromSeconds(t);
    j.gpus = e.gpus;
    j.file = g.file;
    j.row = "generate.mix[" + std::to_string(k) + "]";
    if (e.plan.empty()) {
      j.duration = std::min(g.max_duration, g.median_duration * std::exp(g.duration_sigma * z));
      j.duration = std::max(j.duration, Time::FromSeconds(1));
      j.scattered_slowdown = e.scattered_slowdown;
    } else {
      j.model = e.model;
      j.plan = e.plan;
      j.tokens = e.tokens;
    }
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace stacksim::cluster
