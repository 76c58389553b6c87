#include "train/tasks/gpt_task.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/io.h"
#include "datasets/masked_lm.h"  // mix_seed
#include "datasets/special_ids.h"
#include "infer/export_gpt.h"
#include "train/evaluation.h"
#include "train/losses.h"
#include "train/tasks/masked_lm_data.h"  // parameters_without_weight_decay
#include "train/tasks/run_tokenizer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

void GptTaskOptions::bind(OptionBinder& b) {
  b.field("text_file", text_file,
          "a text file in data_dir, cut into train (the first 1 - valid_fraction of its characters) and valid; empty: "
          "read <data_dir>/{train,valid,test}.<lang>");
  b.field("valid_fraction", valid_fraction, "share of text_file's characters, at its end, that is the valid split",
          NumberCheck{[](double x) -> std::string { return x > 0 && x < 1 ? "" : "must be in (0, 1)"; }});
  b.field("lang", lang, "language of the corpus: names the tokenizer (spm.<lang>.model) and, without text_file, "
                        "the split files <data_dir>/<split>.<lang>");
  b.field("vocab_size", vocab_size, "SentencePiece vocabulary size, at most (the model takes the size the tokenizer "
                                    "reaches) = output classes",
          at_least(8));
  b.field("d_model", d_model, "width of embeddings, attention and the residual stream (nanoGPT's n_embd)", positive());
  b.field("num_heads", num_heads, "attention heads per block (d_k = d_model / num_heads)", positive());
  b.field("num_layers", num_layers, "Transformer blocks", positive());
  b.field("ffn_dim", ffn_dim, "inner size of the feed-forward layer; 0 = 4 d_model (GPT-2)", at_least(0));
  b.field("block_size", block_size, "context length: tokens per training block and the most the model attends to",
          positive());
  b.field("dropout", dropout, "dropout on embeddings, attention weights and each sub-layer's output", rate());
  b.field("batch_size", batch_size, "blocks per batch (tokens per batch = batch_size * block_size)", positive());
  b.field("sample_break", sample_break,
          "where training blocks start: random (any offset, nanoGPT) or none (consecutive blocks in shuffled order, "
          "fairseq's --sample-break-mode none)",
          kSampleBreakNames);
  if (d_model % num_heads != 0)
    throw UserError("config key 'num_heads': must divide d_model (" + std::to_string(d_model) + "), got " +
                    std::to_string(num_heads));
}

GptOptions GptTaskOptions::model() const {
  return GptOptions(vocab_size)
      .d_model(d_model)
      .num_heads(num_heads)
      .num_layers(num_layers)
      .ffn_dim(ffn_dim > 0 ? ffn_dim : 4 * d_model)
      .block_size(block_size)
      .dropout(dropout);
}

ConfigSchema gpt_schema() {
  ConfigSchema s = schema_of<GptTaskOptions>();
  s.merge(tokenizer_schema());
  return s;
}

namespace {

// A byte that starts a character: a UTF-8 lead byte, and not the "\r" of a "\r\n" line break.
bool starts_character(char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80 && c != '\r'; }

int64_t count_characters(const std::string& text) { return std::count_if(text.begin(), text.end(), starts_character); }

// Where text_file's valid split starts: the byte of character floor((1 - fraction) * characters).
size_t valid_start(const std::string& text, double fraction) {
  const auto cut = static_cast<int64_t>(std::floor(static_cast<double>(count_characters(text)) * (1 - fraction)));
  int64_t chars = 0;
  size_t i = 0;
  for (; i < text.size() && chars < cut; ++i) chars += starts_character(text[i]);
  while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
  return i;
}

torch::Generator batch_generator(uint64_t seed, int64_t epoch, int64_t index) {
  return at::detail::createCPUGenerator(mix_seed({seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(index)}));
}

}  // namespace

void GptTask::setup(Config& config, const TaskContext& context) {
  options_ = bind_options<GptTaskOptions>(config);
  seed_ = static_cast<uint64_t>(run_keys(config).seed);
  const bool split_files = has_test_split();
  if (!split_files && context.splits.count(Split::kTest))
    throw UserError("config key 'text_file': " + options_.text_file +
                    " is cut into train and valid only; there is no test split (use --split valid)");

  // The texts of the splits asked for, read before the tokenizer so a missing file is named first.
  std::map<Split, std::string> texts;
  std::string train_text;
  if (!split_files && !context.splits.empty()) {
    const std::string path = context.data_dir + "/" + options_.text_file;
    require_file(path, "the text (config key text_file)");
    const std::string whole = read_file(path);
    const size_t cut = valid_start(whole, options_.valid_fraction);
    train_text = whole.substr(0, cut);
    for (Split split : context.splits) texts[split] = split == Split::kTrain ? train_text : whole.substr(cut);
  } else {
    for (Split split : context.splits) {
      const std::string path = context.data_dir + "/" + to_string(split) + "." + options_.lang;
      require_file(path, "the " + to_string(split) + " split");
      texts[split] = read_file(path);
    }
  }

  if (!context.run_dir.empty()) fs::create_directories(context.run_dir);
  const std::string stem = "spm." + options_.lang;
  const std::string spm_input = context.run_dir + "/" + stem + ".train.txt";
  tokenizer_ = run_tokenizer(
      stem,
      [&]() -> std::vector<std::string> {
        if (split_files) return training_files(context, {options_.lang}, "training text for the tokenizer");
        if (train_text.empty())
          throw UserError("config key 'text_file': the tokenizer is trained on the train split, which was not read");
        atomic_write_text(spm_input, train_text);  // the train split alone, not the valid text after it
        return {spm_input};
      },
      restored_spm_, options_.vocab_size, config, context);
  std::error_code ignored;
  if (!split_files && !context.run_dir.empty()) fs::remove(spm_input, ignored);
  options_.vocab_size = tokenizer_->vocab_size();
  write_options(options_, config);
  model_ = Gpt(options_.model());

  for (auto& [split, text] : texts) {
    auto ids = encode_lines(*tokenizer_, text);
    const int64_t needed = split == Split::kTrain ? options_.block_size + 1 : 2;
    if (static_cast<int64_t>(ids.size()) < needed)
      throw UserError("the " + to_string(split) + " split has " + std::to_string(ids.size()) + " tokens; it needs " +
                      std::to_string(needed) + (split == Split::kTrain ? " (block_size + 1)" : "") +
                      (split_files ? " (" + context.data_dir + "/" + to_string(split) + "." + options_.lang + ")" : ""));
    streams_[split] = torch::tensor(ids, torch::kLong);
    characters_[split] = count_characters(text);
  }
}

