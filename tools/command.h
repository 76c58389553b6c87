#pragma once
// The `nlpzoo` binary is one program with subcommands (as fastText's and Marian's are);
// each subcommand lives in its own tools/cmd_*.cpp and registers itself here.
#include <string>
#include <vector>

namespace nlpzoo::cli {

struct Command {
  std::string name;     // e.g. "train"; nested commands use a space: "tokenize train"
  std::string summary;  // one line for `nlpzoo --help`
  // Runs the command on the arguments after its name. Returns the exit status. Throws
  // nlpzoo::UserError or boost::program_options::error for bad input; main prints them.
  int (*run)(const std::vector<std::string>& args);
};

/// Adds a command to the registry; used through NLPZOO_REGISTER_COMMAND at namespace scope.
bool register_command(Command command);
const std::vector<Command>& commands();

}  // namespace nlpzoo::cli

#define NLPZOO_REGISTER_COMMAND(ident, name, summary, fn) \
  static const bool nlpzoo_registered_##ident = ::nlpzoo::cli::register_command({name, summary, fn})
