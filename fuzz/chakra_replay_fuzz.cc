// libFuzzer target: chakra_replay (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("chakra_replay")
