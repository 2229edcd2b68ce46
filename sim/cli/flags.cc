#include "sim/cli/flags.h"

#include <charconv>
#include <cmath>
#include <iostream>
#include <limits>

#include <fmt/format.h>

#include "sim/util/version.h"

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

namespace {

// 16384 as "16384", 1e12 as "1e+12": the range as people read it.
std::string Short(double v) { return fmt::format("{:.6g}", v); }

}  // namespace

CLI::Validator WholeIn(int64_t lo, int64_t hi) {
  const std::string range = "a whole number from " + Short(static_cast<double>(lo)) + " to " +
                            Short(static_cast<double>(hi));
  return CLI::Validator(
      [lo, hi, range](std::string& text) -> std::string {
        int64_t v = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || ptr != end || v < lo || v > hi) return "'" + text + "' is not " + range;
        return "";
      },
      "INT in [" + Short(static_cast<double>(lo)) + ", " + Short(static_cast<double>(hi)) + "]");
}

CLI::Validator SeedValue() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t v = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || text[0] == '-' || text[0] == '+' || ec != std::errc() || ptr != end) {
          return "'" + text + "' is not a seed (a whole number from 0 to 2^64-1)";
        }
        return "";
      },
      "SEED");
}

CLI::Validator RealIn(double lo, double hi, bool lo_open) {
  const std::string range = std::string("a number ") + (lo_open ? "> " : ">= ") + Short(lo) +
                            (hi < 1e300 ? " and <= " + Short(hi) : std::string());
  return CLI::Validator(
      [lo, hi, lo_open, range](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        auto [ptr, ec] = std::from_chars(text.data(), end, v);
        const bool in = lo_open ? v > lo : v >= lo;
        if (ec != std::errc() || ptr != end || !std::isfinite(v) || !in || v > hi) {
          return "'" + text + "' is not " + range;
        }
        return "";
      },
      "NUMBER");
}

CLI::Option* AddThreads(CLI::App* cmd, int* threads, const std::string& help) {
  return cmd->add_option("--threads", *threads, help)->check(WholeIn(1, 4096));
}

void PrintJson(const nlohmann::json& j) { std::cout << WithVersion(j).dump(2) << "\n"; }

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
