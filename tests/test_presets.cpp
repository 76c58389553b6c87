// The configs that start from a preset (configs/presets/): each resolves to exactly the keys and
// values its flat file gave before, so runs and checkpoints made with it are the same.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "train/tasks/registry.h"

using namespace nlpzoo;

namespace {

// The GLUE fine-tuning configs as they were before they started from presets/bert-finetune.ini:
// their key lines, verbatim.
const std::vector<std::pair<std::string, std::string>> kFlatGlueConfigs = {
    {"sst2-bert.ini", R"(task = classification
data_dir = ../shared/data/sst2
arch = bert
init_from =
d_model = 256
num_heads = 4
num_layers = 4
ffn_dim = 1024
activation = gelu
pre_norm = false
positions = learned
type_vocab_size = 2
max_positions = 128
dropout = 0.1
attention_dropout = 0.1
normalize_words = auto
lowercase = true
split_punctuation = false
optimizer = adamw
adam_beta1 = 0.9
adam_beta2 = 0.999
adam_eps = 1e-6
weight_decay = 0.01
lr = 1e-4
lr_schedule = linear_decay
min_lr = 0
warmup_fraction = 0.1
clip_norm = 1.0
max_epochs = 3
max_tokens = 4096
max_sentences = 32
valid_interval = 500
log_interval = 100
patience = 4
)"},
    {"cola-bert.ini", R"(task = classification
data_dir = ../shared/data/glue/CoLA
tsv_columns = 4
text_column = 3
label_column = 1
tsv_header = false
best_metric = mcc
arch = bert
init_from =
d_model = 256
num_heads = 4
num_layers = 4
ffn_dim = 1024
activation = gelu
pre_norm = false
positions = learned
type_vocab_size = 2
max_positions = 128
dropout = 0.1
attention_dropout = 0.1
normalize_words = auto
lowercase = true
split_punctuation = false
optimizer = adamw
adam_beta1 = 0.9
adam_beta2 = 0.999
adam_eps = 1e-6
weight_decay = 0.01
lr = 1e-4
lr_schedule = linear_decay
min_lr = 0
warmup_fraction = 0.1
clip_norm = 1.0
max_epochs = 5
max_tokens = 4096
max_sentences = 32
valid_interval = 100
log_interval = 50
patience = 6
)"},
    {"rte-bert.ini", R"(task = classification
data_dir = ../shared/data/glue/RTE
tsv_columns = 4
text_column = sentence1
text_b_column = sentence2
label_column = label
tsv_header = true
arch = bert
init_from =
d_model = 256
num_heads = 4
num_layers = 4
ffn_dim = 1024
activation = gelu
pre_norm = false
positions = learned
type_vocab_size = 2
max_positions = 128
dropout = 0.1
attention_dropout = 0.1
normalize_words = auto
lowercase = true
split_punctuation = false
optimizer = adamw
adam_beta1 = 0.9
adam_beta2 = 0.999
adam_eps = 1e-6
weight_decay = 0.01
lr = 1e-4
lr_schedule = linear_decay
min_lr = 0
warmup_fraction = 0.1
clip_norm = 1.0
max_epochs = 5
max_tokens = 4096
max_sentences = 32
valid_interval = 40
log_interval = 20
patience = 6
)"},
    {"stsb-bert.ini", R"(task = classification
data_dir = ../shared/data/glue/STSB
objective = regression
tsv_columns = 10
text_column = sentence1
text_b_column = sentence2
label_column = score
tsv_header = true
best_metric = pearson
arch = bert
init_from =
d_model = 256
num_heads = 4
num_layers = 4
ffn_dim = 1024
activation = gelu
pre_norm = false
positions = learned
type_vocab_size = 2
max_positions = 128
dropout = 0.1
attention_dropout = 0.1
normalize_words = auto
lowercase = true
split_punctuation = false
optimizer = adamw
adam_beta1 = 0.9
adam_beta2 = 0.999
adam_eps = 1e-6
weight_decay = 0.01
lr = 1e-4
lr_schedule = linear_decay
min_lr = 0
warmup_fraction = 0.1
clip_norm = 1.0
max_epochs = 5
max_tokens = 4096
max_sentences = 32
valid_interval = 60
log_interval = 20
patience = 6
)"},
};

}  // namespace

TEST(Presets, GlueConfigsResolveAsTheirFlatFilesDid) {
  const std::string configs = std::string(NLPZOO_SOURCE_DIR) + "/configs/";
  for (const auto& [name, flat_text] : kFlatGlueConfigs) {
    SCOPED_TRACE(name);
    const std::string path = configs + name;
    const auto chain = preset_chain(path);
    ASSERT_EQ(chain.size(), 2u) << "expected " << name << " to start from presets/bert-finetune.ini";
    EXPECT_EQ(chain.front().path, configs + "presets/bert-finetune.ini");
    const std::string task = read_task_name(path);
    EXPECT_EQ(task, "classification");
    const auto schema = task_schema(task);
    const Config flat = Config::from_ini_text(schema, flat_text, name + " (flat)");
    const Config preset = Config::resolve(schema, path, {});
    EXPECT_EQ(preset.values(), flat.values());
    for (const auto& [key, value] : flat.values())
      EXPECT_EQ(preset.get(key), value) << key;
  }
}

// A key is the user's choice when their config file or the command line gives it a value other
// than the schema's default and the presets': fine-tuning a pre-trained run replaces the
// preset's encoder sizes with the run's, and refuses to replace a chosen one.
TEST(Presets, ChosenKeysAreThoseTheNamedFileOrTheCommandLineChanged) {
  const std::string path = std::string(NLPZOO_SOURCE_DIR) + "/configs/sst2-bert.ini";
  const auto schema = task_schema("classification");
  const Config c = Config::resolve(schema, path, {"--num_heads", "8", "--d_model", "256"});
  EXPECT_FALSE(c.chosen("num_layers"));  // 4 from presets/bert-finetune.ini
  EXPECT_FALSE(c.chosen("d_model"));     // the preset's own value, given again
  EXPECT_FALSE(c.chosen("hidden_size")); // the schema's default
  EXPECT_TRUE(c.chosen("num_heads"));    // the command line's 8, not the preset's 4
  EXPECT_TRUE(c.chosen("max_epochs"));   // sst2-bert.ini's 3
}
