#include "core/config.h"

#include <boost/program_options.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/io.h"

namespace nlpzoo {

namespace po = boost::program_options;
namespace fs = std::filesystem;

ConfigSchema& ConfigSchema::add(const std::string& key, const std::string& default_value,
                                const std::string& help, std::vector<std::string> choices) {
  if (const auto* k = find(key)) {
    if (k->default_value != default_value)
      throw std::logic_error("config key '" + key + "' declared twice with different defaults");
    return *this;
  }
  keys_.push_back({key, default_value, help, std::move(choices)});
  return *this;
}

ConfigSchema& ConfigSchema::merge(const ConfigSchema& other) {
  for (const auto& k : other.keys_) add(k.key, k.default_value, k.help, k.choices);
  return *this;
}

ConfigSchema& ConfigSchema::set_default(const std::string& key, const std::string& default_value,
                                        const std::string& help) {
  for (auto& k : keys_) {
    if (k.key != key) continue;
    k.default_value = default_value;
    if (!help.empty()) k.help = help;
    return *this;
  }
  throw std::logic_error("config key '" + key + "' gets a default but was never declared");
}

const ConfigKey* ConfigSchema::find(const std::string& key) const {
  for (const auto& k : keys_)
    if (k.key == key) return &k;
  return nullptr;
}

std::string ConfigSchema::help_text() const {
  std::ostringstream out;
  for (const auto& k : keys_) {
    std::string head = "  --" + k.key + " (=" + k.default_value + ")";
    out << head << std::string(head.size() < 34 ? 34 - head.size() : 1, ' ') << k.help;
    if (!k.choices.empty()) {
      out << " [";
      for (size_t i = 0; i < k.choices.size(); ++i) out << (i ? "|" : "") << k.choices[i];
      out << "]";
    }
    out << "\n";
  }
  return out.str();
}

namespace {

po::options_description describe(const ConfigSchema& schema) {
  po::options_description desc;
  for (const auto& k : schema.keys()) desc.add_options()(k.key.c_str(), po::value<std::string>(), k.help.c_str());
  return desc;
}

void check_choice(const ConfigSchema& schema, const std::string& key, const std::string& value,
                  const std::string& origin) {
  const auto* k = schema.find(key);
  if (k == nullptr || k->choices.empty()) return;
  for (const auto& c : k->choices)
    if (c == value) return;
  std::string allowed;
  for (const auto& c : k->choices) allowed += (allowed.empty() ? "" : ", ") + c;
  throw UserError(origin + ": config key '" + key + "' has value '" + value + "'; expected one of " + allowed);
}

void apply(Config& config, const ConfigSchema& schema, const po::parsed_options& parsed, const std::string& origin) {
  for (const auto& opt : parsed.options) {
    if (opt.unregistered || schema.find(opt.string_key) == nullptr)
      throw UserError(origin + ": unknown config key '" + opt.string_key + "' (see nlpzoo train --help)");
    if (opt.value.empty()) throw UserError(origin + ": config key '" + opt.string_key + "' needs a value");
    check_choice(schema, opt.string_key, opt.value.back(), origin);
    config.set(opt.string_key, opt.value.back());
  }
}

// The "key = value" lines of INI text ('#' starts a comment), with the checks Boost's INI reader
// does not make: it keeps the last of two values of a key in one file without a word and reports
// no line numbers, and it turns "[model]" into a prefix ("model.cell"), so that a sectioned file
// fails later with a missing 'task' or an unknown key. A key written twice is almost always an
// edit gone wrong, and nlpzoo's configs are flat, so both are refused here with their lines.
struct IniLine {
  std::string key, value;
  int64_t line_no;
};

std::vector<IniLine> scan_ini(const std::string& text, const std::string& origin) {
  const auto trim = [](std::string x) {
    x.erase(0, x.find_first_not_of(" \t"));
    x.erase(x.find_last_not_of(" \t\r") + 1);
    return x;
  };
  std::vector<IniLine> lines;
  std::map<std::string, int64_t> first_line;
  std::istringstream in(text);
  int64_t line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    line = trim(line.substr(0, line.find('#')));
    if (!line.empty() && line[0] == '[')
      throw UserError(origin + ":" + std::to_string(line_no) + ": '" + line +
                      "': nlpzoo configs have no sections; write every key at the top level (remove this line)");
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq));
    if (key.empty()) continue;
    const auto [it, fresh] = first_line.emplace(key, line_no);
    if (!fresh)
      throw UserError(origin + ":" + std::to_string(line_no) + ": config key '" + key + "' is given twice (also on line " +
                      std::to_string(it->second) + "); keep one");
    lines.push_back({key, trim(line.substr(eq + 1)), line_no});
  }
  return lines;
}

