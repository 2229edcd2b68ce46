// libFuzzer target: straggler_distribution (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("straggler_distribution")
