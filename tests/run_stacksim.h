// Test helper: run the stacksim command as a user would and capture its
// exit status, standard output and standard error.
#ifndef STACKSIM_TESTS_RUN_STACKSIM_H_
#define STACKSIM_TESTS_RUN_STACKSIM_H_

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace stacksim::testing {

struct CmdResult {
  int status = -1;
  std::string out;
  std::string err;
};

// Runs `cmd` through the shell: its exit status (-1 when it did not exit)
// and standard output; standard error as the command redirects it.
inline CmdResult Shell(const std::string& cmd) {
  CmdResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Runs STACKSIM_BINARY with `args` (a shell fragment).
inline CmdResult Stacksim(const std::string& args) {
  static int counter = 0;
  // Unique per process: ctest runs tests in parallel processes.
  std::string err_file =
      ::testing::TempDir() + "stacksim_err_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  CmdResult r = Shell(std::string(STACKSIM_BINARY) + " " + args + " 2>" + err_file);
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  std::remove(err_file.c_str());
  return r;
}

}  // namespace stacksim::testing

#endif  // STACKSIM_TESTS_RUN_STACKSIM_H_
