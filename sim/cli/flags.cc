#include "sim/cli/flags.h"

#include <iostream>

namespace stacksim::cli {

CLI::Option* AddFormat(CLI::App* cmd, std::string* format, const std::vector<std::string>& formats) {
  return cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember(formats));
}

CLI::Option* AddSet(CLI::App* cmd, std::vector<std::string>* overrides, const std::string& help) {
  return cmd->add_option("--set", *overrides, help);
}

CLI::Option* AddProfile(CLI::App* cmd, std::string* profile_path, const std::string& help) {
  return cmd->add_option("--profile", *profile_path, help);
}

CLI::Option* AddNetwork(CLI::App* cmd, std::string* network) {
  return cmd->add_option("--network", *network, "Network model")->check(CLI::IsMember({"analytic", "simgrid"}));
}

CLI::Option* AddHtml(CLI::App* cmd, std::string* html_path) {
  return cmd->add_option("--html", *html_path, "Also write a self-contained HTML report with charts to FILE");
}

CLI::Option* AddThreads(CLI::App* cmd, int* threads, const std::string& help) {
  return cmd->add_option("--threads", *threads, help)->check(CLI::Range(1, 4096));
}

void PrintJson(const nlohmann::json& j) { std::cout << j.dump(2) << "\n"; }

}  // namespace stacksim::cli
