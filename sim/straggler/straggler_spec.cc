#include "sim/straggler/straggler_spec.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace stacksim::straggler {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t at = s.find(sep, start);
    out.push_back(Trim(s.substr(start, at == std::string::npos ? std::string::npos : at - start)));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

// A finite number followed by exactly `suffix`; false otherwise.
bool NumberWithSuffix(const std::string& field, char suffix, double* value) {
  if (field.size() < 2 || field.back() != suffix) return false;
  std::string number = field.substr(0, field.size() - 1);
  errno = 0;
  char* end = nullptr;
  *value = std::strtod(number.c_str(), &end);
  return errno == 0 && end == number.c_str() + number.size() && std::isfinite(*value);
}

// Fractions of one scope are disjoint slices of its hardware.
void CheckTotals(const StragglerSpec& spec, const std::string& file, const std::string& key) {
  for (Scope scope : {Scope::kNode, Scope::kGpu}) {
    double total = 0;
    for (const StragglerTerm& t : spec.terms) {
      if (t.scope == scope) total += t.fraction;
    }
    if (total > 1.0 + 1e-12) {
      throw InputError(file, key,
                       std::string("the ") + ScopeName(scope) + " fractions add up to " +
                           std::to_string(total * 100) + "%, more than all " + ScopeName(scope) + "s");
    }
  }
}

}  // namespace

const char* ScopeName(Scope s) { return s == Scope::kGpu ? "gpu" : "node"; }

StragglerSpec ParseStragglerText(const std::string& text, const std::string& option) {
  StragglerSpec spec;
  spec.origin = option;
  spec.text = text;
  if (Trim(text).empty()) throw InputError("", option, "empty straggler spec (e.g. 0.1%:1.5x)");
  int index = 0;
  for (const std::string& term_text : Split(text, ',')) {
    ++index;
    const std::string where = "term " + std::to_string(index) + " '" + term_text + "'";
    std::vector<std::string> fields = Split(term_text, ':');
    StragglerTerm term;
    term.source = option;
    size_t f = 0;
    bool scope_seen = false, persistence_seen = false;
    for (; f + 2 < fields.size(); ++f) {
      const std::string& word = fields[f];
      if ((word == "node" || word == "gpu") && !scope_seen) {
        term.scope = word == "gpu" ? Scope::kGpu : Scope::kNode;
        scope_seen = true;
      } else if ((word == "persistent" || word == "transient") && !persistence_seen) {
        term.persistence = word == "transient" ? Persistence::kTransient : Persistence::kPersistent;
        persistence_seen = true;
      } else {
        throw InputError("", option,
                         where + ": unknown qualifier '" + word + "' (node, gpu, persistent, transient; once each)");
      }
    }
    if (fields.size() - f != 2) {
      throw InputError("", option, where + ": expected [node|gpu:][persistent|transient:]FRACTION%:SLOWDOWNx");
    }
    double percent = 0;
    if (!NumberWithSuffix(fields[f], '%', &percent)) {
      throw InputError("", option, where + ": fraction '" + fields[f] + "' must be a percentage such as 0.1%");
    }
    if (!(percent > 0 && percent <= 100)) {
      throw InputError("", option, where + ": fraction '" + fields[f] + "' must be in (0%, 100%]");
    }
    double slowdown = 0;
    if (!NumberWithSuffix(fields[f + 1], 'x', &slowdown)) {
      throw InputError("", option, where + ": slowdown '" + fields[f + 1] + "' must be a factor such as 1.5x");
    }
    if (!(slowdown >= 1)) {
      throw InputError("", option, where + ": slowdown '" + fields[f + 1] + "' must be at least 1x");
    }
    term.fraction = percent / 100;
    term.slowdown = slowdown;
    spec.terms.push_back(term);
  }
  CheckTotals(spec, "", option);
  return spec;
}

StragglerSpec ParseStragglerDistribution(const JsonNode& node) {
  StragglerSpec spec;
  spec.origin = node.file();
  JsonObject obj(node);
  const std::string prefix = node.path().empty() ? "" : node.path() + ".";
  if (auto d = obj.Optional("description")) d->String();
  Scope scope = Scope::kNode;
  if (auto s = obj.Optional("scope")) scope = s->OneOf({"node", "gpu"}) == "gpu" ? Scope::kGpu : Scope::kNode;
  Persistence persistence = Persistence::kDefault;
  if (auto p = obj.Optional("persistence")) {
    persistence = p->OneOf({"persistent", "transient"}) == "transient" ? Persistence::kTransient
                                                                       : Persistence::kPersistent;
  }
  JsonNode bins = obj.Required("bins");
  if (!bins.IsArray() || bins.json().empty()) bins.Fail("must be a non-empty list of {fraction, slowdown, source}");
  for (const JsonNode& bin : bins.Elements()) {
    JsonObject b(bin);
    StragglerTerm term;
    term.scope = scope;
    term.persistence = persistence;
    term.fraction = b.Required("fraction").Fraction();
    JsonNode slowdown = b.Required("slowdown");
    term.slowdown = slowdown.Number();
    if (!(term.slowdown >= 1)) slowdown.Fail("must be at least 1 (a compute-time factor)");
    term.source = b.Required("source").String();
    b.Finish();
    spec.terms.push_back(term);
  }
  obj.Finish();
  CheckTotals(spec, node.file(), prefix + "bins");
  return spec;
}

StragglerSpec ReadStragglerDistribution(const std::string& path) {
  nlohmann::json doc = ReadJsonFile(path);
  return ParseStragglerDistribution(JsonNode(doc, path, ""));
}

StragglerSpec ParseStragglerArgument(const std::string& arg, const std::string& option) {
  const std::string suffix = ".json";
  if (arg.size() > suffix.size() && arg.compare(arg.size() - suffix.size(), suffix.size(), suffix) == 0) {
    StragglerSpec spec = ReadStragglerDistribution(arg);
    spec.text = arg;
    return spec;
  }
  return ParseStragglerText(arg, option);
}

}  // namespace stacksim::straggler
