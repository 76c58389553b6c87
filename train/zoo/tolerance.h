#pragma once
// The zoo's numbers: a metric's tolerance from its spread over seeds, the verdict of a measured
// metric against the manifest's expected one, and the rules by which `zoo check --update`
// rewrites an entry's expected metrics.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo::zoo {

using nlohmann::json;

/// A metric's tolerance from its values over seeds of one budget: three sample standard
/// deviations (about 99.7% of the seed-to-seed spread, if it is normal), and at least 0.1% of
/// the reference value (and 1e-6), so that a metric which came out the same for every seed
/// still allows the last-digit differences of another BLAS or thread count. Rounded up to 3
/// significant digits. `values` holds at least 2 values.
double spread_tolerance(const std::vector<double>& values, double reference);

/// What compare_metrics found for one model.
struct Comparison {
  bool regressed = false;    // a metric worse than expected by more than its tolerance
  int compared = 0;          // metrics compared with an expected value and tolerance (ok, better, REGRESSED)
  bool not_checked = false;  // none was, and comparison was required: a "NOT CHECKED" row says why
};

/// One row of `zoo check`: {"model", "metric", "expected", "measured", "verdict"}.
json check_row(const std::string& model, const std::string& metric, const json& expected, const json& measured,
               const std::string& verdict);

/// Appends to `rows` a verdict per measured metric ({metric: {"value", "better"}}) of `model`
/// against `expected` (the entry's {metric: {"value", "tolerance"}}): "not in the manifest",
/// "not comparable: <not_comparable>" when that is not empty, "no tolerance", else "ok" within
/// the tolerance, "better" when better by more (per "better": higher|lower), "REGRESSED" when
/// worse by more. When no metric was compared and `require_comparison`, a row
/// {metric "", verdict "NOT CHECKED: <why>"} follows: a check that compared nothing passed nothing.
Comparison compare_metrics(const std::string& model, const json& expected, const json& measured,
                           const std::string& not_comparable, json& rows, bool require_comparison = true);

/// Rewrites entry["expected"] from a copy's `measured` metrics at `step` (update rules): each
/// metric with a "better" gets the measured value; its tolerance is
///  * spread_tolerance of `spread`[metric]["values"] when `spread` has it (and the spread is kept
///    beside it: `spread` is {metric: {"seeds", "values", "budget_steps"}}),
///  * else the old one, unless that came from a spread over seeds of another budget_steps, or
///    (`inputs_changed` not empty: the config or data changed) of other inputs: then null, and
///    a note saying so is returned. A tolerance set by hand (without a spread) stays.
/// Counts (a metric without "better") are not written. Returns the notes, one per dropped tolerance.
std::vector<std::string> update_expected(json& entry, const std::string& model, const json& measured, int64_t step,
                                         const json& spread, const std::string& inputs_changed);

}  // namespace nlpzoo::zoo
