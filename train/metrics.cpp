#include "train/metrics.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace nlpzoo {

std::string Metric::format() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return name + " " + buf + (unit.empty() ? "" : " " + unit);
}

Metrics& Metrics::add(Metric metric) {
  if (metric.name.empty()) throw std::invalid_argument("Metrics::add: a metric needs a name");
  if (find(metric.name) != nullptr) throw std::invalid_argument("Metrics::add: metric '" + metric.name + "' is already there");
  metrics_.push_back(std::move(metric));
  return *this;
}

Metrics& Metrics::add(const Metrics& other) {
  for (const auto& m : other.metrics_) add(m);
  details += other.details;
  return *this;
}

const Metric* Metrics::find(const std::string& name) const {
  for (const auto& m : metrics_)
    if (m.name == name) return &m;
  return nullptr;
}

const Metric& Metrics::at(const std::string& name) const {
  if (const auto* m = find(name)) return *m;
  std::string known;
  for (const auto& m : metrics_) known += (known.empty() ? "" : ", ") + m.name;
  throw std::out_of_range("no metric '" + name + "' (there are: " + known + ")");
}

std::string Metrics::line() const {
  std::string out;
  for (const auto& m : metrics_) out += (out.empty() ? "" : " | ") + m.format();
  return out;
}

nlohmann::json Metrics::to_json() const {
  auto out = nlohmann::json::object();
  for (const auto& m : metrics_) {
    nlohmann::json j;
    if (!std::isfinite(m.value))
      j["value"] = nullptr;
    else if (m.digits == 0 && m.value == std::round(m.value))
      j["value"] = static_cast<int64_t>(m.value);  // a count reads 1234, not 1234.0
    else
      j["value"] = m.value;
    if (m.better != Better::kNeither) j["better"] = m.better == Better::kHigher ? "higher" : "lower";
    if (!m.unit.empty()) j["unit"] = m.unit;
    out[m.name] = std::move(j);
  }
  return out;
}

}  // namespace nlpzoo
