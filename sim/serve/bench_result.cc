#include "sim/serve/bench_result.h"

#include <fmt/format.h>

#include <random>
#include <sstream>

#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::serve {
namespace {

// The last non-empty line of a JSON-lines file, or the whole text.
std::string LastRecord(const std::string& text) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r' || trimmed.back() == ' ')) {
    trimmed.pop_back();
  }
  if (trimmed.empty() || trimmed.front() != '{') return trimmed;
  // A JSON-lines file: several objects, one per line.
  const size_t last = trimmed.rfind("\n{");
  return last == std::string::npos ? trimmed : trimmed.substr(last + 1);
}

}  // namespace

std::string SanitizePythonJson(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
    } else if (text.compare(i, 9, "-Infinity") == 0) {
      out += "\"-inf\"";
      i += 8;
    } else if (text.compare(i, 8, "Infinity") == 0) {
      out += "\"inf\"";
      i += 7;
    } else if (text.compare(i, 3, "NaN") == 0) {
      out += "null";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

BenchmarkRun ReadBenchmarkResult(const std::string& path, uint64_t seed) {
  const std::string text = SanitizePythonJson(LastRecord(ReadInputFile(path)));
  const nlohmann::json doc = ParseJsonText(text, path);
  JsonNode root(doc, path, "");
  if (!root.IsObject()) root.Fail("a benchmark result is one JSON object (or JSON lines of them)");
  BenchmarkRun run;
  run.file = path;
  auto field = [&](const char* key) -> std::optional<JsonNode> {
    if (!doc.contains(key) || doc[key].is_null()) return std::nullopt;
    return root.Child(key);
  };
  const std::optional<JsonNode> inputs = field("input_lens"), outputs = field("output_lens");
  if (!inputs || !outputs) {
    throw InputError(path, inputs ? "output_lens" : "input_lens",
                     "the result has no per-request lengths: save it with the client's per-request details "
                     "(vLLM: --save-result, and --save-detailed where the release has it; SGLang: --output-details)");
  }
  const std::vector<JsonNode> ins = inputs->Elements(), outs = outputs->Elements();
  if (ins.size() != outs.size()) {
    outputs->Fail(fmt::format("{} output lengths for {} input lengths", outs.size(), ins.size()));
  }
  std::vector<JsonNode> errors;
  if (auto e = field("errors")) errors = e->Elements();
  if (!errors.empty() && errors.size() != ins.size()) {
    root.Child("errors").Fail(fmt::format("{} errors for {} requests", errors.size(), ins.size()));
  }

  // The arrival process.
  if (auto rate = field("request_rate")) {
    if (rate->IsString()) {
      if (rate->String() != "inf") rate->Fail("a request rate is a number of requests/s or \"inf\"");
    } else {
      run.rate_per_s = rate->PositiveNumber();
    }
  }
  if (auto b = field("burstiness")) run.burstiness = b->PositiveNumber();
  if (auto mc = field("max_concurrency")) run.max_concurrency = mc->PositiveInt();

  for (size_t i = 0; i < ins.size(); ++i) {
    if (!errors.empty() && errors[i].IsString() && !errors[i].json().get<std::string>().empty()) {
      ++run.failed;
      continue;
    }
    Request r;
    r.prompt_tokens = ins[i].PositiveInt();
    r.output_tokens = outs[i].Int();
    if (r.output_tokens < 1) outs[i].Fail("a successful request generated no token");
    run.requests.push_back(r);
  }
  if (run.requests.empty()) root.Fail("no request of the result succeeded");

  // Arrivals: the first request at once, then the client's gaps (gamma with
  // shape burstiness and mean 1/rate), or all at once.
  if (run.rate_per_s) {
    std::mt19937_64 gen(seed);
    std::gamma_distribution<double> gap(run.burstiness, 1.0 / (*run.rate_per_s * run.burstiness));
    double t = 0;
    for (size_t i = 0; i < run.requests.size(); ++i) {
      if (i > 0) t += gap(gen);
      run.requests[i].arrival = Time::FromSeconds(t);
    }
  }
  if (run.max_concurrency) {
    for (size_t i = static_cast<size_t>(*run.max_concurrency); i < run.requests.size(); ++i) {
      run.requests[i].after = kAfterAnyFinish;
    }
  }

  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it->is_number()) run.measured[it.key()] = it->get<double>();
  }
  std::string client = doc.contains("backend") && doc["backend"].is_string() ? doc["backend"].get<std::string>() : "";
  run.source = fmt::format("{} requests{} from {}{}, {}{}", run.requests.size(),
                           run.failed > 0 ? fmt::format(" ({} failed, left out)", run.failed) : "", path,
                           client.empty() ? "" : " (backend " + client + ")",
                           run.rate_per_s ? fmt::format("{:g} requests/s, burstiness {:g}", *run.rate_per_s,
                                                        run.burstiness)
                                          : "all at once",
                           run.max_concurrency ? fmt::format(", at most {} in flight", *run.max_concurrency) : "");
  return run;
}

}  // namespace stacksim::serve
