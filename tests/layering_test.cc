// The folders of sim/ depend on each other in the directions docs/architecture.md
// states ("Include rules"): this test reads that table and fails on any
// #include "sim/<folder>/..." the table does not allow, on a sim/ folder the
// table does not list, and on a cycle in the table itself. The table is the one
// place the rules live; the page and the check cannot drift apart.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace stacksim {
namespace {

namespace fs = std::filesystem;
using Rules = std::map<std::string, std::set<std::string>>;  // folder -> folders it may include

const char* kTableMarker = "<!-- include-rules: read by tests/layering_test.cc -->";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The rows after the marker: | `folder` | `a`, `b` | ... until the first
// line that is not a table row.
Rules ParseRules(const std::string& markdown) {
  Rules rules;
  size_t at = markdown.find(kTableMarker);
  if (at == std::string::npos) return rules;
  std::istringstream lines(markdown.substr(at));
  std::string line;
  std::getline(lines, line);  // the marker
  const std::regex name("`([a-z_]+)`");
  bool in_table = false;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] != '|') {
      if (in_table) break;
      continue;
    }
    in_table = true;
    // | folder | may include | why |
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    std::string cell;
    while (std::getline(row, cell, '|')) cells.push_back(cell);
    if (cells.size() < 2) continue;
    std::smatch m;
    if (!std::regex_search(cells[0], m, name)) continue;  // header or separator
    std::set<std::string>& allowed = rules[m[1]];
    for (auto it = std::sregex_iterator(cells[1].begin(), cells[1].end(), name); it != std::sregex_iterator(); ++it) {
      allowed.insert((*it)[1]);
    }
  }
  return rules;
}

bool IsTestFile(const fs::path& p) {
  const std::string f = p.filename().string();
  return f.find("_test") != std::string::npos || f.find("test_util") != std::string::npos;
}

// Every include of another sim/ folder that the rules do not allow, as
// "sim/a/file.cc includes sim/b/x.h (a may include: ...)".
std::vector<std::string> Violations(const fs::path& root, const Rules& rules) {
  std::vector<std::string> out;
  const std::regex include("^\\s*#\\s*include\\s+\"(sim/([a-z_]+)/[^\"]+)\"");
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(root / "sim")) {
    if (!e.is_regular_file() || IsTestFile(e.path())) continue;
    const std::string ext = e.path().extension().string();
    if (ext == ".cc" || ext == ".h") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    const std::string folder = fs::relative(file, root / "sim").begin()->string();
    auto rule = rules.find(folder);
    std::istringstream text(ReadFile(file));
    std::string line;
    while (std::getline(text, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const std::string header = m[1], target = m[2];
      if (target == folder) continue;
      if (rule != rules.end() && rule->second.count(target)) continue;
      std::string allowed;
      if (rule != rules.end()) {
        for (const std::string& a : rule->second) allowed += (allowed.empty() ? "" : ", ") + a;
      }
      out.push_back(fs::relative(file, root).string() + " includes " + header + " (" +
                    folder + " may include: " + (allowed.empty() ? "nothing" : allowed) + ")");
    }
  }
  return out;
}

// A cycle among the rules, as "a -> b -> a", or "".
std::string Cycle(const Rules& rules) {
  std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::string found;
  std::function<bool(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    path.push_back(f);
    auto it = rules.find(f);
    if (it != rules.end()) {
      for (const std::string& g : it->second) {
        if (state[g] == 1) {
          for (auto p = std::find(path.begin(), path.end(), g); p != path.end(); ++p) found += *p + " -> ";
          found += g;
          return true;
        }
        if (state[g] == 0 && visit(g)) return true;
      }
    }
    path.pop_back();
    state[f] = 2;
    return false;
  };
  for (const auto& [f, _] : rules) {
    if (state[f] == 0 && visit(f)) return found;
  }
  return "";
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "  " + l + "\n";
  return s;
}

const fs::path kRoot = STACKSIM_SOURCE_DIR;

Rules ProjectRules() { return ParseRules(ReadFile(kRoot / "docs" / "architecture.md")); }

TEST(Layering, EveryIncludeFollowsTheTableInArchitectureMd) {
  const Rules rules = ProjectRules();
  ASSERT_FALSE(rules.empty()) << "docs/architecture.md has no include-rules table";
  const std::vector<std::string> bad = Violations(kRoot, rules);
  EXPECT_TRUE(bad.empty()) << bad.size() << " forbidden includes:\n" << Joined(bad);
}

TEST(Layering, TableListsEverySimFolderAndNoOther) {
  const Rules rules = ProjectRules();
  std::set<std::string> folders;
  for (const auto& e : fs::directory_iterator(kRoot / "sim")) {
    if (e.is_directory()) folders.insert(e.path().filename().string());
  }
  for (const std::string& f : folders) EXPECT_TRUE(rules.count(f)) << "sim/" << f << " has no row in the table";
  for (const auto& [f, allowed] : rules) {
    EXPECT_TRUE(folders.count(f)) << "the table lists sim/" << f << ", which does not exist";
    for (const std::string& a : allowed) EXPECT_TRUE(rules.count(a)) << f << " may include unknown folder " << a;
  }
}

TEST(Layering, TableHasNoCycle) { EXPECT_EQ(Cycle(ProjectRules()), ""); }

// The check itself: a tree where the engine includes the workload generator.
TEST(Layering, ForbiddenIncludeIsReportedWithFileAndRule) {
  const fs::path tmp = fs::temp_directory_path() / ("stacksim-layering-" + std::to_string(::getpid()));
  fs::create_directories(tmp / "sim" / "engine");
  fs::create_directories(tmp / "sim" / "workload");
  std::ofstream(tmp / "sim" / "engine" / "engine.cc") << "#include \"sim/engine/engine.h\"\n"
                                                        << "#include \"sim/trace/trace.h\"\n"
                                                        << "#include \"sim/workload/layer_ops.h\"\n";
  std::ofstream(tmp / "sim" / "engine" / "engine_test.cc") << "#include \"sim/workload/layer_ops.h\"\n";
  const Rules rules = ParseRules(std::string(kTableMarker) +
                                 "\n| folder | may include |\n|---|---|\n| `engine` | `trace`, `util` |\n"
                                 "| `workload` | `trace` |\n| `trace` | |\n| `util` | |\n\nafter the table\n");
  ASSERT_EQ(rules.size(), 4u);
  const std::vector<std::string> bad = Violations(tmp, rules);
  fs::remove_all(tmp);
  ASSERT_EQ(bad.size(), 1u) << Joined(bad);
  EXPECT_EQ(bad[0], "sim/engine/engine.cc includes sim/workload/layer_ops.h (engine may include: trace, util)");
  EXPECT_EQ(Cycle({{"search", {"report"}}, {"report", {"search"}}}), "report -> search -> report");
  EXPECT_EQ(Cycle(rules), "");
}

}  // namespace
}  // namespace stacksim
