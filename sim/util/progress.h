// Progress of long work on standard error, the same for every command: a
// counter with the time elapsed and, once something is done, the time left
// at the rate so far ("validate progress: 37/274 runs, 12 s elapsed, about 1 min
// left"). On a terminal the line is rewritten in place at most every 0.2 s;
// otherwise (a log, a pipe) a plain line is printed when the work starts,
// every 10 s, and at the end, so that logs stay short. Output goes to
// standard error only, so results on standard output are unchanged.
//
// Add() may be called from any thread.
#ifndef STACKSIM_SIM_UTIL_PROGRESS_H_
#define STACKSIM_SIM_UTIL_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace stacksim {

class ProgressMeter {
 public:
  // what: the work ("validate"); unit: what is counted ("runs"). A meter
  // with enabled false prints nothing. REQUIRES: total >= 0.
  ProgressMeter(std::string what, std::string unit, int64_t total, bool enabled = true, std::FILE* out = stderr);

  // n more items are done; the line ends when all are.
  void Add(int64_t n = 1);
  // n more items to do, for work whose size is found as it goes (a sweep,
  // then a final run). A meter made with total 0 prints its first line here,
  // and its last when it is destroyed (its work may grow after any count).
  void AddWork(int64_t n);
  ~ProgressMeter();

  // The line as it would print now ("validate: 3/10 runs, 2 s elapsed,
  // about 5 s left"), for tests and for the printing itself.
  std::string Line(int64_t done, double elapsed_s) const;

 private:
  using Clock = std::chrono::steady_clock;
  void PrintLocked(double elapsed_s, bool end);

  std::string what_, unit_;
  int64_t total_;
  bool enabled_;
  std::FILE* out_;
  bool terminal_;
  bool growing_;
  std::mutex mu_;
  int64_t done_ = 0;
  Clock::time_point start_;
  double last_print_s_ = 0;
};

// "42 s", "3.5 min", "2.1 h": a duration as people read it.
std::string HumanDuration(double seconds);

}  // namespace stacksim

#endif  // STACKSIM_SIM_UTIL_PROGRESS_H_
