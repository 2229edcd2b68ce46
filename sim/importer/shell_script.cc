#include "sim/importer/shell_script.h"

#include <fnmatch.h>

#include <cctype>
#include <cstdint>
#include <map>
#include <optional>

#include "sim/util/error.h"

namespace stacksim::importer {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Integer arithmetic of $(( ... )): + - * / % and parentheses over numbers
// and variable names; nullopt when anything else appears or a name is unset.
class Arithmetic {
 public:
  Arithmetic(const std::string& text, const std::map<std::string, std::vector<std::string>>& vars)
      : s_(text), vars_(vars) {}
  std::optional<int64_t> Evaluate() {
    std::optional<int64_t> v = Sum();
    Skip();
    if (!v || i_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void Skip() {
    while (i_ < s_.size() && (IsBlank(s_[i_]) || s_[i_] == '\n' || s_[i_] == '$' || s_[i_] == '{' || s_[i_] == '}')) ++i_;
  }
  std::optional<int64_t> Sum() {
    std::optional<int64_t> v = Product();
    for (Skip(); v && i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-'); Skip()) {
      char op = s_[i_++];
      std::optional<int64_t> r = Product();
      if (!r) return std::nullopt;
      v = op == '+' ? *v + *r : *v - *r;
    }
    return v;
  }
  std::optional<int64_t> Product() {
    std::optional<int64_t> v = Unary();
    for (Skip(); v && i_ < s_.size() && (s_[i_] == '*' || s_[i_] == '/' || s_[i_] == '%'); Skip()) {
      char op = s_[i_++];
      std::optional<int64_t> r = Unary();
      if (!r || (op != '*' && *r == 0)) return std::nullopt;
      v = op == '*' ? *v * *r : op == '/' ? *v / *r : *v % *r;
    }
    return v;
  }
  std::optional<int64_t> Unary() {
    Skip();
    if (i_ < s_.size() && (s_[i_] == '-' || s_[i_] == '+')) {
      char op = s_[i_++];
      std::optional<int64_t> v = Unary();
      if (!v) return std::nullopt;
      return op == '-' ? -*v : *v;
    }
    if (i_ < s_.size() && s_[i_] == '(') {
      ++i_;
      std::optional<int64_t> v = Sum();
      Skip();
      if (!v || i_ >= s_.size() || s_[i_] != ')') return std::nullopt;
      ++i_;
      return v;
    }
    if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      int64_t v = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        if (v > (INT64_MAX - 9) / 10) return std::nullopt;
        v = v * 10 + (s_[i_++] - '0');
      }
      return v;
    }
    if (i_ < s_.size() && IsNameStart(s_[i_])) {
      size_t b = i_;
      while (i_ < s_.size() && IsNameChar(s_[i_])) ++i_;
      auto it = vars_.find(s_.substr(b, i_ - b));
      if (it == vars_.end() || it->second.empty()) return std::nullopt;
      return Arithmetic(it->second[0], vars_).Evaluate();
    }
    return std::nullopt;
  }

  const std::string& s_;
  const std::map<std::string, std::vector<std::string>>& vars_;
  size_t i_ = 0;
};

// Words being built: the current word and those finished.
struct Fields {
  std::vector<Word> done;
  Word cur;
  bool has_content = false;
  int line = 0;

  void Append(const std::string& t) {
    cur.text += t;
    has_content = true;
  }
  void Break() {
    if (has_content) {
      cur.line = line;
      done.push_back(cur);
    }
    cur = Word{};
    has_content = false;
  }
  // Unquoted expansion: split at blanks and newlines.
  void AppendSplit(const std::string& t) {
    for (char c : t) {
      if (IsBlank(c) || c == '\n') {
        Break();
      } else {
        cur.text += c;
        has_content = true;
      }
    }
  }
};

class Reader {
 public:
  Reader(const std::string& text, const std::string& file) : s_(text), file_(file) {}

