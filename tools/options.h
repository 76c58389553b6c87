#pragma once
// Command-line parsing shared by every subcommand (Boost.ProgramOptions).
#include <boost/program_options.hpp>

#include <optional>
#include <string>
#include <vector>

namespace nlpzoo::cli {

namespace po = boost::program_options;

/// Parses `args` against `desc` (plus --help). Prints "Usage: nlpzoo <usage>" and the option
/// table and returns nullopt when --help is given. Unknown options and bad values throw
/// po::error, which main reports naming the option. `positional` names options that may
/// also be given positionally, in order; the last one may repeat.
std::optional<po::variables_map> parse_args(const std::vector<std::string>& args,
                                            const po::options_description& desc,
                                            const std::string& usage,
                                            const std::vector<std::string>& positional = {});

}  // namespace nlpzoo::cli

namespace nlpzoo::cli {

/// run_dir/checkpoint_<which>.pt for which = best | last | averaged (nlpzoo checkpoint average)
/// | a step (the checkpoints keep_last keeps), or `which` itself when it names a .pt file;
/// throws UserError naming the file
/// (and how to make one) when it does not exist.
std::string checkpoint_in(const std::string& run_dir, const std::string& which);

/// Reads stdin to the end, one entry per line ('\r' stripped).
std::vector<std::string> read_stdin_lines();

}  // namespace nlpzoo::cli
