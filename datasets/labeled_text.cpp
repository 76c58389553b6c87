#include "datasets/labeled_text.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <iostream>

#include "core/io.h"
#include "core/config.h"
#include "core/options.h"

namespace nlpzoo {

namespace {
constexpr EnumNames<TsvHeader, 3> kTsvHeaderNames{
    {{TsvHeader::kAuto, "auto"}, {TsvHeader::kYes, "true"}, {TsvHeader::kNo, "false"}}};
}  // namespace

void TsvLayoutOptions::bind(OptionBinder& b) {
  b.field("tsv_columns", tsv_columns,
          "tab-separated fields on every line of the train/dev/test .tsv files (quoting off, as GLUE); a line with "
          "another count is an error",
          at_least(1));
  b.field("text_column", text_column,
          "the sentence's field: a 0-based index, or the header line's name for it (auto = field 0 of 2-field lines; "
          "SST-2: auto, CoLA: 3, RTE and STS-B: sentence1)");
  b.field("text_b_column", text_b_column,
          "a pair task's second sentence, as text_column (RTE, STS-B: sentence2); the pair is one input, A <eos> B "
          "(arch = bert: [CLS] A [SEP] B [SEP]), the longer side cut first to fit max_positions (\"\" = single "
          "sentences)");
  b.field("label_column", label_column,
          "the label's field, as text_column (auto = field 1 of 2-field lines; CoLA: 1, RTE: label, STS-B: score)");
  b.field("tsv_header", tsv_header,
          "whether line 1 is a header: auto = when a column is named, or when its label field is 'label' (SST-2)",
          kTsvHeaderNames);
}

ConfigSchema tsv_layout_schema() { return schema_of<TsvLayoutOptions>(); }

std::string TsvColumn::describe() const {
  return name.empty() ? "field " + std::to_string(index) : "column '" + name + "'";
}

TsvLayout tsv_layout(const TsvLayoutOptions& o) {
  TsvLayout layout;
  layout.num_columns = o.tsv_columns;
  layout.header = o.tsv_header;
  const std::string columns = std::to_string(o.tsv_columns);
  const auto column = [&](const char* key, const std::string& value, int64_t two_field_default) {
    TsvColumn out;
    if (value.empty()) return out;
    if (value == "auto") {
      if (two_field_default < 0 || layout.num_columns != 2)
        throw UserError(std::string("config key '") + key + "': auto means field " +
                        std::to_string(two_field_default) + " of 2-field lines, but lines have " + columns +
                        " fields (tsv_columns): name the column (a 0-based field index, or the header line's name for "
                        "it)");
      out.index = two_field_default;
      return out;
    }
    if (value.find_first_not_of("0123456789") == std::string::npos) {
      try {
        out.index = std::stoll(value);
      } catch (const std::exception&) {
        throw UserError(std::string("config key '") + key + "': expected an integer, got '" + value + "'");
      }
      if (out.index >= layout.num_columns)
        throw UserError(std::string("config key '") + key + "': field " + value + " does not exist in lines of " +
                        columns + " fields (tsv_columns; fields count from 0)");
      return out;
    }
    if (layout.header == TsvHeader::kNo)
      throw UserError(std::string("config key '") + key + "': '" + value +
                      "' names a header column, but tsv_header is false; give a 0-based field index");
    out.name = value;
    return out;
  };
  layout.text = column("text_column", o.text_column, 0);
  layout.text_b = column("text_b_column", o.text_b_column, -1);
  layout.label = column("label_column", o.label_column, 1);
  if (layout.text.empty()) throw UserError("config key 'text_column': empty; name the sentence's field");
  if (layout.label.empty()) throw UserError("config key 'label_column': empty; name the label's field");
  const auto same = [](const TsvColumn& a, const TsvColumn& b) {
    return !a.empty() && !b.empty() && a.index == b.index && a.name == b.name;
  };
  if (same(layout.text, layout.label))
    throw UserError("config key 'label_column': the label and the text (text_column) are both " +
                    layout.text.describe());
  if (same(layout.text, layout.text_b) || same(layout.label, layout.text_b))
    throw UserError("config key 'text_b_column': " + layout.text_b.describe() +
                    " is already the text or the label (text_column, label_column)");
  return layout;
}

TsvLayout tsv_layout(const Config& config) { return tsv_layout(bind_options<TsvLayoutOptions>(config)); }

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  for (size_t start = 0;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t\v\f");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\v\f") - first + 1);
}