  std::vector<ShellCommand> Run() {
    std::vector<ShellCommand> commands;
    while (i_ < s_.size()) {
      ShellCommand c = Statement();
      if (Case(c) || If(c)) continue;
      if (!c.words.empty() && !skip_) commands.push_back(std::move(c));
    }
    return commands;
  }

 private:
  [[noreturn]] void Fail(int line, const std::string& message) const {
    throw InputError(file_, "line " + std::to_string(line), message);
  }
  char At(size_t k) const { return k < s_.size() ? s_[k] : '\0'; }

  // Skips blanks and line continuations; returns false at a statement end.
  void SkipBlanks() {
    while (i_ < s_.size()) {
      if (IsBlank(s_[i_])) {
        ++i_;
      } else if (s_[i_] == '\\' && At(i_ + 1) == '\n') {
        i_ += 2;
        ++line_;
      } else {
        break;
      }
    }
  }
  void SkipComment() {
    while (i_ < s_.size() && s_[i_] != '\n') ++i_;
  }

  // `case WORD in PATTERN) ... ;; ... esac`: only the first branch whose
  // pattern (a literal, a glob such as `*`; no `a|b` alternatives) matches
  // the resolved WORD runs; a WORD that does not resolve runs every branch.
  // True when `c` was the case's own syntax (its header, a pattern, esac).
  struct CaseFrame {
    std::optional<std::string> subject;
    bool matched = false;
    bool outer_skip = false;
  };
  bool Case(const ShellCommand& c) {
    if (c.words.size() >= 3 && c.words[0].text == "case" && c.words.back().text == "in") {
      CaseFrame f;
      if (c.words[1].unresolved.empty()) f.subject = c.words[1].text;
      f.outer_skip = skip_;
      cases_.push_back(f);
      return true;
    }
    if (cases_.empty()) return false;
    CaseFrame& f = cases_.back();
    if (c.words.size() == 1 && c.words[0].text == "esac") {
      skip_ = f.outer_skip;
      cases_.pop_back();
      return true;
    }
    if (!closed_paren_ || c.words.size() != 1) return false;
    // A pattern line: the branch runs when nothing earlier matched and it
    // matches (or the subject is unknown).
    bool take = !f.matched && (!f.subject || fnmatch(c.words[0].text.c_str(), f.subject->c_str(), 0) == 0);
    if (take && f.subject) f.matched = true;
    skip_ = f.outer_skip || !take;
    return true;
  }

  // `if COND; then ... elif COND; then ... else ... fi`: where every condition
  // is a test this reader can decide (`[ A == B ]`, `[[ A != B ]]`, `=`,
  // `-z A`, `-n A` on resolved words), only the branch taken runs; otherwise
  // every branch is read, as before. True when `c` was the if's own syntax.
  struct IfFrame {
    bool known = true;  // every condition so far decided
    bool taken = false;
    bool outer_skip = false;
  };
  static std::optional<bool> Test(const ShellCommand& c) {
    std::vector<std::string> w;
    for (size_t i = 1; i < c.words.size(); ++i) {
      if (!c.words[i].unresolved.empty()) return std::nullopt;
      w.push_back(c.words[i].text);
    }
    if (w.size() >= 2 && ((w.front() == "[" && w.back() == "]") || (w.front() == "[[" && w.back() == "]]"))) {
      w = std::vector<std::string>(w.begin() + 1, w.end() - 1);
    } else {
      return std::nullopt;
    }
    if (w.size() == 3 && (w[1] == "==" || w[1] == "=")) return w[0] == w[2];
    if (w.size() == 3 && w[1] == "!=") return w[0] != w[2];
    if (w.size() == 2 && w[0] == "-z") return w[1].empty();
    if (w.size() == 2 && w[0] == "-n") return !w[1].empty();
    return std::nullopt;
  }
  bool If(const ShellCommand& c) {
    if (c.words.empty()) return false;
    const std::string& head = c.words[0].text;
    if (head == "if") {
      IfFrame f;
      f.outer_skip = skip_;
      const std::optional<bool> t = chained_ ? std::nullopt : Test(c);
      f.known = t.has_value();
      f.taken = t.value_or(false);
      skip_ = f.outer_skip || (f.known && !f.taken);
      ifs_.push_back(f);
      return true;
    }
    if (ifs_.empty()) return false;
    IfFrame& f = ifs_.back();
    if (head == "elif") {
      const std::optional<bool> t = chained_ ? std::nullopt : Test(c);
      if (!t) f.known = false;
      const bool take = f.known && !f.taken && *t;
      if (take) f.taken = true;
      skip_ = f.outer_skip || (f.known && !take);
      return true;
    }
    if (c.words.size() == 1 && head == "fi") {
      skip_ = f.outer_skip;
      ifs_.pop_back();
      return true;
    }
    return false;
  }
  // The `else` keyword: its branch runs when no earlier one was taken.
  void Else() {
    if (ifs_.empty()) return;
    IfFrame& f = ifs_.back();
    skip_ = f.outer_skip || (f.known && f.taken);
    f.taken = true;
  }

