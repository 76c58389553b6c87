#pragma once
// Sentences with labels, one per line of a tab-separated file, as GLUE ships SST-2:
//   sentence<TAB>label
// The sentence is the first field and the label the last (extra fields in between, as some
// GLUE tasks have, are ignored). A first line whose label field is literally `label` is a
// header and skipped.
#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

struct LabeledText {
  std::string path;                    // the file read (named in later errors)
  std::vector<std::string> sentences;  // raw text, as in the file ('\r' stripped)
  std::vector<std::string> labels;     // label names as in the file (e.g. "0", "1")
  std::vector<int64_t> lines;          // 1-based line number of each example, for errors
};

/// Reads `path`. Throws UserError naming the file when it is missing, unreadable or holds no
/// example, and naming file:line for a line without a tab, with an empty (all-blank)
/// sentence or with an empty label.
LabeledText read_labeled_text(const std::string& path);

/// Label names in a stable order: sorted numerically when every one is an integer
/// ("2" < "10"), otherwise as byte strings. Duplicates are removed.
std::vector<std::string> sorted_label_set(const std::vector<std::string>& labels);

}  // namespace nlpzoo