// "text in field 3, label in column 'score'" for the errors that name the layout.
std::string layout_keys(const TsvLayout& layout) {
  std::string out = "text_column " + layout.text.describe();
  if (!layout.text_b.empty()) out += ", text_b_column " + layout.text_b.describe();
  return out + ", label_column " + layout.label.describe();
}

// The field index of `column` in `header` (line 1's fields).
int64_t resolve_column(const TsvColumn& column, const char* key, const std::vector<std::string>& header,
                       const std::string& where) {
  if (column.empty() || column.name.empty()) return column.index;
  for (size_t i = 0; i < header.size(); ++i)
    if (trimmed(header[i]) == column.name) return static_cast<int64_t>(i);
  std::string names;
  for (const auto& h : header) names += (names.empty() ? "" : ", ") + h;
  throw UserError(where + ": the header line has no column '" + column.name + "' (config key " + key +
                  "); its columns: " + names);
}

}  // namespace

LabeledText read_labeled_text(const std::string& path, const TsvLayout& layout) {
  LabeledText out;
  out.path = path;
  const auto lines = read_lines(path);
  int64_t trimmed_labels = 0, first_trimmed_line = 0;
  const bool named = !layout.text.name.empty() || !layout.text_b.name.empty() || !layout.label.name.empty();
  int64_t text = layout.text.index, text_b = layout.text_b.index, label_field = layout.label.index;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(i + 1);
    const auto fields = split_tabs(line);
    if (static_cast<int64_t>(fields.size()) != layout.num_columns)
      throw UserError(where + ": " + std::to_string(fields.size()) + " tab-separated field(s), but the layout has " +
                      std::to_string(layout.num_columns) + " (" + layout_keys(layout) +
                      "); set the config keys tsv_columns, text_column" + (layout.text_b.empty() ? "" : ", text_b_column") +
                      " and label_column to this file's layout");
    if (i == 0 && named) {  // a named column makes line 1 the header
      text = resolve_column(layout.text, "text_column", fields, where);
      text_b = resolve_column(layout.text_b, "text_b_column", fields, where);
      label_field = resolve_column(layout.label, "label_column", fields, where);
      if (text == label_field || (text_b >= 0 && (text_b == text || text_b == label_field)))
        throw UserError(where + ": " + layout_keys(layout) + " name the same field twice");
      continue;
    }
    std::string sentence = fields[text], label = fields[label_field];
    if (i == 0 && (layout.header == TsvHeader::kYes || (layout.header == TsvHeader::kAuto && label == "label")))
      continue;
    if (sentence.find_first_not_of(" \t") == std::string::npos)
      throw UserError(where + ": empty sentence (text_column, " + layout.text.describe() + ")");
    if (text_b >= 0 && fields[text_b].find_first_not_of(" \t") == std::string::npos)
      throw UserError(where + ": empty second sentence (text_b_column, " + layout.text_b.describe() + ")");
    if (trimmed(label) != label) {
      if (trimmed_labels++ == 0) first_trimmed_line = static_cast<int64_t>(i + 1);
      label = trimmed(label);
    }
    if (label.empty()) throw UserError(where + ": empty label (field " + std::to_string(label_field) + ")");
    out.sentences.push_back(std::move(sentence));
    if (text_b >= 0) out.sentences_b.push_back(fields[text_b]);
    out.labels.push_back(std::move(label));
    out.lines.push_back(static_cast<int64_t>(i + 1));
  }
  if (trimmed_labels > 0)
    std::cerr << "warning: " << path << ":" << first_trimmed_line << ": label with blanks around it, read trimmed ("
              << trimmed_labels << " such label(s) in this file)" << std::endl;
  if (out.sentences.empty()) throw UserError(path + ": no labeled sentence (only a header, or an empty file)");
  return out;
}

std::vector<std::string> sorted_label_set(const std::vector<std::string>& labels) {
  const std::set<std::string> unique(labels.begin(), labels.end());
  std::vector<std::string> out(unique.begin(), unique.end());
  std::vector<long long> values;
  for (const auto& l : out) {
    long long v = 0;
    const auto [ptr, ec] = std::from_chars(l.data(), l.data() + l.size(), v);
    if (ec != std::errc() || ptr != l.data() + l.size()) return out;  // not all integers: byte order
    values.push_back(v);
  }
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<std::string> numeric;
  for (size_t i : order) numeric.push_back(out[i]);
  return numeric;
}

std::string label_list(const std::vector<std::string>& labels, size_t limit) {
  std::string out;
  for (size_t i = 0; i < labels.size() && i < limit; ++i) out += (i ? ", " : "") + labels[i];
  if (labels.size() > limit) out += ", ... (" + std::to_string(labels.size()) + " in all)";
  return out;
}

}  // namespace nlpzoo