// The value of a top-level `key = value` line and its line number (0: none).
std::pair<std::string, int64_t> find_key(const std::vector<IniLine>& lines, const std::string& wanted) {
  for (const auto& l : lines)
    if (l.key == wanted) return {l.value, l.line_no};
  return {"", 0};
}

void apply_ini(Config& config, const ConfigSchema& schema, const std::string& text, const std::string& origin) {
  scan_ini(text, origin);
  std::istringstream in(text);
  try {
    apply(config, schema, po::parse_config_file(in, describe(schema), /*allow_unregistered=*/true), origin);
  } catch (const po::error& e) {
    throw UserError(origin + ": " + e.what());
  }
}

// A leading UTF-8 byte-order mark, which some editors write, is not part of the first key.
std::string without_bom(std::string text) {
  strip_utf8_bom(text);
  return text;
}

// The text with line `line_no` (1-based) left empty, so that the other lines keep their numbers.
std::string blank_line(const std::string& text, int64_t line_no) {
  std::istringstream in(text);
  std::string out;
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) out += (++n == line_no ? "" : line) + "\n";
  return out;
}

}  // namespace

std::vector<IniFile> preset_chain(const std::string& ini_path) {
  std::vector<IniFile> chain;  // the named file first, then its base, ...
  std::vector<std::string> seen;
  std::string path = ini_path;
  std::string named_by;  // "file:line" of the `base` line that named `path`
  while (true) {
    if (!fs::is_regular_file(path)) {
      if (named_by.empty()) require_file(path, "config");
      throw UserError(named_by + ": base config '" + path + "' does not exist (base = NAME reads NAME.ini beside " +
                      "this file; a path is relative to this file's folder)");
    }
    const std::string canonical = fs::weakly_canonical(path).string();
    for (const auto& earlier : seen)
      if (earlier == canonical) {
        std::string cycle;
        for (const auto& f : chain) cycle += f.path + " -> ";
        throw UserError(named_by + ": base configs form a cycle: " + cycle + path);
      }
    seen.push_back(canonical);
    std::string text = without_bom(read_file(path));
    const auto [base, line_no] = find_key(scan_ini(text, path), "base");
    if (line_no > 0) text = blank_line(text, line_no);
    chain.push_back({path, text});
    if (line_no == 0) break;
    if (base.empty()) throw UserError(path + ":" + std::to_string(line_no) + ": 'base' needs a config name or path");
    fs::path next = fs::path(path).parent_path() / base;
    if (!next.has_extension()) next += ".ini";
    named_by = path + ":" + std::to_string(line_no);
    path = next.lexically_normal().string();
  }
  std::reverse(chain.begin(), chain.end());  // the deepest base first: later files override
  return chain;
}

namespace {

Config defaults(const ConfigSchema& schema) {
  Config c;
  for (const auto& k : schema.keys()) c.set(k.key, k.default_value);
  return c;
}

}  // namespace

Config Config::resolve(const ConfigSchema& schema, const std::string& ini_path,
                       const std::vector<std::string>& overrides) {
  Config config = defaults(schema);
  const auto chain = ini_path.empty() ? std::vector<IniFile>{} : preset_chain(ini_path);
  for (size_t i = 0; i + 1 < chain.size(); ++i) apply_ini(config, schema, chain[i].text, chain[i].path);
  config.preset_values_ = config.values_;  // the defaults and the bases: what chosen() compares with
  if (!chain.empty()) apply_ini(config, schema, chain.back().text, chain.back().path);
  try {
    apply(config, schema, po::command_line_parser(overrides).options(describe(schema)).allow_unregistered().run(),
          "command line");
  } catch (const po::error& e) {
    throw UserError(std::string("command line: ") + e.what());
  }
  return config;
}

Config Config::from_ini_text(const ConfigSchema& schema, const std::string& text, const std::string& origin) {
  Config config = defaults(schema);
  config.preset_values_ = config.values_;
  apply_ini(config, schema, without_bom(text), origin);
  return config;
}

bool Config::chosen(const std::string& key) const {
  const auto preset = preset_values_.find(key);
  return preset == preset_values_.end() || preset->second != get(key);
}

std::string Config::to_ini() const {
  std::ostringstream out;
  out << "# Resolved nlpzoo config: defaults < config file < command line.\n";
  for (const auto& [k, v] : values_) out << k << " = " << v << "\n";
  return out.str();
}

const std::string& Config::get(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw std::logic_error("config key '" + key + "' was never declared");
  return it->second;
}

std::string read_task_name(const std::string& ini_path) {
  std::string task;
  for (const auto& file : preset_chain(ini_path)) {
    const auto [value, line_no] = find_key(scan_ini(file.text, file.path), "task");
    if (line_no > 0) task = value;
  }
  if (task.empty()) throw UserError(ini_path + ": missing the 'task' key (e.g. task = translation)");
  return task;
}

}  // namespace nlpzoo
