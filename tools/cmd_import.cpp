// nlpzoo import bert: a published BERT checkpoint (Hugging Face's folder layout) as a run folder.
#include <iostream>

#include "tools/command.h"
#include "tools/options.h"
#include "train/tasks/import_bert.h"

namespace nlpzoo::cli {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

int run_import_bert(const std::vector<std::string>& args) {
  po::options_description desc(
      "Writes a published BERT checkpoint, a Hugging Face folder (config.json, model.safetensors,\n"
      "vocab.txt, optionally tokenizer_config.json), as a masked_lm run folder: fine-tune it with\n"
      "train --init_from RUN_DIR (arch = bert), or use fill-mask, evaluate and export on it. The\n"
      "tokenizer is the checkpoint's WordPiece. pytorch_model.bin (a pickle, which can run code) is\n"
      "refused: convert it to model.safetensors first (the error says how). Options");
  desc.add_options()
      ("hf-dir", po::value<std::string>()->required(), "the Hugging Face checkpoint folder (positional)")
      ("run-dir", po::value<std::string>()->required(), "run folder to write (must not hold a checkpoint yet)");
  auto vm = parse_args(args, desc, "import bert HF_DIR --run-dir RUN_DIR", {"hf-dir"});
  if (!vm) return 0;
  const auto run = import_bert_run((*vm)["hf-dir"].as<std::string>(), (*vm)["run-dir"].as<std::string>());
  std::cout << "imported " << (*vm)["hf-dir"].as<std::string>() << ": " << run.num_layers << " layers, d_model "
            << run.d_model << ", " << run.vocab_size << " WordPiece tokens" << (run.nsp ? ", with its NSP head" : "")
            << "\n  loaded " << run.report.loaded.size() << " tensors; tied: " << joined(run.report.tied)
            << "; ignored: " << joined(run.report.ignored) << "; unexpected: " << joined(run.report.unexpected)
            << "; missing (fresh): " << joined(run.report.missing) << "\n  wrote " << run.checkpoint
            << " (fine-tune with: nlpzoo train --config CONFIG --init_from "
            << (*vm)["run-dir"].as<std::string>() << ")" << std::endl;
  return 0;
}

}  // namespace

NLPZOO_REGISTER_COMMAND(import_bert, "import bert",
                        "a published BERT checkpoint (Hugging Face folder, safetensors) as a masked_lm run folder",
                        run_import_bert);

}  // namespace nlpzoo::cli
