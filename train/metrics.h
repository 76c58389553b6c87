#pragma once
// Named numbers a task reports for a split (Task::evaluate): each says which way is better and
// how it is printed, so `nlpzoo evaluate` prints any task's scores, as one human line or as one
// JSON object (--json, read by the regression suite and the benchmarks), without knowing the task.
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace nlpzoo {

/// Which way a metric improves: a score (BLEU, accuracy) up, a loss or perplexity down; a count
/// (tokens scored, sentences) neither.
enum class Better { kHigher, kLower, kNeither };

struct Metric {
  std::string name;  // a JSON key: lowercase and underscores, e.g. "bleu_beam4", "macro_f1"
  double value = 0;
  Better better = Better::kNeither;
  int digits = 4;    // decimals in the human line; 0 prints an integer (counts)
  std::string unit;  // printed after the value in the human line ("nats/token"); "" for none

  /// "name value[ unit]", e.g. "loss 2.3026 nats/token", "perplexity 10.00", "target_tokens 1234".
  std::string format() const;
};

class Metrics {
 public:
  /// Appends `metric` (kept in the order added). Throws std::invalid_argument if a metric of
  /// that name is already there or the name is empty.
  Metrics& add(Metric metric);
  /// Appends every metric of `other` (same errors), then its details after this one's.
  Metrics& add(const Metrics& other);

  const std::vector<Metric>& all() const { return metrics_; }
  /// The metric called `name`, or nullptr.
  const Metric* find(const std::string& name) const;
  /// The metric called `name`. Throws std::out_of_range naming it and the metrics there are.
  const Metric& at(const std::string& name) const;

  /// The human line: every metric's format() joined by " | ".
  std::string line() const;
  /// {"<name>": {"value": v, "better": "higher"|"lower" (absent for counts), "unit": u (absent
  /// when "")}, ...}. A non-finite value is written as null (JSON has no NaN or infinity), a whole value
  /// with digits 0 as an integer.
  nlohmann::json to_json() const;

  /// Free text the human report prints after the line (a confusion matrix, BLEU's signature,
  /// where decoded outputs were written); not part of the JSON.
  std::string details;

 private:
  std::vector<Metric> metrics_;
};

}  // namespace nlpzoo
