#include "sim/util/json_reader.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace stacksim {
namespace {

std::string LineColumn(const std::string& text, size_t byte) {
  int line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return "line " + std::to_string(line) + " column " + std::to_string(col);
}

// Splits "900 GB/s" into 900 and "GB/s". Returns false if there is no number.
bool SplitQuantity(std::string_view text, double* number, std::string* unit) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                             text[i] == '-' || text[i] == '+' || text[i] == 'e' || text[i] == 'E')) {
    // 'e' only counts as an exponent when a digit or sign follows.
    if ((text[i] == 'e' || text[i] == 'E') &&
        !(i + 1 < text.size() && (std::isdigit(static_cast<unsigned char>(text[i + 1])) ||
                                  text[i + 1] == '-' || text[i + 1] == '+'))) {
      break;
    }
    ++i;
  }
  if (i == start) return false;
  std::string num(text.substr(start, i - start));
  char* end = nullptr;
  *number = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(*number)) return false;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  size_t uend = text.size();
  while (uend > i && std::isspace(static_cast<unsigned char>(text[uend - 1]))) --uend;
  *unit = std::string(text.substr(i, uend - i));
  return true;
}

double DecimalPrefix(std::string_view p, bool* ok) {
  *ok = true;
  if (p.empty()) return 1;
  if (p == "k" || p == "K") return 1e3;
  if (p == "M") return 1e6;
  if (p == "G") return 1e9;
  if (p == "T") return 1e12;
  if (p == "P") return 1e15;
  *ok = false;
  return 0;
}

[[noreturn]] void UnitError(std::string_view text, const std::string& file, const std::string& path,
                            const char* expected) {
  throw InputError(file, path,
                   "'" + std::string(text) + "' is not a quantity with a unit; expected " + expected);
}

std::string Quoted(std::initializer_list<std::string_view> choices) {
  std::string out;
  for (auto c : choices) {
    if (!out.empty()) out += ", ";
    out += "'" + std::string(c) + "'";
  }
  return out;
}

}  // namespace

namespace {

// One open object or array while a document is parsed, for the key path of
// an error.
struct OpenValue {
  bool object = false;
  std::string key;                              // object: the key being read
  size_t index = 0;                             // array: the element being read
  std::set<std::string, std::less<>> keys;      // object: keys seen so far
};

std::string OpenPath(const std::vector<OpenValue>& open) {
  std::string path;
  for (size_t i = 0; i < open.size(); ++i) {
    const OpenValue& v = open[i];
    // The innermost value is named by its parent's key or index: the last
    // open value contributes nothing of its own yet.
    if (i + 1 == open.size()) break;
    if (v.object) {
      path += (path.empty() ? "" : ".") + v.key;
    } else {
      path += "[" + std::to_string(v.index) + "]";
    }
    if (path.size() > 160) return path.substr(0, 160) + "...";
  }
  return path;
}

std::string ChildPath(const std::vector<OpenValue>& open) {
  std::string parent = OpenPath(open);
  if (open.empty()) return parent;
  const OpenValue& v = open.back();
  if (v.object) return parent + (parent.empty() ? "" : ".") + v.key;
  return parent + "[" + std::to_string(v.index) + "]";
}

// nlohmann::json::parse with two checks its parser does not make: nesting
// deeper than kMaxJsonDepth (a document of 100,000 '[' overflows the stack
// of whatever walks it recursively afterwards: dump(), our readers) and a key
// given twice in one object (nlohmann keeps the last one silently; other
// readers keep the first). Both are InputErrors with the key path; parse
// errors propagate as nlohmann's exceptions.
nlohmann::json ParseChecked(const std::string& text, const std::string& origin) {
  using Event = nlohmann::json::parse_event_t;
  std::vector<OpenValue> open;
  auto check = [&](int /*depth*/, Event event, nlohmann::json& parsed) {
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (open.size() >= static_cast<size_t>(kMaxJsonDepth)) {
          throw InputError(origin, ChildPath(open),
                           "JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                               " levels (no stacksim input needs more than a few)");
        }
        open.push_back(OpenValue{event == Event::object_start, "", 0, {}});
        break;
      case Event::key: {
        OpenValue& o = open.back();
        o.key = parsed.get<std::string>();
        if (!o.keys.insert(o.key).second) {
          throw InputError(origin, ChildPath(open),
                           "key given twice in one object (JSON readers disagree on which one counts: "
                           "remove one)");
        }
        break;
      }
      case Event::object_end:
      case Event::array_end:
        open.pop_back();
        if (!open.empty() && !open.back().object) ++open.back().index;
        break;
      case Event::value:
        if (!open.empty() && !open.back().object) ++open.back().index;
        break;
    }
    return true;
  };
  return nlohmann::json::parse(text, check);
}

}  // namespace

