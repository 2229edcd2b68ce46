// stacksim replay TRACE: replays a PyTorch profiler (Kineto) trace, with
// what-ifs on another GPU or at a data-parallel scale (sim/replay/replay.h).
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>

#include "sim/cli/command.h"
#include "sim/cli/flags.h"
#include "sim/replay/replay.h"

namespace stacksim::cli {

RunFunction AddReplayOptions(CLI::App* cmd) {
  auto a = std::make_shared<replay::ReplayOptions>();
  cmd->add_option("trace", a->trace_path, "Kineto Chrome-trace JSON (.json or .json.gz)")->required();
  cmd->add_option("--step", a->step,
                  "ProfilerStep#N to replay (default: the last complete step that has GPU work)")
      ->check(WholeIn(0, std::numeric_limits<int32_t>::max()));
  AddProfile(cmd, &a->profile_path, "Profile of the recording's GPU (default: H200)");
  cmd->add_option("--to-profile", a->to_profile_path, "Re-time the kernels on this GPU profile");
  cmd->add_option("--topology", a->topology_path, "Topology for --dp");
  cmd->add_option("--dp", a->dp, "Data-parallel ranks")->check(WholeIn(1, 1 << 20));
  cmd->add_option("--params", a->params,
                  "Model parameters for an inserted DP all-reduce (default: TRACE's .meta.json)")
      ->check(RealIn(0, 1e15, true));
  cmd->add_option("--perfetto", a->perfetto_path, "Write the replayed (re-timed) step as a Perfetto trace");
  AddFormat(cmd, &a->format);
  return [a] {
    std::cout << replay::RunReplayCommand(*a);
    return 0;
  };
}

}  // namespace stacksim::cli
