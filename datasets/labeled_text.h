#pragma once
// Sentences with labels, one per line of a tab-separated file, as GLUE ships its tasks:
//   SST-2:  sentence<TAB>label                       (a header line "sentence<TAB>label")
//   CoLA:   source<TAB>label<TAB>original<TAB>sentence  (no header)
// The layout is explicit (TsvLayout: how many fields, which holds the text and which the
// label, whether line 1 is a header) and every line must have it: a file of another layout
// fails on its first line instead of being read as the wrong columns. Fields are split on
// tabs with quoting off, as GLUE's own readers do.
#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

class Config;
class ConfigSchema;

enum class TsvHeader { kAuto, kYes, kNo };

struct TsvLayout {
  int64_t num_columns = 2;   // fields on every line
  int64_t text_column = 0;   // 0-based field index of the sentence
  int64_t label_column = 1;  // 0-based field index of the label
  // kAuto: line 1 is a header when its label field is literally "label" (SST-2's header).
  TsvHeader header = TsvHeader::kAuto;
};

/// The config keys of a TsvLayout (tsv_columns, text_column, label_column, tsv_header).
ConfigSchema tsv_layout_schema();
/// Reads those keys. Throws UserError naming the key for a column outside [0, tsv_columns)
/// or the text and label in the same column.
TsvLayout tsv_layout(const Config& config);

struct LabeledText {
  std::string path;                    // the file read (named in later errors)
  std::vector<std::string> sentences;  // raw text, as in the file ('\r' stripped)
  std::vector<std::string> labels;     // label names, trimmed of surrounding blanks (e.g. "0", "1")
  std::vector<int64_t> lines;          // 1-based line number of each example, for errors
};

/// Reads `path` laid out as `layout`. A label with blanks around it (" 1") is read trimmed,
/// with one warning per file on stderr naming the first such line. Throws UserError naming the
/// file when it is missing, unreadable or holds no example, and naming file:line for a line
/// whose number of fields is not layout.num_columns (naming the layout keys), an empty
/// (all-blank) sentence or an empty label.
LabeledText read_labeled_text(const std::string& path, const TsvLayout& layout = {});

/// Label names in a stable order: sorted numerically when every one is an integer
/// ("2" < "10"), otherwise as byte strings. Duplicates are removed.
std::vector<std::string> sorted_label_set(const std::vector<std::string>& labels);

/// "a, b, c" for at most `limit` labels, then "... (N in all)": error messages stay short
/// when a column of free text is taken for labels.
std::string label_list(const std::vector<std::string>& labels, size_t limit = 10);

}  // namespace nlpzoo