nlohmann::json ParseJsonText(const std::string& text, const std::string& origin) {
  try {
    return ParseChecked(text, origin);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(origin, "", "malformed JSON at " + LineColumn(text, e.byte ? e.byte - 1 : 0));
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double's range (1e999) is valid JSON that nlohmann
    // refuses: "number overflow parsing '1e999'" (found by fuzz/kineto_gzip).
    std::string what = e.what();
    throw InputError(origin, "", "number out of range: " + what.substr(what.find("] ") + 2));
  }
}

void CheckInputFile(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) throw InputError(path, "", "is a directory; a file was expected here");
  if (!std::filesystem::exists(status)) throw InputError(path, "", "no such file");
}

std::string ReadInputFile(const std::string& path) {
  CheckInputFile(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "cannot read file");
  return ss.str();
}

nlohmann::json ReadJsonFile(const std::string& path) { return ParseJsonText(ReadInputFile(path), path); }

Time ParseTime(std::string_view text, const std::string& file, const std::string& path) {
  double v;
  std::string u;
  const char* expected = "a time such as '2 us' (units ns, us, ms, s, min, h, d)";
  if (!SplitQuantity(text, &v, &u)) UnitError(text, file, path, expected);
  double scale;
  if (u == "ns") scale = 1e-9;
  else if (u == "us" || u == "\xC2\xB5s") scale = 1e-6;
  else if (u == "ms") scale = 1e-3;
  else if (u == "s") scale = 1;
  else if (u == "min") scale = 60;
  else if (u == "h") scale = 3600;
  else if (u == "d") scale = 86400;
  else UnitError(text, file, path, expected);
  if (v < 0) throw InputError(file, path, "time must not be negative: '" + std::string(text) + "'");
  if (!(v * scale <= kMaxInputSeconds)) {
    throw InputError(file, path, "'" + std::string(text) +
                                     "' is longer than 100 years, the longest time stacksim takes (it counts "
                                     "int64 nanoseconds)");
  }
  return Time::FromSeconds(v * scale);
}

Bytes ParseBytes(std::string_view text, const std::string& file, const std::string& path) {
  double v;
  std::string u;
  const char* expected = "a size such as '80 GB' or '64 MiB'";
  if (!SplitQuantity(text, &v, &u) || u.empty()) UnitError(text, file, path, expected);
  double scale = 0;
  if (u.size() >= 3 && u.substr(u.size() - 2) == "iB") {
    char p = u[0];
    if (u.size() != 3) UnitError(text, file, path, expected);
    scale = p == 'K' ? 1024.0 : p == 'M' ? 1024.0 * 1024 : p == 'G' ? kGiB : p == 'T' ? kGiB * 1024 : 0;
    if (scale == 0) UnitError(text, file, path, expected);
  } else if (u.back() == 'B') {
    bool ok;
    scale = DecimalPrefix(std::string_view(u).substr(0, u.size() - 1), &ok);
    if (!ok) UnitError(text, file, path, expected);
  } else {
    UnitError(text, file, path, expected);
  }
  if (v < 0) throw InputError(file, path, "size must not be negative: '" + std::string(text) + "'");
  return Bytes{v * scale};
}

