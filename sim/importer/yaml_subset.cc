#include "sim/importer/yaml_subset.h"

#include <cstdint>
#include <limits>
#include <regex>
#include <stdexcept>
#include <vector>

#include "sim/util/error.h"

namespace stacksim::importer {
namespace {

struct Line {
  int indent = 0;
  std::string text;  // without indentation, comment and trailing blanks
  int number = 0;    // 1-based
};

class Parser {
 public:
  Parser(const std::string& text, const std::string& file) : file_(file) { Split(text); }

  nlohmann::json Document() {
    if (lines_.empty()) return nlohmann::json::object();
    nlohmann::json doc = Node(lines_[0].indent);
    if (pos_ < lines_.size()) Fail(lines_[pos_], "indented less than the line before it, but not as any mapping above");
    return doc;
  }

 private:
  [[noreturn]] void Fail(const Line& l, const std::string& why) const {
    throw InputError(file_, "line " + std::to_string(l.number), why + ": " + l.text);
  }

  // Cuts a comment (a '#' at the start or after a blank, outside quotes).
  static std::string Uncomment(const std::string& s) {
    char quote = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
        return s.substr(0, i);
      }
    }
    return s;
  }

  void Split(const std::string& text) {
    size_t start = 0;
    int number = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string raw = text.substr(start, end - start);
      ++number;
      start = end + 1;
      if (!raw.empty() && raw.back() == '\r') raw.pop_back();
      if (raw == "---" || raw == "...") continue;  // document markers of a single document
      std::string s = Uncomment(raw);
      while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
      if (s.empty()) continue;
      const size_t first = s.find_first_not_of(' ');
      if (s[first] == '\t') Fail({0, s, number}, "a tab in the indentation");
      lines_.push_back({static_cast<int>(first), s.substr(first), number});
      if (end == text.size()) break;
    }
  }

  static bool IsSequenceItem(const std::string& t) { return t == "-" || t.rfind("- ", 0) == 0; }

  // The node whose first line is lines_[pos_], at indentation `indent`.
  nlohmann::json Node(int indent) {
    if (IsSequenceItem(lines_[pos_].text)) return Sequence(indent);
    return Mapping(indent);
  }

  nlohmann::json Sequence(int indent) {
    nlohmann::json out = nlohmann::json::array();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent && IsSequenceItem(lines_[pos_].text)) {
      Line& l = lines_[pos_];
      const std::string rest = l.text.size() > 1 ? l.text.substr(2) : "";
      const size_t skip = rest.find_first_not_of(' ');
      if (skip == std::string::npos) {  // "-" alone: the item is the block below
        ++pos_;
        if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
          out.push_back(Node(lines_[pos_].indent));
        } else {
          out.push_back(nullptr);
        }
        continue;
      }
      // The item starts on this line: read it as if it began at its column.
      const std::string item = rest.substr(skip);
      if (IsSequenceItem(item) || KeyEnd(item) != std::string::npos) {
        l.indent = indent + 2 + static_cast<int>(skip);
        l.text = item;
        out.push_back(Node(l.indent));
      } else {
        out.push_back(Scalar(item, l));
        ++pos_;
      }
    }
    return out;
  }

  // Where "key:" ends (the ':' followed by a blank or the line's end,
  // outside quotes); npos if the text is not a mapping entry.
  static size_t KeyEnd(const std::string& t) {
    char quote = 0;
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (quote) {
        if (c == quote) quote = 0;
      } else if ((c == '\'' || c == '"') && i == 0) {
        quote = c;
      } else if (c == ':' && (i + 1 == t.size() || t[i + 1] == ' ')) {
        return i;
      }
    }
    return std::string::npos;
  }

  nlohmann::json Mapping(int indent) {
    nlohmann::json out = nlohmann::json::object();
    while (pos_ < lines_.size() && lines_[pos_].indent == indent) {
      const Line& l = lines_[pos_];
      if (IsSequenceItem(l.text)) Fail(l, "a sequence item among mapping entries");
      const size_t colon = KeyEnd(l.text);
      if (colon == std::string::npos) Fail(l, "expected 'key: value'");
      std::string key = l.text.substr(0, colon);
      if (key.size() >= 2 && (key[0] == '\'' || key[0] == '"') && key.back() == key[0]) {
        key = key.substr(1, key.size() - 2);
      }
      if (out.contains(key)) Fail(l, "key '" + key + "' given twice");
      std::string value = l.text.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      const Line here = l;
      ++pos_;
      if (!value.empty()) {
        out[key] = Scalar(value, here);
      } else if (pos_ < lines_.size() && lines_[pos_].indent > indent) {
        out[key] = Node(lines_[pos_].indent);
      } else if (pos_ < lines_.size() && lines_[pos_].indent == indent && IsSequenceItem(lines_[pos_].text)) {
        out[key] = Sequence(indent);  // "key:" then "- item" at the key's own indentation
      } else {
        out[key] = nullptr;
      }
    }
    if (pos_ < lines_.size() && lines_[pos_].indent > indent) Fail(lines_[pos_], "indented more than its mapping");
    return out;
  }

  nlohmann::json Scalar(const std::string& v, const Line& l) const {
    const char c = v[0];
    if (c == '&' || c == '*' || c == '!') Fail(l, "anchors, aliases and tags are not read");
    if (c == '|' || c == '>') Fail(l, "multi-line scalars are not read");
    if (c == '{') {
      if (v == "{}") return nlohmann::json::object();
      Fail(l, "flow mappings are not read");
    }
    if (c == '[') {
      if (v.back() != ']') Fail(l, "a flow sequence must end on its line");
      nlohmann::json out = nlohmann::json::array();
      const std::string inner = v.substr(1, v.size() - 2);
      if (inner.find_first_not_of(' ') == std::string::npos) return out;
      if (inner.find_first_of("[]{}") != std::string::npos) Fail(l, "nested flow collections are not read");
      size_t start = 0;
      for (;;) {
        size_t comma = inner.find(',', start);
        std::string item = inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        item.erase(0, item.find_first_not_of(' '));
        while (!item.empty() && item.back() == ' ') item.pop_back();
        if (item.empty()) Fail(l, "an empty item in a flow sequence");
        out.push_back(Scalar(item, l));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
      return out;
    }
    if (c == '\'' || c == '"') {
      if (v.size() < 2 || v.back() != c) Fail(l, "a quoted scalar must end on its line");
      std::string s;
      for (size_t i = 1; i + 1 < v.size(); ++i) {
        if (c == '\'' && v[i] == '\'' && v[i + 1] == '\'') {
          s += '\'';
          ++i;
        } else if (c == '"' && v[i] == '\\' && i + 2 < v.size()) {
          const char e = v[++i];
          s += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        } else {
          s += v[i];
        }
      }
      return s;
    }
    if (v == "null" || v == "Null" || v == "NULL" || v == "~") return nullptr;
    if (v == "true" || v == "True" || v == "TRUE") return true;
    if (v == "false" || v == "False" || v == "FALSE") return false;
    static const std::regex kInt("[-+]?[0-9]+");
    static const std::regex kFloat("[-+]?([0-9]+\\.[0-9]*|\\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?");
    try {
      if (std::regex_match(v, kInt)) {
        try {
          return static_cast<int64_t>(std::stoll(v));
        } catch (const std::out_of_range&) {
          return std::stod(v);  // beyond int64: a double, as YAML readers give it
        }
      }
      if (std::regex_match(v, kFloat)) return std::stod(v);
    } catch (const std::out_of_range&) {
      Fail(l, "a number out of range");
    }
    if (v == ".inf" || v == "+.inf") return std::numeric_limits<double>::infinity();
    if (v == "-.inf") return -std::numeric_limits<double>::infinity();
    return v;
  }

  std::string file_;
  std::vector<Line> lines_;
  size_t pos_ = 0;
};

}  // namespace

nlohmann::json ParseYamlSubset(const std::string& text, const std::string& file) {
  return Parser(text, file).Document();
}

}  // namespace stacksim::importer
