#include "sim/util/csv.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && IsBlank(s[b])) ++b;
  while (e > b && IsBlank(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// One record starting at text[*pos]; advances *pos past its line end and
// counts the lines it spans (a quoted cell may hold a newline).
std::vector<std::string> SplitRecord(const std::string& text, size_t* pos, int* line, const std::string& path) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false, was_quoted = false;
  const int start_line = *line;
  size_t i = *pos;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++*line;
        cell += c;
      }
    } else if (c == '"' && Trim(cell).empty()) {
      quoted = was_quoted = true;
      cell.clear();
    } else if (c == ',') {
      cells.push_back(was_quoted ? cell : Trim(cell));
      cell.clear();
      was_quoted = false;
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (quoted) {
    throw InputError(path, "", "line " + std::to_string(start_line) + ": a quoted cell is never closed");
  }
  cells.push_back(was_quoted ? cell : Trim(cell));
  *pos = i + 1;
  ++*line;
  return cells;
}

bool BlankRecord(const std::vector<std::string>& cells) { return cells.size() == 1 && cells[0].empty(); }

// Whether the line starting at text[pos] is a comment ('#' after blanks).
bool CommentLine(const std::string& text, size_t pos) {
  while (pos < text.size() && IsBlank(text[pos])) ++pos;
  return pos < text.size() && text[pos] == '#';
}

}  // namespace

std::vector<CsvRecord> SplitCsv(const std::string& text, const std::string& path, const CsvOptions& options) {
  std::vector<CsvRecord> records;
  size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    if (options.comments && CommentLine(text, pos)) {
      size_t end = text.find('\n', pos);
      pos = end == std::string::npos ? text.size() : end + 1;
      ++line;
      continue;
    }
    const int record_line = line;
    std::vector<std::string> cells = SplitRecord(text, &pos, &line, path);
    if (!BlankRecord(cells)) records.push_back({std::move(cells), record_line});
  }
  return records;
}

std::string ReadCsvFile(const std::string& path) { return ReadInputFile(path); }

CsvTable CsvTable::Read(const std::string& path, const CsvOptions& options) {
  return Parse(ReadCsvFile(path), path, options);
}

CsvTable CsvTable::Parse(const std::string& text, const std::string& path, const CsvOptions& options) {
  CsvTable t;
  t.path_ = path;
  for (CsvRecord& r : SplitCsv(text, path, options)) {
    if (t.header_.empty()) {
      t.header_ = std::move(r.cells);
      for (size_t i = 0; i < t.header_.size(); ++i) {
        if (t.header_[i].empty()) {
          throw InputError(path, "", "line " + std::to_string(r.line) + ": column " + std::to_string(i + 1) +
                                         " has no name");
        }
        for (size_t j = 0; j < i; ++j) {
          if (t.header_[j] == t.header_[i]) throw InputError(path, t.header_[i], "the header names this column twice");
        }
      }
      continue;
    }
    if (r.cells.size() != t.header_.size()) {
      throw InputError(path, "", "line " + std::to_string(r.line) + ": " + std::to_string(r.cells.size()) +
                                     " cells, but the header has " + std::to_string(t.header_.size()) + " columns");
    }
    t.cells_.push_back(std::move(r.cells));
    t.lines_.push_back(r.line);
  }
  if (t.header_.empty()) throw InputError(path, "", "the file is empty; expected a header row");
  return t;
}

bool CsvTable::HasColumn(const std::string& column) const {
  for (const std::string& h : header_) {
    if (h == column) return true;
  }
  return false;
}

void CsvTable::RequireColumns(const std::vector<std::string>& columns) const {
  for (const std::string& c : columns) ColumnIndex(c);
}

size_t CsvTable::ColumnIndex(const std::string& column) const {
  for (size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == column) return i;
  }
  std::string have;
  for (const std::string& h : header_) have += (have.empty() ? "" : ", ") + h;
  throw InputError(path_, column, "missing column '" + column + "' (the header has: " + have + ")");
}

void CsvTable::Fail(size_t row, const std::string& column, const std::string& message) const {
  throw InputError(path_, column, "line " + std::to_string(lines_[row]) + ": " + message);
}

const std::string& CsvTable::Text(size_t row, const std::string& column) const {
  return cells_[row][ColumnIndex(column)];
}

double CsvTable::Number(size_t row, const std::string& column) const {
  const std::string& cell = Text(row, column);
  char* end = nullptr;
  double v = cell.empty() ? 0 : std::strtod(cell.c_str(), &end);
  if (cell.empty() || end != cell.c_str() + cell.size() || !std::isfinite(v)) {
    Fail(row, column, "'" + cell + "' is not a number");
  }
  return v;
}

double CsvTable::PositiveNumber(size_t row, const std::string& column) const {
  double v = Number(row, column);
  if (!(v > 0)) Fail(row, column, "'" + Text(row, column) + "' must be positive");
  return v;
}

double CsvTable::NonNegativeNumber(size_t row, const std::string& column) const {
  double v = Number(row, column);
  if (v < 0) Fail(row, column, "'" + Text(row, column) + "' must not be negative");
  return v;
}

int64_t CsvTable::PositiveInt(size_t row, const std::string& column) const {
  double v = Number(row, column);
  if (!(v >= 1) || v != std::floor(v) || v > 9.0e15) {
    Fail(row, column, "'" + Text(row, column) + "' must be a positive whole number");
  }
  return static_cast<int64_t>(v);
}

std::string CsvCell(const std::string& cell) {
  const bool edge_blank = !cell.empty() && (IsBlank(cell.front()) || IsBlank(cell.back()));
  if (!edge_blank && cell.find_first_of(",\"\r\n") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string CsvLine(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ',';
    line += CsvCell(cells[i]);
  }
  return line + '\n';
}

}  // namespace stacksim
