#include "sim/simulate/step_in_child.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "sim/simulate/simulate.h"
#include "sim/util/error.h"

namespace stacksim::simulate {

StepRun RunStep(const config::ScenarioConfig& s, const std::string& network) {
  simulate::Options o;
  o.network = network;
  simulate::SimulationResult r = simulate::Simulate(s, o);
  return {r.iteration, r.out_of_memory};
}

// The child writes "ok <ns> <oom>", "input <message>" or "error <message>".
StepRun RunStepInChild(const config::ScenarioConfig& s, const std::string& network) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("cannot create a pipe for a step simulation");
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork a step simulation");
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      StepRun r = RunStep(s, network);
      out = "ok " + std::to_string(r.iteration.ns()) + " " + (r.out_of_memory ? "1" : "0");
    } catch (const InputError& e) {
      out = std::string("input ") + e.what();
    } catch (const std::exception& e) {
      out = std::string("error ") + e.what();
    }
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (text.rfind("ok ", 0) == 0) {
    std::istringstream in(text.substr(3));
    int64_t ns = 0;
    int oom = 0;
    in >> ns >> oom;
    return {Time::Ns(ns), oom != 0};
  }
  if (text.rfind("input ", 0) == 0) throw InputError(s.file, "", text.substr(6));
  throw std::runtime_error("step simulation failed: " + (text.empty() ? "no result" : text));
}


}  // namespace stacksim::simulate
