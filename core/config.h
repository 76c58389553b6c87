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
  /// Adds every key of `other` (a component's schema: transformer_schema(), ...) not yet
  /// declared. Throws std::logic_error for a key declared in both with different defaults.
  ConfigSchema& merge(const ConfigSchema& other);
  /// Gives a declared key another default and, if `help` is not empty, another help line: a
  /// task composing a component schema sets what suits it (the LM's 2 layers, what
  /// hidden_size means beside a bidirectional encoder). Throws std::logic_error for a key not
  /// declared.
  ConfigSchema& set_default(const std::string& key, const std::string& default_value, const std::string& help = "");
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
  /// Defaults from `schema`, then `ini_path` (if not empty) and its bases (preset_chain), then `overrides` (the leftover
  /// command-line tokens "--key value" or "--key=value"; a flag given twice: the last wins, as
  /// argparse). Throws UserError naming the file and key for an unknown key, a missing file, a
  /// value outside `choices`, or a key given twice in the file (naming both lines).
  static Config resolve(const ConfigSchema& schema, const std::string& ini_path,
                        const std::vector<std::string>& overrides);
  /// Parses INI text (key = value lines, '#' comments) as written by to_ini(); `origin`
  /// names it in errors. Keys not in `schema`, and keys given twice, are errors.
  static Config from_ini_text(const ConfigSchema& schema, const std::string& text, const std::string& origin);

  std::string to_ini() const;

  bool has(const std::string& key) const { return values_.count(key) > 0; }
  const std::string& get(const std::string& key) const;
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  const std::map<std::string, std::string>& values() const { return values_; }
  /// Whether the named config file or the command line set `key` to a value other than the one
  /// the schema's default and the file's bases (presets) gave it: a value a user chose, which a
  /// value read from elsewhere (a pre-trained run's sizes) must not silently replace.
  bool chosen(const std::string& key) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::string> preset_values_;  // the values before the named file and the command line
};

/// One INI file of a preset chain: its path and its text (a byte-order mark and the `base`
/// line removed, the other lines kept where they were so that errors name them).
struct IniFile {
  std::string path;
  std::string text;
};
/// The files `ini_path` builds on, the deepest base first and `ini_path` last. A file may start
/// from another with `base = NAME` (NAME.ini in the same folder) or `base = PATH` (relative to
/// the file's folder); later files override earlier ones key by key. Throws UserError naming the
/// file and line for a missing base or a cycle, and as Config::resolve for malformed files.
std::vector<IniFile> preset_chain(const std::string& ini_path);

/// Reads only the `task` key of an INI file or, when it has none, of its bases (to choose the
/// schema before the full parse).
/// Throws UserError if the file is missing or has no `task` key.
std::string read_task_name(const std::string& ini_path);

}  // namespace nlpzoo