  // One statement: assignments are executed as they are read; the command's
  // words are returned.
  ShellCommand Statement() {
    ShellCommand cmd;
    bool started = false;
    closed_paren_ = false;
    chained_ = false;
    while (true) {
      SkipBlanks();
      if (i_ >= s_.size()) break;
      char c = s_[i_];
      if (c == '#') {
        SkipComment();
        continue;
      }
      if (c == '\n') {
        ++i_;
        ++line_;
        break;
      }
      if (c == ';' || c == '&' || c == '|') {
        ++i_;
        if ((c == '&' || c == '|') && At(i_) == c) {
          ++i_;
          chained_ = true;  // `A && B`, `A || B`: B belongs to the same condition
        }
        break;
      }
      if (c == '(' || c == ')' || c == '{' || c == '}') {  // subshells and groups: their words count as commands
        if (c == ')' && started) closed_paren_ = true;  // `PATTERN)` of a case branch
        ++i_;
        continue;
      }
      if (!started && TryAssignment()) continue;
      const int line = line_;
      Fields f;
      f.line = line;
      ReadWord(&f, true);
      f.Break();
      for (Word& w : f.done) {
        if (!started && (w.text == "export" || w.text == "local" || w.text == "declare" || w.text == "readonly" ||
                         w.text == "typeset" || w.text == "then" || w.text == "do" || w.text == "else" ||
                         w.text == "!" || w.text == "time" || (cmd.words.empty() && IsOption(w) && keyword_))) {
          keyword_ = w.text != "then" && w.text != "do" && w.text != "else" && w.text != "!" && w.text != "time";
          if (w.text == "else") Else();
          continue;
        }
        if (!started) cmd.line = w.line;
        started = true;
        cmd.words.push_back(std::move(w));
      }
    }
    keyword_ = false;
    return cmd;
  }
  static bool IsOption(const Word& w) { return w.text.size() >= 2 && w.text[0] == '-' && w.text[1] != '-'; }

