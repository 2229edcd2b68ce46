#include "calibrate/harness/log.h"

#include <unistd.h>

#include <cmath>
#include <stdexcept>

namespace stacksim::calibrate {

std::string FormatDuration(double seconds) {
  char buf[32];
  if (!(seconds >= 0)) seconds = 0;
  if (seconds < 10) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
  } else if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.0fs", seconds);
  } else {
    long s = std::lround(seconds);
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  }
  return buf;
}

Log::Log(const std::string& path) : tty_(isatty(fileno(stderr)) != 0) {
  if (!path.empty()) {
    file_ = std::fopen(path.c_str(), "w");
    if (file_ == nullptr) throw std::runtime_error("cannot write " + path);
  }
}

Log::~Log() {
  EndProgressLine();
  if (file_ != nullptr) std::fclose(file_);
}

double Log::ElapsedS() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

void Log::EndProgressLine() {
  if (progress_open_) std::fputc('\n', stderr);
  progress_open_ = false;
}

void Log::Line(const std::string& text) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "[%7.1fs] ", ElapsedS());
  EndProgressLine();
  std::fprintf(stderr, "%s%s\n", stamp, text.c_str());
  std::fflush(stderr);
  if (file_ != nullptr) {
    std::fprintf(file_, "%s%s\n", stamp, text.c_str());
    std::fflush(file_);
  }
}

void Log::Progress(const std::string& text, bool force) {
  Clock::time_point now = Clock::now();
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    progress_open_ = true;
  } else {
    if (!force && now - last_progress_ < std::chrono::seconds(5)) return;
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
  last_progress_ = now;
}

Deadline Deadline::In(double seconds) {
  return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
}

double Deadline::LeftS() const {
  if (end_ == Clock::time_point::max()) return 1e18;
  return std::chrono::duration<double>(end_ - Clock::now()).count();
}

Progress::Progress(Log* log, std::string tag, int total_items) : log_(log), tag_(std::move(tag)), total_(total_items) {}

void Progress::Report(int done, const std::string& detail) {
  std::string text = tag_ + " " + detail;
  if (done > 0 && done < total_) {
    double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    text += " ~" + FormatDuration(elapsed / done * (total_ - done)) + " left";
  }
  log_->Progress(text, done == total_);
}

}  // namespace stacksim::calibrate
