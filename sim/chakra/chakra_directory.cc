#include "sim/chakra/chakra_directory.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "sim/chakra/chakra_et.h"
#include "sim/chakra/chakra_export.h"
#include "sim/chakra/chakra_json.h"
#include "sim/util/error.h"
#include "sim/util/json_reader.h"

namespace stacksim::chakra {

std::vector<std::string> WriteChakraDirectory(const trace::Trace& trace, const trace::ReplayResult& replay,
                                              const std::string& dir, FileForm form) {
  std::vector<ChakraGraph> graphs = ExportChakraGraphs(trace, replay);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir, "", "cannot create directory: " + ec.message());
  std::vector<std::string> paths;
  const char* extension = form == FileForm::kEt ? ".et" : ".json";
  for (size_t r = 0; r < graphs.size(); ++r) {
    std::string path = (std::filesystem::path(dir) / ("stacksim." + std::to_string(r) + extension)).string();
    std::ofstream f(path, std::ios::binary);
    f << (form == FileForm::kEt ? EncodeChakraEt(graphs[r]) : ChakraJsonText(graphs[r]));
    if (!f) throw InputError(path, "", "cannot write");
    paths.push_back(path);
  }
  return paths;
}

trace::Trace ReadChakraDirectory(const std::string& dir, const ImportOptions& options, ImportNotes* notes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError(dir, "", "not a directory");
  static const std::regex kName(R"((.*)\.(\d+)\.(json|et))");
  std::map<int, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, kName)) continue;
    int rank = std::stoi(m[2].str());
    if (!files.emplace(rank, entry.path().string()).second) {
      throw InputError(entry.path().string(), "", "a second file for rank " + std::to_string(rank));
    }
  }
  if (files.empty()) throw InputError(dir, "", "no Chakra files (NAME.RANK.json or NAME.RANK.et)");
  std::vector<RankGraph> graphs;
  for (const auto& [rank, path] : files) {
    if (rank != static_cast<int>(graphs.size())) {
      throw InputError(dir, "", "no file for rank " + std::to_string(graphs.size()));
    }
    RankText in{path, ReadInputFile(path)};
    graphs.push_back({path, path.ends_with(".et") ? DecodeChakraEt(in) : ParseChakraJson(in)});
  }
  return ImportChakraGraphs(graphs, options, notes);
}

}  // namespace stacksim::chakra
