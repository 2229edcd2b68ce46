// libFuzzer target: megatron_bridge_yaml (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("megatron_bridge_yaml")
