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

// A launch script's option string with one unset part (a positional
// argument): split on expansion, only the word holding it is unresolved, and
// the flags around it stay usable (Megatron-LM's examples/mamba/train.sh).
TEST(ShellScript, AnOptionStringWithAnUnsetPartKeepsItsOtherWords) {
  std::vector<ShellCommand> cmds = ReadShellCommands(
      "DATA=$1\nSEQ=4096\nopts=\" --seq-length ${SEQ} --data-path ${DATA} --bf16\"\ntorchrun a.py ${opts}\n", "s.sh");
  ASSERT_EQ(cmds.size(), 1u);
  const std::vector<Word>& w = cmds[0].words;
  ASSERT_EQ(w.size(), 7u);
  EXPECT_EQ(w[3].text, "4096");
  EXPECT_TRUE(w[3].unresolved.empty());
  EXPECT_EQ(w[5].text, "$1");
  EXPECT_EQ(w[5].unresolved, "$1");
  EXPECT_EQ(w[6].text, "--bf16");
  EXPECT_TRUE(w[6].unresolved.empty());
}

// `case`: only the first branch whose pattern matches a resolved subject
// runs (Megatron-LM's examples/mamba/train.sh picks its 800M or 8B sizes so);
// an unresolved subject runs every branch.
TEST(ShellScript, ACaseRunsTheBranchItsSubjectMatches) {
  const std::string script = R"(SCALE="small"
case "${SCALE}" in
    "small")
        TP=1
        ;;
    "big")
        TP=4
        echo big
        ;;
    *)
        echo "Invalid"
        exit 1
        ;;
esac
run --tp $TP
)";
  std::vector<ShellCommand> cmds = ReadShellCommands(script, "s.sh");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(Texts(cmds[0]), (std::vector<std::string>{"run", "--tp", "1"}));
  std::string other = script;
  other.replace(other.find("\"small\"\n"), 8, "\"huge\"\n");  // no literal branch: the * one
  cmds = ReadShellCommands(other, "s.sh");
  ASSERT_EQ(cmds.size(), 3u);  // echo Invalid, exit 1, run
  EXPECT_EQ(Texts(cmds[0]), (std::vector<std::string>{"echo", "Invalid"}));
  std::string unknown = script;
  unknown.replace(unknown.find("SCALE=\"small\""), 13, "SCALE=$1");
  cmds = ReadShellCommands(unknown, "s.sh");
  EXPECT_EQ(Texts(cmds.back()), (std::vector<std::string>{"run", "--tp", "4"}));  // every branch: the last TP
}

// `if`: a test this reader can decide on resolved words runs only the
// branch taken; anything else (a file test, a chained condition, an unset
// word) reads every branch, as before.
TEST(ShellScript, AnIfRunsTheBranchItsDecidableTestTakes) {
  const std::string script = R"(MODEL="70b"
if [ "$MODEL" == "8b" ]; then
    TP=1
elif [[ "$MODEL" = "70b" ]]; then
    TP=8
else
    TP=4
fi
if [ -z "$MODEL" ]; then
    echo empty
fi
run --tp $TP
)";
  std::vector<ShellCommand> cmds = ReadShellCommands(script, "s.sh");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(Texts(cmds[0]), (std::vector<std::string>{"run", "--tp", "8"}));
  std::string other = script;
  other.replace(other.find("\"70b\"\n"), 6, "\"13b\"\n");  // neither test: the else branch
  cmds = ReadShellCommands(other, "s.sh");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(Texts(cmds[0]), (std::vector<std::string>{"run", "--tp", "4"}));
  std::string chained = script;
  chained.replace(chained.find("[ \"$MODEL\" == \"8b\" ]"), 19, "[ \"$MODEL\" == \"8b\" ] || [ -f x ]");
  // Undecided: every branch is read and the last assignment wins.
  EXPECT_EQ(Texts(ReadShellCommands(chained, "s.sh").back()), (std::vector<std::string>{"run", "--tp", "4"}));
}

TEST(ShellScript, UnsetVariablesStayUnresolvedAndNamed) {
  std::vector<ShellCommand> cmds = ReadShellCommands("N=${SLURM_NNODES}\nrun --nnodes $N --x ${Y:-$Z} --c $(hostname)\n", "s.sh");
  ASSERT_EQ(cmds.size(), 1u);
  const std::vector<Word>& w = cmds[0].words;
  ASSERT_EQ(w.size(), 7u);
  EXPECT_EQ(w[2].text, "${SLURM_NNODES}");  // N keeps the unset part's text
  EXPECT_EQ(w[2].unresolved, "SLURM_NNODES");
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
