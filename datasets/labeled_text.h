#pragma once
// Sentences (or sentence pairs) with labels, one per line of a tab-separated file, as GLUE
// ships its tasks:
//   SST-2:  sentence<TAB>label                                  (header "sentence<TAB>label")
//   CoLA:   source<TAB>label<TAB>original<TAB>sentence          (no header, no final newline)
//   RTE:    index<TAB>sentence1<TAB>sentence2<TAB>label         (header)
//   STS-B:  index<TAB>genre<TAB>...<TAB>sentence1<TAB>sentence2<TAB>score  (header, 10 fields)
// The layout is explicit (TsvLayout: how many fields, which holds the text, the optional second
// text and the label, whether line 1 is a header) and every line must have it: a file of
// another layout fails on its first line instead of being read as the wrong columns. A column
// is named by its 0-based field index or, when the file has a header line, by the header's
// name for it (looked up in each file's line 1). Without a layout key the text is field 0 and
// the label field 1 of 2-field lines; lines of other widths must name their columns (no silent
// field 0). Fields are split on tabs with quoting off, as GLUE's own readers do.
#include <cstdint>
#include <string>
#include <vector>

namespace nlpzoo {

class Config;
class ConfigSchema;
class OptionBinder;

enum class TsvHeader { kAuto, kYes, kNo };

/// One field of every line: its 0-based index, or (name not empty) the field the file's header
/// line calls `name`.
struct TsvColumn {
  int64_t index = -1;
  std::string name;
  bool empty() const { return index < 0 && name.empty(); }
  /// "field 3" or "column 'sentence1'".
  std::string describe() const;
};

struct TsvLayout {
  int64_t num_columns = 2;     // fields on every line
  TsvColumn text{0, ""};       // the sentence (of a pair: the first)
  TsvColumn text_b{};          // the second sentence of a pair; empty: single sentences
  TsvColumn label{1, ""};      // the label (a class name, or a number for regression)
  // kAuto: line 1 is a header when a column is given by name, or when its label field is
  // literally "label" (SST-2's header).
  TsvHeader header = TsvHeader::kAuto;
};

/// The config keys of a TsvLayout as written: a column is "auto", a 0-based field index or a
/// header name ("" for no second text).
struct TsvLayoutOptions {
  int64_t tsv_columns = 2;
  std::string text_column = "auto";
  std::string text_b_column;
  std::string label_column = "auto";
  TsvHeader tsv_header = TsvHeader::kAuto;
  void bind(OptionBinder& b);
};
ConfigSchema tsv_layout_schema();
/// The layout those keys describe. text_column and label_column "auto" are fields 0 and 1 of
/// 2-field lines. Throws UserError naming the key for an index outside [0, tsv_columns), "auto"
/// with tsv_columns other than 2, a name with tsv_header = false, or two roles in the same column.
TsvLayout tsv_layout(const TsvLayoutOptions& options);
/// tsv_layout of the keys read from a resolved config.
TsvLayout tsv_layout(const Config& config);

struct LabeledText {
  std::string path;                    // the file read (named in later errors)
  std::vector<std::string> sentences;  // raw text, as in the file ('\r' stripped)
  std::vector<std::string> sentences_b;  // the pairs' second sentences (empty without text_b)
  std::vector<std::string> labels;     // label names, trimmed of surrounding blanks (e.g. "0", "1")
  std::vector<int64_t> lines;          // 1-based line number of each example, for errors
};

/// Reads `path` laid out as `layout`. A label with blanks around it (" 1") is read trimmed,
/// with one warning per file on stderr naming the first such line. Throws UserError naming the
/// file when it is missing, unreadable or holds no example, and naming file:line for a line
/// whose number of fields is not layout.num_columns (naming the layout keys), a column name
/// that line 1 does not have (naming the key and the header's names), an empty (all-blank)
/// sentence or an empty label.
LabeledText read_labeled_text(const std::string& path, const TsvLayout& layout = {});

/// Label names in a stable order: sorted numerically when every one is an integer
/// ("2" < "10"), otherwise as byte strings. Duplicates are removed.
std::vector<std::string> sorted_label_set(const std::vector<std::string>& labels);

/// "a, b, c" for at most `limit` labels, then "... (N in all)": error messages stay short
/// when a column of free text is taken for labels.
std::string label_list(const std::vector<std::string>& labels, size_t limit = 10);

}  // namespace nlpzoo
