// The flags several stacksim commands share, declared once so that each reads
// the same everywhere: its name, help text and accepted values. A command
// passes its own help text where the flag means something narrower there
// (compare's --set applies to --scenario only).
#ifndef STACKSIM_SIM_CLI_FLAGS_H_
#define STACKSIM_SIM_CLI_FLAGS_H_

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stacksim::cli {

// --format: text (for people, the default) or json (for scripts), or the
// command's own list.
CLI::Option* AddFormat(CLI::App* cmd, std::string* format,
                       const std::vector<std::string>& formats = {"text", "json"});

// --set key.path=value, repeatable: overrides a scenario field.
CLI::Option* AddSet(CLI::App* cmd, std::vector<std::string>* overrides,
                    const std::string& help = "Override a scenario field: key.path=value (repeatable)");

// --profile FILE: a hardware profile instead of the topology's.
CLI::Option* AddProfile(CLI::App* cmd, std::string* profile_path,
                        const std::string& help = "Use this hardware profile instead of the topology's");

// --network analytic|simgrid (net/network_factory.h).
CLI::Option* AddNetwork(CLI::App* cmd, std::string* network);

// --html FILE: a self-contained HTML report beside the text or JSON.
CLI::Option* AddHtml(CLI::App* cmd, std::string* html_path);

// Numeric options, every one checked by one of these before CLI11 converts
// it: the text must be a whole number (or, for RealIn, a finite number) in
// the range, else CLI11 reports "--NAME: TEXT is not ..." with the range in
// short form. A minus sign is never wrapped into a huge unsigned value
// (--seed -1), and no bound is printed as 309 digits.
CLI::Validator WholeIn(int64_t lo, int64_t hi);
// A seed: a whole number from 0 to 2^64-1.
CLI::Validator SeedValue();
// lo < value (lo_open) or lo <= value, and value <= hi.
CLI::Validator RealIn(double lo, double hi, bool lo_open);
inline CLI::Validator PositiveReal() { return RealIn(0, 1e300, true); }

// --threads N, 1 to 4096.
CLI::Option* AddThreads(CLI::App* cmd, int* threads, const std::string& help = "Threads (default: all cores)");

// --rank expected|pessimistic (search::Ranking) and --min-headroom SIZE
// (memory::HeadroomPolicy), for the commands that rank plans.
CLI::Option* AddRanking(CLI::App* cmd, std::string* rank);
CLI::Option* AddMinHeadroom(CLI::App* cmd, std::string* min_headroom);

// Prints `j` as every command prints JSON: with the build's "version" at the
// top level (WithVersion), indented by 2, then a newline.
void PrintJson(const nlohmann::json& j);

// Prints a result in the --format it was asked for: json() as JSON when
// format is "json", else text() (only the one asked for is rendered).
template <typename JsonFunction, typename TextFunction>
void PrintResult(const std::string& format, JsonFunction json, TextFunction text) {
  if (format == "json") {
    PrintJson(json());
  } else {
    std::cout << text();
  }
}

}  // namespace stacksim::cli

#endif  // STACKSIM_SIM_CLI_FLAGS_H_