const torch::Tensor& GptTask::stream(Split split) const { return loaded_split(streams_, split); }

int64_t GptTask::num_batches(Split split, int64_t /*epoch*/) {
  const int64_t N = stream(split).size(0), T = options_.block_size, B = options_.batch_size;
  if (split != Split::kTrain) return ((N - 1 + T - 1) / T + B - 1) / B;  // every block, the last one short
  if (options_.sample_break == SampleBreak::kNone) return ((N - 1) / T + B - 1) / B;
  return std::max<int64_t>(1, (N - 1) / (B * T));
}

Batch GptTask::make_batch(Split split, int64_t epoch, int64_t index) {
  const auto& s = stream(split);
  const int64_t N = s.size(0), T = options_.block_size, B = options_.batch_size;
  if (index < 0 || index >= num_batches(split, epoch))
    throw std::out_of_range("GPT batch " + std::to_string(index) + " of the " + to_string(split) +
                            " split does not exist");
  torch::Tensor starts;  // [b] int64, first input position of each block
  if (split != Split::kTrain) {
    const int64_t blocks = (N - 1 + T - 1) / T;
    starts = torch::arange(index * B, std::min(blocks, (index + 1) * B), torch::kLong) * T;
  } else if (options_.sample_break == SampleBreak::kNone) {
    const int64_t blocks = (N - 1) / T;
    auto order_generator = batch_generator(seed_, epoch, -1);
    const auto order = torch::randperm(blocks, order_generator, torch::kLong);
    starts = order.slice(0, index * B, std::min(blocks, (index + 1) * B)) * T;
  } else {
    auto generator = batch_generator(seed_, epoch, index);
    starts = torch::randint(N - T, {B}, generator, torch::kLong);
  }
  // Positions past the stream read as padding (only the last valid/test block has any).
  const auto positions = starts.unsqueeze(1) + torch::arange(T + 1, torch::kLong);  // [b, T+1]
  const auto tokens = s.index({positions.clamp_max(N - 1)}).masked_fill_(positions >= N, kPadId);
  Batch batch;
  batch.tensors = {{"input", tokens.slice(1, 0, T).contiguous()}, {"target", tokens.slice(1, 1).contiguous()}};
  batch.split = split;
  batch.index = index;
  batch.num_examples = starts.size(0);
  batch.num_tokens = batch.tensors["target"].ne(kPadId).sum().item<int64_t>();
  return batch;
}

LossOutput GptTask::loss(const Batch& batch) {
  const auto logits = model_->forward(batch.tensors.at("input"));  // [B, T, V]
  return {sequence_cross_entropy(logits, batch.tensors.at("target"), kPadId, /*label_smoothing=*/0.0),
          batch.num_tokens};
}

Task::TrainingProfile GptTask::training_profile() const {
  TrainingProfile p;
  p.d_model = options_.d_model;
  if (model_) p.no_weight_decay = parameters_without_weight_decay(*model_);  // biases, LayerNorm (nanoGPT)
  return p;
}

std::map<std::string, std::string> GptTask::artifacts() const { return {{"spm.model", tokenizer_->serialized()}}; }

void GptTask::restore_artifacts(const std::map<std::string, std::string>& blobs) {
  if (auto spm = blobs.find("spm.model"); spm != blobs.end()) restored_spm_ = spm->second;
}

Metrics GptTask::evaluate(Split split, const EvaluationOptions& options) {
  Metrics metrics = loss_metrics(*this, split, options.device);
  const double nats = metrics.at("loss").value * metrics.at("tokens").value;
  const double per_character = nats / static_cast<double>(std::max<int64_t>(1, loaded_split(characters_, split)));
  metrics.add(Metric{"bits_per_character", per_character / std::log(2.0), Better::kLower, 4, "bits/char"});
  metrics.add(Metric{"loss_per_character", per_character, Better::kLower, 4, "nats/char"});
  return metrics;
}

std::vector<std::string> GptTask::export_torchscript(const std::string& path, const std::string& config_ini) {
  export_gpt(path, *model_, {{"config.ini", config_ini}, {"spm.model", tokenizer().serialized()}});
  return {"config.ini", "spm.model"};
}

}  // namespace nlpzoo
