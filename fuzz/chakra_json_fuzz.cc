// libFuzzer target: chakra_json (fuzz/targets.cc, docs/fuzzing.md).
#include "fuzz/targets.h"

STACKSIM_FUZZ_TARGET("chakra_json")
