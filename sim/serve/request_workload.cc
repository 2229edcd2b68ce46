#include "sim/serve/request_workload.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "sim/util/csv.h"
#include "sim/util/error.h"

namespace stacksim::serve {
namespace {

int64_t Draw(const LengthDistribution& d, std::mt19937_64& rng) {
  using Kind = LengthDistribution::Kind;
  switch (d.kind) {
    case Kind::kFixed: return d.value;
    case Kind::kUniform: return std::uniform_int_distribution<int64_t>(d.min, d.max)(rng);
    case Kind::kLogNormal: {
      double x = std::lognormal_distribution<double>(std::log(d.median), d.sigma)(rng);
      return std::clamp<int64_t>(static_cast<int64_t>(std::llround(x)), d.min, d.max);
    }
    case Kind::kEmpirical:
      return d.values[std::uniform_int_distribution<size_t>(0, d.values.size() - 1)(rng)];
  }
  return 1;
}

}  // namespace

std::vector<Request> GenerateRequests(const WorkloadConfig& w) {
  if (!w.trace_file.empty()) return ReadRequestTrace(w.trace_file, w.requests);
  // Separate streams for arrivals and lengths, so changing a length
  // distribution leaves the arrival times as they were.
  std::mt19937_64 arrivals(w.seed);
  std::mt19937_64 lengths(w.seed ^ 0x9e3779b97f4a7c15ULL);
  // Gamma inter-arrivals with mean 1/rate and coefficient of variation cv:
  // shape 1/cv^2, scale cv^2/rate (cv 1: exponential, i.e. Poisson).
  const double shape = 1.0 / (w.cv * w.cv);
  std::gamma_distribution<double> gap(shape, 1.0 / (w.rate_per_s * shape));
  std::exponential_distribution<double> poisson(w.rate_per_s);
  std::vector<Request> out;
  out.reserve(static_cast<size_t>(w.requests));
  double t = 0;
  for (int64_t i = 0; i < w.requests; ++i) {
    t += w.arrival == WorkloadConfig::Arrival::kPoisson ? poisson(arrivals) : gap(arrivals);
    Request r;
    r.arrival = Time::FromSeconds(t);
    r.prompt_tokens = Draw(w.prompt_tokens, lengths);
    r.output_tokens = Draw(w.output_tokens, lengths);
    out.push_back(r);
  }
  return out;
}

std::vector<Request> ReadRequestTrace(const std::string& path, int64_t limit) {
  const CsvTable t = CsvTable::Read(path);
  t.RequireColumns({"arrival_s", "prompt_tokens", "output_tokens"});
  std::vector<Request> out;
  for (size_t r = 0; r < t.rows() && (limit == 0 || static_cast<int64_t>(out.size()) < limit); ++r) {
    const double arrival = t.NonNegativeNumber(r, "arrival_s");
    if (!(arrival <= kMaxInputSeconds / 2)) t.Fail(r, "arrival_s", "beyond 50 years; stacksim's clock holds 100");
    out.push_back({Time::FromSeconds(arrival), t.PositiveInt(r, "prompt_tokens"), t.PositiveInt(r, "output_tokens")});
  }
  std::stable_sort(out.begin(), out.end(), [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
  return out;
}

}  // namespace stacksim::serve
