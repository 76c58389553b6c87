#include "train/tasks/bilm_task.h"

#include <cmath>

#include "datasets/batching.h"
#include "datasets/special_ids.h"
#include "infer/export_lm.h"
#include "datasets/labeled_text.h"
#include "train/evaluation.h"
#include "train/tasks/run_tokenizer.h"
#include "train/trainer.h"

namespace nlpzoo {

void BiLmOptions::bind(OptionBinder& b) {
  corpus.bind_keys(b, /*masking=*/false);
  b.field("embed_dim", embed_dim,
          "d: the token embedding and each LSTM layer's projected output per direction (ELMo: 512); the features "
          "a classifier mixes are 2d wide",
          positive());
  b.field("hidden_size", hidden_size, "LSTM cells per layer and direction, projected to embed_dim (ELMo: 4096)",
          positive());
  b.field("num_layers", num_layers, "LSTM layers per direction (ELMo: 2), residual connections between them",
          positive());
  b.field("dropout", dropout, "dropout on the embeddings, between layers and before the softmax (ELMo: 0.1)",
          {[](double x) -> std::string { return x >= 0 && x < 1 ? "" : "must be in [0, 1)"; }});
  b.field("max_positions", max_positions,
          "pieces per packed training sequence, [CLS] and [SEP] included (the LSTM reads any length)", at_least(3));
}

BiLanguageModelOptions BiLmOptions::model(int64_t vocab_size) const {
  return BiLanguageModelOptions(vocab_size)
      .embed_dim(embed_dim)
      .hidden_size(hidden_size)
      .num_layers(num_layers)
      .dropout(dropout)
      .pad_id(kPadId);
}

ConfigSchema bilm_schema() {
  ConfigSchema s = schema_of<BiLmOptions>();
  s.merge(tokenizer_schema()).merge(tsv_layout_schema());
  return s;
}

void BiLmTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the slow work (tokenizer, corpus) starts.
  options_ = bind_options<BiLmOptions>(config);
  data_.setup(options_.corpus, /*nsp=*/false, options_.max_positions, static_cast<uint64_t>(run_keys(config).seed),
              config, context, "bilm");
  write_options(options_, config);
  model_ = BiLanguageModel(options_.model(options_.corpus.vocab_size));
}

Batch BiLmTask::make_batch(Split split, int64_t epoch, int64_t index) {
  std::vector<std::vector<int64_t>> rows;
  std::vector<int64_t> lengths;
  for (int64_t k : data_.batch_examples(split, epoch, index)) {
    rows.push_back(data_.sequences(split).at(static_cast<size_t>(k)));
    lengths.push_back(static_cast<int64_t>(rows.back().size()));
  }
  Batch batch;
  batch.split = split;
  batch.index = index;
  batch.tensors = {{"sequences", pad_sequences(rows, kPadId)}, {"lengths", torch::tensor(lengths, torch::kInt64)}};
  // A sequence of n pieces makes n - 1 predictions in each direction.
  int64_t predictions = 0;
  for (int64_t n : lengths) predictions += n - 1;
  batch.num_tokens = batch.num_examples = 2 * predictions;
  return batch;
}

LossOutput BiLmTask::loss(const Batch& batch) {
  const auto& sequences = batch.tensors.at("sequences");
  const auto out = model_->loss(sequences, batch.tensors.at("lengths").to(sequences.device()));
  LossOutput result;
  result.loss_sum = out.forward_nll + out.backward_nll;
  result.num_tokens = 2 * out.predictions;
  if (!model_->is_training()) {
    result.metric_sums["forward_nll"] = out.forward_nll.detach().to(torch::kDouble);
    result.metric_sums["backward_nll"] = out.backward_nll.detach().to(torch::kDouble);
    result.metric_sums["predictions"] = torch::full({}, static_cast<double>(out.predictions),
                                                    sequences.options().dtype(torch::kDouble));
  }
  return result;
}

std::map<std::string, double> BiLmTask::validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                           int64_t /*examples*/) const {
  const double predictions = std::max(1.0, sums.at("predictions").item<double>());
  std::map<std::string, double> out;
  for (const char* direction : {"forward", "backward"}) {
    const double loss = sums.at(std::string(direction) + "_nll").item<double>() / predictions;
    out[std::string(direction) + "_loss"] = loss;
    out[std::string(direction) + "_perplexity"] = std::exp(loss);
  }
  return out;
}

Metrics BiLmTask::evaluate(Split split, const EvaluationOptions& options) {
  SplitLoss split_loss;
  auto m = loss_metrics(*this, split, options.device, "", &split_loss);
  const auto& s = split_loss.metrics;
  for (const char* direction : {"forward", "backward"}) {
    m.add({std::string(direction) + "_loss", s.at(std::string(direction) + "_loss"), Better::kLower, 4, "nats/token"});
    m.add({std::string(direction) + "_perplexity", s.at(std::string(direction) + "_perplexity"), Better::kLower, 2, ""});
  }
  return m;
}

std::vector<std::string> BiLmTask::export_torchscript(const std::string& path, const std::string& config_ini) {
  const auto files = data_.export_files(config_ini);
  export_bilm(path, *model_, files);
  return MaskedLmData::names(files);
}

}  // namespace nlpzoo
