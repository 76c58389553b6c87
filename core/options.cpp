#include "core/options.h"

#include <charconv>
#include <cmath>

#include "core/io.h"

namespace nlpzoo {

namespace {

std::string bound_text(double x) { return format_number(x); }

// Python's and the configs' spellings of a boolean.
bool parse_bool(const std::string& key, const std::string& text) {
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  throw UserError("config key '" + key + "': expected true or false, got '" + text + "'");
}

int64_t parse_int(const std::string& key, const std::string& text) {
  try {
    size_t used = 0;
    const int64_t x = std::stoll(text, &used);
    if (used == text.size()) return x;
  } catch (const std::exception&) {
  }
  throw UserError("config key '" + key + "': expected an integer, got '" + text + "'");
}

double parse_double(const std::string& key, const std::string& text) {
  try {
    size_t used = 0;
    const double x = std::stod(text, &used);
    if (used == text.size()) return x;
  } catch (const std::exception&) {
  }
  throw UserError("config key '" + key + "': expected a number, got '" + text + "'");
}

void apply_check(const NumberCheck& check, const char* key, double value, const std::string& text) {
  if (!check.test) return;
  const std::string must = check.test(value);
  if (!must.empty()) throw UserError("config key '" + std::string(key) + "': " + must + ", got " + text);
}

}  // namespace

NumberCheck at_least(double minimum) {
  return {[minimum](double x) -> std::string {
    if (x >= minimum) return "";
    return minimum == 1 ? "must be positive" : "must be at least " + bound_text(minimum);
  }};
}

NumberCheck positive() {
  return {[](double x) -> std::string { return x > 0 && std::isfinite(x) ? "" : "must be positive"; }};
}

NumberCheck finite_at_least(double minimum) {
  // Written so that NaN fails too (every comparison with NaN is false).
  return {[minimum](double x) -> std::string {
    return std::isfinite(x) && x >= minimum ? "" : "must be a finite number >= " + bound_text(minimum);
  }};
}

NumberCheck rate() {
  return {[](double x) -> std::string { return x >= 0 && x < 1 ? "" : "must be in [0, 1)"; }};
}

NumberCheck in_range(double lo, double hi) {
  return {[lo, hi](double x) -> std::string {
    return x >= lo && x <= hi ? "" : "must be in [" + bound_text(lo) + ", " + bound_text(hi) + "]";
  }};
}

std::string format_number(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

// ---- SchemaBuilder ----

void SchemaBuilder::field(const char* key, int64_t& value, const char* help, NumberCheck) {
  schema_.add(key, std::to_string(value), help);
}
void SchemaBuilder::field(const char* key, double& value, const char* help, NumberCheck) {
  schema_.add(key, format_number(value), help);
}
void SchemaBuilder::field(const char* key, bool& value, const char* help) {
  schema_.add(key, value ? "true" : "false", help);
}
void SchemaBuilder::field(const char* key, std::string& value, const char* help, std::vector<std::string> choices) {
  schema_.add(key, value, help, std::move(choices));
}

// ---- ConfigReader ----

void ConfigReader::field(const char* key, int64_t& value, const char*, NumberCheck check) {
  const std::string& text = config_.get(key);
  value = parse_int(key, text);
  apply_check(check, key, static_cast<double>(value), text);
}
void ConfigReader::field(const char* key, double& value, const char*, NumberCheck check) {
  const std::string& text = config_.get(key);
  value = parse_double(key, text);
  apply_check(check, key, value, text);
}
void ConfigReader::field(const char* key, bool& value, const char*) { value = parse_bool(key, config_.get(key)); }
void ConfigReader::field(const char* key, std::string& value, const char*, std::vector<std::string> choices) {
  const std::string& text = config_.get(key);
  if (!choices.empty()) {
    std::string allowed;
    bool found = false;
    for (const auto& c : choices) {
      found = found || c == text;
      allowed += (allowed.empty() ? "" : ", ") + c;
    }
    if (!found) throw UserError("config key '" + std::string(key) + "' has value '" + text + "'; expected one of " + allowed);
  }
  value = text;
}

// ---- ConfigWriter ----

void ConfigWriter::field(const char* key, int64_t& value, const char*, NumberCheck) {
  if (config_.has(key)) {
    try {
      if (parse_int(key, config_.get(key)) == value) return;
    } catch (const UserError&) {
    }
  }
  config_.set(key, std::to_string(value));
}
void ConfigWriter::field(const char* key, double& value, const char*, NumberCheck) {
  if (config_.has(key)) {
    try {
      if (parse_double(key, config_.get(key)) == value) return;
    } catch (const UserError&) {
    }
  }
  config_.set(key, format_number(value));
}
void ConfigWriter::field(const char* key, bool& value, const char*) {
  if (config_.has(key)) {
    try {
      if (parse_bool(key, config_.get(key)) == value) return;
    } catch (const UserError&) {
    }
  }
  config_.set(key, value ? "true" : "false");
}
void ConfigWriter::field(const char* key, std::string& value, const char*, std::vector<std::string>) {
  config_.set(key, value);
}

}  // namespace nlpzoo
