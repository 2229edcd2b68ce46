#include "sim/importer/shell_script.h"

#include <gtest/gtest.h>

#include "tests/input_error.h"

namespace stacksim::importer {
namespace {

std::vector<std::string> Texts(const ShellCommand& c) {
  std::vector<std::string> t;
  for (const Word& w : c.words) t.push_back(w.text);
  return t;
}

TEST(ShellScript, VariablesArraysAndContinuationsExpandInOrder) {
  const std::string script =
      "#!/bin/bash\n"
      "TP=8   # tensor parallel\n"
      "PP=${PP:-4}\n"
      "export NODES=2\n"
      "GPUS=$((TP * NODES))\n"
      "ARGS=(\n"
      "  --tp $TP  # comment inside\n"
      "  --name \"two words\"\n"
      ")\n"
      "DIST=\"--nproc_per_node 8 --nnodes $NODES\"\n"
      "torchrun $DIST train.py \\\n"
      "  \"${ARGS[@]}\" --pp ${PP} --gpus $GPUS --quoted '$TP' 2>&1 | tee log\n";
  std::vector<ShellCommand> cmds = ReadShellCommands(script, "s.sh");
  ASSERT_EQ(cmds.size(), 2u);  // torchrun ... and tee
  EXPECT_EQ(Texts(cmds[0]), (std::vector<std::string>{"torchrun", "--nproc_per_node", "8", "--nnodes", "2", "train.py",
                                                      "--tp", "8", "--name", "two words", "--pp", "4", "--gpus", "16",
                                                      "--quoted", "$TP"}));
  EXPECT_EQ(cmds[0].line, 11);
  EXPECT_EQ(cmds[0].words[6].line, 12);
  EXPECT_EQ(Texts(cmds[1]), (std::vector<std::string>{"tee", "log"}));
}

TEST(ShellScript, UnsetVariablesStayUnresolvedAndNamed) {
  std::vector<ShellCommand> cmds = ReadShellCommands("N=${SLURM_NNODES}\nrun --nnodes $N --x ${Y:-$Z} --c $(hostname)\n", "s.sh");
  ASSERT_EQ(cmds.size(), 1u);
  const std::vector<Word>& w = cmds[0].words;
  ASSERT_EQ(w.size(), 7u);
  EXPECT_EQ(w[2].text, "$N");
  EXPECT_EQ(w[2].unresolved, "N");  // N was built from the unset SLURM_NNODES
  EXPECT_EQ(w[4].unresolved, "Z");
  EXPECT_EQ(w[6].unresolved, "$(...)");
  EXPECT_TRUE(w[1].unresolved.empty());
}

TEST(ShellScript, UnterminatedQuoteNamesTheLine) {
  InputError e = testing::ErrorFrom([] { ReadShellCommands("A=1\nrun --x \"open\n", "s.sh"); });
  EXPECT_EQ(e.file(), "s.sh");
  EXPECT_EQ(e.key_path(), "line 2");
}

}  // namespace
}  // namespace stacksim::importer
