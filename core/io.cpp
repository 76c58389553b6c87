#include "core/io.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace nlpzoo {

void for_each_line(const std::string& path, const std::function<void(std::string& line)>& fn) {
  require_file(path, "text file");
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot open for reading");
  std::string line;
  for (bool first = true; std::getline(in, line); first = false) {
    if (first) strip_utf8_bom(line);
    fn(line);
  }
  if (in.bad()) throw UserError(path + ": read error");
}

void strip_utf8_bom(std::string& text) {
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  for_each_line(path, [&](std::string& line) { lines.push_back(std::move(line)); });
  return lines;
}

std::string read_file(const std::string& path) {
  require_file(path, "file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void require_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UserError(path + ": no such file (" + what + ")");
  if (access(path.c_str(), R_OK) != 0) throw UserError(path + ": not readable (" + what + ")");
}

namespace {
// atomic_write's temporary file is <path><kTemporaryInfix><pid>; remove_stale_temporaries reads it back.
constexpr const char* kTemporaryInfix = ".tmp.";
}  // namespace

void atomic_write(const std::string& path, const std::function<void(const std::string&)>& write) {
  const std::string tmp = path + kTemporaryInfix + std::to_string(getpid());
  try {
    write(tmp);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  // fsync so that a crash right after the rename cannot leave an empty file behind.
  if (FILE* f = std::fopen(tmp.c_str(), "rb")) {
    fsync(fileno(f));
    std::fclose(f);
  } else {
    throw UserError(path + ": could not write (temporary file " + tmp + " missing)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw UserError(path + ": could not rename the temporary file into place");
  }
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto at = name.rfind(kTemporaryInfix);
    if (at == std::string::npos || at == 0 || !entry.is_regular_file(ec)) continue;
    const std::string pid = name.substr(at + std::char_traits<char>::length(kTemporaryInfix));
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask
    if (std::filesystem::remove(entry.path(), ec)) removed.push_back(entry.path().string());
  }
  return removed;
}

void atomic_write_text(const std::string& path, const std::string& contents) {
  atomic_write(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) throw UserError(path + ": cannot open for writing");
    out << contents;
    out.flush();
    if (!out) throw UserError(path + ": write failed (disk full?)");
  });
}

}  // namespace nlpzoo
