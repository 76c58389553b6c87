#pragma once
// File I/O shared by every layer: errors that name what went wrong, and atomic writes.
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nlpzoo {

/// An error caused by the user's input (file, line, option, checkpoint). The CLI prints
/// `nlpzoo: error: <what()>` and exits with status 1; nothing else catches it.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Removes a leading UTF-8 byte-order mark (EF BB BF), which some editors write at the start of
/// a file, as Python's utf-8-sig codec and pandas do: it would otherwise join the first word,
/// key or column name.
void strip_utf8_bom(std::string& text);

/// Reads a UTF-8 text file into lines (without the trailing '\n'; a trailing '\r' is kept;
/// without a byte-order mark before the first line).
/// Throws UserError naming `path` when it is missing or unreadable.
std::vector<std::string> read_lines(const std::string& path);

/// Calls fn(line) for each line of `path` in order (read_lines' lines, one at a time: the file is
/// never held whole). Throws UserError as read_lines; an exception from fn stops the reading.
void for_each_line(const std::string& path, const std::function<void(std::string& line)>& fn);

/// Reads a whole file as bytes. Throws UserError naming `path` when it cannot be read.
std::string read_file(const std::string& path);

/// Writes `path` atomically: `write` fills `<path>.tmp.<pid>`, which is then fsync'ed and
/// renamed over `path`. If `write` throws, the temporary file is removed and `path` is left
/// as it was. Throws UserError naming the path on any I/O failure.
void atomic_write(const std::string& path, const std::function<void(const std::string& tmp_path)>& write);

/// Removes the temporary files `<name>.tmp.<pid>` that atomic_write left in `dir` (not its
/// subfolders) when process <pid> was killed mid-write: those whose process no longer runs
/// (kill(pid, 0) fails with ESRCH). Returns the removed paths; a missing `dir` has none.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

/// atomic_write of a string's bytes.
void atomic_write_text(const std::string& path, const std::string& contents);

/// Throws UserError("<path>: no such file (<what>)") unless `path` is a readable regular file.
void require_file(const std::string& path, const std::string& what);

}  // namespace nlpzoo
