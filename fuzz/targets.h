// Entry functions of the libFuzzer targets (fuzz/<target>_fuzz.cc) and of
// the regression test that replays their corpora and crash reproducers
// (tests/fuzz_regression_test.cc).
//
// Each entry takes the bytes of one input file and feeds them, as that
// file's text, to the parser stacksim uses for it, with a made-up origin
// name ("fuzz/model.json"). Accepting the input and throwing InputError are
// both fine; anything else that escapes (another exception type, a
// sanitizer report, a hang) is a finding. docs/fuzzing.md lists the targets.
#ifndef STACKSIM_FUZZ_TARGETS_H_
#define STACKSIM_FUZZ_TARGETS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stacksim::fuzz {

// Parses `text` as the target's format. Throws what the parser throws.
using EntryFunction = void (*)(const std::string& text);

struct FuzzTarget {
  const char* name;     // "model": fuzz/model_fuzz.cc, fuzz/corpus/model/
  EntryFunction entry;
};

// Every target, in docs/fuzzing.md's order.
const std::vector<FuzzTarget>& AllTargets();
// The target named `name`, or nullptr.
const FuzzTarget* FindTarget(const std::string& name);

// Runs one input: returns normally when the parser accepted it or rejected it
// with an InputError; every other exception propagates (in a fuzzer it
// aborts, which libFuzzer reports as a crash).
void RunInput(EntryFunction entry, const uint8_t* data, size_t size);

// One LLVMFuzzerTestOneInput per target.
#define STACKSIM_FUZZ_TARGET(target_name)                                            \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {          \
    static const ::stacksim::fuzz::FuzzTarget* t = ::stacksim::fuzz::FindTarget(target_name); \
    ::stacksim::fuzz::RunInput(t->entry, data, size);                                \
    return 0;                                                                        \
  }

}  // namespace stacksim::fuzz

#endif  // STACKSIM_FUZZ_TARGETS_H_
