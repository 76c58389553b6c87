#include "train/tasks/run_tokenizer.h"

#include <iostream>

#include "datasets/io.h"

namespace nlpzoo {

Tokenizer run_tokenizer(const std::vector<std::string>& langs, const std::string& checkpoint_bytes, int64_t vocab_size,
                        const Config& config, const TaskContext& context) {
  if (!checkpoint_bytes.empty()) return Tokenizer::from_serialized(checkpoint_bytes);
  const std::string name = langs.size() == 1 ? langs[0] : "joint";
  if (context.run_dir.empty()) throw UserError("no tokenizer for '" + name + "': the checkpoint holds none");
  const std::string prefix = context.run_dir + "/spm." + name;
  if (context.resume) return Tokenizer::load(prefix + ".model");
  TokenizerTrainOptions options;
  for (const auto& lang : langs) {
    options.inputs.push_back(context.data_dir + "/train." + lang);
    require_file(options.inputs.back(), "training text for the " + name + " tokenizer");
  }
  options.model_prefix = prefix;
  options.vocab_size = vocab_size;
  options.model_type = config.get("spm_model_type");
  options.character_coverage = config.get_double("character_coverage");
  options.hard_vocab_limit = false;
  std::cout << "training SentencePiece (" << options.model_type << ", " << vocab_size << " pieces) on "
            << options.inputs[0] << (langs.size() > 1 ? " and " + options.inputs[1] : "") << std::endl;
  Tokenizer::train(options);
  return Tokenizer::load(prefix + ".model");
}

}  // namespace nlpzoo
