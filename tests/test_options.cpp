// core/options.h: one declaration per field drives the schema, reading with checks and writing
// back; core/config.h's presets (`base = ...`).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/io.h"
#include "core/options.h"
#include "tests/test_util.h"

using namespace nlpzoo;
using test::user_error_of;

namespace {

enum class Cell { kGru, kLstm };
constexpr EnumNames<Cell, 2> kCellNames{{{Cell::kGru, "gru"}, {Cell::kLstm, "lstm"}}};

struct ToyOptions {
  int64_t hidden_size = 256;
  double dropout = 0.1;
  double lr = 1e-3;
  bool shuffle = true;
  std::string optimizer = "adam";
  Cell cell = Cell::kLstm;
  void bind(OptionBinder& b) {
    b.field("hidden_size", hidden_size, "recurrent state size", positive());
    b.field("dropout", dropout, "dropout", rate());
    b.field("lr", lr, "learning rate", finite_at_least(0));
    b.field("shuffle", shuffle, "shuffle the batches");
    b.field("optimizer", optimizer, "optimizer", {"adam", "sgd"});
    b.field("cell", cell, "recurrent cell", kCellNames);
  }
};

Config resolved(const std::vector<std::string>& flags, const std::string& ini = "") {
  return Config::resolve(schema_of<ToyOptions>(), ini, flags);
}

}  // namespace

TEST(Options, TheSchemaHoldsEachFieldWithItsDefaultHelpAndChoices) {
  const auto schema = schema_of<ToyOptions>();
  ASSERT_EQ(schema.keys().size(), 6u);
  EXPECT_EQ(schema.find("hidden_size")->default_value, "256");
  EXPECT_EQ(schema.find("dropout")->default_value, "0.1");
  EXPECT_EQ(schema.find("lr")->default_value, "0.001");
  EXPECT_EQ(schema.find("shuffle")->default_value, "true");
  EXPECT_EQ(schema.find("cell")->default_value, "lstm");
  EXPECT_EQ(schema.find("cell")->choices, (std::vector<std::string>{"gru", "lstm"}));
  EXPECT_EQ(schema.find("hidden_size")->help, "recurrent state size");
  // Defaults of another instance: a composing struct sets its own.
  ToyOptions two_layers;
  two_layers.hidden_size = 64;
  EXPECT_EQ(schema_of(two_layers).find("hidden_size")->default_value, "64");
}

TEST(Options, ReadingParsesEveryTypeOnce) {
  const auto o = bind_options<ToyOptions>(resolved(
      {"--hidden_size", "512", "--dropout", "0.25", "--lr", "5e-4", "--shuffle", "no", "--optimizer", "sgd", "--cell", "gru"}));
  EXPECT_EQ(o.hidden_size, 512);
  EXPECT_DOUBLE_EQ(o.dropout, 0.25);
  EXPECT_DOUBLE_EQ(o.lr, 5e-4);
  EXPECT_FALSE(o.shuffle);
  EXPECT_EQ(o.optimizer, "sgd");
  EXPECT_EQ(o.cell, Cell::kGru);
  const auto d = bind_options<ToyOptions>(resolved({}));
  EXPECT_EQ(d.hidden_size, 256);
  EXPECT_EQ(d.cell, Cell::kLstm);
}

TEST(Options, EachCheckNamesTheKeyAndTheValue) {
  const auto error = [](const std::vector<std::string>& flags) {
    return user_error_of([&] { bind_options<ToyOptions>(resolved(flags)); });
  };
  EXPECT_EQ(error({"--hidden_size", "0"}), "config key 'hidden_size': must be positive, got 0");
  EXPECT_EQ(error({"--hidden_size", "2.5"}), "config key 'hidden_size': expected an integer, got '2.5'");
  EXPECT_EQ(error({"--dropout", "1"}), "config key 'dropout': must be in [0, 1), got 1");
  EXPECT_EQ(error({"--lr", "nan"}), "config key 'lr': must be a finite number >= 0, got nan");
  EXPECT_EQ(error({"--lr", "-1"}), "config key 'lr': must be a finite number >= 0, got -1");
  EXPECT_EQ(error({"--shuffle", "maybe"}), "config key 'shuffle': expected true or false, got 'maybe'");
  // Choices are checked when the text is parsed, naming the origin.
  EXPECT_NE(user_error_of([&] { resolved({"--optimizer", "lamb"}); })
                .find("command line: config key 'optimizer' has value 'lamb'; expected one of adam, sgd"),
            std::string::npos);
}

