// A CSV file of calibrate's raw measurements (docs/calibrate.md): one header
// row naming the columns, units in the column names, one measurement a row.
//
// Reading is strict, as for every input: a missing column, a short row or a
// cell that is not a number where one is needed is an InputError naming the
// file, the column and the line.
#ifndef STACKSIM_CALIBRATE_FIT_CSV_H_
#define STACKSIM_CALIBRATE_FIT_CSV_H_

#include <cstdint>
#include <string>
#include <vector>

namespace stacksim::calibrate {

class CsvTable {
 public:
  // Reads and splits the file (RFC 4180 quoting, LF or CRLF line ends, blank
  // lines skipped). Throws InputError if it cannot be read, has no header, or
  // a row has a different number of cells than the header.
  static CsvTable Read(const std::string& path);
  // The same from text already in memory; `path` names it in errors.
  static CsvTable Parse(const std::string& text, const std::string& path);

  const std::string& path() const { return path_; }
  size_t rows() const { return cells_.size(); }
  bool HasColumn(const std::string& column) const;
  // Throws InputError naming the first of `columns` the header lacks.
  void RequireColumns(const std::vector<std::string>& columns) const;

  // Cell accessors. REQUIRES: row < rows(). Each throws InputError naming the
  // file, the column and the line when the column is missing or the cell is
  // not of the asked kind.
  const std::string& Text(size_t row, const std::string& column) const;
  double Number(size_t row, const std::string& column) const;          // finite
  double PositiveNumber(size_t row, const std::string& column) const;  // > 0
  int64_t PositiveInt(size_t row, const std::string& column) const;    // >= 1, whole
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

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_FIT_CSV_H_
