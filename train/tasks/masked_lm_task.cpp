#include "train/tasks/masked_lm_task.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>

#include "core/io.h"
#include "train/checkpoint.h"
#include "train/evaluation.h"
#include "train/tasks/registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace nlpzoo {

void MaskedLmOptions::bind(OptionBinder& b) {
  PretrainingCorpusOptions::bind(b);
  b.field("nsp", nsp,
          "BERT: next-sentence prediction (pairs [CLS] A [SEP] B [SEP], B the following text or, half of the time, text "
          "from elsewhere; a pooler and a 2-way head; RoBERTa drops it)");
  b.field("init_from", init_from,
          "a masked_lm run folder to continue pre-training from: its tokenizer, sizes, text form (normalize_words) and "
          "weights, not its optimizer or step (\"\" = a new model); e.g. task-adaptive pre-training on a task's "
          "train.tsv (corpus_format = tsv), then fine-tune this run");
}

ConfigSchema masked_lm_schema() {
  ConfigSchema s = schema_of<MaskedLmOptions>();
  s.merge(pretraining_corpus_schema());
  return s;
}

MaskedLmTask::ContinuedRun MaskedLmTask::continue_from(const std::string& dir, Config& config,
                                                       const TaskContext& context) {
  ContinuedRun from;
  from.checkpoint = run_to_start_from(dir, "init_from", " (init_from names the folder of a masked_lm run to continue)");
  const auto header = read_checkpoint_header(from.checkpoint);
  if (header.task != "masked_lm")
    throw UserError("config key 'init_from': " + dir + " is a run of task '" + header.task +
                    "'; masked_lm continues the pre-training of a masked_lm run");
  auto run = load_run(from.checkpoint, torch::kCPU);
  adopt_bert_keys(dir, run.config, config);
  // The text as the run's tokenizer and model read it.
  const bool normalize = bind_options<MaskedLmOptions>(run.config).normalize_words;
  if (bind_options<MaskedLmOptions>(config).normalize_words != normalize) {
    if (config.chosen("normalize_words"))
      throw UserError("config key 'normalize_words': the init_from run " + dir + " read its corpus with normalize_words = " +
                      (normalize ? "true" : "false") + "; a continued run reads text as it did (leave the key out)");
    config.set("normalize_words", normalize ? "true" : "false");
  }
  const std::string& spm = run.header.artifacts.at("spm.model");
  data_.restore_artifacts(run.header.artifacts);
  if (!context.run_dir.empty()) {
    fs::create_directories(context.run_dir);
    atomic_write_text(context.run_dir + "/spm.model", spm);  // what a resume before the first checkpoint reads
  }
  from.step = run.header.state.step;
  for (const auto& p : run.task->model()->named_parameters()) from.tensors[p.key()] = p.value().detach();
  return from;
}

void MaskedLmTask::setup(Config& config, const TaskContext& context) {
  // A loaded run, or one resumed from its checkpoint, has init_from's sizes in its config and its
  // weights in the checkpoint. A run folder without a checkpoint yet (a data-parallel rank at the
  // start, a resume before the first save) starts from init_from as a new run does.
  std::optional<ContinuedRun> from;
  const auto init_from = bind_options<MaskedLmOptions>(config).init_from;
  if (!init_from.empty() && !data_.restored() &&
      (context.run_dir.empty() || !fs::exists(context.run_dir + "/checkpoint_last.pt")))
    from = continue_from(init_from, config, context);
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
  if (from) {
    // An NSP head (and the pooler) the run did not train start fresh; everything else is the run's.
    const auto report = load_parameters_with_prefix(*model_, from->tensors, "", from->checkpoint, "the continued model",
                                                    "init_from", [&](const std::string& name) {
                                                      return from->tensors.count(name) == 0;
                                                    });
    std::cout << "init_from " << from->checkpoint << " (masked_lm, step " << from->step << "): loaded "
              << report.loaded.size() << " tensors (" << report.loaded_values << " parameters), its tokenizer and sizes; "
              << "fresh: " << report.fresh_values << " parameters" << std::endl;
  }
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
