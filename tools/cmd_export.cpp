// nlpzoo export: the TorchScript twin of a trained model (Task::export_torchscript), with its
// tokenizers and config, for torch.jit.load in Python or torch::jit::load in C++.
#include <iostream>

#include "core/io.h"
#include "tools/command.h"
#include "tools/options.h"
#include "tools/run_flags.h"

namespace nlpzoo::cli {
namespace {

int run_export(const std::vector<std::string>& args) {
  po::options_description desc("Options");
  desc.add_options()
      ("run-dir", po::value<std::string>()->required(), "run folder written by nlpzoo train (required)")
      ("checkpoint", po::value<std::string>()->default_value("auto"),
       "best (checkpoint_best.pt: the best validation score by the run's best_metric), last, averaged, a step N "
       "(checkpoint_N.pt, kept with keep_last), a checkpoint file FILE.pt, or auto: last for word vectors (the final vectors, as nlpzoo embed, "
       "word2vec.c and gensim give), best for every other model")
      ("out", po::value<std::string>()->required(), "TorchScript file to write, e.g. model.pt (required)");
  auto vm = parse_args(args, desc, "export --run-dir DIR --out FILE.pt [--checkpoint auto|best|last|averaged|STEP|FILE.pt]");
  if (!vm) return 0;
  const auto run_dir = (*vm)["run-dir"].as<std::string>();
  std::string which = (*vm)["checkpoint"].as<std::string>();
  if (which == "auto") {
    // The task's kind, from the header and an empty task: no model is built for the choice.
    const auto task = make_task(read_checkpoint_header(checkpoint_in(run_dir, "last")).task);
    which = task->word_vector_source() != nullptr ? "last" : "best";
  }
  auto run = load_run(checkpoint_in(run_dir, which), torch::kCPU);
  const auto out = (*vm)["out"].as<std::string>();
  std::string names;
  for (const auto& name : run.task->export_torchscript(out, run.header.config)) names += name + ", ";
  std::cout << "wrote " << out << " (methods: see README.txt inside; extra files " << names << "README.txt)"
            << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(export, "export", "write a trained model as a TorchScript file (the scripted twin)", run_export);

}  // namespace nlpzoo::cli
