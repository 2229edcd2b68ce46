// Strict reading of JSON inputs.
//
// Every value read through JsonNode knows the file it came from and its key
// path ("plan.tp", "levels[2].bandwidth"), so every error names both. JsonObject
// reads an object's keys and, at Finish(), rejects any key nobody asked for:
// a typo is an error, never a silent default. Quantities carry their unit in
// the data ("900 GB/s", "2 us", "80 GB", "989 TFLOP/s") and are parsed here,
// in one place.
//
// A JsonNode does not own the document; the nlohmann::json it points into must
// outlive it.
#ifndef STACKSIM_SIM_UTIL_JSON_READER_H_
#define STACKSIM_SIM_UTIL_JSON_READER_H_

#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/util/error.h"
#include "sim/util/units.h"

namespace stacksim {

// Deepest nesting of objects and arrays any JSON input may have. Stacksim's
// own inputs nest at most 6 deep; a deeper document is refused while it is
// parsed, before anything walks it recursively.
inline constexpr int kMaxJsonDepth = 128;

// Reads and parses a JSON file. Throws InputError naming the file (and the
// line and column for malformed JSON, the key path for a key given twice in
// one object or nesting deeper than kMaxJsonDepth). Every JSON input goes
// through here or ParseJsonText.
nlohmann::json ReadJsonFile(const std::string& path);
// Parses JSON text, with the same checks; `origin` names it in errors.
nlohmann::json ParseJsonText(const std::string& text, const std::string& origin);
// Throws InputError naming the file when it is a directory or does not exist.
void CheckInputFile(const std::string& path);
// The bytes of an input file. Throws InputError naming the file when it is a
// directory, missing or unreadable.
std::string ReadInputFile(const std::string& path);

// Unit parsing. Each throws InputError(file, path, ...) on a missing or wrong unit.
// Accepted: time "ns", "us", "µs", "ms", "s"; bytes "B", "kB", "MB", "GB", "TB",
// "KiB", "MiB", "GiB", "TiB"; bandwidth bytes ("GB/s") or bits ("Gb/s", "Gbps");
// FLOP rate "FLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s".
Time ParseTime(std::string_view text, const std::string& file, const std::string& path);
Bytes ParseBytes(std::string_view text, const std::string& file, const std::string& path);
Bandwidth ParseBandwidth(std::string_view text, const std::string& file, const std::string& path);
FlopRate ParseFlopRate(std::string_view text, const std::string& file, const std::string& path);

class JsonNode {
 public:
  JsonNode(const nlohmann::json& json, std::string file, std::string path)
      : json_(&json), file_(std::move(file)), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *json_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  [[noreturn]] void Fail(const std::string& message) const;

  bool IsNull() const { return json_->is_null(); }
  bool IsObject() const { return json_->is_object(); }
  bool IsArray() const { return json_->is_array(); }
  bool IsString() const { return json_->is_string(); }
  bool IsNumber() const { return json_->is_number(); }

  int64_t Int() const;          // an integer (1.0 is accepted, 1.5 is not)
  int64_t PositiveInt() const;  // >= 1
  double Number() const;        // finite
  double PositiveNumber() const;  // > 0
  double NonNegativeNumber() const;  // >= 0
  double Fraction() const;      // in (0, 1]
  bool Bool() const;
  std::string String() const;   // non-empty
  // One of the listed strings; the error lists them.
  std::string OneOf(std::initializer_list<std::string_view> choices) const;

  Time TimeValue() const;
  Bytes BytesValue() const;
  Bandwidth BandwidthValue() const;
  FlopRate FlopRateValue() const;

  std::vector<JsonNode> Elements() const;  // an array's elements
  JsonNode Child(std::string_view key) const;  // REQUIRES: IsObject() and key present

 private:
  const nlohmann::json* json_;
  std::string file_;
  std::string path_;
};

// Reads one JSON object strictly.
class JsonObject {
 public:
  explicit JsonObject(const JsonNode& node);

  // The value at key; error if absent. A JSON null counts as present.
  JsonNode Required(std::string_view key);
  // The value at key, or nullopt if absent or null.
  std::optional<JsonNode> Optional(std::string_view key);
  bool Has(std::string_view key) const;
  // Keys that are known and accepted but do not affect stacksim (for drop-in
  // Hugging Face configs, say).
  void Ignore(std::initializer_list<std::string_view> keys);
  // Every key of the object, in document order.
  std::vector<std::string> Keys() const;
  // Error naming the first key that was never read or ignored.
  void Finish() const;

  const JsonNode& node() const { return node_; }

 private:
  JsonNode node_;
  std::set<std::string, std::less<>> read_;
};

// Applies "a.b.c=value" to a JSON document (for --set). The value is parsed as
// JSON when it is valid JSON (numbers, true/false, null, objects) and taken as
// a string otherwise. Intermediate objects must exist. Throws InputError.
void ApplyOverride(nlohmann::json& doc, const std::string& assignment, const std::string& origin);

// Reads the document's "schema" key and fails naming it unless it is
// `expected` ("expected 'stacksim.x/1', got '...'").
void RequireSchema(JsonObject& top, std::string_view expected);

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_JSON_READER_H_
