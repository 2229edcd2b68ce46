// libFuzzer target: chakra_et (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("chakra_et")
