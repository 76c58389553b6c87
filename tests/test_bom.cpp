// A UTF-8 byte-order mark, which some editors write at the start of a file, is read as Python's
// utf-8-sig and pandas read it: not part of the first column name, key or word.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/config.h"
#include "core/io.h"
#include "datasets/labeled_text.h"
#include "tests/test_util.h"

using namespace nlpzoo;

namespace {
const std::string kBom = "\xEF\xBB\xBF";
}

TEST(ByteOrderMark, ATsvHeaderNamesItsFirstColumnWithoutIt) {
  const auto dir = test::fresh_temp_dir("bom_tsv");
  const auto path = (dir / "train.tsv").string();
  atomic_write_text(path, kBom + "sentence\tlabel\na fine film\t1\n");
  TsvLayout layout;
  layout.text = {-1, "sentence"};
  layout.label = {-1, "label"};
  const auto text = read_labeled_text(path, layout);
  ASSERT_EQ(text.sentences.size(), 1u);
  EXPECT_EQ(text.sentences[0], "a fine film");
  EXPECT_EQ(text.labels[0], "1");
  std::filesystem::remove_all(dir);
}

TEST(ByteOrderMark, LinesConfigsAndTheirTaskKeyReadWithoutIt) {
  const auto dir = test::fresh_temp_dir("bom_lines");
  const auto path = (dir / "c.ini").string();
  atomic_write_text(path, kBom + "task = translation\n");
  EXPECT_EQ(read_task_name(path), "translation");
  ConfigSchema schema;
  schema.add("task", "x", "the task");
  EXPECT_EQ(Config::resolve(schema, path, {}).get("task"), "translation");
  EXPECT_EQ(read_lines(path), (std::vector<std::string>{"task = translation"}));
  // Only a mark at the very start is one: later on, the same bytes are text.
  atomic_write_text(path, "a\n" + kBom + "b\n");
  EXPECT_EQ(read_lines(path), (std::vector<std::string>{"a", kBom + "b"}));
  std::filesystem::remove_all(dir);
}
