#include "train/tasks/masked_lm_task.h"

#include <algorithm>
#include <cmath>

#include "core/io.h"
#include "train/evaluation.h"
#include "train/trainer.h"

namespace nlpzoo {

void MaskedLmOptions::bind(OptionBinder& b) {
  PretrainingCorpusOptions::bind(b);
  b.field("nsp", nsp,
          "BERT: next-sentence prediction (pairs [CLS] A [SEP] B [SEP], B the following text or, half of the time, text "
          "from elsewhere; a pooler and a 2-way head; RoBERTa drops it)");
}

ConfigSchema masked_lm_schema() {
  ConfigSchema s = schema_of<MaskedLmOptions>();
  s.merge(pretraining_corpus_schema());
  return s;
}

void MaskedLmTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the slow work (tokenizer, corpus) starts.
  const auto bert = bind_options<BertKeys>(config);
  auto options = bind_options<MaskedLmOptions>(config);
  nsp_ = options.nsp;
  if (nsp_ && bert.max_positions < 5)
    throw UserError("config key 'max_positions': nsp = true needs room for [CLS] A [SEP] B [SEP], at least 5, got " +
                    std::to_string(bert.max_positions));
  data_.setup(options, nsp_, bert.max_positions, static_cast<uint64_t>(run_keys(config).seed), config, context,
              "masked_lm");
  write_options(options, config);
  model_ = BertForPreTraining(bert.options(options.vocab_size).nsp(nsp_));
}

LossOutput MaskedLmTask::loss(const Batch& batch) {
  const auto& targets = batch.tensors.at("targets");
  auto out = model_(batch.tensors.at("input"), batch.tensors.at("segments"), batch.tensors.at("masked"));
  const auto summed = torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum);
  const auto mlm = torch::nn::functional::cross_entropy(out.mlm_logits, targets, summed);
  LossOutput result;
  result.loss_sum = mlm;
  result.num_tokens = batch.num_tokens;
  const bool eval = !model_->is_training();
  if (eval) result.metric_sums["accuracy"] = (out.mlm_logits.argmax(-1) == targets).sum();
  if (out.nsp_logits.defined() && batch.tensors.count("nsp_labels")) {
    const auto& labels = batch.tensors.at("nsp_labels");
    const auto nsp = torch::nn::functional::cross_entropy(out.nsp_logits, labels, summed);
    result.loss_sum = mlm + nsp * (static_cast<double>(batch.num_tokens) / static_cast<double>(labels.size(0)));
    if (eval) {
      result.metric_sums["mlm_loss"] = mlm.detach();
      result.metric_sums["nsp"] = torch::stack({(out.nsp_logits.argmax(-1) == labels).sum().to(torch::kDouble),
                                                torch::tensor(static_cast<double>(labels.size(0)),
                                                              torch::TensorOptions(torch::kDouble).device(labels.device()))});
    }
  }
  return result;
}

std::map<std::string, double> MaskedLmTask::validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                               int64_t examples) const {
  std::map<std::string, double> out;
  for (const auto& [name, sum] : sums) {
    if (name == "nsp") {
      out["nsp_accuracy"] = sum[0].item<double>() / std::max(1.0, sum[1].item<double>());
    } else {
      out[name] = sum.item<double>() / static_cast<double>(examples);
      if (name == "mlm_loss") out["mlm_perplexity"] = std::exp(out[name]);
    }
  }
  return out;
}

Task::TrainingProfile MaskedLmTask::training_profile() const {
  TrainingProfile p;
  p.unit = "masked";
  p.perplexity = true;
  p.loss_unit = "nats/masked token";
  p.d_model = model_ ? model_->bert->options().d_model() : 0;
  if (model_) p.no_weight_decay = parameters_without_weight_decay(*model_);
  return p;
}

Metrics MaskedLmTask::evaluate(Split split, const EvaluationOptions& options) {
  SplitLoss split_loss;
  auto m = loss_metrics(*this, split, options.device, "", &split_loss);
  m.add({"accuracy", split_loss.metrics.at("accuracy"), Better::kHigher, 4, ""});
  if (nsp_) {
    m.add({"mlm_loss", split_loss.metrics.at("mlm_loss"), Better::kLower, 4, "nats/masked token"});
    m.add({"mlm_perplexity", split_loss.metrics.at("mlm_perplexity"), Better::kLower, 2, ""});
    m.add({"nsp_accuracy", split_loss.metrics.at("nsp_accuracy"), Better::kHigher, 4, ""});
  }
  return m;
}

}  // namespace nlpzoo