  // NAME=value, NAME+=value, NAME=( ... ): executed; false (nothing read) if
  // the next word is not an assignment.
  bool TryAssignment() {
    size_t k = i_;
    if (!IsNameStart(At(k))) return false;
    while (IsNameChar(At(k))) ++k;
    bool append = false;
    if (At(k) == '+' && At(k + 1) == '=') {
      append = true;
      ++k;
    }
    if (At(k) != '=') return false;
    const std::string name = s_.substr(i_, (append ? k - 1 : k) - i_);
    i_ = k + 1;
    std::vector<std::string> value;
    if (At(i_) == '(') {
      const int open_line = line_;
      ++i_;
      while (true) {
        SkipBlanks();
        if (i_ >= s_.size()) Fail(open_line, "array " + name + "=( is not closed");
        char c = s_[i_];
        if (c == ')') {
          ++i_;
          break;
        }
        if (c == '\n') {
          ++i_;
          ++line_;
          continue;
        }
        if (c == '#') {
          SkipComment();
          continue;
        }
        Fields f;
        f.line = line_;
        ReadWord(&f, true);
        f.Break();
        for (Word& w : f.done) value.push_back(w.text);
        if (f.done.empty() && i_ < s_.size() && s_[i_] != ')' && !IsBlank(s_[i_]) && s_[i_] != '\n') ++i_;
      }
    } else {
      Fields f;
      f.line = line_;
      ReadWord(&f, false);
      value.push_back(f.cur.text);
      // A value built from something unknown keeps that part's text
      // ("${DATA_PATH}"): expanded and split, only the words holding it are
      // unresolved (a launch script's option string with one unset path
      // still passes its flags).
      if (skip_) return true;  // a case branch not taken: read, not run
      if (!f.cur.unresolved.empty()) {
        partial_[name] = f.cur.unresolved;
      } else if (!append) {
        partial_.erase(name);
      }
    }
    if (skip_) return true;
    std::vector<std::string>& v = vars_[name];
    if (append && !v.empty() && value.size() == 1 && At(k + 1) != '(') {
      v[0] += value[0];
    } else if (append) {
      v.insert(v.end(), value.begin(), value.end());
    } else {
      v = std::move(value);
    }
    return true;
  }

  // Reads one shell word into f (several when split is set and an unquoted
  // expansion has blanks). Stops before a blank, newline or operator.
  void ReadWord(Fields* f, bool split) {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (IsBlank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')') return;
      if (c == '<' || c == '>') {
        Redirection(f);
        return;
      }
      if (c == '\\') {
        if (At(i_ + 1) == '\n') {
          i_ += 2;
          ++line_;
          return;
        }
        if (i_ + 1 < s_.size()) f->Append(std::string(1, s_[i_ + 1]));
        i_ += 2;
      } else if (c == '\'') {
        size_t end = s_.find('\'', i_ + 1);
        if (end == std::string::npos) Fail(line_, "unterminated single quote");
        f->Append(s_.substr(i_ + 1, end - i_ - 1));
        CountLines(i_, end);
        i_ = end + 1;
      } else if (c == '"') {
        DoubleQuoted(f, split);
      } else if (c == '$') {
        Dollar(f, split, false);
      } else if (c == '`') {
        Backquote(f);
      } else {
        f->Append(std::string(1, c));
        ++i_;
      }
    }
  }

  // A redirection (2>&1, > log, >> log, < in): dropped with its target; a
  // file-descriptor number written just before it goes too.
  void Redirection(Fields* f) {
    bool digits = !f->cur.text.empty();
    for (char ch : f->cur.text) digits = digits && std::isdigit(static_cast<unsigned char>(ch));
    if (digits) {
      f->cur = Word{};
      f->has_content = false;
    }
    ++i_;
    if (At(i_) == '>' || At(i_) == '&' || At(i_) == '<') ++i_;
    SkipBlanks();
    Fields target;
    target.line = line_;
    ReadWord(&target, false);
  }

  // `command`: not run, so the word stays unresolved.
  void Backquote(Fields* f) {
    size_t end = s_.find('`', i_ + 1);
    if (end == std::string::npos) Fail(line_, "unterminated backquote");
    Unresolved(f, s_.substr(i_, end + 1 - i_), "`...`");
    CountLines(i_, end);
    i_ = end + 1;
  }

  void CountLines(size_t from, size_t to) {
    for (size_t k = from; k < to && k < s_.size(); ++k) line_ += s_[k] == '\n';
  }

  void DoubleQuoted(Fields* f, bool split) {
    const int open_line = line_;
    ++i_;
    f->has_content = true;  // "" is a word
    while (true) {
      if (i_ >= s_.size()) Fail(open_line, "unterminated double quote");
      char c = s_[i_];
      if (c == '"') {
        ++i_;
        return;
      }
      if (c == '\\' && i_ + 1 < s_.size()) {
        char n = s_[i_ + 1];
        if (n == '\n') {
          ++line_;
        } else if (n == '$' || n == '`' || n == '"' || n == '\\') {
          f->Append(std::string(1, n));
        } else {
          f->Append(std::string(1, '\\') + n);
        }
        i_ += 2;
      } else if (c == '$') {
        Dollar(f, split, true);
      } else if (c == '`') {
        Backquote(f);
      } else {
        if (c == '\n') ++line_;
        f->Append(std::string(1, c));
        ++i_;
      }
    }
  }

