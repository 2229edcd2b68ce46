// The raw CSV files (docs/calibrate.md): one header row, units in the column
// names, each row flushed as soon as it is written so that a crash later in
// the run keeps what was measured. Cells are quoted as sim/util/csv.h writes
// them, which is how calibrate's fit reads them back.
#ifndef STACKSIM_CALIBRATE_HARNESS_CSV_H_
#define STACKSIM_CALIBRATE_HARNESS_CSV_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace stacksim::calibrate {

class CsvWriter {
 public:
  enum class Mode { kTruncate, kAppend };
  // kTruncate writes the header; kAppend writes it only when the file is new
  // or empty. Throws std::runtime_error when the file cannot be written.
  CsvWriter(const std::string& path, const std::vector<std::string>& header, Mode mode = Mode::kTruncate);
  ~CsvWriter();
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  // REQUIRES: cells.size() == header size.
  void Row(const std::vector<std::string>& cells);
  int rows() const { return rows_; }

 private:
  FILE* file_ = nullptr;
  std::string path_;
  size_t columns_;
  int rows_ = 0;
};

// A number as a cell: integers without a fraction, others with 9 digits.
std::string Num(double v);

// Median (the high median: a repeat that was measured), smallest and largest
// of a sample (all 0 for an empty one).
struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
};
Summary Summarize(std::vector<double> v);

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_CSV_H_