Bandwidth ParseBandwidth(std::string_view text, const std::string& file, const std::string& path) {
  double v;
  std::string u;
  const char* expected = "a bandwidth such as '900 GB/s' (bytes) or '400 Gb/s' (bits)";
  if (!SplitQuantity(text, &v, &u)) UnitError(text, file, path, expected);
  std::string_view base = u;
  bool bits;
  if (base.size() >= 3 && base.substr(base.size() - 3) == "B/s") {
    bits = false;
    base.remove_suffix(3);
  } else if (base.size() >= 3 && base.substr(base.size() - 3) == "b/s") {
    bits = true;
    base.remove_suffix(3);
  } else if (base.size() >= 3 && base.substr(base.size() - 3) == "bps") {
    bits = true;
    base.remove_suffix(3);
  } else {
    UnitError(text, file, path, expected);
  }
  bool ok;
  double scale = DecimalPrefix(base, &ok);
  if (!ok) UnitError(text, file, path, expected);
  if (v < 0) throw InputError(file, path, "bandwidth must not be negative: '" + std::string(text) + "'");
  return Bandwidth{v * scale / (bits ? 8.0 : 1.0)};
}

FlopRate ParseFlopRate(std::string_view text, const std::string& file, const std::string& path) {
  double v;
  std::string u;
  const char* expected = "a rate such as '989 TFLOP/s'";
  if (!SplitQuantity(text, &v, &u)) UnitError(text, file, path, expected);
  std::string_view base = u;
  if (base.size() >= 6 && base.substr(base.size() - 6) == "FLOP/s") {
    base.remove_suffix(6);
  } else if (base.size() >= 5 && base.substr(base.size() - 5) == "FLOPS") {
    base.remove_suffix(5);
  } else {
    UnitError(text, file, path, expected);
  }
  bool ok;
  double scale = DecimalPrefix(base, &ok);
  if (!ok) UnitError(text, file, path, expected);
  if (v < 0) throw InputError(file, path, "rate must not be negative: '" + std::string(text) + "'");
  return FlopRate{v * scale};
}

void JsonNode::Fail(const std::string& message) const { throw InputError(file_, path_, message); }

int64_t JsonNode::Int() const {
  if (json_->is_number_integer()) return json_->get<int64_t>();
  if (json_->is_number_float()) {
    double d = json_->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18) return static_cast<int64_t>(d);
  }
  Fail("expected an integer, got " + json_->dump());
}

int64_t JsonNode::PositiveInt() const {
  int64_t v = Int();
  if (v < 1) Fail("expected a positive integer, got " + std::to_string(v));
  return v;
}

double JsonNode::Number() const {
  if (!json_->is_number()) Fail("expected a number, got " + json_->dump());
  double d = json_->get<double>();
  if (!std::isfinite(d)) Fail("expected a finite number");
  return d;
}

double JsonNode::PositiveNumber() const {
  double d = Number();
  if (!(d > 0)) Fail("expected a positive number, got " + json_->dump());
  return d;
}

double JsonNode::NonNegativeNumber() const {
  double d = Number();
  if (d < 0) Fail("expected a number >= 0, got " + json_->dump());
  return d;
}

double JsonNode::Fraction() const {
  double d = Number();
  if (!(d > 0 && d <= 1)) Fail("expected a fraction in (0, 1], got " + json_->dump());
  return d;
}

bool JsonNode::Bool() const {
  if (!json_->is_boolean()) Fail("expected true or false, got " + json_->dump());
  return json_->get<bool>();
}

std::string JsonNode::String() const {
  if (!json_->is_string()) Fail("expected a string, got " + json_->dump());
  std::string s = json_->get<std::string>();
  if (s.empty()) Fail("expected a non-empty string");
  return s;
}

std::string JsonNode::OneOf(std::initializer_list<std::string_view> choices) const {
  if (!json_->is_string()) Fail("expected one of " + Quoted(choices) + ", got " + json_->dump());
  std::string s = json_->get<std::string>();
  for (auto c : choices) {
    if (s == c) return s;
  }
  Fail("'" + s + "' is not one of " + Quoted(choices));
}

Time JsonNode::TimeValue() const {
  if (!json_->is_string()) Fail("expected a time with its unit as a string, such as \"2 us\"; got " + json_->dump());
  return ParseTime(json_->get<std::string>(), file_, path_);
}

Bytes JsonNode::BytesValue() const {
  if (!json_->is_string()) Fail("expected a size with its unit as a string, such as \"80 GB\"; got " + json_->dump());
  return ParseBytes(json_->get<std::string>(), file_, path_);
}

Bandwidth JsonNode::BandwidthValue() const {
  if (!json_->is_string()) {
    Fail("expected a bandwidth with its unit as a string, such as \"900 GB/s\"; got " + json_->dump());
  }
  return ParseBandwidth(json_->get<std::string>(), file_, path_);
}