  static void Unresolved(Fields* f, const std::string& original, const std::string& what) {
    f->Append(original);
    if (f->cur.unresolved.empty()) f->cur.unresolved = what;
  }

  // Index of the parenthesis closing the one before `from` (depth 1).
  size_t MatchParen(size_t from, int depth) const {
    for (size_t k = from; k < s_.size(); ++k) {
      if (s_[k] == '(') ++depth;
      if (s_[k] == ')' && --depth == 0) return k;
    }
    return std::string::npos;
  }

  // At '$': an expansion, appended to f.
  void Dollar(Fields* f, bool split, bool quoted) {
    const size_t start = i_;
    if (At(i_ + 1) == '(' && At(i_ + 2) == '(') {
      size_t end = MatchParen(i_ + 3, 2);
      if (end == std::string::npos) Fail(line_, "unterminated $((");
      // end is the second ')'; the expression is between "$((" and "))".
      std::string expr = s_.substr(i_ + 3, end - 1 - (i_ + 3));
      CountLines(i_, end);
      i_ = end + 1;
      if (std::optional<int64_t> v = Arithmetic(expr, vars_).Evaluate()) {
        f->Append(std::to_string(*v));
      } else {
        Unresolved(f, s_.substr(start, i_ - start), "$((" + expr + "))");
      }
      return;
    }
    if (At(i_ + 1) == '(') {
      size_t end = MatchParen(i_ + 2, 1);
      if (end == std::string::npos) Fail(line_, "unterminated $(");
      CountLines(i_, end);
      i_ = end + 1;
      Unresolved(f, s_.substr(start, i_ - start), "$(...)");
      return;
    }
    if (At(i_ + 1) == '{') {
      Braced(f, split, quoted);
      return;
    }
    if (IsNameStart(At(i_ + 1))) {
      size_t k = i_ + 1;
      while (IsNameChar(At(k))) ++k;
      std::string name = s_.substr(i_ + 1, k - i_ - 1);
      i_ = k;
      Expand(f, name, false, split, quoted, s_.substr(start, k - start));
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(At(i_ + 1))) || std::string("@*#?$!-").find(At(i_ + 1)) != std::string::npos) {
      i_ += 2;
      Unresolved(f, s_.substr(start, 2), s_.substr(start, 2));
      return;
    }
    f->Append("$");
    ++i_;
  }

  // ${NAME}, ${NAME[@]}, ${NAME:-word}, ${NAME-word}, ${NAME:=word}; anything
  // else stays unresolved.
  void Braced(Fields* f, bool split, bool quoted) {
    const size_t start = i_;
    int depth = 0;
    size_t end = std::string::npos;
    for (size_t k = i_ + 2; k < s_.size(); ++k) {
      if (s_[k] == '{') ++depth;
      if (s_[k] == '}' && depth-- == 0) {
        end = k;
        break;
      }
    }
    if (end == std::string::npos) Fail(line_, "unterminated ${");
    const std::string inner = s_.substr(i_ + 2, end - i_ - 2);
    const std::string original = s_.substr(start, end + 1 - start);
    CountLines(i_, end);
    i_ = end + 1;
    size_t k = 0;
    if (k < inner.size() && IsNameStart(inner[k])) {
      while (k < inner.size() && IsNameChar(inner[k])) ++k;
    }
    const std::string name = inner.substr(0, k);
    if (name.empty()) {
      Unresolved(f, original, original);
      return;
    }
    bool all = false;
    if (inner.compare(k, 3, "[@]") == 0 || inner.compare(k, 3, "[*]") == 0) {
      const bool star = inner[k + 1] == '*';
      k += 3;
      all = true;
      if (star && quoted && k == inner.size()) {  // "${A[*]}": the elements joined into one word
        auto it = vars_.find(name);
        if (it == vars_.end()) return Unresolved(f, original, name);
        std::string joined;
        for (size_t e = 0; e < it->second.size(); ++e) joined += (e ? " " : "") + it->second[e];
        f->Append(joined);
        return;
      }
    }
    if (k == inner.size()) return Expand(f, name, all, split, quoted, original);
    // Defaults: ${NAME:-word} ${NAME-word} ${NAME:=word} ${NAME=word}.
    bool colon = inner[k] == ':';
    size_t op = colon ? k + 1 : k;
    if (op >= inner.size() || (inner[op] != '-' && inner[op] != '=')) return Unresolved(f, original, original);
    auto it = vars_.find(name);
    bool use_default = it == vars_.end() || (colon && (it->second.empty() || it->second[0].empty()));
    if (!use_default) return Expand(f, name, all, split, quoted, original);
    const std::string word = inner.substr(op + 1);
    Reader sub(word, file_);
    sub.vars_ = vars_;
    sub.line_ = line_;
    Fields d;
    d.line = line_;
    sub.ReadWord(&d, false);
    if (!d.cur.unresolved.empty()) return Unresolved(f, original, d.cur.unresolved);
    if (inner[op] == '=') vars_[name] = {d.cur.text};
    if (split && !quoted) {
      f->AppendSplit(d.cur.text);
    } else {
      f->Append(d.cur.text);
    }
  }

  void Expand(Fields* f, const std::string& name, bool all, bool split, bool quoted, const std::string& original) {
    auto it = vars_.find(name);
    if (it == vars_.end()) return Unresolved(f, original, name);
    if (auto p = partial_.find(name); p != partial_.end()) {
      const std::string t = it->second.empty() ? "" : it->second[0];
      if (split && !quoted) {
        const size_t before = f->done.size();
        f->AppendSplit(t);
        for (size_t w = before; w < f->done.size(); ++w) {
          if (f->done[w].text.find('$') != std::string::npos && f->done[w].unresolved.empty()) {
            f->done[w].unresolved = p->second;
          }
        }
        if (f->cur.text.find('$') != std::string::npos && f->cur.unresolved.empty()) f->cur.unresolved = p->second;
      } else {
        Unresolved(f, t, p->second);
      }
      return;
    }
    const std::vector<std::string>& v = it->second;
    if (all && v.empty() && f->cur.text.empty()) {  // "${EMPTY[@]}" is no word at all
      f->has_content = false;
      return;
    }
    if (!all) {
      const std::string t = v.empty() ? "" : v[0];
      if (split && !quoted) {
        f->AppendSplit(t);
      } else {
        f->Append(t);
      }
      return;
    }
    for (size_t e = 0; e < v.size(); ++e) {
      if (!split) {  // an assignment's value: the elements joined
        f->Append((e ? " " : "") + v[e]);
        continue;
      }
      if (e > 0) f->Break();
      if (quoted) {
        f->Append(v[e]);
      } else {
        f->AppendSplit(v[e]);
      }
    }
  }

  const std::string& s_;
  std::string file_;
  size_t i_ = 0;
  int line_ = 1;
  bool keyword_ = false;  // the statement began with export/declare/...: its -x options are skipped
  std::map<std::string, std::vector<std::string>> vars_;
  // Variables whose value holds an unresolved part: what was missing.
  std::map<std::string, std::string> partial_;
  std::vector<CaseFrame> cases_;
  std::vector<IfFrame> ifs_;
  bool skip_ = false;          // inside a case branch not taken
  bool closed_paren_ = false;  // the statement read had a ')' after its first word
  bool chained_ = false;       // the statement read ended with && or ||
};

}  // namespace

std::vector<ShellCommand> ReadShellCommands(const std::string& text, const std::string& file) {
  return Reader(text, file).Run();
}

}  // namespace stacksim::importer
