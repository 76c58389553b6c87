#include "train/tasks/electra_task.h"

#include <algorithm>
#include <cmath>

#include "core/io.h"
#include "datasets/special_ids.h"
#include "infer/export_bert.h"
#include "train/evaluation.h"
#include "train/trainer.h"

namespace nlpzoo {

void ElectraOptions::bind(OptionBinder& b) {
  PretrainingCorpusOptions::bind(b);
  b.field("generator_size_divisor", generator_size_divisor,
          "ELECTRA: the generator's d_model, num_heads and ffn_dim are the discriminator's divided by this (Clark et "
          "al. sec. 3.2: 1/4 to 1/2 of the discriminator's size works best); it shares the discriminator's "
          "embeddings and projects them to its width",
          positive());
  b.field("disc_weight", disc_weight,
          "ELECTRA: lambda in loss = MLM(generator) + lambda * BCE(discriminator) (the paper's 50)", finite_at_least(0));
}

ConfigSchema electra_schema() {
  ConfigSchema s = schema_of<ElectraOptions>();
  s.merge(pretraining_corpus_schema());
  return s;
}

ElectraLosses electra_losses(const ElectraOutput& out, const torch::Tensor& targets, const torch::Tensor& real,
                             double disc_weight) {
  ElectraLosses l;
  l.mlm_sum = torch::nn::functional::cross_entropy(
      out.mlm_logits, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  l.disc_mean = torch::nn::functional::binary_cross_entropy_with_logits(
      out.disc_logits.index({real}).to(torch::kFloat), out.replaced.index({real}).to(torch::kFloat),
      torch::nn::functional::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kMean));
  l.loss_sum = l.mlm_sum + l.disc_mean * (disc_weight * static_cast<double>(targets.size(0)));
  return l;
}

void ElectraTask::setup(Config& config, const TaskContext& context) {
  // Every bad value is reported before the slow work (tokenizer, corpus) starts.
  const auto bert = bind_options<BertKeys>(config);
  options_ = bind_options<ElectraOptions>(config);
  const int64_t divisor = options_.generator_size_divisor, d_model = bert.stack.d_model;
  if (d_model % divisor != 0)
    throw UserError("config key 'generator_size_divisor': the generator's width d_model / generator_size_divisor "
                    "must be whole; d_model = " + std::to_string(d_model) + " is not a multiple of " +
                    std::to_string(divisor));
  const int64_t heads = std::max<int64_t>(1, bert.stack.num_heads / divisor);
  if ((d_model / divisor) % heads != 0)
    throw UserError("config key 'generator_size_divisor': the generator's d_model " + std::to_string(d_model / divisor) +
                    " is not a multiple of its num_heads " + std::to_string(heads) + " (num_heads / " +
                    std::to_string(divisor) + ")");
  data_.setup(options_, /*nsp=*/false, bert.max_positions, static_cast<uint64_t>(run_keys(config).seed), config,
              context, "electra");
  write_options(options_, config);
  model_ = ElectraForPreTraining(bert.options(options_.vocab_size), divisor);
}

LossOutput ElectraTask::loss(const Batch& batch) {
  const auto& input = batch.tensors.at("input");
  const auto& targets = batch.tensors.at("targets");
  auto out = model_(input, batch.tensors.at("segments"), batch.tensors.at("masked"), targets,
                    batch.tensors.at("uniform"));
  const auto real = input != kPadId;  // [B, S]
  const auto losses = electra_losses(out, targets, real, options_.disc_weight);
  LossOutput result;
  result.loss_sum = losses.loss_sum;
  result.num_tokens = batch.num_tokens;
  if (!model_->is_training()) {
    result.metric_sums["generator_accuracy"] = (out.mlm_logits.argmax(-1) == targets).sum();
    result.metric_sums["mlm_loss"] = losses.mlm_sum.detach();
    const auto called = (out.disc_logits > 0).index({real});  // [R] the discriminator says "replaced"
    const auto truth = out.replaced.index({real});            // [R]
    const auto count = [](const torch::Tensor& t) { return t.sum().to(torch::kDouble); };
    const auto n_real = static_cast<double>(truth.size(0));
    result.metric_sums["disc"] = torch::stack({losses.disc_mean.detach().to(torch::kDouble) * n_real,
                                               count(called == truth),
                                               torch::full({}, n_real, truth.options().dtype(torch::kDouble)),
                                               count(called & truth), count(called & ~truth), count(~called & truth)});
  }
  return result;
}

std::map<std::string, double> ElectraTask::validation_metrics(const std::map<std::string, torch::Tensor>& sums,
                                                              int64_t examples) const {
  std::map<std::string, double> out;
  for (const auto& [name, sum] : sums) {
    if (name == "disc") {
      const auto s = sum.to(torch::kDouble).cpu();
      const auto at = [&](int64_t i) { return s[i].item<double>(); };
      const double real = std::max(1.0, at(2)), tp = at(3), fp = at(4), fn = at(5);
      out["disc_loss"] = at(0) / real;
      out["discriminator_accuracy"] = at(1) / real;
      out["replaced_f1"] = tp + fp + fn > 0 ? 2 * tp / (2 * tp + fp + fn) : 0.0;
    } else {
      out[name] = sum.item<double>() / static_cast<double>(examples);
      if (name == "mlm_loss") out["mlm_perplexity"] = std::exp(out[name]);
    }
  }
  return out;
}

Task::TrainingProfile ElectraTask::training_profile() const {
  TrainingProfile p;
  p.unit = "masked";
  // loss / N is the generator's MLM mean plus λ·BCE: not a perplexity.
  p.perplexity = false;
  p.loss_unit = "nats/masked token (MLM + disc_weight x BCE)";
  p.d_model = model_ ? model_->bert->options().d_model() : 0;
  if (model_) p.no_weight_decay = parameters_without_weight_decay(*model_);
  p.selection_metrics = {{"discriminator_accuracy", Better::kHigher},
                         {"replaced_f1", Better::kHigher},
                         {"generator_accuracy", Better::kHigher}};
  return p;
}

Metrics ElectraTask::evaluate(Split split, const EvaluationOptions& options) {
  SplitLoss split_loss;
  auto m = loss_metrics(*this, split, options.device, "", &split_loss);
  const auto& s = split_loss.metrics;
  m.add({"generator_accuracy", s.at("generator_accuracy"), Better::kHigher, 4, ""});
  m.add({"mlm_loss", s.at("mlm_loss"), Better::kLower, 4, "nats/masked token"});
  m.add({"mlm_perplexity", s.at("mlm_perplexity"), Better::kLower, 2, ""});
  m.add({"disc_loss", s.at("disc_loss"), Better::kLower, 4, "nats/token"});
  m.add({"discriminator_accuracy", s.at("discriminator_accuracy"), Better::kHigher, 4, ""});
  m.add({"replaced_f1", s.at("replaced_f1"), Better::kHigher, 4, ""});
  return m;
}

std::vector<std::string> ElectraTask::export_torchscript(const std::string& path, const std::string& config_ini) {
  const auto files = data_.export_files(config_ini);
  export_electra(path, *model_, files);
  return MaskedLmData::names(files);
}

std::vector<std::vector<MaskCandidate>> ElectraTask::fill_mask(const std::string& line, int64_t k,
                                                               const torch::Device& device) {
  model_->eval();
  return data_.fill_mask(line, k, device, [&](const torch::Tensor& tokens, const torch::Tensor& segments,
                                              const torch::Tensor& masked) {
    return model_->generator(tokens, segments, masked);  // [M, V]
  });
}

}  // namespace nlpzoo
