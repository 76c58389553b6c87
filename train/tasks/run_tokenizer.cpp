#include "train/tasks/run_tokenizer.h"

#include <iostream>

#include "datasets/io.h"

namespace nlpzoo {

Tokenizer run_tokenizer(const std::string& lang, const std::string& checkpoint_bytes, int64_t vocab_size,
                        const Config& config, const TaskContext& context) {
  if (!checkpoint_bytes.empty()) return Tokenizer::from_serialized(checkpoint_bytes);
  if (context.run_dir.empty()) throw UserError("no tokenizer for '" + lang + "': the checkpoint holds none");
  const std::string prefix = context.run_dir + "/spm." + lang;
  if (context.resume) return Tokenizer::load(prefix + ".model");
  TokenizerTrainOptions options;
  options.inputs = {context.data_dir + "/train." + lang};
  options.model_prefix = prefix;
  options.vocab_size = vocab_size;
  options.model_type = config.get("spm_model_type");
  options.character_coverage = config.get_double("character_coverage");
  options.hard_vocab_limit = false;
  require_file(options.inputs[0], "training text for the " + lang + " tokenizer");
  std::cout << "training SentencePiece (" << options.model_type << ", " << vocab_size << " pieces) on "
            << options.inputs[0] << std::endl;
  Tokenizer::train(options);
  return Tokenizer::load(prefix + ".model");
}

}  // namespace nlpzoo
