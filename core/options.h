#pragma once
// Typed options. Each component keeps its settings in a plain struct (defaults as member
// initialisers) and declares every field once, in a member `void bind(OptionBinder& b)`:
//
//   struct RnnOptions {
//     int64_t hidden_size = 256;  // recurrent state size
//     double dropout = 0.0;
//     void bind(OptionBinder& b) {
//       b.field("hidden_size", hidden_size, "recurrent state size", positive());
//       b.field("dropout", dropout, "dropout between layers", rate());
//     }
//   };
//
// That one declaration drives the schema (so `--help`, INI and flag parsing, and unknown-key
// errors), reading a resolved Config into the struct with the field's check (bind_options), and
// writing the struct back as the run's resolved config (write_options). Code reads struct
// fields; only this binder turns keys into values.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/enum_names.h"

namespace nlpzoo {

/// A check on a numeric field. `test` returns "" when the value passes and otherwise what the
/// value must be ("must be positive"); the error reads "config key 'k': must be positive, got v".
struct NumberCheck {
  std::function<std::string(double)> test;
};
/// >= minimum ("must be positive" for 1, "must be at least m" otherwise: the integer keys' words).
NumberCheck at_least(double minimum);
/// >= 1 for integers, > 0 for numbers: "must be positive".
NumberCheck positive();
/// A finite number >= minimum, NaN and inf refused (rates, norms, budgets).
NumberCheck finite_at_least(double minimum = 0.0);
/// In [0, 1): dropout, label smoothing, Adam's betas.
NumberCheck rate();
/// In [lo, hi], both finite.
NumberCheck in_range(double lo, double hi);

/// The shortest text that reads back as `value` ("0.1", "1e-08", "1").
std::string format_number(double value);

/// What an options struct's bind() talks to. The three binders below implement it; a struct
/// never needs to know which one it is given.
class OptionBinder {
 public:
  virtual ~OptionBinder() = default;
  virtual void field(const char* key, int64_t& value, const char* help, NumberCheck check = {}) = 0;
  virtual void field(const char* key, double& value, const char* help, NumberCheck check = {}) = 0;
  virtual void field(const char* key, bool& value, const char* help) = 0;
  /// `choices` empty: any text.
  virtual void field(const char* key, std::string& value, const char* help, std::vector<std::string> choices = {}) = 0;

  /// An enum field, named in configs by `names` (core/enum_names.h).
  template <typename E, size_t N>
  void field(const char* key, E& value, const char* help, const EnumNames<E, N>& names) {
    std::string text = enum_name(value, names);
    std::vector<std::string> choices;
    for (const auto& entry : names) choices.push_back(entry.second);
    field(key, text, help, std::move(choices));
    value = parse_enum(text, names, key);
  }

};

/// Declares the fields of a default-constructed `Options` into a schema.
class SchemaBuilder : public OptionBinder {
 public:
  explicit SchemaBuilder(ConfigSchema& schema) : schema_(schema) {}
  void field(const char* key, int64_t& value, const char* help, NumberCheck check = {}) override;
  void field(const char* key, double& value, const char* help, NumberCheck check = {}) override;
  void field(const char* key, bool& value, const char* help) override;
  void field(const char* key, std::string& value, const char* help, std::vector<std::string> choices = {}) override;
  using OptionBinder::field;

 private:
  ConfigSchema& schema_;
};

/// Reads each field from a resolved Config and checks it; errors are UserErrors naming the key.
class ConfigReader : public OptionBinder {
 public:
  explicit ConfigReader(const Config& config) : config_(config) {}
  void field(const char* key, int64_t& value, const char* help, NumberCheck check = {}) override;
  void field(const char* key, double& value, const char* help, NumberCheck check = {}) override;
  void field(const char* key, bool& value, const char* help) override;
  void field(const char* key, std::string& value, const char* help, std::vector<std::string> choices = {}) override;
  using OptionBinder::field;

 private:
  const Config& config_;
};

/// Writes each field into a Config. A key whose text there already reads as the field's value
/// keeps its text ("1.0" stays "1.0"), so that a resolved config is rewritten only where a
/// value changed (a derived vocabulary size, a schedule's length).
class ConfigWriter : public OptionBinder {
 public:
  explicit ConfigWriter(Config& config) : config_(config) {}
  void field(const char* key, int64_t& value, const char* help, NumberCheck check = {}) override;
  void field(const char* key, double& value, const char* help, NumberCheck check = {}) override;
  void field(const char* key, bool& value, const char* help) override;
  void field(const char* key, std::string& value, const char* help, std::vector<std::string> choices = {}) override;
  using OptionBinder::field;

 private:
  Config& config_;
};

/// The schema of `Options`' fields with their defaults.
template <typename Options>
ConfigSchema schema_of(Options defaults = Options{}) {
  ConfigSchema schema;
  SchemaBuilder builder(schema);
  defaults.bind(builder);
  return schema;
}

/// `Options` read from a resolved config, every field checked. Throws UserError naming the key.
template <typename Options>
Options bind_options(const Config& config, Options options = Options{}) {
  ConfigReader reader(config);
  options.bind(reader);
  return options;
}

/// `options`' fields written into `config` (the resolved config a run folder and its
/// checkpoints keep).
template <typename Options>
void write_options(Options options, Config& config) {
  ConfigWriter writer(config);
  options.bind(writer);
}

}  // namespace nlpzoo
