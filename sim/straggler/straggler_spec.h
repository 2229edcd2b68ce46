// What is slow in a job: fractions of nodes (or GPUs) and how much slower
// their kernels run.
//
// A spec is a list of terms. Each term says: this fraction of the job's nodes
// (scope kNode) or GPUs (kGpu) runs compute `slowdown` times longer. Terms of
// one scope take disjoint units (bins of a histogram), so fractions of one
// scope add up to at most 1. A term is persistent (the same hardware every
// step: drawn once per job) or transient (redrawn every step); a term that
// does not say takes the analysis's default (transient when several steps
// are simulated, else persistent).
//
// Two ways to write one (docs/stragglers.md, docs/formats.md):
//   text, for --stragglers:  "0.1%:1.5x,gpu:0.5%:1.2x,transient:2%:1.1x"
//   a measured distribution file (JSON): {"bins": [{"fraction": 0.001,
//     "slowdown": 1.5, "source": "..."}, ...]}
#ifndef STACKSIM_SIM_STRAGGLER_STRAGGLER_SPEC_H_
#define STACKSIM_SIM_STRAGGLER_STRAGGLER_SPEC_H_

#include <string>
#include <vector>

#include "sim/util/json_reader.h"

namespace stacksim::straggler {

enum class Scope { kNode, kGpu };
enum class Persistence { kDefault, kPersistent, kTransient };
const char* ScopeName(Scope s);  // "node", "gpu"

struct StragglerTerm {
  Scope scope = Scope::kNode;
  Persistence persistence = Persistence::kDefault;
  double fraction = 0;  // of the job's nodes (or GPUs), in (0, 1]
  double slowdown = 1;  // compute-time factor on that hardware, >= 1
  std::string source;   // where the term came from (a bin's source, or the option)
};

struct StragglerSpec {
  std::vector<StragglerTerm> terms;
  std::string origin;  // "--stragglers", or the distribution file
  std::string text;    // as the user wrote it (text form), for reports
};

// Parses the text form. `option` names the option (or file and key) in
// errors, e.g. "--stragglers". Throws InputError.
StragglerSpec ParseStragglerText(const std::string& text, const std::string& option);

// Reads a distribution file (JSON, see docs/formats.md). Throws InputError
// naming the file and the field.
StragglerSpec ReadStragglerDistribution(const std::string& path);
StragglerSpec ParseStragglerDistribution(const JsonNode& node);

// The text form if `arg` does not end in ".json", else the file it names.
StragglerSpec ParseStragglerArgument(const std::string& arg, const std::string& option);

}  // namespace stacksim::straggler

#endif  // STACKSIM_SIM_STRAGGLER_STRAGGLER_SPEC_H_