TEST(Options, WritingKeepsTheTextOfUnchangedValuesAndRewritesChangedOnes) {
  Config config = resolved({"--lr", "1.0e-3", "--hidden_size", "256"});
  auto o = bind_options<ToyOptions>(config);
  o.hidden_size = 300;
  o.cell = Cell::kGru;
  write_options(o, config);
  EXPECT_EQ(config.get("lr"), "1.0e-3");  // the same value: its text kept
  EXPECT_EQ(config.get("hidden_size"), "300");
  EXPECT_EQ(config.get("cell"), "gru");
  // What is written reads back as the same struct.
  const auto back = bind_options<ToyOptions>(config);
  EXPECT_EQ(back.hidden_size, 300);
  EXPECT_EQ(back.cell, Cell::kGru);
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(1e-8), "1e-08");
}

TEST(Presets, ABaseIsReadFirstAndTheFileOverridesIt) {
  const auto dir = test::fresh_temp_dir("presets");
  std::filesystem::create_directories(dir / "presets");
  atomic_write_text((dir / "presets" / "big.ini").string(), "hidden_size = 1024\ndropout = 0.3\nlr = 0.01\n");
  atomic_write_text((dir / "rnn.ini").string(), "base = presets/big.ini\ndropout = 0.2\n");
  atomic_write_text((dir / "mine.ini").string(), "\xEF\xBB\xBF# a BOM, then a base by name\nbase = rnn\nlr = 0.5\n");
  const auto o = bind_options<ToyOptions>(resolved({"--hidden_size", "8"}, (dir / "mine.ini").string()));
  EXPECT_EQ(o.hidden_size, 8);       // the command line last
  EXPECT_DOUBLE_EQ(o.dropout, 0.2);  // rnn.ini over its base
  EXPECT_DOUBLE_EQ(o.lr, 0.5);       // mine.ini over both
  const auto chain = preset_chain((dir / "mine.ini").string());
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain.front().path, (dir / "presets" / "big.ini").string());
  std::filesystem::remove_all(dir);
}

TEST(Presets, AMissingBaseACycleAndAKeyTwiceAreErrorsNamingTheFile) {
  const auto dir = test::fresh_temp_dir("presets_bad");
  const auto a = (dir / "a.ini").string(), b = (dir / "b.ini").string();
  atomic_write_text(a, "lr = 0.1\nbase = nowhere\n");
  auto e = user_error_of([&] { resolved({}, a); });
  EXPECT_NE(e.find(a + ":2: base config '" + (dir / "nowhere.ini").string() + "' does not exist"), std::string::npos) << e;
  atomic_write_text(a, "base = b\n");
  atomic_write_text(b, "base = a.ini\n");
  e = user_error_of([&] { resolved({}, a); });
  EXPECT_NE(e.find("base configs form a cycle: " + a + " -> " + b + " -> "), std::string::npos) << e;
  atomic_write_text(a, "base = b\nlr = 1\nlr = 2\n");
  atomic_write_text(b, "lr = 0.1\n");
  e = user_error_of([&] { resolved({}, a); });
  EXPECT_NE(e.find(a + ":3: config key 'lr' is given twice"), std::string::npos) << e;
  // An override of a base's key is no duplicate; task names come from the base when the file has none.
  atomic_write_text(a, "base = b\nlr = 1\n");
  atomic_write_text(b, "task = translation\nlr = 0.1\n");
  EXPECT_EQ(read_task_name(a), "translation");
  std::filesystem::remove_all(dir);
}
