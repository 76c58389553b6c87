#pragma once
// Configuration: one INI file (configs/*.ini) overridden by command-line flags, both read by
// Boost.ProgramOptions. Every component declares the keys it reads, with a default and a
// help line, in one ConfigSchema; unknown keys and bad values are errors that name the key.
// Values are kept as text so the resolved config can be written into the run folder and
// into every checkpoint exactly as it was used.
#include <map>
#include <string>
#include <vector>

namespace nlpzoo {

struct ConfigKey {
  std::string key;            // e.g. "hidden_size"; the flag is --hidden_size
  std::string default_value;  // as text
  std::string help;           // one line: meaning, unit, formula
  std::vector<std::string> choices;  // allowed values, empty = any
};

class ConfigSchema {
 public:
  /// Declares a key. Throws std::logic_error if it is declared twice with another default.
  ConfigSchema& add(const std::string& key, const std::string& default_value, const std::string& help,
                    std::vector<std::string> choices = {});
  ConfigSchema& merge(const ConfigSchema& other);
  const std::vector<ConfigKey>& keys() const { return keys_; }
  const ConfigKey* find(const std::string& key) const;
  /// "  --key (=default)  help" lines, for --help.
  std::string help_text() const;

 private:
  std::vector<ConfigKey> keys_;
};

class Config {
 public:
  Config() = default;
  /// Defaults from `schema`, then `ini_path` (if not empty), then `overrides` (the leftover
  /// command-line tokens "--key value" or "--key=value"). Throws UserError naming the file
  /// and key for an unknown key, a missing file or a value outside `choices`.
  static Config resolve(const ConfigSchema& schema, const std::string& ini_path,
                        const std::vector<std::string>& overrides);
  /// Parses INI text (key = value lines, '#' comments) as written by to_ini(); `origin`
  /// names it in errors. Keys not in `schema` are an error.
  static Config from_ini_text(const ConfigSchema& schema, const std::string& text, const std::string& origin);

  std::string to_ini() const;

  bool has(const std::string& key) const { return values_.count(key) > 0; }
  const std::string& get(const std::string& key) const;
  /// Typed getters; a value that does not parse throws UserError("config key 'k': ...").
  int64_t get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

/// Reads only the `task` key of an INI file (to choose the schema before the full parse).
/// Throws UserError if the file is missing or has no `task` key.
std::string read_task_name(const std::string& ini_path);

}  // namespace nlpzoo
