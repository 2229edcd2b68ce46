#include "sim/config/fitted_constants.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "sim/config/scenario.h"
#include "sim/util/error.h"

namespace stacksim::config {

std::string FittedConstantsPath() { return DataRoot() + "/validation/fitted_constants.json"; }

std::optional<std::string> ReadFittedConstant(const std::string& path, std::string_view key, bool required,
                                              const std::function<void(JsonObject& entry)>& read) {
  nlohmann::json doc = ReadJsonFile(path);
  JsonNode root(doc, path, "");
  JsonObject top(root);
  RequireSchema(top, "stacksim.fitted_constants/1");
  std::optional<JsonNode> node = required ? std::optional<JsonNode>(top.Required(key)) : top.Optional(key);
  top.Ignore({"about", "allocator_cache_fraction", "overlap_comm_sms", "serving_iteration_overhead"});
  top.Finish();
  if (!node) return std::nullopt;
  JsonObject entry(*node);
  read(entry);
  const std::string command = entry.Required("fitted_by").String();
  const std::string date = entry.Required("date").String();
  entry.Finish();
  return path + " (" + command + ", " + date + ")";
}

std::string FitDate() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
  return date;
}

void WriteFittedConstant(const std::string& path, std::string_view key, const nlohmann::json& entry) {
  nlohmann::json doc = std::filesystem::exists(path) ? ReadJsonFile(path)
                                                     : nlohmann::json{{"schema", "stacksim.fitted_constants/1"}};
  doc[std::string(key)] = entry;
  // The whole text first, then a file beside it renamed over the old one: a
  // failure leaves the old file as it was.
  const std::string text = doc.dump(2) + "\n";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << text;
    out.close();
    if (!out) throw InputError(path, "", "cannot write the fitted constants (" + tmp + ")");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw InputError(path, "", "cannot replace the fitted constants: " + ec.message());
}

}  // namespace stacksim::config
