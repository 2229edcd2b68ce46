#include "calibrate/harness/csv.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "sim/util/csv.h"
#include "sim/util/statistics.h"

namespace stacksim::calibrate {

CsvWriter::CsvWriter(const std::string& path, const std::vector<std::string>& header, Mode mode)
    : path_(path), columns_(header.size()) {
  std::error_code ec;
  bool has_content = mode == Mode::kAppend && std::filesystem::exists(path, ec) &&
                     std::filesystem::file_size(path, ec) > 0 && !ec;
  file_ = std::fopen(path.c_str(), mode == Mode::kAppend ? "a" : "w");
  if (file_ == nullptr) throw std::runtime_error("cannot write " + path);
  if (!has_content) {
    rows_ = -1;  // the header is not a row
    Row(header);
  }
}

CsvWriter::~CsvWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void CsvWriter::Row(const std::vector<std::string>& cells) {
  if (cells.size() != columns_) {
    throw std::logic_error(path_ + ": row of " + std::to_string(cells.size()) + " cells, header has " +
                           std::to_string(columns_));
  }
  const std::string line = CsvLine(cells);
  if (std::fputs(line.c_str(), file_) < 0 || std::fflush(file_) != 0) throw std::runtime_error("cannot write " + path_);
  ++rows_;
}

std::string Num(double v) {
  char buf[40];
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.9g", v);
  }
  return buf;
}

Summary Summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = HighMedian(v);  // a repeat that was measured (sim/util/statistics.h)
  s.min = v.front();
  s.max = v.back();
  return s;
}

}  // namespace stacksim::calibrate
