#include "train/tasks/language_model_task.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "train/losses.h"
#include "train/tasks/run_tokenizer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

RnnOptions LanguageModelTaskOptions::lm_rnn() {
  RnnOptions r;
  r.embed_dim = 512;
  r.hidden_size = 512;
  r.num_layers = 2;
  r.dropout = 0.2;
  return r;
}

void LanguageModelTaskOptions::bind(OptionBinder& b) {
  b.field("lang", lang, "language of the corpus: reads <data_dir>/<split>.<lang>, one sentence per line");
  b.field("vocab_size", vocab_size, "SentencePiece vocabulary size, at most (the model takes the size the tokenizer "
                                    "reaches) = output classes",
          at_least(8));
  rnn.bind(b);
  b.field("tie_embeddings", tie_embeddings, "output layer shares the embedding matrix, logits = h E^T + b "
                                            "(Press & Wolf 2017); needs embed_dim = hidden_size");
  b.field("bptt", bptt, "truncated BPTT length: tokens per row in a batch; gradients flow back at most this far, "
                        "the state is carried further",
          positive());
  b.field("batch_size", batch_size,
          "parallel rows the token stream is cut into (tokens per batch = batch_size * bptt)", positive());
  if (tie_embeddings && rnn.embed_dim != rnn.hidden_size)
    throw UserError("config key 'tie_embeddings': the output layer reuses the embedding matrix, so embed_dim must "
                    "equal hidden_size (got " + std::to_string(rnn.embed_dim) + " and " +
                    std::to_string(rnn.hidden_size) + ")");
}

LanguageModelOptions LanguageModelTaskOptions::model() const {
  return LanguageModelOptions(vocab_size)
      .cell(rnn.cell)
      .embed_dim(rnn.embed_dim)
      .hidden_size(rnn.hidden_size)
      .num_layers(rnn.num_layers)
      .dropout(rnn.dropout)
      .tie_embeddings(tie_embeddings)
      .pad_id(kPadId);
}

ConfigSchema language_model_schema() {
  ConfigSchema s = schema_of<LanguageModelTaskOptions>();
  s.merge(tokenizer_schema());
  return s;
}

namespace {

// pieces(line 1) EOS pieces(line 2) EOS ... cut into `rows` rows: [rows, N / rows] int64.
torch::Tensor read_token_stream(const std::string& path, const Tokenizer& tokenizer, int64_t rows) {
  std::vector<int64_t> ids;
  for (auto& line : read_lines(path)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto pieces = tokenizer.encode(line);
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    ids.push_back(kEosId);
  }
  const int64_t columns = static_cast<int64_t>(ids.size()) / rows;
  // Each row needs one input and its next token as target.
  if (columns < 2)
    throw UserError(path + ": " + std::to_string(ids.size()) + " tokens (EOS included) are too few for one batch of " +
                    "batch_size=" + std::to_string(rows) + " rows; a split needs at least 2 * batch_size tokens" +
                    (ids.empty() ? " (the file has no text)" : ""));
  return torch::from_blob(ids.data(), {rows * columns}, torch::kLong).clone().view({rows, columns});
}

}  // namespace

void LanguageModelTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the slow work (tokenizer, corpus) starts.
  auto options = bind_options<LanguageModelTaskOptions>(config);
  bptt_ = options.bptt;
  batch_size_ = options.batch_size;

  if (!context.run_dir.empty()) fs::create_directories(context.run_dir);
  const std::string lang = options.lang;
  tokenizer_ = run_tokenizer(
      "spm." + lang, [&] { return training_files(context, {lang}, "training text for the tokenizer"); },
      restored_spm_, options.vocab_size, config, context);
  // The model's size is the tokenizer's (a soft SentencePiece limit may give fewer pieces).
  options.vocab_size = tokenizer_->vocab_size();
  write_options(options, config);
  model_ = LanguageModel(options.model());
  for (Split split : context.splits)
    streams_[split] = read_token_stream(context.data_dir + "/" + to_string(split) + "." + lang, *tokenizer_, batch_size_);
}

const torch::Tensor& LanguageModelTask::stream(Split split) const {
  return loaded_split(streams_, split);
}

RecurrentState LanguageModelTask::carried_state(Split split) const {
  auto it = carried_.find(split);
  return it == carried_.end() ? RecurrentState{} : it->second.state;
}

