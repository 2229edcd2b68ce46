// Chakra traces as a directory of files, one per rank: DIR/NAME.RANK.json
// (the JSON form, chakra_json.h) or DIR/NAME.RANK.et (protobuf, chakra_et.h).
// stacksim writes NAME = "stacksim"; reading takes any NAME, each rank
// 0..n-1 exactly once, and each file's form from its extension. Errors are
// InputError naming the directory or the file.
#ifndef STACKSIM_SIM_CHAKRA_CHAKRA_DIRECTORY_H_
#define STACKSIM_SIM_CHAKRA_CHAKRA_DIRECTORY_H_

#include <string>
#include <vector>

#include "sim/chakra/chakra_import.h"
#include "sim/trace/replay_result.h"
#include "sim/trace/trace.h"

namespace stacksim::chakra {

enum class FileForm { kJson, kEt };

// Writes every rank to DIR/stacksim.<rank>.json or .et (creates DIR). Returns the paths.
std::vector<std::string> WriteChakraDirectory(const trace::Trace& trace, const trace::ReplayResult& replay,
                                              const std::string& dir, FileForm form = FileForm::kJson);

// Reads DIR/*.<rank>.json or DIR/*.<rank>.et (ranks 0..n-1, each once; the
// form by each file's extension) and imports them.
trace::Trace ReadChakraDirectory(const std::string& dir, const ImportOptions& options = {},
                                 ImportNotes* notes = nullptr);

}  // namespace stacksim::chakra

#endif  // STACKSIM_SIM_CHAKRA_CHAKRA_DIRECTORY_H_
