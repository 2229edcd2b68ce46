// The words of a launch script, as bash would hand them to the training
// program, without running anything: enough of the shell's grammar to read
// the scripts people launch Megatron-LM with (Megatron-LM's
// examples/*/train_*.sh and the NeMo/cluster wrappers around them).
//
// Understood: comments, line continuations, single and double quotes and
// backslash escapes; statements separated by newlines, ';', '&&', '||', '|'
// and '&'; variable assignments (NAME=value, with export / local / declare /
// readonly / typeset in front) executed in order, arrays NAME=( ... ) spanning
// lines, $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:=default},
// ${NAME[@]} / ${NAME[*]} (one word per element, quoted or not), integer
// arithmetic $(( ... )) (+ - * / % and parentheses), and word splitting of
// unquoted expansions. Not run: command substitution $( ... ) and `...`,
// control flow (if/for bodies are read as plain statements, in file order),
// functions. The process environment is never read: a variable the script
// does not set stays unresolved, and its word says so (Word::unresolved), so
// the same file always gives the same words.
#ifndef STACKSIM_SIM_IMPORTER_SHELL_SCRIPT_H_
#define STACKSIM_SIM_IMPORTER_SHELL_SCRIPT_H_

#include <string>
#include <vector>

namespace stacksim::importer {

// One word after expansion. A word that used a variable the script does not
// set (or a command substitution) keeps its unexpanded text, e.g. "$TP", and
// names what was missing in `unresolved` ("TP", or "$(...)").
struct Word {
  std::string text;
  std::string unresolved;
  int line = 0;  // 1-based line where the word starts
};

// A command after expansion: its words, assignments in front of it
// (NAME=value for that command only) left out.
struct ShellCommand {
  std::vector<Word> words;
  int line = 0;
};

// Every command of the script, in order, with variables expanded as they
// stood when the command was reached. Throws InputError(file, "line N", ...)
// on an unterminated quote, parenthesis or ${.
std::vector<ShellCommand> ReadShellCommands(const std::string& text, const std::string& file);

}  // namespace stacksim::importer

#endif  // STACKSIM_SIM_IMPORTER_SHELL_SCRIPT_H_