int64_t LanguageModelTask::num_batches(Split split, int64_t /*epoch*/) {
  const int64_t positions = stream(split).size(1) - 1;  // the last column is only a target
  return (positions + bptt_ - 1) / bptt_;
}

Batch LanguageModelTask::make_batch(Split split, int64_t /*epoch*/, int64_t index) {
  const auto& s = stream(split);
  const int64_t start = index * bptt_;
  const int64_t length = std::min(bptt_, s.size(1) - 1 - start);
  if (index < 0 || length <= 0)
    throw std::out_of_range("language model batch " + std::to_string(index) + " of the " + to_string(split) +
                            " split does not exist");
  Batch batch;
  batch.tensors = {{"input", s.narrow(1, start, length).contiguous()},       // [B, T]
                   {"target", s.narrow(1, start + 1, length).contiguous()}};  // [B, T]
  batch.split = split;
  batch.index = index;
  batch.num_examples = s.size(0);
  batch.num_tokens = s.size(0) * length;
  return batch;
}

LossOutput LanguageModelTask::loss(const Batch& batch) {
  const auto& input = batch.tensors.at("input");
  const Split split = batch.split;
  const int64_t index = batch.index;
  RecurrentState state;
  auto it = carried_.find(split);
  if (index > 0 && it != carried_.end() && it->second.next_index == index) {
    if (it->second.state.h.size(1) != input.size(0))
      throw UserError("config key 'batch_size': the carried TBPTT state has " +
                      std::to_string(it->second.state.h.size(1)) + " rows but batches have " +
                      std::to_string(input.size(0)) + " (batch_size cannot change on --resume)");
    // A restored state sits on the CPU until the first batch shows the model's device.
    state.h = it->second.state.h.to(input.device());
    if (it->second.state.c.defined()) state.c = it->second.state.c.to(input.device());
  }
  auto [logits, next] = model_->forward(input, state);  // [B, T, V]
  auto loss = sequence_cross_entropy(logits, batch.tensors.at("target"), kPadId, /*label_smoothing=*/0.0);
  // Truncation: the next segment starts from these values, but its gradient stops here.
  next.h = next.h.detach();
  if (next.c.defined()) next.c = next.c.detach();
  carried_[split] = {next, index + 1};
  return {loss, batch.num_tokens};
}

std::map<std::string, std::string> LanguageModelTask::artifacts() const {
  std::map<std::string, std::string> blobs{{"spm.model", tokenizer_->serialized()}};
  auto it = carried_.find(Split::kTrain);
  if (it != carried_.end()) {
    // [next_index], h, c (when the cell has one)
    std::vector<torch::Tensor> tensors{torch::tensor({it->second.next_index}), it->second.state.h.to(torch::kCPU)};
    if (it->second.state.c.defined()) tensors.push_back(it->second.state.c.to(torch::kCPU));
    std::ostringstream out;
    torch::save(tensors, out);
    blobs["tbptt_state"] = out.str();
  }
  return blobs;
}

void LanguageModelTask::restore_artifacts(const std::map<std::string, std::string>& blobs) {
  auto spm = blobs.find("spm.model");
  if (spm != blobs.end()) restored_spm_ = spm->second;
  auto blob = blobs.find("tbptt_state");
  if (blob == blobs.end()) {
    carried_.erase(Split::kTrain);
    return;
  }
  std::vector<torch::Tensor> tensors;
  try {
    std::istringstream in(blob->second);
    torch::load(tensors, in);
  } catch (const c10::Error& e) {
    throw UserError(std::string("checkpoint artifact 'tbptt_state': not a saved tensor list (") + e.what_without_backtrace() + ")");
  }
  if (tensors.size() < 2 || tensors.size() > 3 || tensors[0].numel() != 1)
    throw UserError("checkpoint artifact 'tbptt_state': expected [next_index], h and c, got " +
                    std::to_string(tensors.size()) + " tensors");
  Carried carried;
  carried.next_index = tensors[0].item<int64_t>();
  carried.state.h = tensors[1];
  if (tensors.size() == 3) carried.state.c = tensors[2];
  carried_[Split::kTrain] = carried;
}

}  // namespace nlpzoo
