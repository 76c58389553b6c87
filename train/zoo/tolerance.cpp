#include "train/zoo/tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nlpzoo::zoo {

double spread_tolerance(const std::vector<double>& values, double reference) {
  double mean = 0, ss = 0;
  for (double v : values) mean += v / values.size();
  for (double v : values) ss += (v - mean) * (v - mean);
  const double tolerance = std::max({3 * std::sqrt(ss / (values.size() - 1)), 1e-3 * std::abs(reference), 1e-6});
  const double unit = std::pow(10.0, std::floor(std::log10(tolerance)) - 2);
  // Through the decimal text, so that the manifest says 0.00971 and not 0.009710000000000002.
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", std::ceil(tolerance / unit) * unit);
  return std::stod(text);
}

json check_row(const std::string& model, const std::string& metric, const json& expected, const json& measured,
               const std::string& verdict) {
  return {{"model", model}, {"metric", metric}, {"expected", expected}, {"measured", measured}, {"verdict", verdict}};
}

Comparison compare_metrics(const std::string& model, const json& expected, const json& measured,
                           const std::string& not_comparable, json& rows, bool require_comparison) {
  Comparison result;
  for (const auto& [metric, m] : measured.items()) {
    const json value = m.value("value", json());
    if (!expected.contains(metric)) {
      rows.push_back(check_row(model, metric, nullptr, value, "not in the manifest"));
      continue;
    }
    const auto& x = expected[metric];
    if (!not_comparable.empty()) {
      rows.push_back(check_row(model, metric, x, value, "not comparable: " + not_comparable));
      continue;
    }
    if (!x.contains("tolerance") || x["tolerance"].is_null() || !value.is_number()) {
      rows.push_back(check_row(model, metric, x, value, "no tolerance"));
      continue;
    }
    ++result.compared;
    const double diff = value.get<double>() - x["value"].get<double>();
    const std::string better = m.value("better", std::string());
    std::string verdict = "ok";
    if (std::abs(diff) > x["tolerance"].get<double>()) {
      const bool improved = (better == "higher" && diff > 0) || (better == "lower" && diff < 0);
      verdict = improved ? "better" : "REGRESSED";
      result.regressed = result.regressed || !improved;
    }
    rows.push_back(check_row(model, metric, x, value, verdict));
  }
  if (result.compared == 0 && require_comparison) {
    result.not_checked = true;
    rows.push_back(check_row(model, "", nullptr, nullptr,
                             "NOT CHECKED: " + (!not_comparable.empty()
                                                    ? "not comparable: " + not_comparable
                                                    : "no expected metric with a tolerance (measure them: nlpzoo zoo "
                                                      "check " + model + " --update --spread DIR DIR)")));
  }
  return result;
}

std::vector<std::string> update_expected(json& e, const std::string& model, const json& measured, int64_t step,
                                         const json& spread, const std::string& inputs_changed) {
  std::vector<std::string> notes;
  const auto expected = e.value("expected", json::object());
  for (const auto& [metric, m] : measured.items()) {
    if (!m.contains("better")) continue;  // counts (tokens, sentences) are not metrics
    json x = {{"value", m["value"]}, {"tolerance", nullptr}};
    if (spread.contains(metric)) {
      std::vector<double> values;
      for (const auto& v : spread[metric]["values"]) values.push_back(v.get<double>());
      x["tolerance"] = spread_tolerance(values, m["value"].get<double>());
      x["spread"] = spread[metric];
    } else if (expected.contains(metric) && expected[metric].contains("tolerance")) {
      // A spread over seeds of another budget, config or data says nothing about this copy
      // (retrained after the change): its tolerance goes, until --spread measures anew.
      // A tolerance set by hand (no spread) stays.
      const auto& old = expected[metric];
      const int64_t measured_at = old.contains("spread") ? old["spread"].value("budget_steps", step) : step;
      std::string stale;
      if (measured_at != step)
        stale = "came from seeds trained " + std::to_string(measured_at) + " steps, the copy " + std::to_string(step);
      else if (old.contains("spread") && !inputs_changed.empty())
        stale = "came from seeds of other inputs (" + inputs_changed + ")";
      if (stale.empty()) {
        x["tolerance"] = old["tolerance"];
        if (old.contains("spread")) x["spread"] = old["spread"];
      } else {
        notes.push_back(model + ": the tolerance of " + metric + " " + stale +
                        ": dropped; measure it anew with --update --spread");
      }
    }
    e["expected"][metric] = x;
  }
  return notes;
}

}  // namespace nlpzoo::zoo
