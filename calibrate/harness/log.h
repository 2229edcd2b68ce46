// What the harness tells its user: log lines (stderr and <raw>/log.txt, with
// the seconds since start), progress of a sweep with an estimate of the time
// left (stderr only), and the deadline a step's sweeps stop at.
#ifndef STACKSIM_CALIBRATE_HARNESS_LOG_H_
#define STACKSIM_CALIBRATE_HARNESS_LOG_H_

#include <chrono>
#include <cstdio>
#include <string>

namespace stacksim::calibrate {

using Clock = std::chrono::steady_clock;

// "1m40s", "25s", "0.4s".
std::string FormatDuration(double seconds);

class Log {
 public:
  // Truncates `path`; an empty path logs to stderr only.
  explicit Log(const std::string& path);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // One line to stderr and log.txt, flushed.
  void Line(const std::string& text);
  // A progress line: stderr only; on a terminal it overwrites itself, else
  // one line every few seconds at most (so captured output stays short).
  void Progress(const std::string& text, bool force = false);
  double ElapsedS() const;

 private:
  void EndProgressLine();

  FILE* file_ = nullptr;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_progress_{};
  bool tty_ = false;
  bool progress_open_ = false;
};

// When a step must stop starting new measurements.
class Deadline {
 public:
  Deadline() : end_(Clock::time_point::max()) {}
  explicit Deadline(Clock::time_point end) : end_(end) {}
  static Deadline In(double seconds);
  double LeftS() const;
  bool Expired() const { return Clock::now() >= end_; }
  Clock::time_point end() const { return end_; }

 private:
  Clock::time_point end_;
};

// Progress of one step's items: "[5/8] gemm bf16 120/277 ~1m40s left". The
// estimate is the mean time per finished item times the items left.
class Progress {
 public:
  Progress(Log* log, std::string tag, int total_items);
  // `done` of the step's items are finished; `detail` names where the sweep is.
  void Report(int done, const std::string& detail);

 private:
  Log* log_;
  std::string tag_;
  int total_;
  Clock::time_point start_ = Clock::now();
};

}  // namespace stacksim::calibrate

#endif  // STACKSIM_CALIBRATE_HARNESS_LOG_H_
