#include "sim/util/progress.h"

#include <unistd.h>

#include <cmath>
#include <utility>

namespace stacksim {

std::string HumanDuration(double seconds) {
  char buf[32];
  if (seconds < 90) {
    std::snprintf(buf, sizeof(buf), "%.0f s", seconds);
  } else if (seconds < 5400) {
    std::snprintf(buf, sizeof(buf), "%.1f min", seconds / 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f h", seconds / 3600);
  }
  return buf;
}

ProgressMeter::ProgressMeter(std::string what, std::string unit, int64_t total, bool enabled, std::FILE* out)
    : what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(enabled),
      out_(out),
      terminal_(isatty(fileno(out)) == 1),
      growing_(total == 0),
      start_(Clock::now()) {
  if (!enabled_ || total_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  PrintLocked(0, false);
}

ProgressMeter::~ProgressMeter() {
  if (!enabled_ || !growing_ || total_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  PrintLocked(std::chrono::duration<double>(Clock::now() - start_).count(), true);
}

void ProgressMeter::AddWork(int64_t n) {
  if (!enabled_ || n <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  const bool first = total_ == 0;
  total_ += n;
  if (first) PrintLocked(std::chrono::duration<double>(Clock::now() - start_).count(), false);
}

std::string ProgressMeter::Line(int64_t done, double elapsed_s) const {
  std::string line = what_ + " progress: " + std::to_string(done) + "/" + std::to_string(total_) + " " + unit_ + ", " +
                     HumanDuration(elapsed_s) + " elapsed";
  if (done > 0 && done < total_) {
    const double left = elapsed_s / static_cast<double>(done) * static_cast<double>(total_ - done);
    line += ", about " + HumanDuration(left) + " left";
  }
  return line;
}

void ProgressMeter::Add(int64_t n) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  done_ += n;
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const bool end = !growing_ && done_ == total_;
  const bool due = elapsed - last_print_s_ >= (terminal_ ? 0.2 : 10.0);
  if (due || end) PrintLocked(elapsed, end);
}

void ProgressMeter::PrintLocked(double elapsed_s, bool end) {
  last_print_s_ = elapsed_s;
  const std::string line = Line(done_, elapsed_s);
  std::fprintf(out_, "%s%s%s", terminal_ ? "\r\033[K" : "", line.c_str(), terminal_ && !end ? "" : "\n");
  std::fflush(out_);
}

}  // namespace stacksim
