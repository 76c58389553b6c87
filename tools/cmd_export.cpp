// nlpzoo export: the TorchScript twin of a trained model (translation, language model or word
// vectors), with its tokenizers and config, for torch.jit.load in Python or torch::jit::load in C++.
#include <iostream>

#include "datasets/io.h"
#include "infer/export_lm.h"
#include "infer/export_seq2seq.h"
#include "infer/export_transformer.h"
#include "infer/export_word_vectors.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"
#include "train/tasks/word_vector_source.h"

namespace nlpzoo::cli {
namespace {

int run_export(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  desc.add_options()
      ("run-dir", po::value<std::string>()->required(), "run folder written by nlpzoo train (required)")
      ("checkpoint", po::value<std::string>()->default_value("auto"),
       "best (lowest valid loss), last, or auto: last for word vectors (the final vectors, as nlpzoo embed, "
       "word2vec.c and gensim give), best for every other model")
      ("out", po::value<std::string>()->required(), "TorchScript file to write, e.g. model.pt (required)");
  auto vm = parse_args(args, desc, "export --run-dir DIR --out FILE.pt [--checkpoint auto|best|last]");
  if (!vm) return 0;
  const auto run_dir = (*vm)["run-dir"].as<std::string>();
  std::string which = (*vm)["checkpoint"].as<std::string>();
  if (which == "auto") {
    // The task's kind, from the header and an empty task: no model is built for the choice.
    const auto task = make_task(read_checkpoint_header(checkpoint_in(run_dir, "last")).task);
    which = dynamic_cast<const WordVectorSource*>(task.get()) != nullptr ? "last" : "best";
  }
  auto run = load_run(checkpoint_in(run_dir, which), torch::kCPU);
  const auto out = (*vm)["out"].as<std::string>();
  std::map<std::string, std::string> extra{{"config.ini", run.header.config}};
  if (auto* lm = dynamic_cast<LanguageModelTask*>(run.task.get())) {
    // Only the tokenizer: the task's other artifact (the carried TBPTT state) is training state.
    extra["spm.model"] = lm->tokenizer().serialized();
    export_language_model(out, lm->lm(), extra);
  } else if (const auto* source = dynamic_cast<const WordVectorSource*>(run.task.get())) {
    export_word_vectors(out, source->word_vectors(), extra);
  } else {
    auto& task = translation_task(run);
    for (const auto& [name, bytes] : task.artifacts()) extra[name] = bytes;
    if (task.rnn() != nullptr) {
      export_seq2seq(out, *task.rnn(), extra);
    } else {
      export_transformer(out, *task.transformer(), extra);
    }
  }
  std::string names;
  for (const auto& [name, bytes] : extra) names += name + ", ";
  std::cout << "wrote " << out << " (methods: see README.txt inside; extra files " << names << "README.txt)"
            << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(export, "export", "write a trained model as a TorchScript file (the scripted twin)", run_export);

}  // namespace nlpzoo::cli
