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

CLI::Option* AddRanking(CLI::App* cmd, std::string* rank) {
  return cmd
      ->add_option("--rank", *rank,
                   "Read each plan's step as predicted (expected) or at its likely range's high end (pessimistic)")
      ->check(CLI::IsMember({"expected", "pessimistic"}));
}

CLI::Option* AddMinHeadroom(CLI::App* cmd, std::string* min_headroom) {
  return cmd->add_option("--min-headroom", *min_headroom,
                         "HBM each ranked plan keeps free, e.g. 2GiB; 0GiB fills HBM (default: the larger of 1 GiB "
                         "and the allocator's fitted cache)");
}

}  // namespace stacksim::cli