FlopRate JsonNode::FlopRateValue() const {
  if (!json_->is_string()) {
    Fail("expected a FLOP rate with its unit as a string, such as \"989 TFLOP/s\"; got " + json_->dump());
  }
  return ParseFlopRate(json_->get<std::string>(), file_, path_);
}

std::vector<JsonNode> JsonNode::Elements() const {
  if (!json_->is_array()) Fail("expected an array, got " + json_->dump().substr(0, 60));
  std::vector<JsonNode> out;
  out.reserve(json_->size());
  for (size_t i = 0; i < json_->size(); ++i) {
    out.emplace_back((*json_)[i], file_, path_ + "[" + std::to_string(i) + "]");
  }
  return out;
}

JsonNode JsonNode::Child(std::string_view key) const {
  std::string k(key);
  return JsonNode(json_->at(k), file_, path_.empty() ? k : path_ + "." + k);
}

JsonObject::JsonObject(const JsonNode& node) : node_(node) {
  if (!node.IsObject()) node.Fail("expected an object, got " + node.json().dump().substr(0, 60));
}

JsonNode JsonObject::Required(std::string_view key) {
  std::string k(key);
  if (!node_.json().contains(k)) {
    throw InputError(node_.file(), node_.path().empty() ? k : node_.path() + "." + k,
                     "required key is missing");
  }
  read_.insert(k);
  return node_.Child(k);
}

std::optional<JsonNode> JsonObject::Optional(std::string_view key) {
  std::string k(key);
  read_.insert(k);
  if (!node_.json().contains(k) || node_.json().at(k).is_null()) return std::nullopt;
  return node_.Child(k);
}

bool JsonObject::Has(std::string_view key) const {
  std::string k(key);
  return node_.json().contains(k) && !node_.json().at(k).is_null();
}

void JsonObject::Ignore(std::initializer_list<std::string_view> keys) {
  for (auto k : keys) read_.insert(std::string(k));
}

std::vector<std::string> JsonObject::Keys() const {
  std::vector<std::string> out;
  for (auto it = node_.json().begin(); it != node_.json().end(); ++it) out.push_back(it.key());
  return out;
}

void JsonObject::Finish() const {
  for (auto it = node_.json().begin(); it != node_.json().end(); ++it) {
    if (read_.find(it.key()) == read_.end()) {
      std::string known;
      for (const auto& k : read_) known += (known.empty() ? "" : ", ") + k;
      throw InputError(node_.file(), node_.path().empty() ? it.key() : node_.path() + "." + it.key(),
                       "unknown key (known keys here: " + known + ")");
    }
  }
}

void ApplyOverride(nlohmann::json& doc, const std::string& assignment, const std::string& origin) {
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError(origin, "", "--set expects key.path=value, got '" + assignment + "'");
  }
  std::string path = assignment.substr(0, eq);
  std::string text = assignment.substr(eq + 1);
  // JSON strings are UTF-8: a value taken as a string must be, or a later
  // error message that quotes it would fail (found by fuzz/scenario_set).
  try {
    (void)nlohmann::json(assignment).dump();
  } catch (const nlohmann::json::type_error&) {
    throw InputError(origin, "", "--set KEY=VALUE is not valid UTF-8");
  }
  nlohmann::json value;
  try {
    value = ParseChecked(text, origin);
  } catch (const nlohmann::json::parse_error&) {
    value = text;
  } catch (const nlohmann::json::out_of_range&) {
    throw InputError(origin, path, "'" + text + "' is a number out of range");
  }
  nlohmann::json* cur = &doc;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw InputError(origin, path, "empty key in --set path");
    if (!cur->is_object()) throw InputError(origin, path, "--set path goes through a value that is not an object");
    if (dot == std::string::npos) {
      (*cur)[key] = value;
      return;
    }
    if (!cur->contains(key)) throw InputError(origin, path, "--set path: '" + key + "' does not exist");
    cur = &(*cur)[key];
    start = dot + 1;
  }
}

void RequireSchema(JsonObject& top, std::string_view expected) {
  JsonNode node = top.Required("schema");
  const std::string schema = node.String();
  if (schema != expected) node.Fail("expected '" + std::string(expected) + "', got '" + schema + "'");
}

}  // namespace stacksim
