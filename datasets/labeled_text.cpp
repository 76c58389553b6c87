#include "datasets/labeled_text.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <iostream>

#include "datasets/io.h"
#include "train/config.h"

namespace nlpzoo {

ConfigSchema tsv_layout_schema() {
  ConfigSchema s;
  s.add("tsv_columns", "2", "tab-separated fields on every line of the train/dev/test .tsv files (quoting off, as "
                            "GLUE); a line with another count is an error")
      .add("text_column", "0", "0-based field holding the sentence (SST-2: 0, CoLA: 3)")
      .add("label_column", "1", "0-based field holding the label (SST-2: 1, CoLA: 1)")
      .add("tsv_header", "auto", "whether line 1 is a header: auto = when its label field is 'label' (SST-2)",
           {"auto", "true", "false"});
  return s;
}

TsvLayout tsv_layout(const Config& c) {
  TsvLayout layout;
  layout.num_columns = config_int_at_least(c, "tsv_columns", 1);
  const auto column = [&](const char* key) {
    const int64_t field = config_int_at_least(c, key, 0);
    if (field >= layout.num_columns)
      throw UserError(std::string("config key '") + key + "': field " + c.get(key) + " does not exist in lines of " +
                      c.get("tsv_columns") + " fields (tsv_columns; fields count from 0)");
    return field;
  };
  layout.text_column = column("text_column");
  layout.label_column = column("label_column");
  if (layout.text_column == layout.label_column)
    throw UserError("config key 'label_column': the label and the text (text_column) are both field " +
                    c.get("text_column"));
  const auto& header = c.get("tsv_header");
  layout.header = header == "true" ? TsvHeader::kYes : header == "false" ? TsvHeader::kNo : TsvHeader::kAuto;
  return layout;
}

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

}  // namespace

LabeledText read_labeled_text(const std::string& path, const TsvLayout& layout) {
  LabeledText out;
  out.path = path;
  const auto lines = read_lines(path);
  int64_t trimmed_labels = 0, first_trimmed_line = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string where = path + ":" + std::to_string(i + 1);
    const auto fields = split_tabs(line);
    if (static_cast<int64_t>(fields.size()) != layout.num_columns)
      throw UserError(where + ": " + std::to_string(fields.size()) + " tab-separated field(s), but the layout has " +
                      std::to_string(layout.num_columns) + " (text in field " + std::to_string(layout.text_column) +
                      ", label in field " + std::to_string(layout.label_column) +
                      "); set the config keys tsv_columns, text_column and label_column to this file's layout");
    std::string sentence = fields[layout.text_column], label = fields[layout.label_column];
    if (i == 0 && (layout.header == TsvHeader::kYes || (layout.header == TsvHeader::kAuto && label == "label")))
      continue;
    if (sentence.find_first_not_of(" \t") == std::string::npos) throw UserError(where + ": empty sentence");
    if (trimmed(label) != label) {
      if (trimmed_labels++ == 0) first_trimmed_line = static_cast<int64_t>(i + 1);
      label = trimmed(label);
    }
    if (label.empty()) throw UserError(where + ": empty label (field " + std::to_string(layout.label_column) + ")");
    out.sentences.push_back(std::move(sentence));
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
