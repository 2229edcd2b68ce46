// Comma-separated values, read and written in one place: calibrate's raw
// measurements, the cluster's job traces, the serving request traces, the
// search ranking (--format csv).
//
// Reading follows RFC 4180: a cell in double quotes may hold commas, line
// breaks and doubled quotes (""); lines end in LF or CRLF. Beyond it, as
// people write CSV by hand: spaces and tabs around an unquoted cell are
// dropped, blank lines are skipped, and with CsvOptions::comments a line
// whose first character other than a space or tab is '#' is skipped too.
// Lines are counted in the file (1-based, blank lines, comments and the line
// breaks inside quoted cells included), so that errors name the line an
// editor shows.
//
// CsvTable maps the header's column names to cells and is strict, as every
// input is: a missing column, a row with more or fewer cells than the header
// or a cell that is not of the kind asked for is an InputError naming the
// file, the column and the line.
#ifndef STACKSIM_SIM_UTIL_CSV_H_
#define STACKSIM_SIM_UTIL_CSV_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stacksim {

struct CsvOptions {
  bool comments = false;  // skip lines starting with '#'
};

// One record (a row, or the header) and the line it starts on.
struct CsvRecord {
  std::vector<std::string> cells;
  int line = 0;
};

// The records of `text`, blank lines and (with options.comments) comment
// lines left out. `path` names the text in errors. Throws InputError(path, "",
// "line N: a quoted cell is never closed").
std::vector<CsvRecord> SplitCsv(const std::string& text, const std::string& path, const CsvOptions& options = {});

// The whole of a file. Throws InputError(path, "", "cannot read the file").
std::string ReadCsvFile(const std::string& path);

class CsvTable {
 public:
  // Reads and splits the file; the first record is the header. Throws
  // InputError if it cannot be read, has no header, a header cell is empty or
  // given twice, or a row has a different number of cells than the header.
  static CsvTable Read(const std::string& path, const CsvOptions& options = {});
  // The same from text already in memory; `path` names it in errors.
  static CsvTable Parse(const std::string& text, const std::string& path, const CsvOptions& options = {});

  const std::string& path() const { return path_; }
  const std::vector<std::string>& header() const { return header_; }
  size_t rows() const { return cells_.size(); }
  bool HasColumn(const std::string& column) const;
  // Throws InputError naming the first of `columns` the header lacks.
  void RequireColumns(const std::vector<std::string>& columns) const;

  // Cell accessors. REQUIRES: row < rows(). Each throws InputError naming the
  // file, the column and the line when the column is missing or the cell is
  // not of the asked kind.
  const std::string& Text(size_t row, const std::string& column) const;
  double Number(size_t row, const std::string& column) const;             // finite
  double PositiveNumber(size_t row, const std::string& column) const;     // > 0
  double NonNegativeNumber(size_t row, const std::string& column) const;  // >= 0
  int64_t PositiveInt(size_t row, const std::string& column) const;       // >= 1, whole
  int line(size_t row) const { return lines_[row]; }  // line in the file, 1-based

  // Throws InputError(path, column, "line N: message").
  [[noreturn]] void Fail(size_t row, const std::string& column, const std::string& message) const;

 private:
  size_t ColumnIndex(const std::string& column) const;

  std::string path_;
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> cells_;
  std::vector<int> lines_;
};

// A cell as written: in double quotes (inner quotes doubled) when it holds a
// comma, a quote or a line break, or begins or ends with a space or tab
// (which a reader would drop); as it is otherwise.
std::string CsvCell(const std::string& cell);
// The cells as one line: CsvCell each, joined by commas, ending in '\n'.
std::string CsvLine(const std::vector<std::string>& cells);

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_CSV_H_
